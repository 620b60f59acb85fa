import { Fn, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import { EntryRejected } from '../lib/entry-checks';
import { sampleEntry } from '../lib/example-team-stack';
import { ExposeOnGateway, ExposeOnGatewayProps } from '../lib/expose-on-gateway';
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

  test('waitFor passes through: registered, published or serving (every reporting proxy serves it)', () => {
    for (const waitFor of ['registered', 'published', 'serving'] as const) {
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

describe('rejected at synth', () => {
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

  test('bad host label', () => rejects({ host: 'Invoices' }, 'host', /lowercase/));
  test('host label ending with -', () => rejects({ host: 'invoices-.eu' }, 'host', /must not start or end with "-"/));
  test('wildcard host', () => rejects({ host: '*.invoices' }, 'host', /wildcards/));
  test('full hostname over 253', () =>
    rejects({ host: Array(4).fill('a'.repeat(60)).join('.'), baseDomain: 'api.example.com' }, 'host', /is 259 characters long; at most 253/));
  test('bad team', () => rejects({ team: '9billing' }, 'team', /must start with a letter a-z/));
  test('bad unit', () =>
    rejects({ routes: [{ path: '/x', limits: [{ per: 'route', requests: 1, every: 'fortnight' as never }] }] }, 'routes[0].limits[0].every', /unknown unit "fortnight"/));
  test('unknown per', () =>
    rejects({ routes: [{ path: '/x', limits: [{ per: 'user' as never, requests: 1, every: 'minute' }] }] }, 'routes[0].limits[0].per', /unknown key kind "user"/));
  test('missing routes', () => rejects({ routes: [] }, 'routes', /at least one route/));
  test('link-local backend', () => rejects({ backend: 'http://169.254.169.254' }, 'backend', /link-local/));
  test('IPv6 link-local backend', () => rejects({ backend: 'http://[fe80::1]:8080' }, 'backend', /link-local/));
  test('loopback backend', () => rejects({ backend: 'http://127.0.0.1:8080' }, 'backend', /loopback/));
  test('overlapping routes', () =>
    rejects({ routes: [{ path: '/a', methods: ['GET'] }, { path: '/a' }] }, 'routes[1]', /overlapping methods \(GET\)/));

  test('every problem is reported at once, each naming its field', () => {
    expect(expose({ team: 'Billing', host: 'a..b', routes: [{ path: 'no-slash', methods: ['FETCH'] }] })).toThrow(
      /team: .*\n.*host: .*\n.*routes\[0\]\.path: .*\n.*routes\[0\]\.methods\[0\]: unknown method "FETCH"/,
    );
  });
});
