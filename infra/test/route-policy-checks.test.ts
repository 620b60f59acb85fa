import { checkEntry } from '../lib/entry-checks';
import { quote } from '../lib/entry-checks/report';
import { grpcRetryConditionsAllowed } from '../lib/entry-checks/route-policy';
import { FULL_ROUTE_POLICY } from './helpers';

/**
 * Route-policy checks of the construct beyond the differential corpus (infra/test/entry-corpus.json,
 * which holds every message to the Rust checks): the operators' bounds as options, the gRPC hook,
 * and a full policy passing.
 */
const options = { baseDomain: 'api.example.com' };

function messages(value: unknown, opts: Parameters<typeof checkEntry>[1] = options): string[] {
  return checkEntry(value, opts).map((p) => `${p.field}: ${p.reason}`);
}

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

test('gRPC statuses need protocol grpc, and there they may retry a POST route', () => {
  expect(grpcRetryConditionsAllowed({ protocol: 'grpc' })).toBe(true);
  expect(grpcRetryConditionsAllowed({ protocol: 'http2' })).toBe(false);
  expect(grpcRetryConditionsAllowed({})).toBe(false);
  expect(messages(entry({ retries: { attempts: 1, on: ['resource-exhausted'] } }))).toEqual([
    'routes[0].retries.on[0]: "resource-exhausted" is a gRPC status; it needs protocol: "grpc" on the entry',
  ]);
  const grpc = (route: Record<string, unknown>) => ({ ...entry(route), protocol: 'grpc' });
  // gRPC calls are POSTs: the statuses are allowed there, HTTP's 5xx still is not.
  expect(messages(grpc({ methods: ['POST'], retries: { attempts: 2, on: ['unavailable', 'deadline-exceeded'] } }))).toEqual([]);
  expect(messages(grpc({ methods: ['POST'], retries: { attempts: 2, on: ['unavailable', '5xx'] } }))).toEqual([
    'routes[0].retries.on[1]: "5xx" retries a POST route; a route accepting POST may retry only on connect-failure or refused-stream (the backend never saw the request)',
  ]);
});

test('values are quoted as the Rust checks quote them', () => {
  expect(quote('a"b\\c\r\n\té\u2028')).toBe('"a\\"b\\\\c\\r\\n\\t\\u{e9}\\u{2028}"');
  expect(quote('x'.repeat(70))).toBe(`"${'x'.repeat(64)}"…`);
});

test('a full route policy passes', () => {
  expect(messages(entry({ ...FULL_ROUTE_POLICY }))).toEqual([]);
});

test('a CORS pattern over a public suffix is refused by the same list as the Rust check', () => {
  // The names render/src/check/cors.rs judges in its tests: the `psl` crate there, `tldts` here.
  const suffixes = [
    'co.uk', 'com.au', 'github.io', 's3.amazonaws.com', 'herokuapp.com', 'appspot.com', 'pages.dev',
    'vercel.app', 'cloudfront.net', 'anything.ck',
  ];
  const registrable = ['example.co.uk', 'team.github.io', 'example.com', 'corp.internal', 'www.ck'];
  const origins = (credentials: boolean, names: string[]) =>
    messages(entry({ cors: { origins: names.map((n) => `https://*.${n}`), credentials } }));
  for (const credentials of [false, true]) {
    expect(origins(credentials, suffixes)).toEqual(
      suffixes.map(
        (n, i) =>
          `routes[0].cors.origins[${i}]: "https://*.${n}" matches every site under "${n}", a public suffix (anyone may have a name there); name your own domain, e.g. https://*.example.${n}`,
      ),
    );
    expect(origins(credentials, registrable)).toEqual([]);
  }
});
