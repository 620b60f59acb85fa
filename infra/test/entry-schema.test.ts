import * as fs from 'fs';
import * as path from 'path';
import { ENTRY_SCHEMA, entryProblems } from '../lib/entry-schema';
import { REPO_ROOT } from '../lib/pins';

/**
 * The entry schema (schema/entry.schema.json, generated from the Rust entry types) against the
 * Rust checks' own corpus, render/tests/corpus: every entry the checks accept passes it, and
 * every entry they refuse for its shape or a fixed bound is refused by it at a field the checks
 * name. What the schema leaves to the register function is listed below, each with why.
 */
const CORPUS = path.join(REPO_ROOT, 'render', 'tests', 'corpus');
const expectations: Record<string, string[]> = JSON.parse(fs.readFileSync(path.join(CORPUS, 'expectations.json'), 'utf8'));

/** Corpus files whose problem the register function finds, not the schema. */
const DECIDED_AT_DEPLOY: [RegExp, string][] = [
  [/^backend-(?!missing|null|number|object)/, 'where a backend URL leads and how it is spelled'],
  [/^canary-(decimal-ip|loopback|metadata|reserved-port|same-backend|user-info)\./, 'the canary backend, judged as backend'],
  [/^canary-header-(envoy|forwarded|host|request-id)\./, 'header names the gateway sets itself'],
  [/^header-(amz-security-token|authorization|cookie|envoy-internal|forwarded-for|forwarded-host|hop-by-hop|proxy-authorization|request-id|traceparent)\./, 'headers that cannot be a rate-limit key'],
  [/^(header-missing|header-without-per-header)\./, '`header` exactly when `per` is header'],
  [/^(headers-(host|rate-limit-key|set-and-removed|transfer-encoding|x-envoy|x-forwarded-removed)|response-headers-cross-tenant)\./, 'headers the gateway vouches for, and a header both set and removed'],
  [/^(path-(bad-percent|dot|dot-dot|double-encoded|double-slash|encoded-backslash|encoded-dot-dot|encoded-slash|ends-dot|ends-dot-dot|leading-double-slash|no-leading-slash|semicolon-dot-dot)|health-check-path-|rewrite-(?!not-a-string))/, 'path segments, escapes and the leading slash'],
  [/^host-(empty-label|fqdn-too-long|label-too-long|leading-dash|leading-dot|too-many-labels|trailing-dash|trailing-dot|with-base-domain)\./, 'DNS labels and the base domain'],
  [/^team-(ends-with-dash|starts-with-dash|starts-with-digit)\./, "an identifier's first and last character"],
  [/^(timeout-(?!null|number)|health-check-interval-(?!number)|retries-per-try-|cors-max-age-)/, 'what a duration says, and the operators’ bounds on it'],
  [/^(retries-(attempts-over-max|every-method-on-reset|grpc-status-without-protocol|patch-on-gateway-error|post-on-5xx|status-codes-missing)|grpc-retries-5xx-on-post)\./, 'retries against the operators’ maximum, the methods and the protocol'],
  [/^cors-(base-domain-pattern|differs-on-one-path|origin-with-path-and-null|pattern-too-long|public-suffix-pattern|star-with-credentials|top-level-domain-pattern)\./, 'CORS origins'],
  [/^(duplicate-key-|global-duplicate-|burst-twice|routes-duplicate-|routes-too-many-prefixes|websocket-on-a-post-route)/, 'duplicates and rules across values (JSON.parse also keeps only the last of a repeated key)'],
  [/^clients-(not-canonical|prefix-over)\./, 'what a CIDR block says: its prefix length and its own spelling'],
  [/^backends-(duplicate-url|all-zero|url-metadata|canary-same-url)\./, 'weighted backends, judged as backend, each once, one taking traffic'],
  [/^mirror-(backend-metadata|three-backends|with-redirect)\./, 'the mirror backend, judged as backend, and what a redirect route may carry'],
  [/^match-(header-host|header-twice|exact-prefix-rewrite|exact-dot-dot|exact-twice)\./, 'header names the gateway sets, a condition twice, and what an exact route may replace'],
  [/^(jwt-(claim-header-reserved|claim-header-changed-by-route|claim-header-matched-by-route|claim-header-canary-cohort|issuer-not-allowed|weak-rsa-key|ec-not-on-curve)|auth-unknown-provider)\./, 'claim headers the gateway vouches for, issuers the operators allow, what a key is, and which providers the entry declares'],
  [/^requests-(exponent|float-integral)\./, '1e3 and 10.0 are integers to JavaScript, floats to the register function'],
  [/^rollout-(interval-below-minimum|judged-fixed-percent|steps-going-down|steps-not-ending-at-100|steps-without-interval)\./, 'the operators’ minimum interval, steps that only grow to 100, and the fields only judged steps take'],
];

function corpus(dir: 'good' | 'bad'): [string, unknown][] {
  return fs
    .readdirSync(path.join(CORPUS, dir))
    .sort()
    .flatMap((name): [string, unknown][] => {
      try {
        return [[name, JSON.parse(fs.readFileSync(path.join(CORPUS, dir, name), 'utf8'))]];
      } catch {
        return []; // not JSON: the construct never sends such text (render/tests/suite/check_corpus.rs keeps them)
      }
    })
    .filter(([, value]) => {
      try {
        JSON.stringify(value);
        return true;
      } catch {
        return false; // nested deeper than JSON.stringify writes: no construct sends it
      }
    });
}

/** `a` is `b`, inside it, or around it (`entry` is around everything). */
function related(a: string, b: string): boolean {
  const under = (x: string, y: string) => x === y || x.startsWith(`${y}.`) || x.startsWith(`${y}[`);
  return a === 'entry' || b === 'entry' || under(a, b) || under(b, a);
}

test('the corpus is there', () => {
  expect(corpus('good').length).toBeGreaterThanOrEqual(30);
  expect(corpus('bad').length).toBeGreaterThanOrEqual(300);
});

test.each(corpus('good'))('good/%s passes the schema', (_name, entry) => {
  expect(entryProblems(entry)).toEqual([]);
});

describe('bad corpus entries', () => {
  const bad = corpus('bad');

  test.each(bad.filter(([name]) => !DECIDED_AT_DEPLOY.some(([re]) => re.test(name))))(
    'bad/%s is refused at a field the Rust checks name',
    (name, entry) => {
      const problems = entryProblems(entry);
      expect(problems.length).toBeGreaterThan(0);
      const named = expectations[name];
      expect(named).toBeDefined();
      for (const p of problems) {
        expect([p.field, named.some((f) => related(p.field, f))]).toEqual([p.field, true]);
      }
    },
  );

  test.each(bad.filter(([name]) => DECIDED_AT_DEPLOY.some(([re]) => re.test(name))))(
    'bad/%s passes the schema; the register function refuses it',
    (_name, entry) => {
      expect(entryProblems(entry)).toEqual([]);
    },
  );

  test('each rule left to the register function covers a corpus file', () => {
    for (const [re, why] of DECIDED_AT_DEPLOY) {
      expect([why, bad.some(([name]) => re.test(name))]).toEqual([why, true]);
    }
  });
});

describe('reasons', () => {
  const entry = (route: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    team: 'billing', service: 'invoices-api', host: 'invoices', backend: 'https://invoices.internal.example:8443',
    routes: [{ path: '/invoices', ...route }], ...extra,
  });
  const lines = (v: unknown) => entryProblems(v).map((p) => `${p.field}: ${p.reason}`);

  test('each kind of problem names its field in the Rust spelling and says why', () => {
    expect(lines(entry({ limits: [{ per: 'route', requests: 1, every: 'fortnight' }] }))).toEqual([
      'routes[0].limits[0].every: unknown value "fortnight"; expected second, minute, hour or day',
    ]);
    expect(lines(entry({ limits: [{ per: 'route', every: 'minute' }] }))).toEqual(['routes[0].limits[0].requests: required field is missing']);
    expect(lines(entry({ limits: [{}] }))).toEqual(['routes[0].limits[0]: expected {burst} or {every, header?, per, requests}']);
    expect(lines(entry({ limits: [{ burst: 0 }, { burst: 1.5 }, { burst: 2_000_000 }] }))).toEqual([
      'routes[0].limits[0].burst: is 0; at least 1',
      'routes[0].limits[1].burst: expected an integer, got 1.5',
      'routes[0].limits[2].burst: is 2000000; at most 1000000',
    ]);
    expect(lines(entry({ methods: ['GET', 'GET'] }))).toEqual(['routes[0].methods[1]: "GET" is listed twice (also routes[0].methods[0])']);
    expect(lines(entry({ methods: null }))).toEqual(['routes[0].methods: expected a list, got null']);
    expect(lines(entry({ request_headers: { add: { 'X-Team': 'a', 'a b': 'c' } } }))).toEqual([
      'routes[0].request_headers.add.X-Team: "X-Team": character "X" is not allowed; expected only [a-z0-9!#$%&\'*+.^_`|~-]',
      'routes[0].request_headers.add["a b"]: "a b": character " " is not allowed; expected only [a-z0-9!#$%&\'*+.^_`|~-]',
    ]);
    expect(lines(entry({}, { protocol: 'h2c', owner: 'x' }))).toEqual([
      'protocol: unknown value "h2c"; expected http1, http2 or grpc',
      'owner: unknown field; expected backend, backends, canary, health_check, host, jwt, preserve_host, protocol, rollout, routes, service or team',
    ]);
    expect(lines(entry({ path: 'x'.repeat(1025) }))).toEqual(['routes[0].path: is 1025 characters long; at most 1024']);
    expect(lines(undefined)).toEqual(['entry: empty document; expected a JSON object']);
  });

  test('problems come in document order, one per field, one line each whatever the entry holds', () => {
    const hostile = { 'b\nc': 1, team: 'a\nteam: ok', service: '', host: 'x', backend: 'http://b', routes: [] };
    expect(lines(hostile)).toEqual([
      '["b\\nc"]: unknown field; expected backend, backends, canary, health_check, host, jwt, preserve_host, protocol, rollout, routes, service or team',
      'team: "a\\nteam: ok": character "\\n" is not allowed; expected only [a-z0-9-]',
      'service: must not be empty',
      'routes: must not be empty',
    ]);
  });

  test('the schema is the committed file, with its id', () => {
    const committed = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'schema', 'entry.schema.json'), 'utf8'));
    expect(ENTRY_SCHEMA).toEqual(committed);
    expect(ENTRY_SCHEMA.$id).toBe('urn:gateway:schema:entry');
  });
});
