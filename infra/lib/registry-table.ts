import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { PROXY_TTL_ATTRIBUTE } from './metrics';

/**
 * The registry: entries, host and path guards, and the reconciler's state in one table, so a
 * registration is one TransactWriteItems. The stream only wakes the reconciler, which always
 * reads the whole table.
 */
export class RegistryTable extends Construct {
  readonly table: dynamodb.Table;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
      // Proxy reports (docs/design.md#proxy-reports) carry their own expiry; DynamoDB deletes
      // them some time after it passes, and readers ignore them from that moment on.
      timeToLiveAttribute: PROXY_TTL_ATTRIBUTE,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      // Every team's routes live here: neither a stack delete nor a console slip may drop it.
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }
}
