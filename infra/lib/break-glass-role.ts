import { CfnElement, Duration, Stack, Token, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { BUNDLE_OBJECT, FAILED_PREFIX, STATE_PK } from './metrics';

export interface BreakGlassRoleProps {
  readonly bucket: s3.IBucket;
  readonly table: dynamodb.ITable;
  readonly cluster: ecs.Cluster;
  readonly service: ecs.IBaseService;
  /** Who may assume it; default: this account's principals, with MFA. */
  readonly assumedBy?: iam.IPrincipal;
}

/**
 * The operator's role for the kill switch and restores (infra/README.md runbook): the only
 * role besides the reconciler that the bucket policy lets write `bundle.json`, and that the
 * signing key lets sign it (the stack grants that: `BundleSigningKey.allowOnlySigners`).
 * `gatewayctl` run under it needs `GATEWAY_SIGNING_KEY` set to the `BundleSigningKeyArn` output.
 */
export class BreakGlassRole extends Construct {
  readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: BreakGlassRoleProps) {
    super(scope, id);
    this.role = new iam.Role(this, 'Role', {
      description: 'Gateway break-glass: kill switch (levels 1-3), restore, resume.',
      assumedBy:
        props.assumedBy ??
        new iam.AccountRootPrincipal().withConditions({ Bool: { 'aws:MultiFactorAuthPresent': 'true' } }),
      maxSessionDuration: Duration.hours(1),
    });
    const bundle = props.bucket.arnForObjects(BUNDLE_OBJECT);

    const tasksOfTheCluster = () => ({ ArnEquals: { 'ecs:cluster': props.cluster.clusterArn } });
    const statements: iam.PolicyStatementProps[] = [
      // Level 2 (publish the 503 bundle) and restore (copy an old version over bundle.json).
      {
        sid: 'PublishAndRestoreBundle',
        actions: ['s3:GetObject', 's3:GetObjectVersion', 's3:PutObject'],
        resources: [bundle],
      },
      {
        sid: 'ReadFailedRenders',
        actions: ['s3:GetObject', 's3:GetObjectVersion'],
        resources: [props.bucket.arnForObjects(`${FAILED_PREFIX}*`)],
      },
      { sid: 'History', actions: ['s3:ListBucket', 's3:ListBucketVersions'], resources: [props.bucket.bucketArn] },
      // status/history read the registry; resume rewrites only the reconciler's STATE row.
      {
        sid: 'ReadRegistry',
        actions: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:Scan'],
        resources: [props.table.tableArn],
      },
      {
        sid: 'ResumeReconciler',
        actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
        resources: [props.table.tableArn],
        conditions: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [STATE_PK] } },
      },
      // Level 3: force a new deployment from the image's bootstrap.
      {
        sid: 'ForceNewDeployment',
        actions: ['ecs:UpdateService', 'ecs:DescribeServices'],
        resources: [props.service.serviceArn],
      },
      // Level 1: ECS Exec into a task to POST Envoy's loopback admin.
      {
        sid: 'ExecIntoProxyTasks',
        actions: ['ecs:ExecuteCommand', 'ecs:DescribeTasks'],
        resources: [props.cluster.arnForTasks('*')],
        conditions: tasksOfTheCluster(),
      },
      { sid: 'ListProxyTasks', actions: ['ecs:ListTasks'], resources: ['*'], conditions: tasksOfTheCluster() },
    ];
    for (const statement of statements) {
      this.role.addToPolicy(new iam.PolicyStatement(statement));
    }
    const stack = Stack.of(this);
    const logicalId = (c: Construct) => stack.getLogicalId(c.node.defaultChild as CfnElement);
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'ecs:ListTasks is scoped by the ecs:cluster condition (the gateway cluster), not by a resource ARN.',
    });
    Validations.of(this.role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${logicalId(props.bucket)}.Arn>/failed/*]`,
      reason: 'Failed renders are kept under failed/ with run-specific keys; operators read them to diagnose.',
    });
    Validations.of(this.role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ecs:${nagValue(stack.region, 'AWS::Region')}:${nagValue(stack.account, 'AWS::AccountId')}:task/<${logicalId(props.cluster)}>/*]`,
      reason: 'Task ids are not known before the tasks start; ECS Exec is limited to tasks of the gateway cluster.',
    });
  }
}

/** How cdk-nag spells a value in a finding id: a pseudo parameter when it is a token. */
function nagValue(value: string, pseudo: string): string {
  return Token.isUnresolved(value) ? `<${pseudo}>` : value;
}
