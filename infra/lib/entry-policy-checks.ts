/**
 * Synth-time checks of the entry-level traffic fields (`protocol`, `canary`, `health_check`;
 * docs/design.md#traffic-policy): the TypeScript copy of `render/src/check/entry_policy.rs`.
 * Every message is byte-for-byte the Rust one, so the check corpus (render/tests/corpus) reads
 * the same from both. The canary's backend goes through the same backend rule as the entry's
 * own `backend` (passed in by entry-checks.ts), never a copy of it.
 */

/** Longest health-check interval (ms): `MAX_HEALTH_CHECK_INTERVAL_MS` in Rust. */
export const MAX_HEALTH_CHECK_INTERVAL_MS = 300_000;
/** Default of `GATEWAY_MIN_HEALTH_CHECK_INTERVAL` (ms). */
export const DEFAULT_MIN_HEALTH_CHECK_INTERVAL_MS = 5_000;
const MAX_CANARY_HEADER_VALUE_LEN = 256;
const MAX_CANARY_HEADER_NAME_LEN = 128;
const MAX_PATH_BYTES = 1024;
const QUOTE_MAX_CHARS = 64;
const PATH_PUNCTUATION = "-._~!$&'()*+,;=:@";

const PROTOCOLS = ['http1', 'http2', 'grpc'];
const CANARY_FIELDS = ['backend', 'weight', 'header'];
const HEADER_FIELDS = ['name', 'value'];
const HEALTH_CHECK_FIELDS = ['path', 'interval'];

export interface EntryPolicyOptions {
  /** Mirrors `GATEWAY_MIN_HEALTH_CHECK_INTERVAL`, in milliseconds (default 5 s). */
  readonly minHealthCheckIntervalMs?: number;
}

type Add = (field: string, reason: string) => void;
/** The entry's backend rule (entry-checks.ts): the reason a URL is refused, or undefined. */
export type BackendRule = (url: string) => string | undefined;

/** Checks `protocol`, `canary` and `health_check` of an entry object, in that order. */
export function checkEntryPolicy(
  entry: Record<string, unknown>,
  backendRule: BackendRule,
  options: EntryPolicyOptions,
  add: Add,
): void {
  if (entry.protocol !== undefined) checkProtocol(entry.protocol, 'protocol', add);
  if (entry.canary !== undefined) {
    const main = typeof entry.backend === 'string' ? entry.backend : undefined;
    checkCanary(entry.canary, 'canary', main, backendRule, add);
  }
  if (entry.health_check !== undefined) {
    const min = options.minHealthCheckIntervalMs ?? DEFAULT_MIN_HEALTH_CHECK_INTERVAL_MS;
    checkHealthCheck(entry.health_check, 'health_check', min, add);
  }
}

function checkProtocol(v: unknown, field: string, add: Add): void {
  const s = str(v, field, add);
  if (s !== undefined && !PROTOCOLS.includes(s)) {
    add(field, `unknown protocol ${quote(s)}; expected http1, http2 or grpc`);
  }
}

function checkCanary(v: unknown, field: string, main: string | undefined, backendRule: BackendRule, add: Add): void {
  const map = obj(v, field, 'a canary', add);
  if (!map) return;
  rejectUnknown(map, field, CANARY_FIELDS, add);
  const backendField = child(field, 'backend');
  const backend = required(map, field, 'backend', add) ? str(map.backend, backendField, add) : undefined;
  if (backend !== undefined) {
    const reason = backendRule(backend) ?? (main === backend ? `${quote(backend)} is the entry's own backend; a canary is a second backend` : undefined);
    if (reason !== undefined) add(backendField, reason);
  }
  if (required(map, field, 'weight', add)) {
    const w = map.weight;
    if (!(typeof w === 'number' && Number.isInteger(w) && w >= 0 && w <= 100)) {
      add(child(field, 'weight'), `expected a whole percentage from 0 to 100, got ${describe(w)}`);
    }
  }
  if (map.header !== undefined) checkCohortHeader(map.header, child(field, 'header'), add);
}

function checkCohortHeader(v: unknown, field: string, add: Add): void {
  const map = obj(v, field, 'a header match', add);
  if (!map) return;
  rejectUnknown(map, field, HEADER_FIELDS, add);
  const nameField = child(field, 'name');
  if (required(map, field, 'name', add)) {
    const name = str(map.name, nameField, add);
    const reason = name === undefined ? undefined : cohortHeaderNameProblem(name);
    if (reason !== undefined) add(nameField, reason);
  }
  const valueField = child(field, 'value');
  if (required(map, field, 'value', add)) {
    const value = str(map.value, valueField, add);
    const reason = value === undefined ? undefined : cohortHeaderValueProblem(value);
    if (reason !== undefined) add(valueField, reason);
  }
}

/** `check_cohort_header_name`. */
export function cohortHeaderNameProblem(h: string): string | undefined {
  if (h === '') return 'must not be empty; name a request header such as "x-canary"';
  if (h.startsWith(':')) return `${quote(h)} is an HTTP/2 pseudo-header, not a request header`;
  for (const c of h) {
    if (!/^[A-Za-z0-9!#$%&'*+\-.^_`|~]$/.test(c)) {
      return `character ${quote(c)} is not allowed in a header name (RFC 9110 token characters only)`;
    }
  }
  if (/[A-Z]/.test(h)) return `${quote(h)} must be lowercase: write ${quote(h.toLowerCase())}`;
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
export function cohortHeaderValueProblem(s: string): string | undefined {
  if (s === '') return 'must not be empty; requests carrying the header with this value go to the canary';
  const bytes = Buffer.byteLength(s, 'utf8');
  if (bytes > MAX_CANARY_HEADER_VALUE_LEN) return `is ${bytes} bytes long; at most ${MAX_CANARY_HEADER_VALUE_LEN}`;
  for (const c of s) {
    const code = c.codePointAt(0) ?? 0;
    if (code < 0x20 || code > 0x7e) {
      return `character ${quote(c)} is not allowed in a header value (visible ASCII and spaces only)`;
    }
  }
  if (s.startsWith(' ') || s.endsWith(' ')) return `${quote(s)} has a leading or trailing space, which proxies strip`;
  return undefined;
}

function checkHealthCheck(v: unknown, field: string, minMs: number, add: Add): void {
  const map = obj(v, field, 'a health check', add);
  if (!map) return;
  rejectUnknown(map, field, HEALTH_CHECK_FIELDS, add);
  const pathField = child(field, 'path');
  if (required(map, field, 'path', add)) {
    const path = str(map.path, pathField, add);
    const reason = path === undefined ? undefined : pathReason(path);
    if (reason !== undefined) add(pathField, reason);
  }
  const intervalField = child(field, 'interval');
  if (required(map, field, 'interval', add)) {
    const interval = str(map.interval, intervalField, add);
    const reason = interval === undefined ? undefined : healthCheckIntervalProblem(interval, minMs);
    if (reason !== undefined) add(intervalField, reason);
  }
}

/** `check_health_check_interval`. */
export function healthCheckIntervalProblem(s: string, minMs: number): string | undefined {
  const ms = parseDuration(s);
  if (typeof ms === 'string') return ms;
  if (ms < minMs) {
    return `is ${envoyDuration(ms)}; at least ${envoyDuration(minMs)} (the operators' minimum health-check interval)`;
  }
  if (ms > MAX_HEALTH_CHECK_INTERVAL_MS) {
    return `is ${envoyDuration(ms)}; at most ${envoyDuration(MAX_HEALTH_CHECK_INTERVAL_MS)}`;
  }
  return undefined;
}

/** `parse_duration` (render/src/check/duration.rs): milliseconds, or the reason as a string. */
export function parseDuration(s: string): number | string {
  let digits: string;
  let scale: number;
  if (s.endsWith('ms')) [digits, scale] = [s.slice(0, -2), 1];
  else if (s.endsWith('s')) [digits, scale] = [s.slice(0, -1), 1_000];
  else if (s.endsWith('m')) [digits, scale] = [s.slice(0, -1), 60_000];
  else return `${debugString(s)} is not a duration; write a whole number with unit ms, s or m ("5s", "250ms")`;
  if (!(digits.length > 0 && digits.length <= 9 && /^[0-9]+$/.test(digits) && !digits.startsWith('0'))) {
    return `${debugString(s)} is not a duration; write a whole number above 0 with unit ms, s or m ("5s", "250ms")`;
  }
  return Number(digits) * scale;
}

/** `envoy_duration`: `"5s"`, `"0.250s"`. */
export function envoyDuration(ms: number): string {
  const whole = Math.floor(ms / 1000);
  const frac = ms % 1000;
  return frac === 0 ? `${whole}s` : `${whole}.${String(frac).padStart(3, '0')}s`;
}

/** `check_path` (render/src/check/path.rs), message for message. */
export function pathReason(path: string): string | undefined {
  if (path === '') return 'must not be empty; a path starts with "/"';
  const bytes = Buffer.byteLength(path, 'utf8');
  if (bytes > MAX_PATH_BYTES) return `is ${bytes} bytes long; at most ${MAX_PATH_BYTES}`;
  if (!path.startsWith('/')) return `${quote(path)} must start with "/"`;
  for (const c of path) {
    let why: string;
    if (/^[a-zA-Z0-9/%]$/.test(c) || PATH_PUNCTUATION.includes(c)) continue;
    if (isRustWhitespace(c)) why = 'whitespace is not allowed in a path';
    else if (isRustControl(c)) why = 'control characters are not allowed in a path';
    else if (c === '?') why = '"?" starts a query string; a route matches the path only';
    else if (c === '#') why = '"#" starts a fragment, which clients never send';
    else if (c === '\\') why = 'backslashes are not allowed (some servers read them as "/")';
    else if ((c.codePointAt(0) ?? 0) > 0x7f) why = 'non-ASCII characters are not allowed; percent-encode them (%XX)';
    else why = `character ${quote(c)} is not allowed; use letters, digits, "/", %XX or one of ${PATH_PUNCTUATION}`;
    return `${quote(path)}: ${why}`;
  }
  for (let i = path.indexOf('%'); i >= 0; i = path.indexOf('%', i + 3)) {
    const hex = path.slice(i + 1, i + 3);
    if (!/^[0-9a-fA-F]{2}$/.test(hex)) return `${quote(path)}: "%" must be followed by two hex digits`;
    const byte = parseInt(hex, 16);
    let what: string | undefined;
    if (byte === 0x2e) what = '"."';
    else if (byte === 0x2f) what = '"/"';
    else if (byte === 0x5c) what = '"\\\\"';
    else if (byte === 0x25) what = '"%" (double encoding)';
    else if (byte <= 0x1f || byte === 0x7f) what = 'a control character';
    if (what !== undefined) {
      return `${quote(path)}: %${hex} encodes ${what}; encoded dots, slashes, backslashes, percents and control characters are not allowed`;
    }
  }
  if (path.includes('//')) return `${quote(path)} contains "//" (an empty segment); write single slashes`;
  for (const segment of path.split('/')) {
    const bare = segment.split(';')[0];
    if (bare === '.' || bare === '..') {
      return `${quote(path)} contains the dot segment ${quote(segment)}; write the path without "/./" or "/../"`;
    }
  }
  return undefined;
}

function isRustWhitespace(c: string): boolean {
  return /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]$/.test(c);
}

function isRustControl(c: string): boolean {
  return /^[\u0000-\u001f\u007f-\u009f]$/.test(c);
}

// --- The wording helpers of render/src/check/report.rs and fields.rs. ---

/** `quote`: double-quoted, `"` and `\` escaped, anything but printable ASCII as Rust's escape_default, cut at 64 characters. */
export function quote(s: string): string {
  let out = '"';
  let n = 0;
  for (const c of s) {
    if (n === QUOTE_MAX_CHARS) return `${out}"…`;
    n += 1;
    const code = c.codePointAt(0) ?? 0;
    if (c === '"') out += '\\"';
    else if (c === '\\') out += '\\\\';
    else if (code >= 0x20 && code <= 0x7e) out += c;
    else if (c === '\t') out += '\\t';
    else if (c === '\r') out += '\\r';
    else if (c === '\n') out += '\\n';
    else out += `\\u{${code.toString(16)}}`;
  }
  return `${out}"`;
}

/** Rust's `{:?}` of a string: quotes, escapes for `"`, `\`, tab, CR, LF, NUL and other controls. */
function debugString(s: string): string {
  let out = '"';
  for (const c of s) {
    const code = c.codePointAt(0) ?? 0;
    if (c === '"') out += '\\"';
    else if (c === '\\') out += '\\\\';
    else if (c === '\t') out += '\\t';
    else if (c === '\r') out += '\\r';
    else if (c === '\n') out += '\\n';
    else if (c === '\0') out += '\\0';
    else if (isRustControl(c)) out += `\\u{${code.toString(16)}}`;
    else out += c;
  }
  return `${out}"`;
}

/** `describe`: the JSON type of a value, numbers shown as they are. */
export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return `boolean ${v}`;
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return 'string';
  if (Array.isArray(v)) return 'array';
  return 'object';
}

function child(parent: string, key: string): string {
  const plain = key.length > 0 && key.length <= QUOTE_MAX_CHARS && /^[A-Za-z0-9_-]+$/.test(key);
  if (plain) return parent === '' ? key : `${parent}.${key}`;
  return `${parent}[${quote(key)}]`;
}

function str(v: unknown, field: string, add: Add): string | undefined {
  if (typeof v === 'string') return v;
  add(field, `expected a string, got ${describe(v)}`);
  return undefined;
}

function obj(v: unknown, field: string, what: string, add: Add): Record<string, unknown> | undefined {
  if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  add(field, `expected ${what} (a JSON object), got ${describe(v)}`);
  return undefined;
}

function required(map: Record<string, unknown>, field: string, key: string, add: Add): boolean {
  if (map[key] === undefined) {
    add(child(field, key), 'required field is missing');
    return false;
  }
  return true;
}

function rejectUnknown(map: Record<string, unknown>, field: string, known: string[], add: Add): void {
  // serde_json's map is ordered by key: report unknown keys in that order, as Rust does.
  for (const key of Object.keys(map).sort()) {
    if (!known.includes(key)) add(child(field, key), unknownField(key, known));
  }
}

/** `unknown_field`: the expected keys, and a suggestion when the key is a likely typo. */
export function unknownField(key: string, known: string[]): string {
  const list = known.length === 1 ? known[0] : `${known.slice(0, -1).join(', ')} or ${known[known.length - 1]}`;
  let reason = `unknown field; expected ${list}`;
  const lower = key.replace(/[A-Z]/g, (c) => c.toLowerCase());
  let best: [number, string] | undefined;
  for (const k of known) {
    const d = editDistance(lower, k);
    if (d <= (k.length <= 4 ? 1 : 2) && (best === undefined || d < best[0] || (d === best[0] && k < best[1]))) {
      best = [d, k];
    }
  }
  if (best !== undefined) reason += ` (did you mean "${best[1]}"?)`;
  return reason;
}

function editDistance(a: string, b: string): number {
  if (Buffer.byteLength(a, 'utf8') > 2 * QUOTE_MAX_CHARS) return Number.MAX_SAFE_INTEGER;
  const bs = [...b];
  let prev = Array.from({ length: bs.length + 1 }, (_, i) => i);
  let i = 0;
  for (const ca of a) {
    const cur = new Array<number>(bs.length + 1).fill(i + 1);
    bs.forEach((cb, j) => {
      const cost = ca === cb ? 0 : 1;
      cur[j + 1] = Math.min(prev[j] + cost, prev[j + 1] + 1, cur[j] + 1);
    });
    prev = cur;
    i += 1;
  }
  return prev[bs.length];
}
