import { Duration, Stack, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subs from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { BUNDLE_OBJECT, PROXIES_PK, STATE_PK } from './metrics';

export interface RegisterFunctionProps {
  readonly table: dynamodb.ITable;
  readonly baseDomain: string;
  /**
   * Directory holding the cargo-lambda build output (`bootstrap`):
   * `cargo lambda build --release --bin register` writes `target/lambda/register/`.
   */
  readonly codePath: string;
  /**
   * Team accounts whose stacks may register: one registration topic each. Which teams an account
   * may act for is a grant in the registry (`gatewayctl grant TEAM --account ID`), not infra.
   */
  readonly teamAccounts: string[];
  /** Encrypts the registration topics. */
  readonly key: kms.IKey;
  /**
   * The bundle bucket: `waitFor: serving` reads the bundle versions the proxies report
   * (GATEWAY_BUCKET). Without it the function refuses `serving`.
   */
  readonly bucket?: s3.IBucket;
}

/** The name of the registration topic serving `account`: `<prefix>-register-<account>`. */
export function registrationTopicName(prefix: string, account: string): string {
  return `${prefix}-register-${account}`;
}

/**
 * Keys the register function may touch: entries, host and path guards and backend claims it
 * writes; grants, status rows, proxy reports and the reconciler's `STATE` rows (the registry
 * totals the bounds are judged against) it only reads.
 */
export const REGISTER_WRITES_KEYS = ['ENTRY#*', 'HOST#*', 'BACKEND#*'];
export const REGISTER_READS_KEYS = ['ENTRY#*', 'HOST#*', 'BACKEND#*', 'GRANT#*', 'STATUS#*', PROXIES_PK, STATE_PK];

/**
 * The register function and one registration topic per team account.
 *
 * Trust (docs/design.md, "Trust boundaries"): a topic's name ends with the account it serves and
 * its policy lets only that account publish, so the function takes the caller's account from the
 * topic a record came through. The function has no cross-account invoke permission: a direct
 * invoke can only come from the gateway account itself (operators' own stacks and tools).
 */
export class RegisterFunction extends Construct {
  readonly function: lambda.Function;
  /** account id → its registration topic. */
  readonly topics: Record<string, sns.Topic> = {};
  /** Topic names are `<topicNamePrefix>-register-<account>`. */
  readonly topicNamePrefix: string;

  constructor(scope: Construct, id: string, props: RegisterFunctionProps) {
    super(scope, id);
    for (const account of props.teamAccounts) {
      if (!/^\d{12}$/.test(account)) {
        throw new Error(`teamAccounts: "${account}" is not a 12-digit AWS account id`);
      }
    }
    if (new Set(props.teamAccounts).size !== props.teamAccounts.length) {
      throw new Error(`teamAccounts: an account is listed twice (${props.teamAccounts.join(', ')})`);
    }

    const logGroup = new logs.LogGroup(this, 'Logs', { retention: logs.RetentionDays.THREE_MONTHS });
    this.function = new lambda.Function(this, 'Function', {
      description: 'Checks a team entry and claims its host and paths in the registry (one transaction).',
      runtime: lambda.Runtime.PROVIDED_AL2023,
      architecture: lambda.Architecture.X86_64,
      handler: 'bootstrap',
      code: lambda.Code.fromAsset(props.codePath),
      memorySize: 256,
      // The custom resource waits up to GATEWAY_PUBLISH_WAIT_SECONDS (240) for its entry to publish.
      timeout: Duration.minutes(5),
      logGroup,
      environment: {
        GATEWAY_TABLE: props.table.tableName,
        GATEWAY_DOMAIN: props.baseDomain,
        ...(props.bucket ? { GATEWAY_BUCKET: props.bucket.bucketName } : {}),
      },
    });
    if (props.bucket) {
      // `waitFor: serving`: which bundle versions hold the entry (reads only, bundle.json only).
      this.function.addToRolePolicy(
        new iam.PolicyStatement({
          sid: 'ReadBundleVersionsForServing',
          actions: ['s3:GetObject', 's3:GetObjectVersion'],
          resources: [props.bucket.arnForObjects(BUNDLE_OBJECT)],
        }),
      );
    }
    // Only what a registration transaction does, and only on its own rows: it writes entries,
    // host/path guards and backend claims (host guards and claims are updates: a claim adds the
    // service to a claim's users, a release removes it), reads grants (and checks them inside the
    // transaction), and can neither write grants nor the reconciler's STATE row.
    // (TransactWriteItems is authorised per item action; it is no IAM action of its own.)
    this.function.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'WriteEntriesAndGuards',
        actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
        resources: [props.table.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': REGISTER_WRITES_KEYS } },
      }),
    );
    this.function.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'ReadEntriesGuardsAndGrants',
        actions: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:ConditionCheckItem'],
        resources: [props.table.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': REGISTER_READS_KEYS } },
      }),
    );
    // The registry caps (entries per team, routes and clusters in all; docs/design.md) are judged
    // against the totals the reconciler records in STATE; before its first run (a fresh table)
    // they are counted with a consistent Scan. A Scan has no leading key, so no LeadingKeys
    // condition can narrow it: the role may read the table, never write outside the rows above.
    this.function.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'CountEntriesForTheCaps',
        actions: ['dynamodb:Scan'],
        resources: [props.table.tableArn],
      }),
    );
    Validations.of(this.function).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      reason: 'The AWS-managed basic execution policy grants only CloudWatch Logs writes.',
    });

    this.topicNamePrefix = Stack.of(this).stackName;
    const region = Stack.of(this).region;
    for (const account of props.teamAccounts) {
      const topic = new sns.Topic(this, `Topic${account}`, {
        topicName: registrationTopicName(this.topicNamePrefix, account),
        displayName: `Gateway route registrations from account ${account} (CloudFormation custom resource events)`,
        masterKey: props.key,
        enforceSSL: true,
      });
      topic.addSubscription(new subs.LambdaSubscription(this.function));
      topic.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: 'OnlyItsAccountPublishes',
          actions: ['sns:Publish'],
          principals: [new iam.AccountPrincipal(account)],
          resources: [topic.topicArn],
        }),
      );
      this.topics[account] = topic;
    }
    if (props.teamAccounts.length > 0) {
      // Publishing to a KMS-encrypted topic needs the key too, and only through SNS.
      props.key.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: 'TeamStacksEncryptRegistrations',
          actions: ['kms:GenerateDataKey*', 'kms:Decrypt'],
          principals: props.teamAccounts.map((a) => new iam.AccountPrincipal(a)),
          resources: ['*'],
          conditions: { StringEquals: { 'kms:ViaService': `sns.${region}.amazonaws.com` } },
        }),
      );
    }
  }
}
