/**
 * A route's traffic policy (docs/design.md#route-policy): `timeout`, `retries`, `rewrite`,
 * `request_headers`, `response_headers`, `cors`, `websocket`. One module for the Rust modules
 * `duration.rs`, `retries.rs`, `rewrite.rs`, `header_changes.rs`, `cors.rs` and the cross-field
 * rules in `walk.rs` (`route_policy`, `check_shared_cors`), function by function.
 */
import { Policy } from './bounds';
import { atMost, distinctStrings, get, isObject, list, nonEmptyList, object, positiveInt, rejectUnknown, required, string } from './fields';
import { METHODS, checkMethod } from './methods';
import { checkPath } from './path';
import { getDomain } from 'tldts';
import { trimTrailingDots } from './host';
import { Json, JsonObject, Problems, Why, asciiLower, child, compareRust, describe, index, oneOf, quote, readNumber, utf8Length } from './report';

export const ROUTE_POLICY_FIELDS = ['timeout', 'retries', 'rewrite', 'request_headers', 'response_headers', 'cors', 'websocket'];

// ---- duration.rs ----

export const DEFAULT_ROUTE_TIMEOUT_MS = 15_000;
export const DEFAULT_MAX_ROUTE_TIMEOUT_MS = 60_000;

/** Rust's `{:?}` of a `&str`. */
export function debugStr(s: string): string {
  let out = '"';
  for (const c of s) {
    if (c === '"') out += '\\"';
    else if (c === '\\') out += '\\\\';
    else if (c === '\0') out += '\\0';
    else if (c === '\t') out += '\\t';
    else if (c === '\r') out += '\\r';
    else if (c === '\n') out += '\\n';
    else if (c !== ' ' && /^[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Zs}\p{Co}\p{Cn}\p{Mn}\p{Me}]$/u.test(c)) {
      out += `\\u{${(c.codePointAt(0) ?? 0).toString(16)}}`;
    } else out += c;
  }
  return `${out}"`;
}

/** `"250ms"`, `"5s"`, `"2m"` → milliseconds, or why not. */
export function parseDuration(s: string): { ms?: number; why?: string } {
  let digits: string;
  let scale: number;
  if (s.endsWith('ms')) [digits, scale] = [s.slice(0, -2), 1];
  else if (s.endsWith('s')) [digits, scale] = [s.slice(0, -1), 1_000];
  else if (s.endsWith('m')) [digits, scale] = [s.slice(0, -1), 60_000];
  else return { why: `${debugStr(s)} is not a duration; write a whole number with unit ms, s or m ("5s", "250ms")` };
  if (!(digits.length > 0 && digits.length <= 9 && /^[0-9]+$/.test(digits) && !digits.startsWith('0'))) {
    return { why: `${debugStr(s)} is not a duration; write a whole number above 0 with unit ms, s or m ("5s", "250ms")` };
  }
  return { ms: Number(digits) * scale };
}

export function envoyDuration(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${Math.floor(ms / 1000)}.${String(ms % 1000).padStart(3, '0')}s`;
}

export function checkTimeout(s: string, maxMs: number): { ms?: number; why?: string } {
  const d = parseDuration(s);
  if (d.ms === undefined) return d;
  if (d.ms > maxMs) {
    return { why: `is ${envoyDuration(d.ms)}; at most ${envoyDuration(maxMs)} (the operators' maximum route timeout)` };
  }
  return d;
}

// ---- walk.rs: the route's policy ----

/** The checked policy fields the cross-route rule compares. */
export interface RoutePolicy {
  /** Canonical form of `cors` (sorted lists), or undefined when absent. */
  readonly cors: string | undefined;
}

/**
 * `timeout` and the route policy of `routes[i]` (`field`), after path, methods and limits, in the
 * Rust walk's order. `path` and `methods` as the walk checked them (undefined, `ok: false` when
 * invalid). The policy is returned when every policy field is valid.
 */
export function walkRoutePolicy(
  map: JsonObject,
  field: string,
  policy: Policy,
  grpc: boolean,
  path: string | undefined,
  methods: { ok: boolean; value?: string[] },
  problems: Problems,
): { timeoutOk: boolean; policy?: RoutePolicy } {
  // timeout (walk.rs `route`).
  let timeoutMs: number | undefined = DEFAULT_ROUTE_TIMEOUT_MS;
  let timeoutOk = true;
  const timeoutValue = get(map, 'timeout');
  if (timeoutValue !== undefined) {
    timeoutMs = undefined;
    const at = child(field, 'timeout');
    const t = string(timeoutValue, at, problems);
    if (t === undefined) timeoutOk = false;
    else {
      const r = checkTimeout(t, policy.maxRouteTimeoutMs ?? DEFAULT_MAX_ROUTE_TIMEOUT_MS);
      if (r.why !== undefined) {
        problems.push(at, r.why);
        timeoutOk = false;
      } else timeoutMs = r.ms;
    }
  }
  const policyBefore = problems.length;
  const retriesValue = get(map, 'retries');
  if (retriesValue !== undefined) {
    walkRetries(retriesValue, child(field, 'retries'), {
      methods: methods.ok ? methods.value ?? null : [],
      timeoutMs,
      grpc,
      maxAttempts: policy.maxRetryAttempts ?? DEFAULT_MAX_RETRY_ATTEMPTS,
    }, problems);
  }
  const rewriteValue = get(map, 'rewrite');
  if (rewriteValue !== undefined) {
    const at = child(field, 'rewrite');
    const r = string(rewriteValue, at, problems);
    if (r !== undefined) {
      const why = checkRewrite(r, path);
      if (why !== undefined) problems.push(at, why);
    }
  }
  // The headers the route's limits count, as written (for valid limits, exactly the typed ones).
  const keys = limitKeys(get(map, 'limits'));
  const requestValue = get(map, 'request_headers');
  if (requestValue !== undefined) walkHeaderChanges(requestValue, child(field, 'request_headers'), keys, problems);
  const responseValue = get(map, 'response_headers');
  if (responseValue !== undefined) walkHeaderChanges(responseValue, child(field, 'response_headers'), undefined, problems);
  const corsValue = get(map, 'cors');
  let cors: string | undefined;
  if (corsValue !== undefined) cors = walkCors(corsValue, child(field, 'cors'), policy.baseDomain, problems);
  const wsValue = get(map, 'websocket');
  if (wsValue !== undefined) {
    const at = child(field, 'websocket');
    if (typeof wsValue !== 'boolean') problems.push(at, `expected true or false, got ${describe(wsValue)}`);
    else if (wsValue && methods.ok && methods.value !== undefined && !methods.value.includes('GET')) {
      problems.push(at, 'the route does not accept GET, which a websocket handshake uses');
    }
  }
  if (problems.length > policyBefore) return { timeoutOk };
  return { timeoutOk, policy: { cors } };
}

/**
 * Whether an entry may retry on gRPC statuses: only with `protocol: "grpc"` (render's
 * `grpc_retry_conditions_allowed`).
 */
export function grpcRetryConditionsAllowed(entry: JsonObject): boolean {
  return entry['protocol'] === 'grpc';
}

/** Routes of an entry that share a path declare the same `cors` (walk.rs `check_shared_cors`). */
export function checkSharedCors(
  routes: ({ path: string; policy: RoutePolicy } | undefined)[],
  field: string,
  problems: Problems,
): void {
  routes.forEach((b, j) => {
    if (!b) return;
    for (let i = 0; i < j; i++) {
      const a = routes[i];
      if (!a || a.path !== b.path) continue;
      if (a.policy.cors !== b.policy.cors) {
        problems.push(
          child(index(field, j), 'cors'),
          `must be the same as ${index(field, i)}.cors: both routes have path ${quote(b.path)}, and a browser's preflight for a path is answered by one policy`,
        );
      }
      return;
    }
  });
}

/** `(limit index, header)` of each limit naming a header, as written. */
function limitKeys(limits: Json | undefined): [number, string][] {
  if (!Array.isArray(limits)) return [];
  const out: [number, string][] = [];
  limits.forEach((l, i) => {
    if (isObject(l)) {
      const h = get(l, 'header');
      if (typeof h === 'string') out.push([i, h]);
    }
  });
  return out;
}

// ---- retries.rs ----

export const DEFAULT_MAX_RETRY_ATTEMPTS = 3;
export const RETRY_CONDITIONS = [
  'connect-failure', 'refused-stream', 'reset', '5xx', 'gateway-error', 'retriable-status-codes',
  'cancelled', 'deadline-exceeded', 'resource-exhausted', 'unavailable',
];
export const GRPC_RETRY_CONDITIONS = ['cancelled', 'deadline-exceeded', 'resource-exhausted', 'unavailable'];
const RETRY_CONDITIONS_BEFORE_THE_BACKEND = ['connect-failure', 'refused-stream'];
const NON_IDEMPOTENT_METHODS = ['POST', 'PATCH', 'CONNECT'];
const RETRIES_FIELDS = ['attempts', 'on', 'status_codes', 'per_try_timeout'];
const MAX_RETRIED_STATUS_CODES = 16;
const U32_MAX = 4_294_967_295;

interface RetryContext {
  /** null: every method. */
  readonly methods: string[] | null;
  readonly timeoutMs: number | undefined;
  readonly grpc: boolean;
  readonly maxAttempts: number;
}

function walkRetries(v: Json, field: string, cx: RetryContext, problems: Problems): void {
  const map = object(v, field, 'a retry policy', problems);
  if (!map) return;
  rejectUnknown(map, field, RETRIES_FIELDS, problems);
  const attemptsField = `${field}.attempts`;
  const attemptsValue = required(map, field, 'attempts', problems);
  if (attemptsValue !== undefined) {
    const n = positiveInt(attemptsValue, attemptsField, U32_MAX, problems);
    if (n !== undefined && n > cx.maxAttempts) {
      problems.push(attemptsField, `is ${n}; at most ${cx.maxAttempts} (the operators' maximum retry attempts)`);
    }
  }
  const onValue = required(map, field, 'on', problems);
  const on = onValue === undefined ? undefined : conditions(onValue, `${field}.on`, cx, problems);
  const wantsCodes = on !== undefined && on.includes('retriable-status-codes');
  const codesField = `${field}.status_codes`;
  const codes = get(map, 'status_codes');
  if (codes === undefined) {
    if (wantsCodes) problems.push(codesField, 'required when on has "retriable-status-codes": list the statuses to retry');
  } else if (!wantsCodes && on !== undefined) {
    problems.push(codesField, 'only allowed when on has "retriable-status-codes"');
  } else {
    statusCodes(codes, codesField, problems);
  }
  const perTry = get(map, 'per_try_timeout');
  if (perTry !== undefined) {
    const at = `${field}.per_try_timeout`;
    const s = string(perTry, at, problems);
    if (s !== undefined) {
      const why = checkPerTryTimeout(s, cx.timeoutMs);
      if (why !== undefined) problems.push(at, why);
    }
  }
}

export function checkPerTryTimeout(s: string, timeoutMs: number | undefined): Why {
  const d = parseDuration(s);
  if (d.ms === undefined) return d.why;
  if (timeoutMs !== undefined && d.ms >= timeoutMs) {
    return `is ${envoyDuration(d.ms)}; must be below the route's timeout (${envoyDuration(timeoutMs)}), or one try uses the whole request's time`;
  }
  return undefined;
}

function conditions(v: Json, field: string, cx: RetryContext, problems: Problems): string[] | undefined {
  const items = nonEmptyList(
    v,
    field,
    'retry conditions',
    'must not be empty; name at least one retry condition, or leave retries out',
    problems,
  );
  if (items === undefined) return undefined;
  const before = problems.length;
  const sorted = distinctStrings(items, field, 'a retry condition (a string)', problems, (c) =>
    checkRetryCondition(c, cx.methods, cx.grpc),
  );
  return problems.length > before ? undefined : sorted;
}

export function checkRetryCondition(c: string, methods: string[] | null, grpc: boolean): Why {
  if (!RETRY_CONDITIONS.includes(c)) return `unknown retry condition ${quote(c)}; expected ${oneOf(RETRY_CONDITIONS)}`;
  if (GRPC_RETRY_CONDITIONS.includes(c) && !grpc) return `${quote(c)} is a gRPC status; it needs protocol: "grpc" on the entry`;
  if (RETRY_CONDITIONS_BEFORE_THE_BACKEND.includes(c)) return undefined;
  // Every gRPC call is a POST: a gRPC backend names the statuses its methods may be retried on.
  if (GRPC_RETRY_CONDITIONS.includes(c)) return undefined;
  if (methods === null) {
    return `${quote(c)} retries a route accepting every method, POST included; such a route may retry only on connect-failure or refused-stream (the backend never saw the request), or list idempotent methods`;
  }
  const m = NON_IDEMPOTENT_METHODS.find((x) => methods.includes(x));
  if (m !== undefined) {
    return `${quote(c)} retries a ${m} route; a route accepting ${m} may retry only on connect-failure or refused-stream (the backend never saw the request)`;
  }
  return undefined;
}

function statusCodes(v: Json, field: string, problems: Problems): void {
  const items = nonEmptyList(v, field, 'status codes', 'must not be empty; list the statuses to retry', problems);
  if (items === undefined) return;
  atMost(items, MAX_RETRIED_STATUS_CODES, field, 'status codes', '', problems);
  const seen: [bigint, number][] = [];
  items.forEach((item, i) => {
    const at = index(field, i);
    const n = typeof item === 'number' ? readNumber(item) : undefined;
    if (n === undefined || n.unsigned === undefined) {
      problems.push(at, `expected a status code (an integer), got ${describe(item)}`);
      return;
    }
    if (n.unsigned < BigInt(400) || n.unsigned > BigInt(599)) {
      problems.push(at, `is ${n.text}; a retried status is 400 to 599`);
      return;
    }
    const code = n.unsigned;
    const first = seen.find(([c]) => c === code);
    if (first) {
      problems.push(at, `${code} is listed twice (also ${index(field, first[1])})`);
      return;
    }
    seen.push([code, i]);
  });
}

// ---- rewrite.rs ----

export function checkRewrite(rewrite: string, path: string | undefined): Why {
  const why = checkPath(rewrite);
  if (why !== undefined) return why;
  if (path === undefined) return undefined;
  const pathSlash = path.endsWith('/');
  const rewriteSlash = rewrite.endsWith('/');
  if (pathSlash === rewriteSlash) return undefined;
  const example = `${path}${pathSlash ? '' : '/'}7`;
  const becomes = `${rewrite}${example.slice(path.length)}`;
  return `${quote(rewrite)} ${rewriteSlash ? 'ends' : 'does not end'} with "/" and path ${quote(path)} ${pathSlash ? 'does' : 'does not'}: ${quote(example)} would reach the backend as ${quote(becomes)}`;
}

// ---- header_changes.rs ----

export const MAX_HEADER_CHANGES = 16;
const MAX_HEADER_VALUE_BYTES = 1024;
const MAX_CHANGED_HEADER_NAME_LEN = 128;
const CHANGES_FIELDS = ['add', 'remove'];
const TCHAR = /^[A-Za-z0-9!#$%&'*+\-.^_`|~]$/;

/** `limitKeys` set: request headers; undefined: response headers. */
function walkHeaderChanges(v: Json, field: string, limitKeysOf: [number, string][] | undefined, problems: Problems): void {
  const map = object(v, field, 'header changes', problems);
  if (!map) return;
  rejectUnknown(map, field, CHANGES_FIELDS, problems);
  const added = new Set<string>();
  const addValue = get(map, 'add');
  if (addValue !== undefined) {
    const addField = child(field, 'add');
    const headers = object(addValue, addField, 'headers and their values', problems);
    if (headers) {
      const names = Object.keys(headers).sort(compareRust);
      if (names.length > MAX_HEADER_CHANGES) problems.push(addField, `has ${names.length} headers; at most ${MAX_HEADER_CHANGES}`);
      for (const name of names) {
        const at = child(addField, name);
        const why = checkChangedHeader(name, limitKeysOf) ?? checkAddedHeader(name, limitKeysOf);
        if (why !== undefined) {
          problems.push(at, why);
          continue;
        }
        const value = string(headers[name], at, problems);
        if (value === undefined) continue;
        const bad = checkHeaderValue(value);
        if (bad !== undefined) problems.push(at, bad);
        else added.add(name);
      }
    }
  }
  const removeValue = get(map, 'remove');
  if (removeValue !== undefined) {
    const removeField = child(field, 'remove');
    if (!Array.isArray(removeValue)) {
      problems.push(removeField, `expected a list of header names, got ${describe(removeValue)}`);
      return;
    }
    if (removeValue.length > MAX_HEADER_CHANGES) {
      problems.push(removeField, `has ${removeValue.length} headers; at most ${MAX_HEADER_CHANGES}`);
    }
    const seen: [string, number][] = [];
    removeValue.forEach((name, i) => {
      const at = index(removeField, i);
      if (typeof name !== 'string') {
        problems.push(at, `expected a header name (a string), got ${describe(name)}`);
        return;
      }
      const why = checkChangedHeader(name, limitKeysOf);
      const first = seen.find(([s]) => s === name);
      if (why !== undefined) problems.push(at, why);
      else if (first) problems.push(at, `${quote(name)} is listed twice (also ${index(removeField, first[1])})`);
      else if (added.has(name)) problems.push(at, `${quote(name)} is also in add; a header is either set or removed`);
      else seen.push([name, i]);
    });
  }
}

export function checkHeaderToken(h: string): Why {
  if (h === '') return 'must not be empty; name a header such as "x-team"';
  if (h.startsWith(':')) return `${quote(h)} is an HTTP/2 pseudo-header; Envoy sets those itself`;
  for (const c of h) {
    if (!TCHAR.test(c)) return `character ${quote(c)} is not allowed in a header name (RFC 9110 token characters only)`;
  }
  if (/[A-Z]/.test(h)) return `${quote(h)} must be lowercase: write ${quote(h.toLowerCase())}`;
  if (h.length > MAX_CHANGED_HEADER_NAME_LEN) return `is ${h.length} characters long; at most ${MAX_CHANGED_HEADER_NAME_LEN}`;
  return undefined;
}

function checkChangedHeader(h: string, limitKeysOf: [number, string][] | undefined): Why {
  const token = checkHeaderToken(h);
  if (token !== undefined) return token;
  let why: string | undefined;
  if (h === 'host') why = "it carries the backend's name (the client's is in x-forwarded-host)";
  else if (h === 'x-request-id') why = "it ties the access log to the backend's logs";
  else if (h === 'forwarded' || h.startsWith('x-forwarded-')) why = 'backends trust the forwarding headers it writes';
  else if (h.startsWith('x-envoy-')) why = 'Envoy reads and writes x-envoy- headers itself';
  else if (['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'content-length'].includes(h)) {
    why = 'it frames the connection or the message, which Envoy manages';
  }
  if (why !== undefined) return `${quote(h)} is the gateway's to set: ${why}`;
  const key = limitKeysOf?.find(([, k]) => k === h);
  if (key) return `${quote(h)} is the header this route's limits[${key[0]}] counts; the backend would see a key other than the one limited`;
  return undefined;
}

/**
 * A header a route may add (header_changes.rs `check_added_header`): on a response, none that sets
 * state in the browser beyond this response and this host. Removing them stays allowed.
 */
function checkAddedHeader(h: string, limitKeysOf: [number, string][] | undefined): Why {
  if (limitKeysOf !== undefined) return undefined;
  let why: string | undefined;
  if (h === 'set-cookie' || h === 'set-cookie2') {
    why = "a cookie set here may be scoped to the gateway's base domain and reach every tenant's host; the backend sets its own cookies";
  } else if (h.startsWith('access-control-')) {
    why = "CORS headers come from the route's cors policy, whose origins are checked; declare cors instead";
  } else if (h === 'clear-site-data') {
    why = "browsers clear the cookies of the whole site (its registrable domain), every tenant's host included";
  } else if (h === 'alt-svc') {
    why = "it sends browsers to another protocol, host or port for this host and they remember it; the gateway's listener decides how it is reached";
  } else if (h === 'public-key-pins' || h === 'public-key-pins-report-only') {
    why = "it pins the keys of the gateway's certificate, which every tenant shares and the operators rotate";
  }
  return why === undefined ? undefined : `${quote(h)} may not be added to a response: ${why}`;
}

export function checkHeaderValue(v: string): Why {
  if (v === '') return 'must not be empty; list the header in remove to drop it';
  const bytes = utf8Length(v);
  if (bytes > MAX_HEADER_VALUE_BYTES) return `the value is ${bytes} bytes long; at most ${MAX_HEADER_VALUE_BYTES}`;
  if (/[\r\n\0]/.test(v)) return 'CR, LF and NUL are not allowed in a header value (they would end the header)';
  if (/[^\x20-\x7e\t]/.test(v)) return 'only visible ASCII, spaces and tabs are allowed in a header value';
  if (/^[ \t]|[ \t]$/.test(v)) return 'the value must not start or end with a space or tab';
  return undefined;
}

// ---- cors.rs ----

const MAX_CORS_ORIGINS = 16;
const MAX_CORS_MAX_AGE_SECONDS = 86_400;
/** Longest domain and port of a pattern origin: its regex stays within Envoy's RE2 program size of 100. */
export const MAX_CORS_PATTERN_DOMAIN_LEN = 83;
const CORS_FIELDS = ['origins', 'methods', 'headers', 'max_age', 'credentials'];

/** The checked policy in canonical form, or undefined after pushing its problems. */
function walkCors(v: Json, field: string, baseDomain: string, problems: Problems): string | undefined {
  const map = object(v, field, 'a CORS policy', problems);
  if (!map) return undefined;
  const before = problems.length;
  rejectUnknown(map, field, CORS_FIELDS, problems);
  let credentials = false;
  const credentialsValue = get(map, 'credentials');
  if (credentialsValue !== undefined) {
    if (typeof credentialsValue === 'boolean') credentials = credentialsValue;
    else problems.push(child(field, 'credentials'), `expected true or false, got ${describe(credentialsValue)}`);
  }
  const originsValue = required(map, field, 'origins', problems);
  const origins = originsValue === undefined ? [] : names(originsValue, child(field, 'origins'), 'origins', MAX_CORS_ORIGINS, problems, (o) => checkOrigin(o, credentials, baseDomain));
  const methodsValue = get(map, 'methods');
  const methods = methodsValue === undefined ? [] : names(methodsValue, child(field, 'methods'), 'methods', METHODS.length, problems, checkMethod);
  const headersValue = get(map, 'headers');
  const headers = headersValue === undefined ? [] : names(headersValue, child(field, 'headers'), 'headers', MAX_HEADER_CHANGES, problems, checkHeaderToken);
  const maxAgeValue = get(map, 'max_age');
  let maxAge: string | null = null;
  if (maxAgeValue !== undefined) {
    const at = child(field, 'max_age');
    if (typeof maxAgeValue !== 'string') problems.push(at, `expected a string, got ${describe(maxAgeValue)}`);
    else {
      const why = checkMaxAge(maxAgeValue);
      if (why !== undefined) problems.push(at, why);
      else maxAge = maxAgeValue;
    }
  }
  if (problems.length > before) return undefined;
  return JSON.stringify([origins, methods, headers, maxAge, credentials]);
}

function names(v: Json, field: string, what: string, max: number, problems: Problems, check: (s: string) => Why): string[] {
  const items = list(v, field, what, problems);
  if (items === undefined) return [];
  if (items.length === 0) {
    problems.push(field, `must not be empty; list at least one, or leave ${what === 'origins' ? 'cors' : what} out`);
    return [];
  }
  atMost(items, max, field, what, '', problems);
  return distinctStrings(items, field, 'a string', problems, check);
}

export function checkMaxAge(s: string): Why {
  const d = parseDuration(s);
  if (d.ms === undefined) return d.why;
  if (d.ms % 1000 !== 0) return `is ${envoyDuration(d.ms)}; browsers cache a preflight for whole seconds`;
  if (d.ms / 1000 > MAX_CORS_MAX_AGE_SECONDS) {
    return `is ${envoyDuration(d.ms)}; at most ${MAX_CORS_MAX_AGE_SECONDS}s (browsers cache a preflight for a day at most)`;
  }
  return undefined;
}

export function checkOrigin(o: string, credentials: boolean, baseDomain: string): Why {
  if (o === '*') {
    return credentials ? '"*" allows every origin, which browsers refuse together with credentials: true; list the origins' : undefined;
  }
  let rest: string;
  if (o.startsWith('https://')) rest = o.slice(8);
  else if (o.startsWith('http://')) rest = o.slice(7);
  else return `${quote(o)} must start with https:// or http:// (an origin is scheme://host[:port])`;
  if (rest.includes('/')) return `${quote(o)} has a path; an origin is scheme://host[:port], with nothing after the host`;
  let host = rest;
  const colon = rest.lastIndexOf(':');
  if (colon >= 0) {
    const port = rest.slice(colon + 1);
    const valid = port.length > 0 && port.length <= 5 && !port.startsWith('0') && /^[0-9]+$/.test(port) && Number(port) <= 65535;
    if (!valid) return `${quote(o)}: the port must be a number from 1 to 65535`;
    host = rest.slice(0, colon);
  }
  const pattern = host.startsWith('*.');
  const name = pattern ? host.slice(2) : host;
  if (name.includes('*')) return `${quote(o)}: "*" may only stand for the first label (https://*.example.com)`;
  if (/[A-Z]/.test(name)) return `${quote(o)} must be lowercase: write ${quote(o.replace(/[A-Z]/g, (c) => c.toLowerCase()))}`;
  for (const label of name.split('.')) {
    const ok = label.length > 0 && utf8Length(label) <= 63 && /^[a-z0-9-]+$/.test(label) && !label.startsWith('-') && !label.endsWith('-');
    if (!ok) return `${quote(o)}: the host must be DNS labels of 1-63 a-z, 0-9 or "-" (label ${quote(label)})`;
  }
  if (!pattern) return undefined;
  if (name.split('.').length < 2) {
    return `${quote(o)} matches every site under a top-level domain; name a domain, e.g. https://*.example.com`;
  }
  const base = asciiLower(trimTrailingDots(baseDomain));
  if (base !== '' && (name === base || name.endsWith(`.${base}`))) {
    return `${quote(o)} matches the gateway's own hosts under ${quote(base)}, other tenants' among them; list the exact origins that call this route`;
  }
  if (isPublicSuffix(name)) {
    return `${quote(o)} matches every site under ${quote(name)}, a public suffix (anyone may have a name there); name your own domain, e.g. https://*.example.${name}`;
  }
  const after = rest.length - 2;
  if (after > MAX_CORS_PATTERN_DOMAIN_LEN) {
    return `${quote(o)} has ${after} characters after "*."; a pattern's domain and port are at most ${MAX_CORS_PATTERN_DOMAIN_LEN} (a longer one renders a regex Envoy refuses: RE2 program size above 100)`;
  }
  return undefined;
}

/**
 * Whether `name` (lowercase DNS labels) has no registrable domain of its own by the Public Suffix
 * List, private section included (cors.rs `is_public_suffix`, there from the `psl` crate).
 */
function isPublicSuffix(name: string): boolean {
  return getDomain(name, { allowPrivateDomains: true, extractHostname: false }) === null;
}
