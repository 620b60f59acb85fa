import { Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as elasticache from 'aws-cdk-lib/aws-elasticache';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';

export interface RateLimitRedisProps {
  readonly vpc: ec2.IVpc;
  /** Only these may connect (the proxy tasks). */
  readonly clients: ec2.ISecurityGroup;
  readonly nodeType?: string;
}

/**
 * The rate-limit service's counters. One Redis shared by every proxy task, so a global limit
 * is global; Multi-AZ with encryption at rest and in transit, AUTH from Secrets Manager.
 */
export class RateLimitRedis extends Construct {
  /** Not 6379: a default port invites every scanner; the proxy tasks are told this one. */
  static readonly PORT = 6380;
  readonly securityGroup: ec2.SecurityGroup;
  readonly authToken: secretsmanager.Secret;
  readonly replicationGroup: elasticache.CfnReplicationGroup;

  constructor(scope: Construct, id: string, props: RateLimitRedisProps) {
    super(scope, id);
    this.securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc: props.vpc,
      description: 'Rate-limit Redis: reachable from the proxy tasks only',
      allowAllOutbound: false,
    });
    this.securityGroup.addIngressRule(props.clients, ec2.Port.tcp(RateLimitRedis.PORT), 'proxy tasks');

    this.authToken = new secretsmanager.Secret(this, 'AuthToken', {
      description: 'AUTH token of the gateway rate-limit Redis',
      // ElastiCache AUTH tokens: 16-128 printable characters without @, " or /.
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
    });
    Validations.of(this.authToken).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'Rotating an ElastiCache AUTH token takes a ROTATE/SET sequence on the replication group and a restart of ' +
        'the rate-limit containers; it is an operator procedure (infra/README.md), not a Secrets Manager rotation.',
    });

    const subnets = new elasticache.CfnSubnetGroup(this, 'Subnets', {
      description: 'Gateway rate-limit Redis subnets',
      subnetIds: props.vpc.selectSubnets({ subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS }).subnetIds,
    });
    this.replicationGroup = new elasticache.CfnReplicationGroup(this, 'ReplicationGroup', {
      replicationGroupDescription: 'Gateway rate-limit counters',
      engine: 'redis',
      engineVersion: '7.1',
      cacheNodeType: props.nodeType ?? 'cache.t4g.small',
      numCacheClusters: 2,
      automaticFailoverEnabled: true,
      multiAzEnabled: true,
      atRestEncryptionEnabled: true,
      transitEncryptionEnabled: true,
      transitEncryptionMode: 'required',
      authToken: this.authToken.secretValue.unsafeUnwrap(),
      port: RateLimitRedis.PORT,
      cacheSubnetGroupName: subnets.ref,
      securityGroupIds: [this.securityGroup.securityGroupId],
    });
  }

  /** `host:port` as envoyproxy/ratelimit's REDIS_URL expects it. */
  get url(): string {
    return `${this.replicationGroup.attrPrimaryEndPointAddress}:${this.replicationGroup.attrPrimaryEndPointPort}`;
  }
}
