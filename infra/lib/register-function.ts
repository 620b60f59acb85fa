import { Duration, Stack, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subs from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';

export interface RegisterFunctionProps {
  readonly table: dynamodb.ITable;
  readonly baseDomain: string;
  /**
   * Directory holding the cargo-lambda build output (`bootstrap`):
   * `cargo lambda build --release --bin register` writes `target/lambda/register/`.
   */
  readonly codePath: string;
  /** Team accounts whose stacks may register. */
  readonly teamAccounts: string[];
  /** AWS Organizations id whose accounts may register. */
  readonly organizationId?: string;
  /** Encrypts the registration topic. */
  readonly key: kms.IKey;
}

/**
 * The register function and its registration topic. Team stacks call the function directly
 * (same or allowed account) or publish their custom resource events to the topic (the usual
 * cross-account pattern); the function then unwraps the SNS envelope.
 */
export class RegisterFunction extends Construct {
  readonly function: lambda.Function;
  readonly topic: sns.Topic;

  constructor(scope: Construct, id: string, props: RegisterFunctionProps) {
    super(scope, id);
    if (props.teamAccounts.length === 0 && !props.organizationId) {
      throw new Error('register function: set teamAccounts or organizationId; nobody else may invoke it');
    }
    for (const account of props.teamAccounts) {
      if (!/^\d{12}$/.test(account)) {
        throw new Error(`teamAccounts: "${account}" is not a 12-digit AWS account id`);
      }
    }
    if (props.organizationId && !/^o-[a-z0-9]{10,32}$/.test(props.organizationId)) {
      throw new Error(`organizationId: "${props.organizationId}" is not an AWS Organizations id (o-…)`);
    }

    const logGroup = new logs.LogGroup(this, 'Logs', { retention: logs.RetentionDays.THREE_MONTHS });
    this.function = new lambda.Function(this, 'Function', {
      description: 'Checks a team entry and claims its host and paths in the registry (one transaction).',
      runtime: lambda.Runtime.PROVIDED_AL2023,
      architecture: lambda.Architecture.X86_64,
      handler: 'bootstrap',
      code: lambda.Code.fromAsset(props.codePath),
      memorySize: 256,
      timeout: Duration.seconds(30),
      logGroup,
      environment: {
        GATEWAY_TABLE: props.table.tableName,
        GATEWAY_DOMAIN: props.baseDomain,
      },
    });
    // Only what a registration transaction does: read, claim, release. No scan, no stream.
    // (TransactWriteItems is authorised per item action; it is no IAM action of its own.)
    this.function.addToRolePolicy(
      new iam.PolicyStatement({
        actions: [
          'dynamodb:GetItem',
          'dynamodb:Query',
          'dynamodb:PutItem',
          'dynamodb:UpdateItem',
          'dynamodb:DeleteItem',
          'dynamodb:ConditionCheckItem',
        ],
        resources: [props.table.tableArn],
      }),
    );
    Validations.of(this.function).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      reason: 'The AWS-managed basic execution policy grants only CloudWatch Logs writes.',
    });

    // Direct invocation (the function ARN as service token): the configured accounts only.
    props.teamAccounts.forEach((account) => {
      this.function.addPermission(`InvokeFrom${account}`, {
        principal: new iam.AccountPrincipal(account),
        action: 'lambda:InvokeFunction',
      });
    });
    if (props.organizationId) {
      this.function.addPermission('InvokeFromOrganization', {
        principal: new iam.OrganizationPrincipal(props.organizationId),
        action: 'lambda:InvokeFunction',
      });
    }

    this.topic = new sns.Topic(this, 'Topic', {
      displayName: 'Gateway route registrations (CloudFormation custom resource events)',
      masterKey: props.key,
      enforceSSL: true,
    });
    this.topic.addSubscription(new subs.LambdaSubscription(this.function));
    const region = Stack.of(this).region;
    publishers(props).forEach((who, i) => {
      this.topic.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: `TeamStacksPublishRegistrations${i}`,
          actions: ['sns:Publish'],
          principals: who.principals,
          resources: [this.topic.topicArn],
          conditions: who.orgCondition,
        }),
      );
      // Publishing to a KMS-encrypted topic needs the key too, and only through SNS.
      props.key.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: `TeamStacksEncryptRegistrations${i}`,
          actions: ['kms:GenerateDataKey*', 'kms:Decrypt'],
          principals: who.principals,
          resources: ['*'],
          conditions: {
            StringEquals: {
              ...(who.orgCondition?.StringEquals ?? {}),
              'kms:ViaService': `sns.${region}.amazonaws.com`,
            },
          },
        }),
      );
    });
  }
}

/** Who may publish registrations: the listed accounts, and any account of the organisation. */
function publishers(props: RegisterFunctionProps): {
  principals: iam.IPrincipal[];
  orgCondition?: { StringEquals: Record<string, string> };
}[] {
  const out: { principals: iam.IPrincipal[]; orgCondition?: { StringEquals: Record<string, string> } }[] = [];
  if (props.teamAccounts.length > 0) {
    out.push({ principals: props.teamAccounts.map((a) => new iam.AccountPrincipal(a)) });
  }
  if (props.organizationId) {
    out.push({
      principals: [new iam.AnyPrincipal()],
      orgCondition: { StringEquals: { 'aws:PrincipalOrgID': props.organizationId } },
    });
  }
  return out;
}
