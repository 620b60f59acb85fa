import { Fn, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import { sampleEntry } from '../lib/example-team-stack';
import { EntryRejected, ExposeOnGateway, ExposeOnGatewayProps } from '../lib/expose-on-gateway';
import { ENTRY_SCHEMA } from '../lib/entry-schema';
import { testApp } from './helpers';

const FUNCTION_ARN = 'arn:aws:lambda:eu-west-1:111111111111:function:Gateway-RegisterFunction';
const TOPIC_ARN = 'arn:aws:sns:eu-west-1:111111111111:Gateway-register-222222222222';

function synth(props: ExposeOnGatewayProps): Template {
  const stack = new Stack(testApp(), 'Team');
  new ExposeOnGateway(stack, 'Invoices', props);
  return Template.fromStack(stack);
}

function expose(overrides: Partial<ExposeOnGatewayProps>): () => void {
  return () => synth({ ...sampleEntry(), serviceToken: FUNCTION_ARN, ...overrides });
}

describe('custom resource', () => {
  test('carries the entry as one JSON string, its key, and the function ARN as service token', () => {
    const template = synth({ ...sampleEntry(), serviceToken: FUNCTION_ARN });
    template.resourceCountIs('Custom::GatewayRoute', 1);
    const resource = Object.values(template.findResources('Custom::GatewayRoute'))[0];
    expect(resource.Properties.ServiceToken).toBe(FUNCTION_ARN);
    expect(resource.Properties.EntryKey).toBe('billing/invoices-api');
    expect(resource.Properties.WaitFor).toBe('published');
    // A string, so CloudFormation cannot turn 100 into "100".
    expect(typeof resource.Properties.Entry).toBe('string');
    expect(JSON.parse(resource.Properties.Entry)).toEqual(sampleEntry());
    // Delete deregisters: the resource is deleted, not retained, with the stack.
    expect(resource.DeletionPolicy).toBe('Delete');
  });

  test('waitFor passes through: registered, published, serving (every reporting proxy serves it) or promoted', () => {
    for (const waitFor of ['registered', 'published', 'serving', 'promoted'] as const) {
      const template = synth({ ...sampleEntry(), serviceToken: FUNCTION_ARN, waitFor });
      template.hasResourceProperties('Custom::GatewayRoute', { WaitFor: waitFor });
    }
  });

  test('accepts an SNS topic (ARN or construct) as service token for cross-account stacks', () => {
    const byArn = synth({ ...sampleEntry(), serviceToken: TOPIC_ARN });
    byArn.hasResourceProperties('Custom::GatewayRoute', { ServiceToken: TOPIC_ARN });

    const stack = new Stack(testApp(), 'Team');
    const topic = sns.Topic.fromTopicArn(stack, 'Topic', TOPIC_ARN);
    new ExposeOnGateway(stack, 'Invoices', { ...sampleEntry(), serviceToken: topic });
    Template.fromStack(stack).hasResourceProperties('Custom::GatewayRoute', { ServiceToken: TOPIC_ARN });
  });

  test('with the registration topics, picks the topic of its own stack\'s account', () => {
    const topics = { gatewayAccount: '111111111111', gatewayRegion: 'eu-west-1', topicNamePrefix: 'Gateway' };
    const stack = new Stack(testApp(), 'Team', { env: { account: '222222222222', region: 'eu-west-1' } });
    new ExposeOnGateway(stack, 'Invoices', { ...sampleEntry(), serviceToken: topics });
    const token = Object.values(Template.fromStack(stack).findResources('Custom::GatewayRoute'))[0].Properties.ServiceToken;
    expect(JSON.stringify(token)).toContain(':sns:eu-west-1:111111111111:Gateway-register-222222222222');
    // An environment-agnostic stack resolves its account at deploy time.
    const agnostic = new Stack(testApp(), 'Agnostic');
    new ExposeOnGateway(agnostic, 'Invoices', { ...sampleEntry(), serviceToken: topics });
    const deployTime = Object.values(Template.fromStack(agnostic).findResources('Custom::GatewayRoute'))[0].Properties.ServiceToken;
    expect(JSON.stringify(deployTime)).toContain('AWS::AccountId');
  });

  test('refuses another account\'s registration topic at synth', () => {
    const stack = new Stack(testApp(), 'Team', { env: { account: '333333333333', region: 'eu-west-1' } });
    expect(() => new ExposeOnGateway(stack, 'Invoices', { ...sampleEntry(), serviceToken: TOPIC_ARN })).toThrow(
      /registration topic of account 222222222222; this stack deploys to account 333333333333/,
    );
  });

  test('accepts the function construct', () => {
    const stack = new Stack(testApp(), 'Team');
    const fn = lambda.Function.fromFunctionArn(stack, 'Fn', FUNCTION_ARN);
    new ExposeOnGateway(stack, 'Invoices', { ...sampleEntry(), serviceToken: fn });
    Template.fromStack(stack).hasResourceProperties('Custom::GatewayRoute', {
      ServiceToken: FUNCTION_ARN,
      Entry: Match.stringLikeRegexp('"team":"billing"'),
    });
  });

  test('rejects a service token that is neither a function nor a topic ARN', () => {
    expect(expose({ serviceToken: 'arn:aws:sqs:eu-west-1:111111111111:queue' })).toThrow(/register function or of the registration topic/);
  });

  test('a backend only known at deploy time is left to the register function; the rest is still checked', () => {
    const backend = `https://${Fn.importValue('InvoicesLoadBalancerDns')}`;
    expect(expose({ backend })).not.toThrow();
    expect(expose({ backend, host: 'Bad_Host' })).toThrow(/host: /);
  });
});

describe('rejected at synth, by the entry schema', () => {
  const rejects = (overrides: Partial<ExposeOnGatewayProps>, field: string, reason: RegExp) => {
    let error: unknown;
    try {
      expose(overrides)();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(EntryRejected);
    const problems = (error as EntryRejected).problems;
    expect(problems).toContainEqual({ field, reason: expect.stringMatching(reason) });
  };
  const route = (r: Record<string, unknown>) => ({ routes: [{ path: '/x', ...r }] as never });

  test('uppercase host', () => rejects({ host: 'Invoices' }, 'host', /character "I" is not allowed/));
  test('wildcard host', () => rejects({ host: '*.invoices' }, 'host', /character "\*" is not allowed/));
  test('bad team', () => rejects({ team: 'bill_ing' }, 'team', /character "_" is not allowed/));
  test('team too long', () => rejects({ team: 'a'.repeat(64) }, 'team', /is 64 characters long; at most 63/));
  test('bad unit', () =>
    rejects(route({ limits: [{ per: 'route', requests: 1, every: 'fortnight' }] }), 'routes[0].limits[0].every', /unknown value "fortnight"/));
  test('unknown per', () =>
    rejects(route({ limits: [{ per: 'user', requests: 1, every: 'minute' }] }), 'routes[0].limits[0].per', /unknown value "user"/));
  test('burst past its bound', () => rejects(route({ limits: [{ burst: 1_000_001 }] }), 'routes[0].limits[0].burst', /at most 1000000/));
  test('missing routes', () => rejects({ routes: [] }, 'routes', /must not be empty/));
  test('too many routes', () =>
    rejects({ routes: Array.from({ length: 65 }, (_, i) => ({ path: `/r${i}` })) }, 'routes', /has 65 items; at most 64/));
  test('a path with a query', () => rejects(route({ path: '/x?y' }), 'routes[0].path', /character "\?" is not allowed/));
  test('a retried status outside 400-599', () =>
    rejects(route({ retries: { attempts: 1, on: ['retriable-status-codes'], status_codes: [302] } }), 'routes[0].retries.status_codes[0]', /is 302; at least 400/));
  test('a canary weight over 100', () =>
    rejects({ canary: { backend: 'https://canary.internal.example', weight: 101 } }, 'canary.weight', /is 101; at most 100/));
  test('a cohort header value with a line break', () =>
    rejects({ canary: { backend: 'https://canary.internal.example', weight: 5, header: { name: 'x-canary', value: 'a\r\nb' } } }, 'canary.header.value', /character "\\r"/));
  test('an unknown field in a route', () => rejects(route({ prefix: true }), 'routes[0].prefix', /unknown field; expected auth, clients, cors, exact, headers, host_rewrite, limits/));
  test('null for an optional field', () => rejects(route({ methods: null }), 'routes[0].methods', /expected a list, got null/));

  test('every problem is reported at once, in document order, each naming its field', () => {
    expect(expose({ team: 'Billing', host: 'a_b', routes: [{ path: '/a b', methods: ['FETCH' as never] }] })).toThrow(
      /team: .*\n.*host: .*\n.*routes\[0\]\.path: .*\n.*routes\[0\]\.methods\[0\]: unknown value "FETCH"/,
    );
  });
});

describe('left to the register function', () => {
  // What needs the gateway's settings, the network or more than one value: the register
  // function refuses it at deploy, naming the field, and the deploy fails.
  test.each<[string, Partial<ExposeOnGatewayProps>]>([
    ['a link-local backend', { backend: 'http://169.254.169.254' }],
    ['a loopback backend', { backend: 'http://127.0.0.1:8080' }],
    ['a team starting with a digit', { team: '9billing' }],
    ['a host label ending with -', { host: 'invoices-.eu' }],
    ['a full hostname over 253 characters', { host: Array(4).fill('a'.repeat(60)).join('.'), baseDomain: 'api.example.com' }],
    ['overlapping routes', { routes: [{ path: '/a', methods: ['GET'] }, { path: '/a' }] }],
    ['a timeout past the operators\' maximum', { routes: [{ path: '/a', timeout: '10m' }] }],
    ['a POST route retrying on 5xx', { routes: [{ path: '/a', methods: ['POST'], retries: { attempts: 2, on: ['5xx'] } }] }],
    ['a CORS pattern over a public suffix', { routes: [{ path: '/a', cors: { origins: ['https://*.co.uk'] } }] }],
  ])('%s passes synth', (_what, overrides) => {
    expect(expose(overrides)).not.toThrow();
  });

  test('the props that fed synth-time bounds are accepted and ignored', () => {
    const stack = new Stack(testApp(), 'Team');
    const exposed = new ExposeOnGateway(stack, 'Invoices', {
      ...sampleEntry(), serviceToken: FUNCTION_ARN, maxRouteTimeoutMs: 180_000, maxRetryAttempts: 5,
    });
    expect(exposed.entry).toEqual(sampleEntry());
  });

  test('baseDomain gives the hostname', () => {
    const stack = new Stack(testApp(), 'Team');
    const exposed = new ExposeOnGateway(stack, 'Invoices', { ...sampleEntry(), serviceToken: FUNCTION_ARN, baseDomain: 'api.example.com' });
    expect(exposed.hostname).toBe('invoices.api.example.com');
  });
});

describe('the construct carries the entry-level fields', () => {
  const props = {
    team: 'billing', service: 'invoices-api', host: 'invoices',
    backend: 'https://invoices.internal.example:8443',
    routes: [{ path: '/invoices', methods: ['GET'] }],
    serviceToken: FUNCTION_ARN,
  };

  test('every entry-level field of the schema travels in the entry document', () => {
    const stack = new Stack(testApp(), 'Team');
    const exposed = new ExposeOnGateway(stack, 'Invoices', {
      ...props,
      protocol: 'http2',
      canary: { backend: 'https://invoices-canary.internal.example:8443', weight: 10 },
      healthCheck: { path: '/healthz', interval: '10s' },
      preserve_host: true,
      jwt: { main: { issuer: 'https://id.example.com/', jwks_uri: 'https://id.example.com/jwks.json' } },
      rollout: { steps: [10, 50, 100], interval: '5m', max_5xx_increase: 0.02 },
    });
    const schemaFields = Object.keys((ENTRY_SCHEMA as unknown as { properties: Record<string, unknown> }).properties).sort();
    const sent = Object.keys(exposed.entry).sort();
    // `backends` stands in for `backend` (one of the two).
    expect(sent).toEqual(schemaFields.filter((f) => f !== 'backends'));
    const split = new ExposeOnGateway(new Stack(testApp(), 'Split'), 'Invoices', {
      ...props,
      backend: undefined,
      backends: [{ url: 'https://a.internal.example', weight: 80 }, { url: 'https://b.internal.example', weight: 20 }],
    });
    expect(Object.keys(split.entry)).toEqual(['team', 'service', 'host', 'backends', 'routes']);
    expect(exposed.entry.preserve_host).toBe(true);
    expect(exposed.entry.jwt?.main.issuer).toBe('https://id.example.com/');
  });

  test('protocol, canary and health_check travel in the entry document', () => {
    const stack = new Stack(testApp(), 'Team');
    const exposed = new ExposeOnGateway(stack, 'Invoices', {
      ...props,
      protocol: 'http2',
      canary: { backend: 'https://invoices-canary.internal.example:8443', weight: 10, header: { name: 'x-canary', value: 'always' } },
      healthCheck: { path: '/healthz', interval: '10s' },
    });
    const resource = Object.values(Template.fromStack(stack).findResources('Custom::GatewayRoute'))[0];
    const entry = JSON.parse(resource.Properties.Entry);
    expect(entry).toEqual(exposed.entry);
    expect(entry.protocol).toBe('http2');
    expect(entry.canary.weight).toBe(10);
    expect(entry.health_check).toEqual({ path: '/healthz', interval: '10s' });
    expect(Object.keys(entry)).toEqual(['team', 'service', 'host', 'backend', 'protocol', 'canary', 'health_check', 'routes']);
  });

  test('left out, they are not in the document (existing entries mean what they meant)', () => {
    const stack = new Stack(testApp(), 'Team');
    const exposed = new ExposeOnGateway(stack, 'Invoices', props);
    expect(Object.keys(exposed.entry)).toEqual(['team', 'service', 'host', 'backend', 'routes']);
  });

  test('a health check path is checked like a route path, under healthCheck\'s entry name', () => {
    const stack = new Stack(testApp(), 'Team');
    let error: unknown;
    try {
      new ExposeOnGateway(stack, 'Invoices', { ...props, healthCheck: { path: '/health check', interval: '10s' } });
    } catch (e) {
      error = e;
    }
    expect((error as EntryRejected).problems.map((p) => p.field)).toEqual(['health_check.path']);
  });
});
