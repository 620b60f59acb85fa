import { Match, Template } from 'aws-cdk-lib/assertions';
import * as fs from 'fs';
import * as path from 'path';
import { GatewayStack } from '../lib/gateway-stack';
import { envoyArgs, envoyVersion, REPO_ROOT } from '../lib/pins';
import { BOOTSTRAP_FOR_TRUSTED_PROXIES, PROXY_PORTS, PROXY_RESERVED_PORTS, ProxyService } from '../lib/proxy-service';
import { gatewayStack, resourceId, UPSTREAM_CA_FIXTURE } from './helpers';

let stack: GatewayStack;
let template: Template;

beforeAll(() => {
  ({ stack, template } = gatewayStack());
});

const ref = (id: string) => ({ Ref: id });
const arnOf = (id: string) => ({ 'Fn::GetAtt': [id, 'Arn'] });
const objectArn = (bucketId: string, key: string) => ({ 'Fn::Join': ['', [arnOf(bucketId), `/${key}`]] });

/** Every statement of every IAM policy attached to the role with this logical id prefix. */
function statementsOf(rolePrefix: string): Record<string, unknown>[] {
  const roleId = resourceId(template, 'AWS::IAM::Role', rolePrefix);
  const policies = template.findResources('AWS::IAM::Policy', {
    Properties: { Roles: Match.arrayWith([ref(roleId)]) },
  });
  return Object.values(policies).flatMap((p) => p.Properties.PolicyDocument.Statement);
}

function actionsOf(statements: Record<string, unknown>[]): string[] {
  return statements.flatMap((s) => (Array.isArray(s.Action) ? (s.Action as string[]) : [s.Action as string])).sort();
}

describe('registry table', () => {
  test('pk/sk strings, on-demand, NEW_AND_OLD_IMAGES stream, PITR, deletion protection, retained', () => {
    template.hasResource('AWS::DynamoDB::Table', {
      Properties: {
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
        ],
        BillingMode: 'PAY_PER_REQUEST',
        StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        DeletionProtectionEnabled: true,
      },
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
  });

  test('proxy reports expire through the TTL attribute expires_at', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      TimeToLiveSpecification: { AttributeName: 'expires_at', Enabled: true },
    });
  });
});

describe('register function', () => {
  const fnId = () => resourceId(template, 'AWS::Lambda::Function', 'RegisterFunction');

  test('Rust on provided.al2023 with the table and domain in its environment', () => {
    const tableId = resourceId(template, 'AWS::DynamoDB::Table', 'RegistryTable');
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'provided.al2023',
      Handler: 'bootstrap',
      Environment: { Variables: { GATEWAY_TABLE: ref(tableId), GATEWAY_DOMAIN: 'api.example.com' } },
    });
  });

  test('invokable by its registration topics only: no cross-account invoke permission', () => {
    const perms = Object.values(
      template.findResources('AWS::Lambda::Permission', {
        Properties: { FunctionName: Match.anyValue() },
      }),
    ).filter((p) => JSON.stringify(p.Properties.FunctionName).includes(fnId()));
    const principals = perms.map((p) => ({ principal: p.Properties.Principal, source: p.Properties.SourceArn }));
    expect(principals).toHaveLength(2);
    for (const account of ['222222222222', '333333333333']) {
      const topicId = resourceId(template, 'AWS::SNS::Topic', `RegisterTopic${account}`);
      expect(principals).toContainEqual({ principal: 'sns.amazonaws.com', source: ref(topicId) });
    }
  });

  test.each(['222222222222', '333333333333'])(
    'account %s has its own topic, named after it, that only it may publish to, delivering to the function',
    (account) => {
      const topicId = resourceId(template, 'AWS::SNS::Topic', `RegisterTopic${account}`);
      template.hasResourceProperties('AWS::SNS::Topic', { TopicName: `Gateway-register-${account}` });
      expect(template.toJSON().Resources[topicId].Properties.TopicName).toBe(`Gateway-register-${account}`);
      template.hasResourceProperties('AWS::SNS::Subscription', {
        Protocol: 'lambda',
        TopicArn: ref(topicId),
        Endpoint: arnOf(fnId()),
      });
      const policies = Object.values(template.findResources('AWS::SNS::TopicPolicy')).filter(
        (p) => JSON.stringify(p.Properties.Topics) === JSON.stringify([ref(topicId)]),
      );
      expect(policies).toHaveLength(1);
      const publish = policies[0].Properties.PolicyDocument.Statement.filter(
        (st: { Action: string; Effect: string }) => st.Action === 'sns:Publish' && st.Effect === 'Allow',
      );
      expect(publish).toHaveLength(1);
      expect(JSON.stringify(publish[0].Principal)).toContain(`:iam::${account}:root`);
      const others = ['222222222222', '333333333333'].filter((a) => a !== account);
      expect(JSON.stringify(publish[0].Principal)).not.toContain(others[0]);
    },
  );

  test('refuses a malformed or repeated account', () => {
    expect(() => gatewayStack({ teamAccounts: ['12345'] })).toThrow(/12-digit/);
    expect(() => gatewayStack({ teamAccounts: ['222222222222', '222222222222'] })).toThrow(/listed twice/);
  });

  test('its role writes entries, guards and backend claims only, reads grants, and cannot touch the STATE row', () => {
    const all = statementsOf('RegisterFunctionServiceRole') as { Action: unknown; Condition?: unknown; Resource?: unknown }[];
    // waitFor serving reads the bundle versions the proxies report, bundle.json only.
    const s3 = all.filter((st) => JSON.stringify(st.Action).includes('s3:'));
    expect(s3).toHaveLength(1);
    expect(s3[0].Action).toEqual(['s3:GetObject', 's3:GetObjectVersion']);
    expect(JSON.stringify(s3[0].Resource)).toContain('/bundle.json');
    const statements = all.filter((st) => !JSON.stringify(st.Action).includes('s3:'));
    expect(actionsOf(statements as Record<string, unknown>[])).toEqual(
      [
        'dynamodb:ConditionCheckItem',
        'dynamodb:DeleteItem',
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:Query',
        // Host guards and backend claims are updates inside the registration transaction.
        'dynamodb:UpdateItem',
        // The registry caps are judged against the reconciler's totals row (GetItem on STATE);
        // a fresh table without one is counted with a consistent scan.
        'dynamodb:Scan',
      ].sort(),
    );
    const scan = statements.find((st) => JSON.stringify(st.Action).includes('dynamodb:Scan'));
    expect(scan?.Action).toEqual('dynamodb:Scan');
    const writes = statements.find((st) => JSON.stringify(st.Action).includes('dynamodb:PutItem'));
    expect(writes?.Action).toEqual(['dynamodb:DeleteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem']);
    expect(writes?.Condition).toEqual({
      'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['ENTRY#*', 'HOST#*', 'BACKEND#*'] },
    });
    const reads = statements.find((st) => JSON.stringify(st.Action).includes('dynamodb:GetItem'));
    expect(reads?.Condition).toEqual({
      'ForAllValues:StringLike': {
        'dynamodb:LeadingKeys': ['ENTRY#*', 'HOST#*', 'BACKEND#*', 'GRANT#*', 'STATUS#*', 'PROXIES', 'STATE'],
      },
    });
    for (const st of statements) {
      if (JSON.stringify(st.Action).includes('dynamodb:') && st !== scan) {
        expect(st.Condition).toBeDefined();
      }
    }
  });
});

describe('reconcile function', () => {
  const fnId = () => resourceId(template, 'AWS::Lambda::Function', 'ReconcileFunction');

  test('a container image with reserved concurrency 1 and the shared environment', () => {
    const tableId = resourceId(template, 'AWS::DynamoDB::Table', 'RegistryTable');
    const bucketId = resourceId(template, 'AWS::S3::Bucket', 'ConfigBucket');
    template.hasResourceProperties('AWS::Lambda::Function', {
      PackageType: 'Image',
      ReservedConcurrentExecutions: 1,
      Environment: {
        Variables: {
          GATEWAY_TABLE: ref(tableId),
          GATEWAY_BUCKET: ref(bucketId),
          GATEWAY_DOMAIN: 'api.example.com',
          ENVOY_BIN: '/usr/local/bin/envoy',
        },
      },
    });
  });

  test('its image is built from functions/Dockerfile.reconcile with the pinned ENVOY_VERSION and the operator CA', () => {
    const assets = JSON.parse(
      fs.readFileSync(path.join(stackAssembly(), `${stack.artifactId}.assets.json`), 'utf8'),
    ).dockerImages as Record<string, { source: { dockerFile: string; dockerBuildArgs?: Record<string, string> } }>;
    const reconcile = Object.values(assets).find((a) => a.source.dockerFile === 'functions/Dockerfile.reconcile');
    const UPSTREAM_CA = fs.readFileSync(UPSTREAM_CA_FIXTURE, 'utf8').trim() + '\n';
    expect(reconcile?.source.dockerBuildArgs).toEqual({ ENVOY_VERSION: envoyVersion(), UPSTREAM_CA });
    const proxy = Object.values(assets).find((a) => a.source.dockerFile === 'bootstrap/Dockerfile.envoy');
    // One trusted proxy (the load balancer alone): the checked-in bootstrap with xff hops 1.
    expect(proxy?.source.dockerBuildArgs).toEqual({ ENVOY_VERSION: envoyVersion(), BOOTSTRAP: 'envoy.json', UPSTREAM_CA });
  });

  test('the table stream wakes it with bounded retries, bisect on error, and no self-wakeups', () => {
    const tableId = resourceId(template, 'AWS::DynamoDB::Table', 'RegistryTable');
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [tableId, 'StreamArn'] },
      FunctionName: ref(fnId()),
      StartingPosition: 'LATEST',
      MaximumRetryAttempts: 2,
      BisectBatchOnFunctionError: true,
      MaximumRecordAgeInSeconds: 300,
      FilterCriteria: { Filters: [{ Pattern: JSON.stringify({ dynamodb: { Keys: { pk: { S: [{ prefix: 'ENTRY#' }] } } } }) }] },
    });
  });

  test('a schedule runs it every minute; a missed tick is not retried', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [
        Match.objectLike({
          Arn: arnOf(fnId()),
          RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 },
        }),
      ],
    });
  });

  test('it publishes bundle.json and failed/ renders, and writes only its STATE and STATUS# rows', () => {
    const bucketId = resourceId(template, 'AWS::S3::Bucket', 'ConfigBucket');
    const statements = statementsOf('ReconcileFunctionServiceRole');
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: ['s3:GetObject', 's3:GetObjectVersion', 's3:PutObject'],
        Resource: objectArn(bucketId, 'bundle.json'),
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({ Action: 's3:PutObject', Resource: objectArn(bucketId, 'failed/*') }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
        Condition: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': ['STATE'] } },
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: ['dynamodb:BatchWriteItem', 'dynamodb:PutItem'],
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['STATUS#*'] } },
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: 'cloudwatch:PutMetricData',
        Condition: { StringEquals: { 'cloudwatch:namespace': 'Gateway' } },
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({ Sid: 'ReadRolloutMetrics', Action: 'cloudwatch:GetMetricData', Resource: '*' }),
    );
    expect(actionsOf(statements)).not.toContain('dynamodb:DeleteItem');
  });
});

describe('seed', () => {
  test('invokes the reconcile function with {"action":"seed"} and fails on a function error', () => {
    const invoker = Object.values(
      template.findResources('AWS::Lambda::Function', {
        Properties: { Code: { ZipFile: Match.stringLikeRegexp('action: .seed.') } },
      }),
    );
    expect(invoker).toHaveLength(1);
    const code = invoker[0].Properties.Code.ZipFile as string;
    expect(code).toContain("JSON.stringify({ action: 'seed' })");
    expect(code).toMatch(/if \(out\.FunctionError\) \{\s*throw/);
    template.resourceCountIs('Custom::GatewaySeed', 1);
  });

  test('the proxy service is created only after the seed', () => {
    const seedId = resourceId(template, 'Custom::GatewaySeed', 'Seed');
    template.hasResource('AWS::ECS::Service', { DependsOn: Match.arrayWith([seedId]) });
  });
});

describe('config bucket', () => {
  test('versioned, no public access, encrypted, TLS-only, access-logged, retained', () => {
    const logsId = resourceId(template, 'AWS::S3::Bucket', 'ConfigAccessLogs');
    template.hasResource('AWS::S3::Bucket', {
      Properties: {
        VersioningConfiguration: { Status: 'Enabled' },
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        BucketEncryption: {
          ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
        },
        LoggingConfiguration: { DestinationBucketName: ref(logsId), LogFilePrefix: 'config-bucket/' },
      },
      DeletionPolicy: 'Retain',
    });
    const bucketId = resourceId(template, 'AWS::S3::Bucket', 'ConfigBucket');
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: ref(bucketId),
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Action: 's3:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  test('lifecycle expires old bundle versions (keeping restore points) and failed/ renders', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      VersioningConfiguration: { Status: 'Enabled' },
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({
            Id: 'old-bundle-versions',
            Status: 'Enabled',
            NoncurrentVersionExpiration: { NoncurrentDays: 90, NewerNoncurrentVersions: 100 },
          }),
          Match.objectLike({ Id: 'failed-renders', Prefix: 'failed/', ExpirationInDays: 30 }),
        ]),
      },
    });
  });

  test('only the reconciler and the break-glass role may write bundle.json', () => {
    const bucketId = resourceId(template, 'AWS::S3::Bucket', 'ConfigBucket');
    const reconcileRole = resourceId(template, 'AWS::IAM::Role', 'ReconcileFunctionServiceRole');
    const breakGlass = resourceId(template, 'AWS::IAM::Role', 'BreakGlassRole');
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: ref(bucketId),
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Principal: { AWS: '*' },
            Action: Match.arrayWith(['s3:DeleteObject', 's3:DeleteObjectVersion', 's3:PutObject']),
            Resource: objectArn(bucketId, 'bundle.json'),
            Condition: { ArnNotEquals: { 'aws:PrincipalArn': [arnOf(reconcileRole), arnOf(breakGlass)] } },
          }),
        ]),
      },
    });
  });

  test('the break-glass role needs MFA and can publish, restore, resume and redeploy', () => {
    template.hasResourceProperties('AWS::IAM::Role', {
      MaxSessionDuration: 3600,
      AssumeRolePolicyDocument: {
        Statement: [Match.objectLike({ Condition: { Bool: { 'aws:MultiFactorAuthPresent': 'true' } } })],
      },
    });
    const actions = actionsOf(statementsOf('BreakGlassRole'));
    expect(actions).toEqual(expect.arrayContaining(['s3:PutObject', 's3:GetObjectVersion', 's3:ListBucketVersions', 'ecs:UpdateService', 'ecs:ExecuteCommand']));
  });
});

describe('alarms', () => {
  const gatewayMetrics = ['ValidationFailed', 'ConfigDrift', 'ReconcileFailed', 'ProxyConfigRejected', 'RateLimiterErrors', 'EntryQuarantined'];

  test.each(gatewayMetrics)('%s alarms on any occurrence in namespace Gateway, without dimensions, to the topic', (name) => {
    const topicId = resourceId(template, 'AWS::SNS::Topic', 'AlarmsTopic');
    const alarms = template.findResources('AWS::CloudWatch::Alarm', {
      Properties: {
        Namespace: 'Gateway',
        MetricName: name,
        Statistic: 'Sum',
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
        AlarmActions: [ref(topicId)],
      },
    });
    expect(Object.keys(alarms)).toHaveLength(1);
    expect(Object.values(alarms)[0].Properties.Dimensions).toBeUndefined();
  });

  test.each([
    ['RegisterFunction', 'Errors'],
    ['ReconcileFunction', 'Errors'],
    ['ReconcileFunction', 'Invocations'],
  ])("%s's own %s metric is alarmed", (fnPrefix, metric) => {
    const fnId = resourceId(template, 'AWS::Lambda::Function', fnPrefix);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: metric,
      Dimensions: [{ Name: 'FunctionName', Value: ref(fnId) }],
    });
  });

  test('the alarm topic is KMS-encrypted and CloudWatch may use the key', () => {
    const keyId = resourceId(template, 'AWS::KMS::Key', 'TopicKey');
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: arnOf(keyId) });
    template.hasResourceProperties('AWS::KMS::Key', {
      EnableKeyRotation: true,
      KeyPolicy: {
        Statement: Match.arrayWith([
          Match.objectLike({ Principal: { Service: 'cloudwatch.amazonaws.com' }, Action: ['kms:Decrypt', 'kms:GenerateDataKey*'] }),
        ]),
      },
    });
  });
});

describe('proxy service', () => {
  type Container = {
    Name: string;
    Command?: string[];
    Image: unknown;
    DependsOn?: { ContainerName: string; Condition: string }[];
    HealthCheck?: { Command: string[] };
    MountPoints?: { SourceVolume: string; ContainerPath: string; ReadOnly: boolean }[];
    Environment?: { Name: string; Value: unknown }[];
    PortMappings?: { ContainerPort: number }[];
    Essential?: boolean;
  };
  let containers: Record<string, Container>;

  beforeAll(() => {
    const task = Object.values(template.findResources('AWS::ECS::TaskDefinition'))[0];
    containers = Object.fromEntries(
      (task.Properties.ContainerDefinitions as Container[]).map((c) => [c.Name, c]),
    );
  });

  test('Fargate task with envoy, sidecar, ratelimit and ratelimit-sidecar sharing three volumes', () => {
    template.hasResourceProperties('AWS::ECS::TaskDefinition', {
      RequiresCompatibilities: ['FARGATE'],
      NetworkMode: 'awsvpc',
      Volumes: [{ Name: 'cds' }, { Name: 'rds' }, { Name: 'ratelimit-config' }, { Name: 'envoy-admin' }],
    });
    expect(Object.keys(containers).sort()).toEqual(['envoy', 'ratelimit', 'ratelimit-sidecar', 'sidecar']);
  });

  test('Envoy admin is a Unix socket in a volume only envoy and the sidecar mount', () => {
    const bootstrap = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'bootstrap', 'envoy.json'), 'utf8'));
    expect(bootstrap.admin.address).toEqual({ pipe: { path: '/run/envoy/admin.sock', mode: 0o666 } });
    const mounting = Object.entries(containers)
      .filter(([, c]) => (c.MountPoints ?? []).some((m) => m.SourceVolume === 'envoy-admin'))
      .map(([name]) => name)
      .sort();
    expect(mounting).toEqual(['envoy', 'sidecar']);
    for (const c of Object.values(containers)) {
      expect(JSON.stringify(c.Command ?? [])).not.toContain('9901');
    }
  });

  test('the checked-in bootstraps trust as many X-Forwarded-For hops as infra says', () => {
    for (const [hops, file] of Object.entries(BOOTSTRAP_FOR_TRUSTED_PROXIES)) {
      const b = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'bootstrap', file), 'utf8'));
      const hcm = b.static_resources.listeners[0].filter_chains[0].filters[0].typed_config;
      expect(hcm.xff_num_trusted_hops).toBe(Number(hops));
    }
    expect(() => ProxyService.bootstrapFile(3)).toThrow(/trustedProxies 3/);
  });

  test('the task ports are the ones the checks refuse as backend ports, and match the bootstrap', () => {
    for (const [name, port] of Object.entries(PROXY_PORTS)) {
      if (name === 'listener') continue;
      expect(port).toBeGreaterThanOrEqual(PROXY_RESERVED_PORTS.first);
      expect(port).toBeLessThanOrEqual(PROXY_RESERVED_PORTS.last);
    }
    // The range the register function refuses as backend ports (render/src/check/backend.rs).
    const backendRules = fs.readFileSync(path.join(REPO_ROOT, 'render', 'src', 'check', 'backend.rs'), 'utf8');
    const refused = /PROXY_RESERVED_PORTS: std::ops::RangeInclusive<u16> = (\d+)\.\.=(\d+);/.exec(backendRules);
    expect(refused && { first: Number(refused[1]), last: Number(refused[2]) }).toEqual(PROXY_RESERVED_PORTS);
    const bootstrap = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'bootstrap', 'envoy.json'), 'utf8'));
    const rl = bootstrap.static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint.address;
    expect(rl.socket_address).toEqual({ address: '127.0.0.1', port_value: PROXY_PORTS.rateLimitGrpc });
  });

  test('task egress goes only to the backend CIDRs, Redis, S3, DynamoDB (proxy reports) and the interface endpoints', () => {
    const sgs = template.findResources('AWS::EC2::SecurityGroup', {
      Properties: { GroupDescription: 'Gateway proxy tasks' },
    });
    const [taskSg] = Object.entries(sgs);
    const egress = (taskSg[1].Properties.SecurityGroupEgress ?? []) as Record<string, unknown>[];
    const standalone = Object.values(template.findResources('AWS::EC2::SecurityGroupEgress'))
      .map((r) => r.Properties as Record<string, unknown>)
      .filter((p) => JSON.stringify(p.GroupId).includes(taskSg[0]));
    const rules = [...egress, ...standalone];
    expect(rules.some((r) => r.CidrIp === '0.0.0.0/0' || r.CidrIpv6 === '::/0')).toBe(false);
    const descriptions = rules.map((r) => r.Description).sort();
    expect(descriptions).toEqual([
      'AWS interface endpoints',
      'DynamoDB (proxy reports) through the gateway endpoint',
      'S3 (the bundle, image layers) through the gateway endpoint',
      'backends (GATEWAY_BACKEND_CIDRS)',
      'rate-limit Redis',
    ]);
    const backends = rules.find((r) => r.Description === 'backends (GATEWAY_BACKEND_CIDRS)');
    expect(JSON.stringify(backends?.CidrIp)).toContain('CidrBlock');
    expect(rules.find((r) => String(r.Description).startsWith('S3'))?.DestinationPrefixListId).toBeDefined();
    expect(rules.find((r) => String(r.Description).startsWith('DynamoDB'))?.DestinationPrefixListId).toBeDefined();
    template.hasResourceProperties('AWS::EC2::VPCEndpoint', {
      ServiceName: Match.objectLike({ 'Fn::Join': Match.arrayWith([Match.arrayWith(['.dynamodb'])]) }),
      VpcEndpointType: 'Gateway',
    });
  });

  test('the functions enforce the same backend CIDRs the proxies may reach', () => {
    for (const name of ['Register', 'Reconcile']) {
      const fns = template.findResources('AWS::Lambda::Function');
      const fn = Object.entries(fns).find(
        ([id, r]) => id.startsWith(name) && (r.Properties as { Environment?: unknown }).Environment,
      );
      const env = (fn?.[1].Properties as { Environment: { Variables: Record<string, unknown> } }).Environment.Variables;
      expect(JSON.stringify(env.GATEWAY_BACKEND_CIDRS)).toContain('CidrBlock');
      expect(env.GATEWAY_BACKEND_DOMAINS).toBe('');
      expect([env.GATEWAY_MAX_ROUTE_TIMEOUT, env.GATEWAY_MAX_RETRY_ATTEMPTS]).toEqual(['60s', '3']);
    }
  });

  test('envoy runs the bootstrap with --reject-unknown-dynamic-fields on 8080, reading the watched dirs', () => {
    const envoy = containers.envoy;
    expect(envoy.Command).toEqual(['-c', '/etc/envoy/envoy.json', '--reject-unknown-dynamic-fields']);
    expect(envoy.Command).toEqual(envoyArgs());
    expect(envoy.PortMappings).toEqual([expect.objectContaining({ ContainerPort: 8080 })]);
    expect(envoy.MountPoints).toEqual([
      { SourceVolume: 'cds', ContainerPath: '/etc/envoy/cds', ReadOnly: true },
      { SourceVolume: 'rds', ContainerPath: '/etc/envoy/rds', ReadOnly: true },
      { SourceVolume: 'envoy-admin', ContainerPath: '/run/envoy', ReadOnly: false },
    ]);
  });

  test('envoy starts only after the sidecar reports healthy, and ratelimit after its sidecar', () => {
    expect(containers.envoy.DependsOn).toEqual([{ ContainerName: 'sidecar', Condition: 'HEALTHY' }]);
    expect(containers.ratelimit.DependsOn).toEqual([{ ContainerName: 'ratelimit-sidecar', Condition: 'HEALTHY' }]);
  });

  test('the sidecar delivers into the watched dirs and probes its own /healthz', () => {
    const bucketId = resourceId(template, 'AWS::S3::Bucket', 'ConfigBucket');
    const sidecar = containers.sidecar;
    expect(sidecar.Command).toEqual([
      'gateway-sidecar',
      '--bucket', ref(bucketId),
      '--clusters-dir', '/etc/envoy/cds',
      '--routes-dir', '/etc/envoy/rds',
      '--envoy-admin', 'unix:/run/envoy/admin.sock',
      '--interval', '15',
      '--listen', '127.0.0.1:15004',
    ]);
    expect(sidecar.HealthCheck?.Command).toEqual(['CMD', '/usr/local/bin/gateway-sidecar', '--probe', 'http://127.0.0.1:15004/healthz']);
    expect(sidecar.MountPoints?.every((m) => m.ReadOnly === false)).toBe(true);
    // The rules are written in a sibling directory of the same volume and renamed in: the
    // rate-limit service loads every file of its directory.
    const rlSidecar = containers['ratelimit-sidecar'];
    expect(rlSidecar.Command).toEqual(expect.arrayContaining(['--ratelimit-dir', '/data/ratelimit/config']));
    expect(rlSidecar.Command).toEqual(expect.arrayContaining(['--staging-dir', '/data/ratelimit/staging']));
    expect(rlSidecar.MountPoints).toEqual([{ SourceVolume: 'ratelimit-config', ContainerPath: '/data/ratelimit', ReadOnly: false }]);
    // Only the delivering sidecar reports what its proxy serves (proxy id: the ECS task id).
    const env = (c: { Environment?: { Name: string; Value: unknown }[] }) => (c.Environment ?? []).map((e) => e.Name);
    expect(env(sidecar)).toContain('GATEWAY_TABLE');
    expect(env(containers['ratelimit-sidecar'])).not.toContain('GATEWAY_TABLE');
    expect(containers['ratelimit-sidecar'].HealthCheck?.Command).toEqual(['CMD', '/usr/local/bin/gateway-sidecar', '--probe', 'http://127.0.0.1:15005/healthz']);
  });

  test('the rate-limit service reads its rules from the shared dir and counts in the shared Redis over TLS', () => {
    const rl = containers.ratelimit;
    const env = Object.fromEntries((rl.Environment ?? []).map((e) => [e.Name, e.Value]));
    expect(env).toMatchObject({
      RUNTIME_ROOT: '/data',
      RUNTIME_SUBDIRECTORY: 'ratelimit',
      RUNTIME_WATCH_ROOT: 'false',
      RUNTIME_IGNOREDOTFILES: 'true',
      USE_STATSD: 'false',
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: '15001',
      REDIS_TLS: 'true',
    });
    const redisId = resourceId(template, 'AWS::ElastiCache::ReplicationGroup', 'ProxyRedis');
    expect(JSON.stringify(env.REDIS_URL)).toContain(`"${redisId}","PrimaryEndPoint.Address"`);
    // The volume holds config/ (what the service loads) and staging/ (the sidecar's writes).
    expect(rl.MountPoints).toEqual([{ SourceVolume: 'ratelimit-config', ContainerPath: '/data/ratelimit', ReadOnly: true }]);
    // Its own response headers stay off: Envoy writes the x-ratelimit headers from the statuses.
    expect(env.LIMIT_RESPONSE_HEADERS_ENABLED).toBeUndefined();
    const bootstrap = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'bootstrap', 'envoy.json'), 'utf8'));
    const filters = bootstrap.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters;
    const global = filters.find((f: { name: string }) => f.name === 'envoy.filters.http.ratelimit');
    expect(global.typed_config.enable_x_ratelimit_headers).toBe('DRAFT_VERSION_03');
    expect(rl.Image).toMatch(/^envoyproxy\/ratelimit[:@]/);
  });

  test('Redis: encrypted at rest and in transit, Multi-AZ, reachable only from the proxy tasks', () => {
    template.hasResourceProperties('AWS::ElastiCache::ReplicationGroup', {
      AtRestEncryptionEnabled: true,
      TransitEncryptionEnabled: true,
      MultiAZEnabled: true,
      AutomaticFailoverEnabled: true,
      AuthToken: Match.anyValue(),
    });
    const redisSg = resourceId(template, 'AWS::EC2::SecurityGroup', 'ProxyRedisSecurityGroup');
    const taskSg = resourceId(template, 'AWS::EC2::SecurityGroup', 'ProxyTaskSecurityGroup');
    const ingress = Object.values(
      template.findResources('AWS::EC2::SecurityGroupIngress', {
        Properties: { GroupId: { 'Fn::GetAtt': [redisSg, 'GroupId'] } },
      }),
    );
    expect(ingress).toHaveLength(1);
    expect(ingress[0].Properties.SourceSecurityGroupId).toEqual({ 'Fn::GetAtt': [taskSg, 'GroupId'] });
    template.hasResourceProperties('AWS::EC2::SecurityGroup', {
      GroupDescription: Match.stringLikeRegexp('Rate-limit Redis'),
      SecurityGroupIngress: Match.absent(),
    });
  });

  test('the task role reads bundle.json, writes only its PROXIES report row (LeadingKeys), plus metrics, the trusted public keys and the ECS Exec channel', () => {
    const bucketId = resourceId(template, 'AWS::S3::Bucket', 'ConfigBucket');
    const statements = statementsOf('ProxyTaskTaskRole');
    const s3Statements = statements.filter((s) => actionsOf([s]).some((a) => a.startsWith('s3:')));
    expect(s3Statements).toEqual([
      expect.objectContaining({ Action: ['s3:GetObject', 's3:GetObjectVersion'], Resource: objectArn(bucketId, 'bundle.json') }),
      expect.objectContaining({ Action: 's3:ListBucket', Resource: arnOf(bucketId) }),
    ]);
    // Its one table permission: PutItem of its proxy report, in the PROXIES partition only.
    const dynamo = statements.filter((s) => actionsOf([s]).some((a) => a.startsWith('dynamodb:')));
    const tableId = resourceId(template, 'AWS::DynamoDB::Table', 'RegistryTable');
    expect(dynamo).toEqual([
      expect.objectContaining({
        Action: 'dynamodb:PutItem',
        Resource: arnOf(tableId),
        Condition: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': ['PROXIES'] } },
      }),
    ]);
    const others = actionsOf(statements).filter((a) => !a.startsWith('s3:') && !a.startsWith('dynamodb:'));
    expect(others.sort()).toEqual(
      [
        'cloudwatch:PutMetricData',
        // The sidecars verify every bundle against the trusted keys (signing-key.test.ts).
        'kms:GetPublicKey',
        // ECS Exec: the session channel and its session log (operators' kill switch level 1).
        'logs:CreateLogStream',
        'logs:DescribeLogGroups',
        'logs:DescribeLogStreams',
        'logs:PutLogEvents',
        'ssmmessages:CreateControlChannel',
        'ssmmessages:CreateDataChannel',
        'ssmmessages:OpenControlChannel',
        'ssmmessages:OpenDataChannel',
      ].sort(),
    );
  });

  test('behind an HTTPS load balancer forwarding to envoy:8080', () => {
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', {
      Port: 443,
      Protocol: 'HTTPS',
      Certificates: [{ CertificateArn: Match.stringLikeRegexp('^arn:aws:acm:') }],
    });
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::TargetGroup', {
      Port: 8080,
      TargetType: 'ip',
      // The catch-all's /healthz: 200 under both kill-switch levels, and only 200 is healthy.
      HealthCheckPath: '/healthz',
      Matcher: { HttpCode: '200' },
    });
    template.hasResourceProperties('AWS::ECS::Service', {
      LaunchType: 'FARGATE',
      EnableExecuteCommand: true,
      LoadBalancers: [Match.objectLike({ ContainerName: 'envoy', ContainerPort: 8080 })],
    });
  });
});

describe('pins', () => {
  test('the Envoy version comes from bootstrap/ENVOY_VERSION', () => {
    const pinned = fs.readFileSync(path.join(REPO_ROOT, 'bootstrap', 'ENVOY_VERSION'), 'utf8').trim();
    expect(envoyVersion()).toBe(pinned);
  });

  test('the Dockerfiles take ENVOY_VERSION as a build argument with no default', () => {
    for (const file of ['functions/Dockerfile.reconcile', 'bootstrap/Dockerfile.envoy']) {
      const text = fs.readFileSync(path.join(REPO_ROOT, file), 'utf8');
      expect(text).toMatch(/^ARG ENVOY_VERSION$/m);
      expect(text).toContain('FROM envoyproxy/envoy:v${ENVOY_VERSION}');
    }
  });
});

/** The cloud assembly directory the stack was synthesized into. */
function stackAssembly(): string {
  const app = stack.node.root as import('aws-cdk-lib').App;
  return app.synth().directory;
}

describe('dashboard', () => {
  test('one dashboard graphs every gateway metric, quarantined entries per team, next to the alarms', () => {
    const dashboards = template.findResources('AWS::CloudWatch::Dashboard');
    expect(Object.keys(dashboards)).toHaveLength(1);
    const body = JSON.stringify(Object.values(dashboards)[0].Properties.DashboardBody);
    for (const name of ['Published', 'RoutesRendered', 'ValidationFailed', 'ReconcileFailed', 'EntryQuarantined', 'ConfigDrift', 'ProxyConfigRejected', 'RateLimiterErrors', 'CapacityUsed', 'DeliveryLagSeconds']) {
      expect(body).toContain(name);
    }
    expect(body).toContain('{Gateway,Team}');
    expect(body).toContain('alarm');
  });
});

describe('observability', () => {
  test('the proxy log group (Envoy access log included) has a retention', () => {
    const groups = template.findResources('AWS::Logs::LogGroup');
    const proxy = Object.entries(groups).filter(([id]) => id.startsWith('Proxy'));
    expect(proxy.length).toBeGreaterThan(0);
    for (const [, group] of proxy) {
      expect(group.Properties.RetentionInDays).toBeGreaterThan(0);
    }
  });

  test('a dashboard graphs Requests, Responses5xx and LatencyP99 by Team and Service', () => {
    const dashboards = template.findResources('AWS::CloudWatch::Dashboard');
    expect(Object.keys(dashboards)).toHaveLength(1);
    const body = JSON.stringify(Object.values(dashboards)[0].Properties.DashboardBody);
    for (const metric of ['Requests', 'Responses5xx', 'LatencyP99']) {
      expect(body).toMatch(new RegExp(`\\{Gateway,Team,Service\\} MetricName=[\\\\]*"${metric}[\\\\]*"`));
    }
  });
});
