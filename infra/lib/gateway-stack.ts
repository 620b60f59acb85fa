import { CfnOutput, Stack, StackProps } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { GatewayAlarms } from './alarms';
import { GatewayDashboard } from './dashboard';
import { BreakGlassRole } from './break-glass-role';
import { ConfigBucket } from './config-bucket';
import { capacitySettings, DEFAULT_CAPACITY, GatewayCapacity, proxyTaskSize, reconcileMemoryMiB } from './capacity';
import { envoyVersion, REPO_ROOT } from './pins';
import { caCostShare, readUpstreamCa } from './upstream-ca';
import { ProxyService } from './proxy-service';
import { ReconcileFunction } from './reconcile-function';
import { RegisterFunction } from './register-function';
import { RegistryTable } from './registry-table';
import { Seed } from './seed';
import { BundleSigningKey } from './signing-key';

export interface GatewayStackProps extends StackProps {
  /** Base domain teams' hosts go in front of, e.g. `api.example.com` (GATEWAY_DOMAIN). */
  readonly baseDomain: string;
  /**
   * Accounts whose stacks may register routes: one registration topic each. Which teams an
   * account may act for is granted in the registry (`gatewayctl grant`).
   */
  readonly teamAccounts?: string[];
  /** cargo-lambda output for the register function; default `<repo>/target/lambda/register`. */
  readonly registerCodePath?: string;
  /** Repository root (image build context, `bootstrap/ENVOY_VERSION`). */
  readonly repoRoot?: string;
  /** TLS certificate of the listener; without it the gateway serves plain HTTP. */
  readonly certificateArn?: string;
  /** An existing VPC; default a new two-AZ VPC with flow logs. */
  readonly vpc?: ec2.IVpc;
  readonly natGateways?: number;
  readonly ingressPeer?: ec2.IPeer;
  readonly desiredCount?: number;
  readonly rateLimitImage?: string;
  /** Who may assume the break-glass role; default this account's principals with MFA. */
  readonly operatorPrincipal?: iam.IPrincipal;
  /** CIDR blocks backends may be in: proxy egress and GATEWAY_BACKEND_CIDRS. Default: the VPC's. */
  readonly backendCidrs?: string[];
  /** Domain suffixes backend names must be under (GATEWAY_BACKEND_DOMAINS). Default: any. */
  readonly backendDomains?: string[];
  /** Proxies in front of Envoy appending to X-Forwarded-For: 1 (the load balancer, default) or 2. */
  readonly trustedProxies?: number;
  /**
   * The largest registry the gateway must hold (docs/design.md#memory-envelope); default
   * 20,000 routes and 2,500 clusters. Sizes the reconcile function and the proxy task, and the
   * functions refuse registrations past it.
   */
  readonly capacity?: GatewayCapacity;
  /**
   * The CA certificates https backends must chain to: a path to a PEM file (built into the
   * reconcile and Envoy images at /etc/gateway/upstream-ca.pem), or 'system' for the images'
   * system bundle. Every https cluster parses it, so a small file keeps the memory envelope small
   * (docs/design.md#memory-envelope).
   */
  readonly upstreamCa: string;
  /** Largest route `timeout` teams may ask for (GATEWAY_MAX_ROUTE_TIMEOUT), e.g. `"60s"`. Default 60 s. */
  readonly maxRouteTimeout?: string;
  /** Largest `retries.attempts` teams may ask for (GATEWAY_MAX_RETRY_ATTEMPTS). Default 3. */
  readonly maxRetryAttempts?: number;
  /**
   * Token issuers whose keys the proxies may fetch for teams' `jwt` providers
   * (GATEWAY_JWT_ISSUERS): each an issuer URL, or `ISSUER|JWKS_URL_PREFIX` when the key set lives
   * elsewhere. Teams of other issuers give their public keys inline. Default none. The proxies'
   * egress must reach these hosts (backendCidrs).
   */
  readonly jwtIssuers?: string[];
  /** Alias of the bundle signing key; default `alias/gateway-bundles` (the signer's default). */
  readonly signingKeyAlias?: string;
  /**
   * KMS key ARNs the sidecars trust besides the stack's signing key (GATEWAY_TRUST_KMS_KEYS):
   * a rotation's new key goes here first (lib/signing-key.ts).
   */
  readonly additionalTrustedKeyArns?: string[];
}

/** The whole shared gateway: registry, functions, bucket, alarms and the proxy fleet. */
export class GatewayStack extends Stack {
  readonly registry: RegistryTable;
  readonly config: ConfigBucket;
  readonly register: RegisterFunction;
  readonly reconcile: ReconcileFunction;
  readonly seed: Seed;
  readonly alarms: GatewayAlarms;
  readonly proxy: ProxyService;
  readonly breakGlass: BreakGlassRole;
  readonly signing: BundleSigningKey;

  constructor(scope: Construct, id: string, props: GatewayStackProps) {
    super(scope, id, props);
    const repoRoot = props.repoRoot ?? REPO_ROOT;
    const pinned = envoyVersion(repoRoot);

    const key = new kms.Key(this, 'TopicKey', {
      description: 'Encrypts the gateway registration and alarm topics',
      enableKeyRotation: true,
    });
    this.registry = new RegistryTable(this, 'Registry');
    this.config = new ConfigBucket(this, 'Config');
    this.signing = new BundleSigningKey(this, 'BundleSigning', {
      aliasName: props.signingKeyAlias,
      additionalTrustedKeyArns: props.additionalTrustedKeyArns,
    });
    this.register = new RegisterFunction(this, 'Register', {
      table: this.registry.table,
      baseDomain: props.baseDomain,
      codePath: props.registerCodePath ?? `${repoRoot}/target/lambda/register`,
      teamAccounts: props.teamAccounts ?? [],
      key,
      bucket: this.config.bucket,
    });
    const capacity = props.capacity ?? DEFAULT_CAPACITY;
    const upstreamCa = readUpstreamCa(props.upstreamCa);
    const caShare = caCostShare(upstreamCa);
    const upstreamCaPem = upstreamCa.kind === 'file' ? upstreamCa.pem : undefined;
    this.reconcile = new ReconcileFunction(this, 'Reconcile', {
      table: this.registry.table,
      bucket: this.config.bucket,
      signingKey: this.signing.key,
      baseDomain: props.baseDomain,
      envoyVersion: pinned,
      repoRoot,
      memorySize: reconcileMemoryMiB(capacity, caShare),
      upstreamCaPem,
    });
    this.seed = new Seed(this, 'Seed', { reconcile: this.reconcile.function });
    this.alarms = new GatewayAlarms(this, 'Alarms', {
      register: this.register.function,
      reconcile: this.reconcile.function,
      key,
    });
    new GatewayDashboard(this, 'Dashboard', { alarms: this.alarms.alarms });

    const vpc = props.vpc ?? this.buildVpc(props.natGateways ?? 2);
    this.proxy = new ProxyService(this, 'Proxy', {
      vpc,
      bucket: this.config.bucket,
      signingKey: this.signing,
      table: this.registry.table,
      baseDomain: props.baseDomain,
      envoyVersion: pinned,
      repoRoot,
      accessLogs: this.config.accessLogs,
      certificateArn: props.certificateArn,
      ingressPeer: props.ingressPeer,
      desiredCount: props.desiredCount,
      rateLimitImage: props.rateLimitImage,
      backendCidrs: props.backendCidrs,
      trustedProxies: props.trustedProxies,
      taskSize: proxyTaskSize(capacity, caShare),
      upstreamCaPem,
    });
    // Registration and every reconcile hold backends to what the proxies' egress allows, the
    // registry to the memory envelope the functions and proxies are sized for, and routes to the
    // operators' bounds.
    const backendRules: Record<string, string> = {
      GATEWAY_BACKEND_CIDRS: ProxyService.backendCidrs({ vpc, backendCidrs: props.backendCidrs }).join(','),
      GATEWAY_BACKEND_DOMAINS: (props.backendDomains ?? []).join(','),
      ...capacitySettings(capacity),
      GATEWAY_MAX_ROUTE_TIMEOUT: props.maxRouteTimeout ?? '60s',
      GATEWAY_MAX_RETRY_ATTEMPTS: String(props.maxRetryAttempts ?? 3),
      GATEWAY_JWT_ISSUERS: (props.jwtIssuers ?? []).join(','),
    };
    for (const fn of [this.register.function, this.reconcile.function]) {
      for (const [name, value] of Object.entries(backendRules)) {
        fn.addEnvironment(name, value);
      }
    }
    // No proxy starts before a bundle exists.
    this.proxy.service.node.addDependency(this.seed);

    this.breakGlass = new BreakGlassRole(this, 'BreakGlass', {
      bucket: this.config.bucket,
      table: this.registry.table,
      cluster: this.proxy.cluster,
      service: this.proxy.service,
      assumedBy: props.operatorPrincipal,
    });
    const reconcileRole = this.reconcile.function.role;
    if (!reconcileRole) {
      throw new Error('reconcile function has no execution role');
    }
    // The same two roles write bundle.json and sign it: the bucket policy keeps other writers
    // out, the key policy keeps other signers out, and the sidecars deliver only signed bundles.
    this.config.restrictBundleWriters([reconcileRole, this.breakGlass.role]);
    this.signing.allowOnlySigners([reconcileRole, this.breakGlass.role]);

    this.outputs();
  }

  private buildVpc(natGateways: number): ec2.Vpc {
    const vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: 2,
      natGateways,
      subnetConfiguration: [
        { name: 'public', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 },
        { name: 'private', subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 22 },
      ],
      flowLogs: {
        all: {
          destination: ec2.FlowLogDestination.toCloudWatchLogs(
            new logs.LogGroup(this, 'FlowLogs', { retention: logs.RetentionDays.ONE_MONTH }),
          ),
          trafficType: ec2.FlowLogTrafficType.REJECT,
        },
      },
    });
    // The sidecars poll S3 every 15 s from every task: keep that off the NAT gateways.
    vpc.addGatewayEndpoint('S3', { service: ec2.GatewayVpcEndpointAwsService.S3 });
    // Each sidecar reports what it serves to the registry table (docs/design.md#proxy-reports).
    vpc.addGatewayEndpoint('DynamoDb', { service: ec2.GatewayVpcEndpointAwsService.DYNAMODB });
    return vpc;
  }

  private outputs(): void {
    const out = (id: string, value: string, description: string) =>
      new CfnOutput(this, id, { value, description, exportName: `${this.stackName}-${id}` });
    out('RegisterFunctionArn', this.register.function.functionArn, 'ExposeOnGateway serviceToken (stacks of this account)');
    out('RegistrationTopicNamePrefix', this.register.topicNamePrefix, 'ExposeOnGateway registrationTopics prefix (team accounts: <prefix>-register-<account>)');
    out('RegistryTableName', this.registry.table.tableName, 'GATEWAY_TABLE');
    out('ConfigBucketName', this.config.bucket.bucketName, 'GATEWAY_BUCKET');
    out('ReconcileFunctionName', this.reconcile.function.functionName, 'Reconciler (gatewayctl reconcile runs the same code)');
    out('BreakGlassRoleArn', this.breakGlass.role.roleArn, 'Operator role for kill switch and restore');
    out('BundleSigningKeyArn', this.signing.key.keyArn, 'GATEWAY_SIGNING_KEY (gatewayctl signs kill switches and restores with it)');
    out('AlarmTopicArn', this.alarms.topic.topicArn, 'Subscribe on-call here');
    out('ProxyClusterName', this.proxy.cluster.clusterName, 'ECS cluster of the proxies');
    out('ProxyServiceName', this.proxy.service.serviceName, 'ECS service of the proxies');
    out('LoadBalancerDnsName', this.proxy.loadBalancer.loadBalancerDnsName, 'Point *.<baseDomain> here (alias record)');
  }
}
