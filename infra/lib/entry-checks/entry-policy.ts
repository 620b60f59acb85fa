/**
 * The entry-level traffic fields, `protocol`, `canary` and `health_check`
 * (render/src/check/entry_policy.rs, docs/design.md#traffic-policy). The canary's backend goes
 * through `checkBackend`, the very rule the entry's `backend` meets.
 */
import { checkBackend } from './backend';
import { DEFAULT_MIN_HEALTH_CHECK_INTERVAL_MS, Policy } from './bounds';
import { envoyDuration, parseDuration } from './duration';
import { get, object, rejectUnknown, required, requiredChecked, string } from './fields';
import { checkPath } from './path';
import { Json, JsonObject, Problems, Why, asciiLower, chars, child, describe, quote, readNumber, utf8Length } from './report';

const CANARY_FIELDS = ['backend', 'weight', 'header'];
const HEADER_FIELDS = ['name', 'value'];
const HEALTH_CHECK_FIELDS = ['path', 'interval'];
const PROTOCOLS = ['http1', 'http2', 'grpc'];

export const MAX_HEALTH_CHECK_INTERVAL_MS = 300_000;
export const MAX_CANARY_HEADER_VALUE_LEN = 256;
const MAX_CANARY_HEADER_NAME_LEN = 128;

/** `protocol`, `canary` and `health_check` of the entry object `map`, in that order. */
export function walkEntryPolicy(map: JsonObject, policy: Policy, problems: Problems): void {
  const protocolValue = get(map, 'protocol');
  if (protocolValue !== undefined) walkProtocol(protocolValue, 'protocol', problems);
  const canaryValue = get(map, 'canary');
  if (canaryValue !== undefined) {
    const main = get(map, 'backend');
    walkCanary(canaryValue, 'canary', typeof main === 'string' ? main : undefined, policy, problems);
  }
  const healthValue = get(map, 'health_check');
  if (healthValue !== undefined) walkHealthCheck(healthValue, 'health_check', policy, problems);
}

export function walkProtocol(v: Json, field: string, problems: Problems): void {
  const s = string(v, field, problems);
  if (s !== undefined && !PROTOCOLS.includes(s)) {
    problems.push(field, `unknown protocol ${quote(s)}; expected http1, http2 or grpc`);
  }
}

export function walkCanary(v: Json, field: string, main: string | undefined, policy: Policy, problems: Problems): void {
  const map = object(v, field, 'a canary', problems);
  if (!map) return;
  rejectUnknown(map, field, CANARY_FIELDS, problems);
  requiredChecked(
    map,
    field,
    'backend',
    problems,
    (backend) =>
      checkBackend(backend, policy) ??
      (main === backend ? `${quote(backend)} is the entry's own backend; a canary is a second backend` : undefined),
  );
  const weightValue = required(map, field, 'weight', problems);
  if (weightValue !== undefined) percent(weightValue, child(field, 'weight'), problems);
  const headerValue = get(map, 'header');
  if (headerValue !== undefined) walkCohortHeader(headerValue, child(field, 'header'), problems);
}

/** A whole percentage, 0–100. */
function percent(v: Json, field: string, problems: Problems): void {
  if (typeof v === 'number') {
    const n = readNumber(v);
    if (n.unsigned !== undefined && n.unsigned <= BigInt(100)) return;
  }
  problems.push(field, `expected a whole percentage from 0 to 100, got ${describe(v)}`);
}

function walkCohortHeader(v: Json, field: string, problems: Problems): void {
  const map = object(v, field, 'a header match', problems);
  if (!map) return;
  rejectUnknown(map, field, HEADER_FIELDS, problems);
  requiredChecked(map, field, 'name', problems, checkCohortHeaderName);
  requiredChecked(map, field, 'value', problems, checkCohortHeaderValue);
}

/** `check_cohort_header_name`. */
export function checkCohortHeaderName(h: string): Why {
  if (h === '') return 'must not be empty; name a request header such as "x-canary"';
  if (h.startsWith(':')) return `${quote(h)} is an HTTP/2 pseudo-header, not a request header`;
  const bad = chars(h).find((c) => !/^[A-Za-z0-9!#$%&'*+\-.^_`|~]$/.test(c));
  if (bad !== undefined) {
    return `character ${quote(bad)} is not allowed in a header name (RFC 9110 token characters only)`;
  }
  if (/[A-Z]/.test(h)) return `${quote(h)} must be lowercase: write ${quote(asciiLower(h))}`;
  if (h.length > MAX_CANARY_HEADER_NAME_LEN) return `is ${h.length} characters long; at most ${MAX_CANARY_HEADER_NAME_LEN}`;
  let why: string | undefined;
  if (h === 'host') why = "it is the request's authority, which selects the virtual host";
  else if (['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade'].includes(h)) {
    why = 'it is a hop-by-hop header, consumed before routing';
  } else if (h === 'x-request-id') why = 'Envoy sets it on every request';
  else if (h === 'forwarded') why = "the gateway's own proxies set it";
  else if (h.startsWith('x-envoy-')) why = 'Envoy sets and strips x-envoy- headers itself';
  else if (h.startsWith('x-forwarded-')) why = 'the gateway sets x-forwarded- headers itself';
  return why === undefined ? undefined : `${quote(h)} cannot select the canary: ${why}`;
}

/** `check_cohort_header_value`. */
export function checkCohortHeaderValue(s: string): Why {
  if (s === '') return 'must not be empty; requests carrying the header with this value go to the canary';
  const bytes = utf8Length(s);
  if (bytes > MAX_CANARY_HEADER_VALUE_LEN) return `is ${bytes} bytes long; at most ${MAX_CANARY_HEADER_VALUE_LEN}`;
  const bad = chars(s).find((c) => !(c >= ' ' && c <= '~'));
  if (bad !== undefined) {
    return `character ${quote(bad)} is not allowed in a header value (visible ASCII and spaces only)`;
  }
  if (s.startsWith(' ') || s.endsWith(' ')) return `${quote(s)} has a leading or trailing space, which proxies strip`;
  return undefined;
}

function walkHealthCheck(v: Json, field: string, policy: Policy, problems: Problems): void {
  const map = object(v, field, 'a health check', problems);
  if (!map) return;
  rejectUnknown(map, field, HEALTH_CHECK_FIELDS, problems);
  requiredChecked(map, field, 'path', problems, checkPath);
  const min = policy.minHealthCheckIntervalMs ?? DEFAULT_MIN_HEALTH_CHECK_INTERVAL_MS;
  requiredChecked(map, field, 'interval', problems, (s) => checkHealthCheckInterval(s, min));
}

/** `check_health_check_interval`. */
export function checkHealthCheckInterval(s: string, minMs: number): Why {
  const ms = parseDuration(s);
  if (ms === undefined) {
    return `${quote(s)} is not a duration; write a whole number above 0 with unit ms, s or m ("10s", "500ms")`;
  }
  if (ms < minMs) {
    return `is ${envoyDuration(ms)}; at least ${envoyDuration(minMs)} (the operators' minimum health-check interval)`;
  }
  if (ms > MAX_HEALTH_CHECK_INTERVAL_MS) {
    return `is ${envoyDuration(ms)}; at most ${envoyDuration(MAX_HEALTH_CHECK_INTERVAL_MS)}`;
  }
  return undefined;
}
