import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as fs from 'fs';
import * as path from 'path';
import { checkEntry, EntryRejected } from '../lib/entry-checks';
import { ExposeOnGateway } from '../lib/expose-on-gateway';
import { envoyDuration, parseDuration } from '../lib/entry-checks/duration';
import { checkCohortHeaderValue } from '../lib/entry-checks/entry-policy';
import { quote } from '../lib/entry-checks/report';
import { REPO_ROOT } from '../lib/pins';
import { testApp } from './helpers';

/**
 * The entry-level traffic fields (protocol, canary, health_check) give the Rust checks' exact
 * messages: render/tests/corpus/entry-policy-messages.json is written by the Rust test
 * check_entry_policy_messages from the Rust checks themselves.
 */
const corpus = path.join(REPO_ROOT, 'render', 'tests', 'corpus');
const recorded: Record<string, string[]> = JSON.parse(
  fs.readFileSync(path.join(corpus, 'entry-policy-messages.json'), 'utf8'),
);
const PREFIXES = ['protocol', 'canary', 'health_check'];

test('the recorded messages are there', () => {
  expect(Object.keys(recorded).length).toBeGreaterThanOrEqual(30);
});

test.each(Object.entries(recorded))('bad/%s gives the Rust messages', (file, lines) => {
  const value = JSON.parse(fs.readFileSync(path.join(corpus, 'bad', file), 'utf8'));
  const got = checkEntry(value, { baseDomain: 'api.example.com' })
    .filter((p) => PREFIXES.some((f) => p.field.startsWith(f)))
    .map((p) => `${p.field}: ${p.reason}`);
  expect(got).toEqual(lines);
});

test('the operators minimum health-check interval is an option', () => {
  const entry = {
    team: 'billing', service: 'invoices-api', host: 'invoices', backend: 'http://10.0.0.1',
    health_check: { path: '/healthz', interval: '1s' }, routes: [{ path: '/invoices' }],
  };
  expect(checkEntry(entry).map((p) => `${p.field}: ${p.reason}`)).toEqual([
    "health_check.interval: is 1s; at least 5s (the operators' minimum health-check interval)",
  ]);
  expect(checkEntry(entry, { minHealthCheckIntervalMs: 1000 })).toEqual([]);
});

test('hostile values are quoted the way Rust quotes them', () => {
  expect(quote('a\r\nb')).toBe('"a\\r\\nb"');
  expect(quote('é')).toBe('"\\u{e9}"');
  expect(quote('x'.repeat(100))).toBe(`"${'x'.repeat(64)}"…`);
  expect(checkCohortHeaderValue('a\u2028b')).toBe(
    'character "\\u{2028}" is not allowed in a header value (visible ASCII and spaces only)',
  );
  expect(parseDuration('250ms')).toBe(250);
  expect(parseDuration('2m')).toBe(120_000);
  expect(parseDuration('05s')).toBeUndefined();
  expect(envoyDuration(1005)).toBe('1.005s');
});

describe('the construct carries the entry-level fields', () => {
  const props = {
    team: 'billing', service: 'invoices-api', host: 'invoices',
    backend: 'https://invoices.internal.example:8443',
    routes: [{ path: '/invoices', methods: ['GET'] }],
    serviceToken: 'arn:aws:lambda:eu-west-1:111111111111:function:Gateway-RegisterFunction',
  };

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

  test('a canary at a loopback or metadata address is refused at synth, naming canary.backend', () => {
    for (const backend of ['http://127.0.0.1:8080', 'http://169.254.169.254', 'http://[::ffff:127.0.0.1]']) {
      const stack = new Stack(testApp(), 'Team');
      let error: unknown;
      try {
        new ExposeOnGateway(stack, 'Invoices', { ...props, canary: { backend, weight: 5 } });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(EntryRejected);
      expect((error as EntryRejected).problems.map((p) => p.field)).toEqual(['canary.backend']);
    }
  });
});
