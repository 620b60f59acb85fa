import * as fs from 'fs';
import * as path from 'path';
import { checkEntry } from '../lib/entry-checks';
import { quote } from '../lib/entry-checks/report';
import { grpcRetryConditionsAllowed } from '../lib/entry-checks/route-policy';
import { REPO_ROOT } from '../lib/pins';

/**
 * The route-policy checks' messages must be byte-identical to the Rust ones: the Rust test
 * `render/tests/route_policy_messages.rs` records every message for the corpus's route-policy
 * cases in `render/tests/corpus/route-policy-messages.json`, and this port must print exactly
 * those lines for the same files.
 */
const corpus = path.join(REPO_ROOT, 'render', 'tests', 'corpus');
const recorded: Record<string, string[]> = JSON.parse(fs.readFileSync(path.join(corpus, 'route-policy-messages.json'), 'utf8'));
const POLICY_FIELD = /^routes\[\d+\]\.(timeout|retries|rewrite|request_headers|response_headers|cors|websocket)\b/;
const options = { baseDomain: 'api.example.com' };

function messages(value: unknown, opts: Parameters<typeof checkEntry>[1] = options): string[] {
  return checkEntry(value, opts).map((p) => `${p.field}: ${p.reason}`);
}

test('the recorded cases are there', () => {
  expect(Object.keys(recorded).length).toBeGreaterThanOrEqual(40);
});

test.each(Object.entries(recorded))('bad/%s: the same messages as the Rust checks', (file, rust) => {
  // Each case's entry is valid apart from its route policy, so every Rust message is about it.
  expect(rust.every((m) => POLICY_FIELD.test(m))).toBe(true);
  const value = JSON.parse(fs.readFileSync(path.join(corpus, 'bad', file), 'utf8'));
  expect(messages(value).filter((m) => POLICY_FIELD.test(m))).toEqual(rust);
});

function entry(route: Record<string, unknown>): Record<string, unknown> {
  return {
    team: 'billing', service: 'invoices-api', host: 'invoices',
    backend: 'https://invoices.internal.example:8443', routes: [{ path: '/invoices', methods: ['GET'], ...route }],
  };
}

test('operator bounds come from the options', () => {
  const e = entry({ timeout: '90s', retries: { attempts: 5, on: ['5xx'] } });
  expect(messages(e)).toEqual([
    "routes[0].timeout: is 90s; at most 60s (the operators' maximum route timeout)",
    "routes[0].retries.attempts: is 5; at most 3 (the operators' maximum retry attempts)",
  ]);
  expect(messages(e, { ...options, maxRouteTimeoutMs: 120_000, maxRetryAttempts: 5 })).toEqual([]);
});

test('gRPC statuses wait for the entry protocol', () => {
  expect(grpcRetryConditionsAllowed({ protocol: 'grpc' })).toBe(false);
  expect(messages(entry({ retries: { attempts: 1, on: ['resource-exhausted'] } }))).toEqual([
    'routes[0].retries.on[0]: "resource-exhausted" is a gRPC status; it needs protocol: "grpc" on the entry',
  ]);
});

test('values are quoted as the Rust checks quote them', () => {
  expect(quote('a"b\\c\r\n\té\u2028')).toBe('"a\\"b\\\\c\\r\\n\\t\\u{e9}\\u{2028}"');
  expect(quote('x'.repeat(70))).toBe(`"${'x'.repeat(64)}"…`);
});

test('a full route policy passes', () => {
  expect(messages(entry({
    timeout: '5s',
    retries: { attempts: 2, on: ['connect-failure', 'reset', '5xx'], per_try_timeout: '2s' },
    rewrite: '/v2/invoices',
    request_headers: { add: { 'x-team': 'billing' }, remove: ['x-debug'] },
    response_headers: { add: { 'cache-control': 'no-store' }, remove: ['server'] },
    cors: { origins: ['https://app.example.com'], methods: ['GET'], headers: ['x-api-key'], max_age: '10m', credentials: false },
    websocket: false,
  }))).toEqual([]);
});
