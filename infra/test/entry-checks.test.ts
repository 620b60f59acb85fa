import { assertEntry, checkEntry, EntryRejected, MAX_PATH_PREFIXES, MAX_ROUTES } from '../lib/entry-checks';
import { sampleEntry } from '../lib/example-team-stack';

/**
 * Hand-picked cases of the synth-time checks. Their agreement with the Rust checks, message by
 * message, is entry-corpus.test.ts's job; these pin down what that corpus cannot show: how a
 * JavaScript value that is not plain JSON is judged, and a table of addresses by kind.
 */

const fields = (value: unknown, options = {}) => checkEntry(value, options).map((p) => p.field);
const withRoute = (route: unknown) => ({ ...sampleEntry(), routes: [route] });

test('the sample entry of docs/design.md#registration-entry passes', () => {
  expect(checkEntry(sampleEntry(), { baseDomain: 'api.example.com' })).toEqual([]);
});

test.each([
  ['/invoices?x', 'routes[0].path'],
  ['/a#b', 'routes[0].path'],
  ['/a//b', 'routes[0].path'],
  ['/a/./b', 'routes[0].path'],
  ['/a/../b', 'routes[0].path'],
  ['/a b', 'routes[0].path'],
  ['/a\u0007', 'routes[0].path'],
  ['relative', 'routes[0].path'],
  ['/' + 'a'.repeat(1024), 'routes[0].path'],
  ['/a%2e%2e/b', 'routes[0].path'],
  ['/a%2Fb', 'routes[0].path'],
  ['/a/..;/b', 'routes[0].path'],
  ['/a\\b', 'routes[0].path'],
  ['/café', 'routes[0].path'],
  ['/a{b}', 'routes[0].path'],
  ['/a%g1', 'routes[0].path'],
])('path %j is rejected', (path, field) => {
  expect(fields(withRoute({ path }))).toEqual([field]);
});

test('the root path and nested paths pass', () => {
  expect(fields(withRoute({ path: '/' }))).toEqual([]);
  expect(fields(withRoute({ path: '/v1/invoices/' }))).toEqual([]);
  expect(fields(withRoute({ path: '/v1/items:batch' }))).toEqual([]);
  expect(fields(withRoute({ path: '/caf%C3%A9' }))).toEqual([]);
  expect(fields(withRoute({ path: '/a/..b' }))).toEqual([]);
});

test('methods: known, not repeated, not empty', () => {
  expect(fields(withRoute({ path: '/a', methods: ['get'] }))).toEqual(['routes[0].methods[0]']);
  expect(fields(withRoute({ path: '/a', methods: ['GET', 'GET'] }))).toEqual(['routes[0].methods[1]']);
  expect(fields(withRoute({ path: '/a', methods: [] }))).toEqual(['routes[0].methods']);
});

test('same path with disjoint methods passes; overlapping or method-less is rejected', () => {
  const routes = (a?: string[], b?: string[]) => ({ ...sampleEntry(), routes: [{ path: '/a', methods: a }, { path: '/a', methods: b }] });
  expect(fields(routes(['GET'], ['POST']))).toEqual([]);
  expect(fields(routes(['GET', 'PUT'], ['PUT']))).toEqual(['routes[1]']);
  expect(fields(routes(undefined, ['GET']))).toEqual(['routes[1]']);
});

test('limits: header per needs a lowercase token; header only with per header; positive integer requests; bursts >= 1', () => {
  const limit = (l: unknown) => fields(withRoute({ path: '/a', limits: [l] }));
  expect(limit({ per: 'header', requests: 1, every: 'second' })).toEqual(['routes[0].limits[0].header']);
  expect(limit({ per: 'header', header: 'X-Api-Key', requests: 1, every: 'second' })).toEqual(['routes[0].limits[0].header']);
  expect(limit({ per: 'route', header: 'x-a', requests: 1, every: 'second' })).toEqual(['routes[0].limits[0].header']);
  expect(limit({ per: 'route', requests: 0, every: 'day' })).toEqual(['routes[0].limits[0].requests']);
  expect(limit({ per: 'route', requests: 1.5, every: 'day' })).toEqual(['routes[0].limits[0].requests']);
  expect(limit({ per: 'route', requests: '10', every: 'day' })).toEqual(['routes[0].limits[0].requests']);
  expect(limit({ burst: 0 })).toEqual(['routes[0].limits[0].burst']);
  expect(limit({ burst: 5, per: 'route' })).toEqual(['routes[0].limits[0]']);
  expect(limit({ burst: 1_000_001 })).toEqual(['routes[0].limits[0].burst']);
  expect(limit({ per: 'header', header: 'x-forwarded-for', requests: 1, every: 'second' })).toEqual(['routes[0].limits[0].header']);
  expect(limit({})).toEqual(['routes[0].limits[0]']);
});

test('bounds: routes per entry and limits per route', () => {
  const many = Array.from({ length: MAX_ROUTES + 1 }, (_, i) => ({ path: `/r${i}` }));
  expect(fields({ ...sampleEntry(), routes: many })).toEqual(expect.arrayContaining(['routes']));
  const prefixes = Array.from({ length: MAX_PATH_PREFIXES + 1 }, (_, i) => ({ path: `/p${i}` }));
  expect(fields({ ...sampleEntry(), routes: prefixes })).toEqual(['routes']);
  const units = ['second', 'minute', 'hour', 'day'];
  const limits = Array.from({ length: 9 }, (_, i) => ({ per: 'header', header: `x-k${i % 3}`, requests: 1, every: units[Math.floor(i / 3)] }));
  expect(fields(withRoute({ path: '/a', limits }))).toEqual(['routes[0].limits']);
});

test('one burst per route, and one global limit per (per, header, unit)', () => {
  const limits = (...l: unknown[]) => fields(withRoute({ path: '/a', limits: l }));
  expect(limits({ burst: 1 }, { burst: 2 })).toEqual(['routes[0].limits[1]']);
  expect(limits({ per: 'route', requests: 1, every: 'minute' }, { per: 'route', requests: 9, every: 'minute' })).toEqual(['routes[0].limits[1]']);
  expect(limits({ per: 'route', requests: 1, every: 'minute' }, { per: 'route', requests: 9, every: 'hour' })).toEqual([]);
});

test('unknown fields are rejected by name', () => {
  expect(fields({ ...sampleEntry(), owner: 'x' })).toEqual(['owner']);
  expect(fields({ ...sampleEntry(), 'a b': 'x' })).toEqual(['["a b"]']);
  expect(fields(withRoute({ path: '/a', prefix: true }))).toEqual(['routes[0].prefix']);
});

test.each([
  ['ftp://files.example', 'scheme "ftp"'],
  ['HTTP://files.example', 'lowercase'],
  ['https://user:pw@files.example', 'user information'],
  ['https://files.example/path', 'has a path'],
  ['https://files.example?q=1', 'query'],
  ['https://files.example:0', 'port'],
  ['https://files.example:080', 'port'],
  ['http://127.1', 'dotted-quad'],
  ['http://0x7f000001', 'dotted-quad'],
  ['http://2001:db8::1', 'brackets'],
  ['https://invoices.api.example.com', 'makes a loop'],
  ['http://metadata.google.internal', 'cloud metadata endpoint'],
  ['http://224.0.0.1', 'multicast'],
  ['not-a-url', 'must start with http'],
  ['http://in voices', 'without spaces'],
])('backend %j is rejected', (backend, reason) => {
  const problems = checkEntry({ ...sampleEntry(), backend }, { baseDomain: 'api.example.com' });
  expect(problems.map((p) => p.field)).toContain('backend');
  expect(problems.map((p) => p.reason).join(' ')).toContain(reason);
});

test.each([
  ['localhost', 'loopback'],
  ['127.0.0.1', 'loopback'],
  ['127.8.9.10', 'loopback'],
  ['[::1]', 'loopback'],
  ['[::ffff:7f00:1]', 'loopback'],
  ['0.0.0.0', 'unspecified'],
  ['[::]', 'unspecified'],
  ['169.254.169.254', 'link-local'],
  ['[fe80::1]', 'link-local'],
  ['[febf::1]', 'link-local'],
  ['[fd00:ec2::254]', 'link-local'],
  ['[::ffff:a9fe:a9fe]', 'link-local'],
  ['[64:ff9b::a9fe:a9fe]', 'link-local'],
  ['169.254.170.2', 'link-local'],
  ['[ff02::1]', 'multicast'],
  ['10.0.0.1', 'other'],
  ['[fec0::1]', 'site-local'],
  ['[::169.254.169.254]', 'link-local'],
  ['[::ffff:0:169.254.169.254]', 'link-local'],
  ['[2002:a9fe:a9fe::1]', 'link-local'],
  ['[64:ff9b:1::a9fe:a9fe]', 'link-local'],
  ['[2001:0:a9fe:a9fe::1]', 'link-local'],
  ['[::127.0.0.1]', 'loopback'],
  ['[64:ff9b:1::a00:1]', 'other'],
  ['[2001:db8::1]', 'other'],
  ['127.0.0.1.nip.io', 'loopback'],
  ['app-169-254-170-2.sslip.io', 'link-local'],
  ['app-a9fea9fe.nip.io', 'link-local'],
  ['fe80--1.sslip.io', 'link-local'],
  ['0--1.sslip.io', 'loopback'],
  ['api.localtest.me', 'loopback'],
  ['10-0-0-1.sslip.io', 'other'],
  ['v1-2-3.internal.example', 'other'],
  ['invoices.internal.example', 'other'],
])('backend host %s is %s', (host, kind) => {
  const problems = checkEntry({ ...sampleEntry(), backend: `http://${host}` }, { baseDomain: 'api.example.com' });
  if (kind === 'other') {
    expect(problems).toEqual([]);
  } else {
    expect(problems.map((p) => p.field)).toEqual(['backend']);
    expect(problems[0].reason).toContain(kind);
  }
});

test('loopback backends pass only when allowed; link-local never', () => {
  const loopback = { ...sampleEntry(), backend: 'http://127.0.0.1:9000' };
  expect(fields(loopback)).toEqual(['backend']);
  expect(fields(loopback, { allowLoopbackBackends: true })).toEqual([]);
  const metadata = { ...sampleEntry(), backend: 'http://169.254.169.254' };
  expect(fields(metadata, { allowLoopbackBackends: true })).toEqual(['backend']);
});

test('numeric spellings a URL parser would normalise to a link-local address are refused', () => {
  // 0xa9fea9fe and 2852039166 are 169.254.169.254 to a WHATWG URL parser.
  expect(fields({ ...sampleEntry(), backend: 'http://0xa9fea9fe' })).toEqual(['backend']);
  expect(fields({ ...sampleEntry(), backend: 'http://2852039166/' })).toEqual(['backend']);
  expect(fields({ ...sampleEntry(), backend: 'http://[::ffff:169.254.169.254]' })).toEqual(['backend']);
  expect(fields({ ...sampleEntry(), backend: 'http://10.0.0.1:8080/' })).toEqual([]);
  expect(fields({ ...sampleEntry(), backend: 'http://10.0.0.1:15001' })).toEqual(['backend']);
});

test('a JavaScript value is judged as the JSON text the construct sends', () => {
  // JSON.stringify drops undefined fields and writes NaN as null.
  expect(checkEntry({ ...sampleEntry(), routes: [{ path: '/a', methods: undefined, limits: undefined }] })).toEqual([]);
  expect(checkEntry(withRoute({ path: '/a', limits: [{ per: 'route', requests: NaN, every: 'day' }] }))).toEqual([
    { field: 'routes[0].limits[0].requests', reason: 'expected a positive integer, got null' },
  ]);
  // A number is read as the register function reads its text: 1e21 is a float there.
  expect(checkEntry(withRoute({ path: '/a', limits: [{ burst: 1e21 }] }))).toEqual([
    { field: 'routes[0].limits[0].burst', reason: 'expected a positive integer, got 1e+21' },
  ]);
  expect(checkEntry(withRoute({ path: '/a', limits: [{ burst: 2 ** 64 }] }))[0].reason).toBe(
    'expected a positive integer, got 1.8446744073709552e+19',
  );
  expect(checkEntry(withRoute({ path: '/a', limits: [{ burst: -0 }] }))[0].reason).toBe('must be at least 1');
  expect(checkEntry(undefined)).toEqual([{ field: 'entry', reason: 'empty document; expected a JSON object' }]);
});

test('a rejection prints one line per problem, whatever the entry holds', () => {
  expect(() => assertEntry({ ...sampleEntry(), team: 'a\nteam: ok', host: 'x\r\ny' })).toThrow(EntryRejected);
  try {
    assertEntry({ ...sampleEntry(), team: 'a\nteam: ok', 'b\nc': 1 });
  } catch (e) {
    const lines = (e as Error).message.split('\n');
    expect(lines).toEqual([
      'gateway entry rejected:',
      '  ["b\\nc"]: unknown field; expected team, service, host, backend, protocol, canary, health_check or routes',
      '  team: "a\\nteam: ok" must use only lowercase a-z, 0-9 or "-" (found "\\n")',
    ]);
  }
  expect.assertions(2);
});
