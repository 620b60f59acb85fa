import { Annotations, Duration, Stack, Validations } from 'aws-cdk-lib';
import * as acm from 'aws-cdk-lib/aws-certificatemanager';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecrAssets from 'aws-cdk-lib/aws-ecr-assets';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as cr from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';
import { DEFAULT_CAPACITY, proxyTaskSize } from './capacity';
import { BUNDLE_OBJECT, METRIC_NAMESPACE, PROXIES_PK } from './metrics';
import { envoyArgs, IMAGE_CONTEXT_EXCLUDES } from './pins';
import { RateLimitRedis } from './rate-limit-redis';
import { BundleSigningKey, TRUST_KEYS_ENV } from './signing-key';

/**
 * envoyproxy/ratelimit publishes a tag per commit (its last semver tag, v1.4.0, is from 2019).
 * Pin a digest (`envoyproxy/ratelimit@sha256:…`) through the `rateLimitImage` prop in production.
 */
export const DEFAULT_RATE_LIMIT_IMAGE = 'envoyproxy/ratelimit:3fb70258';

/**
 * Ports inside the task (all containers share the task's network namespace). Everything but the
 * listener is on loopback and inside 15000-15019, the range the registration checks refuse as a
 * backend port (render's PROXY_RESERVED_PORTS): whatever a backend name resolves to, no route
 * reaches the rate-limit service or the sidecars.
 */
export const PROXY_PORTS = {
  listener: 8080,
  rateLimitGrpc: 15001,
  rateLimitHttp: 15002,
  rateLimitDebug: 15003,
  sidecarStatus: 15004,
  rateLimitSidecarStatus: 15005,
} as const;

/** The range of `PROXY_PORTS` the register function refuses as backend ports (render's `PROXY_RESERVED_PORTS`). */
export const PROXY_RESERVED_PORTS = { first: 15000, last: 15019 } as const;

/**
 * Envoy's admin: a Unix socket (bootstrap/envoy.json), in a task volume shared only with the
 * sidecar. No route can reach a socket file; operators reach it with ECS Exec.
 */
export const ENVOY_ADMIN = { volume: 'envoy-admin', dir: '/run/envoy', socket: '/run/envoy/admin.sock' } as const;

/**
 * The checked-in bootstrap for the proxies in front of Envoy that append to X-Forwarded-For:
 * the load balancer alone (1), or a CDN in front of it (2). One too many lets a client pick its
 * own address for per-client-ip limits.
 */
export const BOOTSTRAP_FOR_TRUSTED_PROXIES: Record<number, string> = {
  1: 'envoy.json',
  2: 'envoy.behind-cdn.json',
};

/** Watched directories, shared between a deliverer and its reader as task volumes. */
export const WATCHED_DIRS = {
  clusters: { volume: 'cds', path: '/etc/envoy/cds' },
  routes: { volume: 'rds', path: '/etc/envoy/rds' },
  rateLimit: { volume: 'ratelimit-config', path: '/data/ratelimit/config' },
} as const;

/**
 * The rate-limit volume is mounted one level above the watched directory: envoyproxy/ratelimit
 * loads every file of RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/config, so its sidecar writes the new
 * rules in a sibling directory of the same volume (one file system: the rename is atomic) and
 * renames them in. The sidecar creates both directories.
 */
export const RATE_LIMIT_VOLUME = {
  mount: '/data/ratelimit',
  staging: '/data/ratelimit/staging',
} as const;

export interface ProxyServiceProps {
  /** CPU units and MiB of one task; the stack derives it from its capacity (`capacity.ts`). */
  readonly taskSize?: { readonly cpu: number; readonly memoryMiB: number };
  /** The operator's upstream CA (PEM), built into the Envoy image at /etc/gateway/upstream-ca.pem. */
  readonly upstreamCaPem?: string;
  readonly vpc: ec2.IVpc;
  readonly bucket: s3.IBucket;
  /**
   * The sidecars deliver only bundles signed by one of its trusted keys (GATEWAY_TRUST_KMS_KEYS;
   * the task role may `kms:GetPublicKey` on them, and never `kms:Sign`).
   */
  readonly signingKey: BundleSigningKey;
  /**
   * The registry table: each task's sidecar writes its proxy report there (its own row in the
   * `PROXIES` partition, docs/design.md#proxy-reports). Without it nothing is reported.
   */
  readonly table?: dynamodb.ITable;
  readonly baseDomain: string;
  readonly envoyVersion: string;
  readonly repoRoot: string;
  /** Load balancer access logs go here (prefix `alb/`). */
  readonly accessLogs: s3.IBucket;
  /** TLS certificate for the listener (the base domain's wildcard). Without it: HTTP only. */
  readonly certificateArn?: string;
  /** Who may reach the load balancer; default anywhere (put a CDN prefix list here). */
  readonly ingressPeer?: ec2.IPeer;
  readonly desiredCount?: number;
  readonly rateLimitImage?: string;
  readonly redisNodeType?: string;
  /**
   * Where backends may be: the proxy tasks' egress is open to these CIDR blocks only (plus the
   * AWS endpoints they need). Default: the VPC's own CIDR. The same list is the register and
   * reconcile functions' GATEWAY_BACKEND_CIDRS.
   */
  readonly backendCidrs?: string[];
  /** Proxies in front of Envoy appending to X-Forwarded-For: 1 (load balancer alone, default) or 2 (a CDN too). */
  readonly trustedProxies?: number;
  /**
   * Create the interface endpoints the tasks need (ECR, CloudWatch Logs and metrics, Secrets
   * Manager, SSM messages for ECS Exec, KMS for the sidecars' trusted public keys). Default
   * true; set false when the VPC has them already.
   */
  readonly interfaceEndpoints?: boolean;
}

/**
 * The proxy fleet: ECS on Fargate behind an Application Load Balancer. Each task runs Envoy,
 * the sidecar that delivers bundles into Envoy's watched directories, the rate-limit service
 * and the sidecar that delivers its rules. Counters live in one shared Redis.
 */
export class ProxyService extends Construct {
  readonly cluster: ecs.Cluster;
  readonly taskDefinition: ecs.FargateTaskDefinition;
  readonly service: ecs.FargateService;
  readonly loadBalancer: elbv2.ApplicationLoadBalancer;
  readonly redis: RateLimitRedis;
  readonly taskSecurityGroup: ec2.SecurityGroup;

  constructor(scope: Construct, id: string, props: ProxyServiceProps) {
    super(scope, id);
    this.cluster = new ecs.Cluster(this, 'Cluster', {
      vpc: props.vpc,
      containerInsightsV2: ecs.ContainerInsights.ENABLED,
    });
    this.taskSecurityGroup = new ec2.SecurityGroup(this, 'TaskSecurityGroup', {
      vpc: props.vpc,
      description: 'Gateway proxy tasks',
      // Egress is opened rule by rule: the backends' networks and the AWS endpoints.
      allowAllOutbound: false,
    });
    this.redis = new RateLimitRedis(this, 'Redis', {
      vpc: props.vpc,
      clients: this.taskSecurityGroup,
      nodeType: props.redisNodeType,
    });
    this.restrictEgress(props);
    this.taskDefinition = this.buildTask(props);

    this.service = new ecs.FargateService(this, 'Service', {
      cluster: this.cluster,
      taskDefinition: this.taskDefinition,
      desiredCount: props.desiredCount ?? 2,
      minHealthyPercent: 100,
      maxHealthyPercent: 200,
      circuitBreaker: { enable: true, rollback: true },
      securityGroups: [this.taskSecurityGroup],
      vpcSubnets: { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS },
      assignPublicIp: false,
      // Kill switch level 1 is a POST to Envoy's admin socket: operators reach it with ECS Exec
      // into the envoy container (infra/README.md).
      enableExecuteCommand: true,
      healthCheckGracePeriod: Duration.seconds(60),
    });

    this.loadBalancer = this.buildLoadBalancer(props);
  }

  /** Backend CIDRs for this deployment (the functions enforce the same list). */
  static backendCidrs(props: Pick<ProxyServiceProps, 'vpc' | 'backendCidrs'>): string[] {
    return props.backendCidrs ?? [props.vpc.vpcCidrBlock];
  }

  /** The checked-in bootstrap for this many trusted proxies; anything else is refused at synth. */
  static bootstrapFile(trustedProxies: number = 1): string {
    const file = BOOTSTRAP_FOR_TRUSTED_PROXIES[trustedProxies];
    if (!file) {
      throw new Error(
        `trustedProxies ${trustedProxies}: the gateway ships bootstraps for 1 (load balancer alone) or 2 (a CDN in front of it)`,
      );
    }
    return file;
  }

  /**
   * Envoy re-resolves backend names at run time, so the registration checks cannot see a name
   * repointed later (DNS rebinding). The network closes that: the tasks reach the backend CIDRs,
   * Redis, S3 (its gateway endpoint's prefix list) and the interface endpoints, nothing else.
   */
  /**
   * HTTPS egress to the AWS `service` (`s3`, `dynamodb`) through its gateway endpoint: the
   * region's managed prefix list, looked up by a custom resource with construct id `id`.
   */
  private allowGatewayEndpoint(id: string, service: string, name: string, description: string): void {
    const region = Stack.of(this).region;
    const prefixList = new cr.AwsCustomResource(this, id, {
      onUpdate: {
        service: 'EC2',
        action: 'describeManagedPrefixLists',
        parameters: { Filters: [{ Name: 'prefix-list-name', Values: [`com.amazonaws.${region}.${service}`] }] },
        physicalResourceId: cr.PhysicalResourceId.of(`${service}-prefix-list-${region}`),
        outputPaths: ['PrefixLists.0.PrefixListId'],
      },
      policy: cr.AwsCustomResourcePolicy.fromSdkCalls({ resources: cr.AwsCustomResourcePolicy.ANY_RESOURCE }),
      installLatestAwsSdk: false,
    });
    this.taskSecurityGroup.addEgressRule(
      ec2.Peer.prefixList(prefixList.getResponseField('PrefixLists.0.PrefixListId')),
      ec2.Port.tcp(443),
      description,
    );
    Validations.of(prefixList).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: `ec2:DescribeManagedPrefixLists has no resource-level permissions; it reads the ${name} prefix list id.`,
    });
  }

  private restrictEgress(props: ProxyServiceProps): void {
    const sg = this.taskSecurityGroup;
    for (const cidr of ProxyService.backendCidrs(props)) {
      const peer = cidr.includes(':') ? ec2.Peer.ipv6(cidr) : ec2.Peer.ipv4(cidr);
      sg.addEgressRule(peer, ec2.Port.allTcp(), 'backends (GATEWAY_BACKEND_CIDRS)');
    }
    sg.addEgressRule(this.redis.securityGroup, ec2.Port.tcp(RateLimitRedis.PORT), 'rate-limit Redis');

    this.allowGatewayEndpoint('S3PrefixList', 's3', 'S3', 'S3 (the bundle, image layers) through the gateway endpoint');
    if (props.table) {
      this.allowGatewayEndpoint(
        'DynamoDbPrefixList',
        'dynamodb',
        'DynamoDB',
        'DynamoDB (proxy reports) through the gateway endpoint',
      );
    }
    // The custom resource's function is a stack-wide singleton.
    const provider = Stack.of(this).node.tryFindChild('AWS679f53fac002430cb0da5b7982bd2287');
    if (provider) {
      Validations.of(provider).acknowledge({
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
        reason: 'The AWS-managed basic execution policy grants only CloudWatch Logs writes.',
      });
    }
    // The VPC's S3 gateway endpoint carries this traffic (the stack's own VPC has one; a VPC
    // brought in needs one too, infra/README.md).

    if (props.interfaceEndpoints ?? true) {
      const endpoints = new ec2.SecurityGroup(this, 'EndpointSecurityGroup', {
        vpc: props.vpc,
        description: 'Interface endpoints the proxy tasks use',
        allowAllOutbound: false,
      });
      endpoints.addIngressRule(sg, ec2.Port.tcp(443), 'proxy tasks');
      sg.addEgressRule(endpoints, ec2.Port.tcp(443), 'AWS interface endpoints');
      const services: Record<string, ec2.InterfaceVpcEndpointAwsService> = {
        EcrApi: ec2.InterfaceVpcEndpointAwsService.ECR,
        EcrDocker: ec2.InterfaceVpcEndpointAwsService.ECR_DOCKER,
        Logs: ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_LOGS,
        Monitoring: ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_MONITORING,
        SecretsManager: ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER,
        SsmMessages: ec2.InterfaceVpcEndpointAwsService.SSM_MESSAGES,
        // The sidecars fetch the trusted public keys (kms:GetPublicKey) at start.
        Kms: ec2.InterfaceVpcEndpointAwsService.KMS,
      };
      for (const [id, service] of Object.entries(services)) {
        props.vpc.addInterfaceEndpoint(`Proxy${id}Endpoint`, {
          service,
          securityGroups: [endpoints],
          // Only the proxy tasks (the rule above), not the whole VPC.
          open: false,
          subnets: { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS },
        });
      }
    }
  }

  private buildTask(props: ProxyServiceProps): ecs.FargateTaskDefinition {
    // Sized from the memory envelope (capacity.ts, docs/design.md#memory-envelope).
    const size = props.taskSize ?? proxyTaskSize(DEFAULT_CAPACITY);
    const task = new ecs.FargateTaskDefinition(this, 'Task', {
      cpu: size.cpu,
      memoryLimitMiB: size.memoryMiB,
      runtimePlatform: {
        cpuArchitecture: ecs.CpuArchitecture.X86_64,
        operatingSystemFamily: ecs.OperatingSystemFamily.LINUX,
      },
      volumes: [...Object.values(WATCHED_DIRS).map((d) => d.volume), ENVOY_ADMIN.volume].map((name) => ({ name })),
    });
    this.grantBundleRead(task.taskRole, props.bucket);
    props.signingKey.grantVerify(task.taskRole);
    if (props.table) {
      ProxyService.grantProxyReports(task.taskRole, props.table);
    }

    const logGroup = new logs.LogGroup(this, 'Logs', { retention: logs.RetentionDays.THREE_MONTHS });
    const logging = (prefix: string) => ecs.LogDrivers.awsLogs({ logGroup, streamPrefix: prefix });
    const sidecarImage = ecs.ContainerImage.fromAsset(props.repoRoot, {
      file: 'sidecar/Dockerfile',
      platform: ecrAssets.Platform.LINUX_AMD64,
      exclude: IMAGE_CONTEXT_EXCLUDES,
    });
    // Both sidecars verify every bundle against the trusted keys before delivering it; neither
    // is ever given --allow-unsigned / GATEWAY_ALLOW_UNSIGNED.
    const sidecarEnv = {
      GATEWAY_BUCKET: props.bucket.bucketName,
      GATEWAY_DOMAIN: props.baseDomain,
      [TRUST_KEYS_ENV]: props.signingKey.trustList,
    };
    const probe = (port: number): ecs.HealthCheck => ({
      command: ['CMD', '/usr/local/bin/gateway-sidecar', '--probe', `http://127.0.0.1:${port}/healthz`],
      interval: Duration.seconds(5),
      timeout: Duration.seconds(3),
      retries: 3,
      startPeriod: Duration.seconds(30),
    });
    // Both sidecars poll the bucket every 15 s and answer /healthz (what `probe` asks) on their
    // own loopback status port.
    const sidecarCommand = (statusPort: number, ...deliveryFlags: string[]): string[] => [
      'gateway-sidecar',
      '--bucket', props.bucket.bucketName,
      ...deliveryFlags,
      '--interval', '15',
      '--listen', `127.0.0.1:${statusPort}`,
    ];

    // The sidecar writes the first bundle's files before Envoy exists (Envoy exits at start if
    // a watched file is missing), so its /healthz means "delivered", not "Envoy applied it".
    const sidecar = task.addContainer('sidecar', {
      image: sidecarImage,
      essential: true,
      command: sidecarCommand(
        PROXY_PORTS.sidecarStatus,
        '--clusters-dir', WATCHED_DIRS.clusters.path,
        '--routes-dir', WATCHED_DIRS.routes.path,
        '--envoy-admin', `unix:${ENVOY_ADMIN.socket}`,
      ),
      // Reports go to the registry table; the proxy id defaults to the ECS task id.
      environment: props.table ? { ...sidecarEnv, GATEWAY_TABLE: props.table.tableName } : sidecarEnv,
      healthCheck: probe(PROXY_PORTS.sidecarStatus),
      logging: logging('sidecar'),
    });
    sidecar.addMountPoints(
      { sourceVolume: WATCHED_DIRS.clusters.volume, containerPath: WATCHED_DIRS.clusters.path, readOnly: false },
      { sourceVolume: WATCHED_DIRS.routes.volume, containerPath: WATCHED_DIRS.routes.path, readOnly: false },
      // The sidecar reads Envoy's stats over the admin socket (and opens the directory for Envoy).
      { sourceVolume: ENVOY_ADMIN.volume, containerPath: ENVOY_ADMIN.dir, readOnly: false },
    );

    const envoy = task.addContainer('envoy', {
      image: ecs.ContainerImage.fromAsset(props.repoRoot, {
        file: 'bootstrap/Dockerfile.envoy',
        buildArgs: {
          ENVOY_VERSION: props.envoyVersion,
          BOOTSTRAP: ProxyService.bootstrapFile(props.trustedProxies),
          ...(props.upstreamCaPem ? { UPSTREAM_CA: props.upstreamCaPem } : {}),
        },
        platform: ecrAssets.Platform.LINUX_AMD64,
        exclude: IMAGE_CONTEXT_EXCLUDES,
      }),
      essential: true,
      // bootstrap/envoy.args; the image's entrypoint runs envoy when the first argument is a flag.
      command: envoyArgs(props.repoRoot),
      portMappings: [{ containerPort: PROXY_PORTS.listener, protocol: ecs.Protocol.TCP }],
      ulimits: [{ name: ecs.UlimitName.NOFILE, softLimit: 65536, hardLimit: 65536 }],
      logging: logging('envoy'),
    });
    envoy.addMountPoints(
      { sourceVolume: WATCHED_DIRS.clusters.volume, containerPath: WATCHED_DIRS.clusters.path, readOnly: true },
      { sourceVolume: WATCHED_DIRS.routes.volume, containerPath: WATCHED_DIRS.routes.path, readOnly: true },
      { sourceVolume: ENVOY_ADMIN.volume, containerPath: ENVOY_ADMIN.dir, readOnly: false },
    );
    envoy.addContainerDependencies({ container: sidecar, condition: ecs.ContainerDependencyCondition.HEALTHY });

    const rateLimitSidecar = task.addContainer('ratelimit-sidecar', {
      image: sidecarImage,
      // Limits fail open when the limiter is down (failure_mode_deny: false): losing the
      // limiter must not take the task's traffic with it. ECS restarts it in place.
      essential: false,
      enableRestartPolicy: true,
      command: sidecarCommand(
        PROXY_PORTS.rateLimitSidecarStatus,
        '--ratelimit-dir', WATCHED_DIRS.rateLimit.path,
        '--staging-dir', RATE_LIMIT_VOLUME.staging,
      ),
      environment: sidecarEnv,
      healthCheck: probe(PROXY_PORTS.rateLimitSidecarStatus),
      logging: logging('ratelimit-sidecar'),
    });
    rateLimitSidecar.addMountPoints({
      sourceVolume: WATCHED_DIRS.rateLimit.volume,
      containerPath: RATE_LIMIT_VOLUME.mount,
      readOnly: false,
    });

    const rateLimit = task.addContainer('ratelimit', {
      image: ecs.ContainerImage.fromRegistry(props.rateLimitImage ?? DEFAULT_RATE_LIMIT_IMAGE),
      essential: false,
      enableRestartPolicy: true,
      command: ['/bin/ratelimit'],
      environment: {
        // Rules: every file of RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/config, reloaded on a move
        // into it. Dot files are skipped too, so a temp file never counts even if one is
        // written there (the sidecar writes its own in the staging directory).
        RUNTIME_ROOT: '/data',
        RUNTIME_SUBDIRECTORY: 'ratelimit',
        RUNTIME_WATCH_ROOT: 'false',
        RUNTIME_IGNOREDOTFILES: 'true',
        USE_STATSD: 'false',
        LOG_LEVEL: 'info',
        // Everything on loopback: Envoy is its only client.
        GRPC_HOST: '127.0.0.1',
        GRPC_PORT: String(PROXY_PORTS.rateLimitGrpc),
        HOST: '127.0.0.1',
        PORT: String(PROXY_PORTS.rateLimitHttp),
        DEBUG_HOST: '127.0.0.1',
        DEBUG_PORT: String(PROXY_PORTS.rateLimitDebug),
        REDIS_SOCKET_TYPE: 'tcp',
        REDIS_URL: this.redis.url,
        REDIS_TLS: 'true',
      },
      secrets: { REDIS_AUTH: ecs.Secret.fromSecretsManager(this.redis.authToken) },
      logging: logging('ratelimit'),
    });
    rateLimit.addMountPoints({
      sourceVolume: WATCHED_DIRS.rateLimit.volume,
      containerPath: RATE_LIMIT_VOLUME.mount,
      readOnly: true,
    });
    rateLimit.addContainerDependencies({
      container: rateLimitSidecar,
      condition: ecs.ContainerDependencyCondition.HEALTHY,
    });

    Validations.of(task.obtainExecutionRole()).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'ecr:GetAuthorizationToken, which pulling the image assets needs, has no resource-level permissions.',
    });
    Validations.of(task).acknowledge({
      id: 'AwsSolutions-ECS2',
      reason:
        'The environment variables are non-secret settings (bucket name, domain, trusted key ARNs, loopback ports); the one secret, ' +
        'the Redis AUTH token, comes from Secrets Manager.',
    });
    return task;
  }

  /**
   * The sidecar's proxy report: PutItem on the `PROXIES` partition of the registry table, and
   * nothing else there (no read, no other row).
   */
  static grantProxyReports(role: iam.IRole, table: dynamodb.ITable): void {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'WriteProxyReport',
        actions: ['dynamodb:PutItem'],
        resources: [table.tableArn],
        conditions: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [PROXIES_PK] } },
      }),
    );
  }

  /**
   * The sidecars read the published bundle and nothing else. Besides verifying it (the trusted
   * keys' `kms:GetPublicKey`, granted by the signing key), two more permissions ride on the
   * task role: metrics (ProxyConfigRejected, RateLimiterErrors, limited to the Gateway
   * namespace) and the ECS Exec channel (added by the service) for kill switch level 1.
   */
  private grantBundleRead(role: iam.IRole, bucket: s3.IBucket): void {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ReadBundle',
        actions: ['s3:GetObject', 's3:GetObjectVersion'],
        resources: [bucket.arnForObjects(BUNDLE_OBJECT)],
      }),
    );
    // A HEAD of a missing bundle answers 404 (not 403) only with ListBucket; S3 evaluates it
    // with no s3:prefix for a HEAD, so it cannot be narrowed by prefix.
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'SeeBundleAbsence',
        actions: ['s3:ListBucket'],
        resources: [bucket.bucketArn],
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'GatewayMetrics',
        actions: ['cloudwatch:PutMetricData'],
        resources: ['*'],
        conditions: { StringEquals: { 'cloudwatch:namespace': METRIC_NAMESPACE } },
      }),
    );
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'cloudwatch:PutMetricData (limited to the Gateway namespace by condition) and the ssmmessages channel of ' +
        'ECS Exec have no resource-level permissions.',
    });
  }

  private buildLoadBalancer(props: ProxyServiceProps): elbv2.ApplicationLoadBalancer {
    const lbSecurityGroup = new ec2.SecurityGroup(this, 'LoadBalancerSecurityGroup', {
      vpc: props.vpc,
      description: 'Gateway load balancer',
      allowAllOutbound: false,
    });
    const peer = props.ingressPeer ?? ec2.Peer.anyIpv4();
    const lb = new elbv2.ApplicationLoadBalancer(this, 'LoadBalancer', {
      vpc: props.vpc,
      internetFacing: true,
      securityGroup: lbSecurityGroup,
      vpcSubnets: { subnetType: ec2.SubnetType.PUBLIC },
      dropInvalidHeaderFields: true,
    });
    lb.logAccessLogs(props.accessLogs, 'alb');
    if (!props.ingressPeer) {
      Validations.of(lbSecurityGroup).acknowledge({
        id: 'AwsSolutions-EC23',
        reason:
          'The gateway is the public entry point of the teams\' APIs; set ingressPeer (e.g. a CDN prefix list) to narrow it.',
      });
    }

    const targetGroup = new elbv2.ApplicationTargetGroup(this, 'Targets', {
      vpc: props.vpc,
      port: PROXY_PORTS.listener,
      protocol: elbv2.ApplicationProtocol.HTTP,
      targetType: elbv2.TargetType.IP,
      deregistrationDelay: Duration.seconds(30),
      // GET /healthz on a host no team holds (the load balancer sends the target's IP): the
      // catch-all answers 200 under both kill-switch levels, so a kill switch never gets the
      // tasks replaced (which would also forget a level-1 switch).
      healthCheck: {
        path: '/healthz',
        healthyHttpCodes: '200',
        interval: Duration.seconds(10),
        healthyThresholdCount: 2,
        unhealthyThresholdCount: 3,
      },
      targets: [
        this.service.loadBalancerTarget({ containerName: 'envoy', containerPort: PROXY_PORTS.listener }),
      ],
    });

    if (props.certificateArn) {
      lb.addListener('Https', {
        port: 443,
        protocol: elbv2.ApplicationProtocol.HTTPS,
        certificates: [acm.Certificate.fromCertificateArn(this, 'Certificate', props.certificateArn)],
        sslPolicy: elbv2.SslPolicy.RECOMMENDED_TLS,
        defaultTargetGroups: [targetGroup],
        open: false,
      });
      lb.addRedirect({ sourcePort: 80, targetPort: 443, open: false });
      lbSecurityGroup.addIngressRule(peer, ec2.Port.tcp(443), 'HTTPS');
      lbSecurityGroup.addIngressRule(peer, ec2.Port.tcp(80), 'HTTP (redirects to HTTPS)');
    } else {
      Annotations.of(this).addWarningV2(
        'gateway:http-only',
        'No certificateArn: the gateway listens on plain HTTP. Set certificateArn for production.',
      );
      lb.addListener('Http', { port: 80, defaultTargetGroups: [targetGroup], open: false });
      lbSecurityGroup.addIngressRule(peer, ec2.Port.tcp(80), 'HTTP');
    }
    lbSecurityGroup.addEgressRule(this.taskSecurityGroup, ec2.Port.tcp(PROXY_PORTS.listener), 'to Envoy');
    this.taskSecurityGroup.addIngressRule(lbSecurityGroup, ec2.Port.tcp(PROXY_PORTS.listener), 'from the load balancer');
    return lb;
  }
}
