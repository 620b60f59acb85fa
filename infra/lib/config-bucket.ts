import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { BUNDLE_OBJECT, FAILED_PREFIX } from './metrics';

export interface ConfigBucketProps {
  /** Noncurrent `bundle.json` versions are restore points; keep this many at least. */
  readonly keepVersions?: number;
  /** Days a noncurrent version beyond `keepVersions` is kept. */
  readonly noncurrentVersionDays?: number;
  /** Days a failed render under `failed/` is kept for diagnosis. */
  readonly failedRenderDays?: number;
}

/**
 * The versioned bucket that carries the published config (`bundle.json`) and failed renders
 * (`failed/`), plus the bucket its access logs (and the load balancer's) go to.
 */
export class ConfigBucket extends Construct {
  readonly bucket: s3.Bucket;
  readonly accessLogs: s3.Bucket;

  constructor(scope: Construct, id: string, props: ConfigBucketProps = {}) {
    super(scope, id);
    this.accessLogs = new s3.Bucket(this, 'AccessLogs', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      lifecycleRules: [{ id: 'expire-logs', expiration: Duration.days(365) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(this.accessLogs).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'This is the access-log bucket itself; logging it into itself would loop.',
    });

    this.bucket = new s3.Bucket(this, 'Bucket', {
      versioned: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: this.accessLogs,
      serverAccessLogsPrefix: 'config-bucket/',
      lifecycleRules: [
        {
          id: 'old-bundle-versions',
          noncurrentVersionExpiration: Duration.days(props.noncurrentVersionDays ?? 90),
          noncurrentVersionsToRetain: props.keepVersions ?? 100,
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
        {
          id: 'failed-renders',
          prefix: FAILED_PREFIX,
          expiration: Duration.days(props.failedRenderDays ?? 30),
          noncurrentVersionExpiration: Duration.days(1),
        },
      ],
      // The live config and its history: never deleted with the stack.
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }

  /** ARN of the one object that carries a published config. */
  get bundleArn(): string {
    return this.bucket.arnForObjects(BUNDLE_OBJECT);
  }

  /**
   * Only these roles may write or delete `bundle.json`: the reconciler (publish, seed) and the
   * break-glass operator role (kill switch, restore). An explicit deny beats any identity
   * policy in the account, so an admin-ish deploy role cannot publish an unvalidated config.
   */
  restrictBundleWriters(writers: iam.IRole[]): void {
    this.bucket.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'OnlyReconcilerAndBreakGlassWriteBundle',
        effect: iam.Effect.DENY,
        principals: [new iam.AnyPrincipal()],
        actions: ['s3:PutObject', 's3:DeleteObject', 's3:DeleteObjectVersion', 's3:PutObjectRetention', 's3:PutObjectLegalHold'],
        resources: [this.bundleArn],
        conditions: {
          ArnNotEquals: { 'aws:PrincipalArn': writers.map((r) => r.roleArn) },
        },
      }),
    );
  }
}
