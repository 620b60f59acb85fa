import { Duration, Stack, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ecrAssets from 'aws-cdk-lib/aws-ecr-assets';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { BUNDLE_OBJECT, ENTRY_PK_PREFIX, FAILED_PREFIX, METRIC_NAMESPACE, STATE_PK, STATUS_PK_PREFIX } from './metrics';
import { DEFAULT_CAPACITY, reconcileMemoryMiB } from './capacity';
import { IMAGE_CONTEXT_EXCLUDES } from './pins';
import { SIGNING_KEY_ENV } from './signing-key';
import { UPSTREAM_CA_PATH } from './upstream-ca';

export interface ReconcileFunctionProps {
  readonly table: dynamodb.ITable;
  readonly bucket: s3.IBucket;
  /**
   * The key every publish (and the seed) is signed with (GATEWAY_SIGNING_KEY). The stack grants
   * `kms:Sign` (BundleSigningKey.allowOnlySigners), not this construct: who signs is one list.
   */
  readonly signingKey: kms.IKey;
  readonly baseDomain: string;
  readonly envoyVersion: string;
  /** Build context of the image: the repository root. */
  readonly repoRoot: string;
  /** MiB; the stack derives it from its capacity (`capacity.ts`). Default: the default capacity's. */
  readonly memorySize?: number;
  /** The operator's upstream CA (PEM), built into the image at UPSTREAM_CA_PATH; none: the system bundle. */
  readonly upstreamCaPem?: string;
}

/** Where the reconcile image puts Envoy (the envoyproxy/envoy base image's path). */
export const RECONCILE_ENVOY_BIN = '/usr/local/bin/envoy';

/**
 * The reconcile function: reads every entry, renders, guards, validates with the pinned Envoy
 * and publishes `bundle.json`. One at a time (reserved concurrency 1): two runs racing to
 * publish would fight over the drift check.
 */
export class ReconcileFunction extends Construct {
  readonly function: lambda.DockerImageFunction;
  readonly schedule: events.Rule;

  constructor(scope: Construct, id: string, props: ReconcileFunctionProps) {
    super(scope, id);
    const logGroup = new logs.LogGroup(this, 'Logs', { retention: logs.RetentionDays.THREE_MONTHS });
    this.function = new lambda.DockerImageFunction(this, 'Function', {
      description: 'Renders every registry entry, validates with the pinned Envoy, publishes bundle.json.',
      // FROM envoyproxy/envoy:v${ENVOY_VERSION} plus the reconcile binary (functions/Dockerfile.reconcile).
      code: lambda.DockerImageCode.fromImageAsset(props.repoRoot, {
        file: 'functions/Dockerfile.reconcile',
        buildArgs: {
          ENVOY_VERSION: props.envoyVersion,
          ...(props.upstreamCaPem ? { UPSTREAM_CA: props.upstreamCaPem } : {}),
        },
        platform: ecrAssets.Platform.LINUX_AMD64,
        exclude: IMAGE_CONTEXT_EXCLUDES,
      }),
      architecture: lambda.Architecture.X86_64,
      reservedConcurrentExecutions: 1,
      // One run holds the registry and its render while `envoy --mode validate` checks it: sized
      // from the memory envelope (capacity.ts, docs/design.md#memory-envelope).
      memorySize: props.memorySize ?? reconcileMemoryMiB(DEFAULT_CAPACITY),
      timeout: Duration.minutes(3),
      logGroup,
      environment: {
        GATEWAY_TABLE: props.table.tableName,
        GATEWAY_BUCKET: props.bucket.bucketName,
        GATEWAY_DOMAIN: props.baseDomain,
        [SIGNING_KEY_ENV]: props.signingKey.keyArn,
        ENVOY_BIN: RECONCILE_ENVOY_BIN,
        // The path the rendered clusters name; the proxies' Envoy image has the same file there.
        ...(props.upstreamCaPem ? { GATEWAY_UPSTREAM_CA_FILE: UPSTREAM_CA_PATH } : {}),
      },
    });
    this.grant(props);

    // The stream only wakes the reconciler (it re-reads the whole table), so a poisoned batch
    // is dropped after bounded retries: the next scheduled run catches up within a minute.
    this.function.addEventSource(
      new DynamoEventSource(props.table, {
        startingPosition: lambda.StartingPosition.LATEST,
        batchSize: 100,
        // Coalesces a burst of registrations into one render.
        maxBatchingWindow: Duration.seconds(2),
        retryAttempts: 2,
        bisectBatchOnError: true,
        maxRecordAge: Duration.minutes(5),
        // Entries (and their guards, written in the same transaction) wake it; its own STATE
        // writes must not, or every publish would trigger another run.
        filters: [
          lambda.FilterCriteria.filter({
            dynamodb: { Keys: { pk: { S: lambda.FilterRule.beginsWith(ENTRY_PK_PREFIX) } } },
          }),
        ],
      }),
    );

    // The schedule heals what a stream can miss (a dropped batch, a restored bundle, drift).
    // A tick that finds a run in progress is throttled; it is not retried: the next tick comes.
    this.schedule = new events.Rule(this, 'Schedule', {
      description: 'Reconcile the gateway every minute.',
      schedule: events.Schedule.rate(Duration.minutes(1)),
    });
    this.schedule.addTarget(
      new targets.LambdaFunction(this.function, {
        retryAttempts: 0,
        maxEventAge: Duration.seconds(60),
      }),
    );
  }

  private grant(props: ReconcileFunctionProps): void {
    const fn = this.function;
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'ReadRegistry',
        actions: ['dynamodb:Scan', 'dynamodb:Query', 'dynamodb:GetItem'],
        resources: [props.table.tableArn],
      }),
    );
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'WriteOwnState',
        actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
        resources: [props.table.tableArn],
        conditions: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [STATE_PK] } },
      }),
    );
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'WriteEntryStatus',
        // Status rows go 25 to a BatchWriteItem; the condition holds for every item in a batch.
        actions: ['dynamodb:PutItem', 'dynamodb:BatchWriteItem'],
        resources: [props.table.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${STATUS_PK_PREFIX}*`] } },
      }),
    );
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'PublishBundle',
        actions: ['s3:GetObject', 's3:GetObjectVersion', 's3:PutObject'],
        resources: [props.bucket.arnForObjects(BUNDLE_OBJECT)],
      }),
    );
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'KeepFailedRenders',
        actions: ['s3:PutObject'],
        resources: [props.bucket.arnForObjects(`${FAILED_PREFIX}*`)],
      }),
    );
    // Without ListBucket a HEAD of a missing object answers 403, not 404: the seed and the
    // first run must tell "absent" from "denied". (S3 evaluates it with no s3:prefix for a HEAD,
    // so it cannot be narrowed by prefix.)
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'SeeBundleAbsenceAndHistory',
        actions: ['s3:ListBucket', 's3:ListBucketVersions'],
        resources: [props.bucket.bucketArn],
      }),
    );
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'GatewayMetrics',
        actions: ['cloudwatch:PutMetricData'],
        resources: ['*'],
        conditions: { StringEquals: { 'cloudwatch:namespace': METRIC_NAMESPACE } },
      }),
    );
    // Judged rollouts read each revision's request metrics, which the proxies publish
    // (docs/design.md#rollout). GetMetricData has no resource-level permissions or conditions.
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'ReadRolloutMetrics',
        actions: ['cloudwatch:GetMetricData'],
        resources: ['*'],
      }),
    );
    const stack = Stack.of(this);
    Validations.of(fn).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      reason: 'The AWS-managed basic execution policy grants only CloudWatch Logs writes.',
    });
    Validations.of(fn).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'cloudwatch:PutMetricData has no resource-level permissions (limited to the Gateway namespace by condition); ' +
        'cloudwatch:GetMetricData (the rollouts\' per-revision figures) has neither resource-level permissions nor conditions; ' +
        'dynamodb:ListStreams, added by the stream event source, has none either.',
    });
    Validations.of(fn).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${stack.getLogicalId(
        (props.bucket.node.defaultChild as s3.CfnBucket),
      )}.Arn>/failed/*]`,
      reason: 'Failed renders are written under failed/ with a run-specific key; the prefix is the narrowest scope.',
    });
  }
}
