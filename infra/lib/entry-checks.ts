/**
 * Synth-time registration checks: the TypeScript copy of the Rust checks in `render/src/check`
 * (docs/design.md#registration-entry), so a typo fails `cdk synth` in the team's pipeline instead
 * of the deploy. The register function runs the authoritative checks, plus everything that needs
 * the registry or the network (host and path ownership, the backend name's DNS answer, the
 * operators' backend restrictions); this copy only judges what one entry shows on its own.
 *
 * It is held to the Rust checks by the differential corpus (`infra/test/entry-corpus.json`,
 * written by `render/tests/entry_corpus.rs`): for every case, the same problems with the same
 * field paths and messages in the same order. Each function below mirrors the Rust function of
 * the same name; change both together, regenerate the corpus, and the jest suite says where they
 * disagree.
 */

/** Largest entry document accepted, in bytes (the text the construct sends). */
export const MAX_ENTRY_BYTES = 64 * 1024;
export const MAX_ROUTES = 64;
export const MAX_LIMITS_PER_ROUTE = 8;
/** Distinct path prefixes: an entry must fit one DynamoDB transaction. */
export const MAX_PATH_PREFIXES = 45;
/** Labels in `host`: each enclosing host is one action in the registration transaction. */
export const MAX_HOST_LABELS = 4;
const MAX_LABEL_LEN = 63;
const MAX_FQDN_LEN = 253;
const MAX_PATH_BYTES = 1024;
const MAX_BURST = 1_000_000;
const MAX_REQUESTS = 1_000_000_000;
const MAX_HEADER_NAME_LEN = 128;
/** Longest slice of an offending value quoted back in a message. */
const QUOTE_MAX_CHARS = 64;

/** Loopback ports of the proxy task's own services (render's PROXY_RESERVED_PORTS). */
export const PROXY_RESERVED_PORTS = { first: 15000, last: 15019 } as const;

const ENTRY_FIELDS = ['team', 'service', 'host', 'backend', 'routes'];
const ROUTE_FIELDS = ['path', 'methods', 'limits'];
const LIMIT_FIELDS = ['per', 'header', 'requests', 'every', 'burst'];
const GLOBAL_FIELDS = ['per', 'header', 'requests', 'every'];
const PERS = ['client-ip', 'route', 'header'];
const UNITS = ['second', 'minute', 'hour', 'day'];
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH'];

export interface CheckOptions {
  /**
   * The gateway's base domain, when known. Absent, the checks run as the Rust ones with an empty
   * base domain: no host or backend is judged against it, and `host` alone must fit 252 characters.
   */
  readonly baseDomain?: string;
  /** Mirrors `GATEWAY_ALLOW_LOOPBACK_BACKENDS`; link-local stays rejected regardless. */
  readonly allowLoopbackBackends?: boolean;
}

/** One problem: the field path (`routes[1].limits[0].every`) and why. */
export interface Problem {
  readonly field: string;
  readonly reason: string;
}

/** Thrown at synth with every problem, one per line, each naming its field. */
export class EntryRejected extends Error {
  constructor(readonly problems: Problem[]) {
    super(`gateway entry rejected:\n${problems.map((p) => `  ${p.field}: ${p.reason}`).join('\n')}`);
    this.name = 'EntryRejected';
  }
}

/**
 * Every problem in `value`, in the order the Rust checks report them; empty when the entry
 * passes. `value` is judged as the text the construct sends, `JSON.stringify(value)`.
 */
export function checkEntry(value: unknown, options: CheckOptions = {}): Problem[] {
  const problems = new Problems();
  const text = JSON.stringify(value) as string | undefined;
  if (text === undefined) {
    problems.push('entry', 'empty document; expected a JSON object');
    return problems.list;
  }
  const size = Buffer.byteLength(text, 'utf8');
  if (size > MAX_ENTRY_BYTES) {
    problems.push('entry', `is ${size} bytes; at most ${MAX_ENTRY_BYTES}`);
    return problems.list;
  }
  const lone = loneSurrogate(text);
  if (lone) {
    problems.push(lone.field, lone.reason);
    return problems.list;
  }
  const policy: Policy = {
    baseDomain: options.baseDomain ?? '',
    allowLoopbackBackends: options.allowLoopbackBackends ?? false,
  };
  walkEntry(JSON.parse(text) as Json, policy, problems);
  return problems.list;
}

/** Throws `EntryRejected` unless the entry passes. */
export function assertEntry(value: unknown, options: CheckOptions = {}): void {
  const problems = checkEntry(value, options);
  if (problems.length > 0) {
    throw new EntryRejected(problems);
  }
}

/** Longest field path quoted for a syntax error (render/src/check/json.rs). */
const MAX_PLACE_CHARS = 120;
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * A JavaScript string may hold a lone UTF-16 surrogate; `JSON.stringify` writes it as `\udXXX`,
 * which the register function's strict parser refuses (render/src/check/json.rs). The problem it
 * reports: the place of the first one in the text, and the path of the value holding it (for a
 * key, of the object).
 */
function loneSurrogate(text: string): Problem | undefined {
  if (!/\\ud[89a-f]/.test(text)) return undefined;
  // The first escape in the text that is a surrogate: JSON.stringify writes pairs as they are.
  let at = -1;
  for (let i = 0; i < text.length; i++) {
    if (text[i] !== '\\') continue;
    if (text[i + 1] === 'u' && /^d[89a-f]$/.test(text.slice(i + 2, i + 4))) {
      at = i;
      break;
    }
    i++;
  }
  if (at < 0) return undefined;
  const after = utf8Length(text.slice(0, at + 6));
  let column: number;
  let message: string;
  if (parseInt(text.slice(at + 2, at + 6), 16) >= 0xdc00) {
    [column, message] = [after, 'lone leading surrogate in hex escape'];
  } else if (text[at + 6] !== '\\') {
    [column, message] = [after + 1, 'unexpected end of hex escape'];
  } else if (text[at + 7] !== 'u') {
    [column, message] = [after + 2, 'unexpected end of hex escape'];
  } else {
    [column, message] = [after + 6, 'lone leading surrogate in hex escape'];
  }
  const place = lonePlace(JSON.parse(text) as Json, '') ?? '';
  const shown = chars(place);
  const inside =
    shown.length > MAX_PLACE_CHARS ? ` (in ${shown.slice(0, MAX_PLACE_CHARS).join('')}…)` : place === '' ? '' : ` (in ${place})`;
  return { field: 'entry', reason: `invalid JSON at line 1 column ${column}${inside}: ${message}` };
}

/** The path of the first value (in text order) holding a lone surrogate, or of an object whose key does. */
function lonePlace(v: Json, path: string): string | undefined {
  if (typeof v === 'string') return LONE.test(v) ? path : undefined;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const found = lonePlace(v[i], index(path, i));
      if (found !== undefined) return found;
    }
  } else if (isObject(v)) {
    for (const key of Object.keys(v)) {
      if (LONE.test(key)) return path;
      const found = lonePlace(v[key], child(path, key));
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

type Json = null | boolean | number | string | Json[] | JsonObject;
interface JsonObject {
  [key: string]: Json;
}

interface Policy {
  readonly baseDomain: string;
  readonly allowLoopbackBackends: boolean;
}

/** What a check returns: nothing, or why (`Result<(), String>` on the Rust side). */
type Why = string | undefined;

// ---------------------------------------------------------------------------------------------
// report.rs: how problems are worded

class Problems {
  readonly list: Problem[] = [];
  push(field: string, reason: string): void {
    this.list.push({ field, reason });
  }
  get length(): number {
    return this.list.length;
  }
}

/** Unicode scalar values of a string (Rust's `chars()`). */
function chars(s: string): string[] {
  return Array.from(s);
}

/** Rust's `char::escape_default` for a character outside printable ASCII. */
function escapeDefault(c: string): string {
  switch (c) {
    case '\t':
      return '\\t';
    case '\r':
      return '\\r';
    case '\n':
      return '\\n';
    default:
      return `\\u{${(c.codePointAt(0) ?? 0).toString(16)}}`;
  }
}

/** A value from the entry as it appears in a message: quoted, escaped, long values cut. */
function quote(s: string): string {
  let out = '"';
  let n = 0;
  for (const c of s) {
    if (n === QUOTE_MAX_CHARS) {
      return `${out}"…`;
    }
    n += 1;
    if (c === '"') out += '\\"';
    else if (c === '\\') out += '\\\\';
    else if (c >= ' ' && c <= '~') out += c;
    else out += escapeDefault(c);
  }
  return `${out}"`;
}

/** `parent.key`, or `parent["key"]` when the key is not a plain word. */
function child(parent: string, key: string): string {
  const plain = key.length > 0 && key.length <= QUOTE_MAX_CHARS && /^[A-Za-z0-9_-]+$/.test(key);
  if (!plain) return `${parent}[${quote(key)}]`;
  return parent === '' ? key : `${parent}.${key}`;
}

function index(parent: string, i: number): string {
  return `${parent}[${i}]`;
}

const U64_MAX = BigInt('18446744073709551615');
const I64_MIN = BigInt('-9223372036854775808');

/**
 * A number as the Rust checks read it from the text `JSON.stringify` writes: an integer when the
 * text is one and fits 64 bits, otherwise a double.
 */
function readNumber(n: number): { unsigned?: bigint; text: string } {
  const text = JSON.stringify(n);
  if (/^-?\d+$/.test(text)) {
    const big = BigInt(text);
    if (big >= BigInt(0) && big <= U64_MAX) return { unsigned: big, text };
    if (big < BigInt(0) && big >= I64_MIN) return { text };
  }
  return { text: rustFloat(n) };
}

/** How serde_json prints a double: shortest digits, `.0` on integers, `e±` beyond 16 digits. */
function rustFloat(f: number): string {
  if (f === 0) return Object.is(f, -0) ? '-0.0' : '0.0';
  const sign = f < 0 ? '-' : '';
  const [mantissa, exp] = Math.abs(f).toExponential().split('e');
  const digits = mantissa.replace('.', '');
  const length = digits.length;
  const kk = Number(exp) + 1;
  const k = kk - length;
  let body: string;
  if (k >= 0 && kk <= 16) body = `${digits}${'0'.repeat(k)}.0`;
  else if (kk > 0 && kk <= 16) body = `${digits.slice(0, kk)}.${digits.slice(kk)}`;
  else if (kk > -5 && kk <= 0) body = `0.${'0'.repeat(-kk)}${digits}`;
  else {
    const e = kk - 1 < 0 ? `${kk - 1}` : `+${kk - 1}`;
    body = length === 1 ? `${digits}e${e}` : `${digits[0]}.${digits.slice(1)}e${e}`;
  }
  return sign + body;
}

/** The JSON type of a value, for "expected X, got Y"; numbers show themselves. */
function describe(v: Json): string {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return `boolean ${v}`;
  if (typeof v === 'number') return readNumber(v).text;
  if (typeof v === 'string') return 'string';
  return Array.isArray(v) ? 'array' : 'object';
}

function oneOf(options: string[]): string {
  if (options.length <= 1) return options.join('');
  return `${options.slice(0, -1).join(', ')} or ${options[options.length - 1]}`;
}

function asciiLower(s: string): string {
  return s.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

function asciiUpper(s: string): string {
  return s.replace(/[a-z]/g, (c) => c.toUpperCase());
}

/** The reason for an unknown field, with a suggestion when the key is a likely typo. */
function unknownField(key: string, known: string[]): string {
  let reason = `unknown field; expected ${oneOf(known)}`;
  let near: [number, string] | undefined;
  const lower = asciiLower(key);
  for (const k of known) {
    const d = editDistance(lower, k);
    // Two edits turn any short word into another ("key" into "per"): only plausible typos.
    if (d > (k.length <= 4 ? 1 : 2)) continue;
    if (!near || d < near[0] || (d === near[0] && compareRust(k, near[1]) < 0)) near = [d, k];
  }
  if (near) reason += ` (did you mean "${near[1]}"?)`;
  return reason;
}

function editDistance(a: string, b: string): number {
  if (utf8Length(a) > 2 * QUOTE_MAX_CHARS) return Number.MAX_SAFE_INTEGER;
  const bc = chars(b);
  let prev = Array.from({ length: bc.length + 1 }, (_, j) => j);
  chars(a).forEach((ca, i) => {
    const cur = new Array<number>(bc.length + 1).fill(i + 1);
    bc.forEach((cb, j) => {
      const cost = ca === cb ? 0 : 1;
      cur[j + 1] = Math.min(prev[j] + cost, prev[j + 1] + 1, cur[j] + 1);
    });
    prev = cur;
  });
  return prev[bc.length];
}

function utf8Length(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** Rust's `str` order (by code point), which is how the checks meet an object's keys. */
function compareRust(a: string, b: string): number {
  const ca = chars(a);
  const cb = chars(b);
  for (let i = 0; i < Math.min(ca.length, cb.length); i++) {
    const d = (ca[i].codePointAt(0) ?? 0) - (cb[i].codePointAt(0) ?? 0);
    if (d !== 0) return d;
  }
  return ca.length - cb.length;
}

// ---------------------------------------------------------------------------------------------
// fields.rs: typed values out of JSON, each wrong type or missing field a problem at its path

function isObject(v: Json | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function has(map: JsonObject, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(map, key);
}

function get(map: JsonObject, key: string): Json | undefined {
  return has(map, key) ? map[key] : undefined;
}

function object(v: Json, field: string, what: string, problems: Problems): JsonObject | undefined {
  if (isObject(v)) return v;
  problems.push(field, `expected ${what} (a JSON object), got ${describe(v)}`);
  return undefined;
}

function rejectUnknown(map: JsonObject, field: string, known: string[], problems: Problems): void {
  for (const key of Object.keys(map).sort(compareRust)) {
    if (!known.includes(key)) problems.push(child(field, key), unknownField(key, known));
  }
}

function required(map: JsonObject, field: string, key: string, problems: Problems): Json | undefined {
  const v = get(map, key);
  if (v === undefined) problems.push(child(field, key), 'required field is missing');
  return v;
}

function string(v: Json, field: string, problems: Problems): string | undefined {
  if (typeof v === 'string') return v;
  problems.push(field, `expected a string, got ${describe(v)}`);
  return undefined;
}

/** A JSON integer in `1..=max`. */
function positiveInt(v: Json, field: string, max: number, problems: Problems): number | undefined {
  let reason: string;
  if (typeof v === 'number') {
    const n = readNumber(v);
    if (n.unsigned === undefined) reason = `expected a positive integer, got ${n.text}`;
    else if (n.unsigned === BigInt(0)) reason = 'must be at least 1';
    else if (n.unsigned > BigInt(max)) reason = `is ${n.text}; at most ${max}`;
    else return Number(n.unsigned);
  } else {
    reason = `expected a positive integer, got ${describe(v)}`;
  }
  problems.push(field, reason);
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// walk.rs: every field checked at its path

interface Route {
  readonly path: string;
  /** Sorted; undefined is every method. */
  readonly methods: string[] | undefined;
  readonly limits: Limit[];
}

type Limit =
  | { readonly kind: 'burst'; readonly burst: number }
  | { readonly kind: 'global'; readonly per: string; readonly header?: string; readonly every: string };

function walkEntry(v: Json, policy: Policy, problems: Problems): void {
  if (!isObject(v)) {
    problems.push('entry', `expected a JSON object, got ${describe(v)}`);
    return;
  }
  rejectUnknown(v, '', ENTRY_FIELDS, problems);
  checkedString(v, 'team', checkIdentifier, problems);
  checkedString(v, 'service', checkIdentifier, problems);
  checkedString(v, 'host', (h) => checkHost(h, policy.baseDomain), problems);
  checkedString(v, 'backend', (b) => checkBackend(b, policy), problems);
  const routesValue = required(v, '', 'routes', problems);
  if (routesValue !== undefined) walkRoutes(routesValue, 'routes', problems);
}

function checkedString(map: JsonObject, key: string, rule: (s: string) => Why, problems: Problems): void {
  const v = required(map, '', key, problems);
  const s = v === undefined ? undefined : string(v, key, problems);
  if (s === undefined) return;
  const why = rule(s);
  if (why !== undefined) problems.push(key, why);
}

function walkRoutes(v: Json, field: string, problems: Problems): void {
  if (!Array.isArray(v)) {
    problems.push(field, `expected a list of routes, got ${describe(v)}`);
    return;
  }
  if (v.length === 0) {
    problems.push(field, 'must list at least one route');
    return;
  }
  if (v.length > MAX_ROUTES) {
    problems.push(field, `has ${v.length} routes; at most ${MAX_ROUTES} per entry`);
  }
  const checked = v.map((item, i) => walkRoute(item, index(field, i), problems));
  checkDuplicates(checked, field, problems);
  const prefixes = new Set(checked.flatMap((r) => (r ? [r.path] : [])));
  if (prefixes.size > MAX_PATH_PREFIXES) {
    problems.push(
      field,
      `claims ${prefixes.size} distinct path prefixes; at most ${MAX_PATH_PREFIXES} (each is a guard row in the one registration transaction)`,
    );
  }
}

function walkRoute(v: Json, field: string, problems: Problems): Route | undefined {
  const map = object(v, field, 'a route', problems);
  if (!map) return undefined;
  rejectUnknown(map, field, ROUTE_FIELDS, problems);
  const pathField = child(field, 'path');
  const pathValue = required(map, field, 'path', problems);
  let path = pathValue === undefined ? undefined : string(pathValue, pathField, problems);
  if (path !== undefined) {
    const why = checkPath(path);
    if (why !== undefined) {
      problems.push(pathField, why);
      path = undefined;
    }
  }
  const methodsValue = get(map, 'methods');
  const methods = methodsValue === undefined ? { ok: true, value: undefined } : walkMethods(methodsValue, child(field, 'methods'), problems);
  const limitsValue = get(map, 'limits');
  const limits = limitsValue === undefined ? [] : walkLimits(limitsValue, child(field, 'limits'), problems);
  if (path === undefined || !methods.ok || limits === undefined) return undefined;
  return { path, methods: methods.value, limits };
}

/** Two routes with one path and a method in common: only the first would ever apply. */
function checkDuplicates(routes: (Route | undefined)[], field: string, problems: Problems): void {
  routes.forEach((b, j) => {
    if (!b) return;
    for (let i = 0; i < j; i++) {
      const a = routes[i];
      if (!a || a.path !== b.path) continue;
      const shared = sharedMethods(a.methods, b.methods);
      if (shared.length === 0) continue;
      problems.push(
        index(field, j),
        `same path ${quote(b.path)} as ${index(field, i)} with overlapping methods (${shared.join(', ')}); give each path and method one route`,
      );
      break;
    }
  });
}

// ---------------------------------------------------------------------------------------------
// identifiers.rs and host.rs

/** `team` and `service`: 1–63 of `a-z0-9-`, starting with a letter, not ending with `-`. */
function checkIdentifier(s: string): Why {
  if (s === '') return 'must not be empty; use 1-63 of a-z, 0-9 or "-", starting with a letter';
  const lower = asciiLower(s);
  if (lower !== s && checkIdentifier(lower) === undefined) {
    return `${quote(s)} must be lowercase: write ${quote(lower)}`;
  }
  const bad = chars(s).find((c) => !/^[a-z0-9-]$/.test(c));
  if (bad !== undefined) return `${quote(s)} must use only lowercase a-z, 0-9 or "-" (found ${quote(bad)})`;
  if (s.length > MAX_LABEL_LEN) return `is ${s.length} characters long; at most ${MAX_LABEL_LEN}`;
  if (!/^[a-z]/.test(s)) return `${quote(s)} must start with a letter a-z`;
  if (s.endsWith('-')) return `${quote(s)} must not end with "-"`;
  return undefined;
}

/** One DNS label (RFC 1123), lowercase only. */
function checkDnsLabel(label: string): Why {
  if (label === '') return 'has an empty label (a leading, trailing or doubled ".")';
  if (label.includes('*')) {
    return `label ${quote(label)} is a wildcard; wildcards are not allowed, the gateway alone owns the catch-all virtual host`;
  }
  if (chars(label).some((c) => !/^[a-z0-9-]$/.test(c))) return `label ${quote(label)} must be lowercase a-z, 0-9 or "-"`;
  if (label.length > MAX_LABEL_LEN) return `label ${quote(label)} is ${label.length} characters long; at most ${MAX_LABEL_LEN}`;
  if (label.startsWith('-') || label.endsWith('-')) return `label ${quote(label)} must not start or end with "-"`;
  return undefined;
}

function checkDnsName(name: string): Why {
  if (name === '') return 'must not be empty';
  if (name.endsWith('.')) return `${quote(name)} must not end with "."`;
  for (const label of name.split('.')) {
    const why = checkDnsLabel(label);
    if (why !== undefined) return why;
  }
  return undefined;
}

function trimTrailingDots(s: string): string {
  return s.replace(/\.+$/, '');
}

/** `host`: the labels in front of the gateway's base domain. */
function checkHost(host: string, baseDomain: string): Why {
  if (host === '') return 'must not be empty; give the label(s) in front of the base domain, e.g. "invoices"';
  const name = checkDnsName(host);
  if (name !== undefined) return name;
  const labels = host.split('.').length;
  if (labels > MAX_HOST_LABELS) {
    return `${quote(host)} has ${labels} labels; at most ${MAX_HOST_LABELS} in front of the base domain (each enclosing host is checked in the registration transaction)`;
  }
  const base = trimTrailingDots(baseDomain);
  if (base !== '' && (host === base || host.endsWith(`.${base}`))) {
    return `${quote(host)} already contains the base domain ${quote(base)}; give only the label(s) in front of it`;
  }
  const fqdnLen = host.length + 1 + utf8Length(base);
  if (fqdnLen > MAX_FQDN_LEN) {
    return `full hostname ${host}.${base} is ${fqdnLen} characters long; at most ${MAX_FQDN_LEN}`;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// path.rs: a segment-aware prefix; anything a proxy or a backend could normalise differently
// (dot segments, doubled or encoded slashes, backslashes) is refused

const PATH_PUNCTUATION = "-._~!$&'()*+,;=:@";

/** Rust's `char::is_whitespace` (Unicode White_Space). */
function isWhitespace(c: string): boolean {
  return /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]$/u.test(c);
}

/** Rust's `char::is_control` (general category Cc). */
function isControl(c: string): boolean {
  return /^[\u0000-\u001f\u007f-\u009f]$/u.test(c);
}

function checkPath(path: string): Why {
  if (path === '') return 'must not be empty; a path starts with "/"';
  const bytes = utf8Length(path);
  if (bytes > MAX_PATH_BYTES) return `is ${bytes} bytes long; at most ${MAX_PATH_BYTES}`;
  if (!path.startsWith('/')) return `${quote(path)} must start with "/"`;
  const characters = checkPathCharacters(path);
  if (characters !== undefined) return characters;
  const escapes = checkPercentEscapes(path);
  if (escapes !== undefined) return escapes;
  if (path.includes('//')) return `${quote(path)} contains "//" (an empty segment); write single slashes`;
  for (const segment of path.split('/')) {
    // `..;` is how some servlet containers spell `..`: judge the segment without parameters.
    const bare = segment.split(';')[0];
    if (bare === '.' || bare === '..') {
      return `${quote(path)} contains the dot segment ${quote(segment)}; write the path without "/./" or "/../"`;
    }
  }
  return undefined;
}

function checkPathCharacters(path: string): Why {
  for (const c of path) {
    let why: string;
    if (/^[a-zA-Z0-9/%]$/.test(c) || PATH_PUNCTUATION.includes(c)) continue;
    else if (isWhitespace(c)) why = 'whitespace is not allowed in a path';
    else if (isControl(c)) why = 'control characters are not allowed in a path';
    else if (c === '?') why = '"?" starts a query string; a route matches the path only';
    else if (c === '#') why = '"#" starts a fragment, which clients never send';
    else if (c === '\\') why = 'backslashes are not allowed (some servers read them as "/")';
    else if ((c.codePointAt(0) ?? 0) > 0x7f) why = 'non-ASCII characters are not allowed; percent-encode them (%XX)';
    else why = `character ${quote(c)} is not allowed; use letters, digits, "/", %XX or one of ${PATH_PUNCTUATION}`;
    return `${quote(path)}: ${why}`;
  }
  return undefined;
}

/** Every `%` starts a well-formed escape that hides none of `.`, `/`, `\`, `%` or a control. */
function checkPercentEscapes(path: string): Why {
  // The characters check ran first: the path is ASCII, so string offsets are byte offsets.
  for (let at = path.indexOf('%'); at >= 0; at = path.indexOf('%', at + 3)) {
    const hex = path.slice(at + 1, at + 3);
    if (!/^[0-9a-fA-F]{2}$/.test(hex)) {
      return `${quote(path)}: "%" must be followed by two hex digits`;
    }
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
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// methods.rs

function walkMethods(v: Json, field: string, problems: Problems): { ok: boolean; value?: string[] } {
  if (!Array.isArray(v)) {
    problems.push(field, `expected a list of HTTP methods, got ${describe(v)}; leave methods out to match every method`);
    return { ok: false };
  }
  if (v.length === 0) {
    problems.push(field, 'must not be empty; leave methods out to match every method');
    return { ok: false };
  }
  const before = problems.length;
  const seen: [string, number][] = [];
  v.forEach((item, i) => {
    const at = index(field, i);
    if (typeof item !== 'string') {
      problems.push(at, `expected a method name (a string), got ${describe(item)}`);
      return;
    }
    const why = checkMethod(item);
    const first = seen.find(([s]) => s === item);
    if (why !== undefined) problems.push(at, why);
    else if (first) problems.push(at, `${quote(item)} is listed twice (also ${index(field, first[1])})`);
    else seen.push([item, i]);
  });
  if (problems.length > before) return { ok: false };
  return { ok: true, value: seen.map(([m]) => m).sort(compareRust) };
}

function checkMethod(m: string): Why {
  if (METHODS.includes(m)) return undefined;
  const upper = asciiUpper(m);
  if (METHODS.includes(upper)) return `${quote(m)} must be uppercase: write ${quote(upper)}`;
  return `unknown method ${quote(m)}; expected ${oneOf(METHODS)}`;
}

/** The methods two routes on one path would both answer (undefined is every method). */
function sharedMethods(a: string[] | undefined, b: string[] | undefined): string[] {
  const all = METHODS;
  return (a ?? all).filter((m) => (b ?? all).includes(m));
}

// ---------------------------------------------------------------------------------------------
// limits.rs: global limits counted by the rate-limit service, one local burst per route

function walkLimits(v: Json, field: string, problems: Problems): Limit[] | undefined {
  if (!Array.isArray(v)) {
    problems.push(field, `expected a list of limits, got ${describe(v)}`);
    return undefined;
  }
  const before = problems.length;
  if (v.length > MAX_LIMITS_PER_ROUTE) {
    problems.push(field, `has ${v.length} limits; at most ${MAX_LIMITS_PER_ROUTE} per route`);
  }
  const checked = v.map((item, i) => walkLimit(item, index(field, i), problems));
  checkCollisions(checked, field, problems);
  if (problems.length > before) return undefined;
  return checked as Limit[];
}

function walkLimit(v: Json, field: string, problems: Problems): Limit | undefined {
  const map = object(v, field, 'a limit', problems);
  if (!map) return undefined;
  const hasBurst = has(map, 'burst');
  const hasGlobal = GLOBAL_FIELDS.some((k) => has(map, k));
  rejectUnknown(map, field, LIMIT_FIELDS, problems);
  if (hasBurst && hasGlobal) {
    problems.push(
      field,
      'mixes "burst" with a global limit\'s fields (per, header, requests, every); write them as two limits',
    );
    return undefined;
  }
  if (hasBurst) {
    const burst = positiveInt(map.burst, `${field}.burst`, MAX_BURST, problems);
    return burst === undefined ? undefined : { kind: 'burst', burst };
  }
  if (hasGlobal) return walkGlobal(map, field, problems);
  problems.push(field, 'expected {"burst": N} or {"per": ..., "requests": N, "every": ...}');
  return undefined;
}

function walkGlobal(map: JsonObject, field: string, problems: Problems): Limit | undefined {
  const perField = `${field}.per`;
  const perValue = required(map, field, 'per', problems);
  let per = perValue === undefined ? undefined : string(perValue, perField, problems);
  if (per !== undefined && !PERS.includes(per)) {
    problems.push(perField, `unknown key kind ${quote(per)}; expected ${oneOf(PERS)}`);
    per = undefined;
  }

  const headerField = `${field}.header`;
  const headerValue = get(map, 'header');
  let header: string | undefined;
  if (headerValue === undefined && per === 'header') {
    problems.push(headerField, 'required when per is "header": name the header whose value is counted');
  } else if (headerValue !== undefined && per !== undefined && per !== 'header') {
    problems.push(headerField, `only allowed when per is "header" (per is ${quote(per)})`);
  } else if (headerValue !== undefined) {
    const h = string(headerValue, headerField, problems);
    if (h !== undefined) {
      const why = checkHeaderName(h);
      if (why !== undefined) problems.push(headerField, why);
      else header = h;
    }
  }

  const requestsValue = required(map, field, 'requests', problems);
  const requests =
    requestsValue === undefined ? undefined : positiveInt(requestsValue, `${field}.requests`, MAX_REQUESTS, problems);

  const everyField = `${field}.every`;
  const everyValue = required(map, field, 'every', problems);
  let every = everyValue === undefined ? undefined : string(everyValue, everyField, problems);
  if (every !== undefined) {
    const why = checkUnit(every);
    if (why !== undefined) {
      problems.push(everyField, why);
      every = undefined;
    }
  }

  if (per === undefined || requests === undefined || every === undefined) return undefined;
  if (per === 'header' && header === undefined) return undefined;
  return { kind: 'global', per, header, every };
}

function checkUnit(s: string): Why {
  if (UNITS.includes(s)) return undefined;
  let reason = `unknown unit ${quote(s)}; expected ${oneOf(UNITS)}`;
  const lower = asciiLower(s);
  const near = lower.endsWith('s') ? lower.slice(0, -1) : lower;
  if (UNITS.includes(near)) reason += ` (did you mean "${near}"?)`;
  return reason;
}

const TCHAR = /^[A-Za-z0-9!#$%&'*+\-.^_`|~]$/;

/** A lowercase RFC 9110 token that is safe and meaningful as a rate-limit key. */
function checkHeaderName(h: string): Why {
  if (h === '') return 'must not be empty; name a request header such as "x-api-key"';
  if (h.startsWith(':')) {
    return `${quote(h)} is an HTTP/2 pseudo-header, not a request header; the route and host already tell requests apart`;
  }
  const bad = chars(h).find((c) => !TCHAR.test(c));
  if (bad !== undefined) return `character ${quote(bad)} is not allowed in a header name (RFC 9110 token characters only)`;
  if (/[A-Z]/.test(h)) return `${quote(h)} must be lowercase: write ${quote(asciiLower(h))}`;
  if (h.length > MAX_HEADER_NAME_LEN) return `is ${h.length} characters long; at most ${MAX_HEADER_NAME_LEN}`;
  const why = unusableHeader(h);
  return why === undefined ? undefined : `${quote(h)} cannot be a rate-limit key: ${why}`;
}

function unusableHeader(h: string): string | undefined {
  if (['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authenticate'].includes(h)) {
    return 'it is a hop-by-hop header, consumed before routing, so the limit would never apply';
  }
  if (['x-forwarded-for', 'forwarded', 'x-real-ip'].includes(h)) {
    return 'a client sets it freely and escapes its bucket by changing it; use per "client-ip"';
  }
  if (['authorization', 'proxy-authorization', 'cookie', 'x-amz-security-token'].includes(h)) {
    return "it carries a credential, and a limit's key is stored in the rate-limit service's counters and logs; key on a dedicated, non-secret header";
  }
  if (h.startsWith('x-envoy-')) return 'Envoy sets and strips x-envoy- headers itself';
  return undefined;
}

/** At most one burst per route, and no two global limits keyed the same way. */
function checkCollisions(limits: (Limit | undefined)[], field: string, problems: Problems): void {
  limits.forEach((b, j) => {
    if (!b) return;
    const i = limits.slice(0, j).findIndex((a) => {
      if (!a) return false;
      if (a.kind === 'burst' || b.kind === 'burst') return a.kind === b.kind;
      return a.per === b.per && a.header === b.header && a.every === b.every;
    });
    if (i < 0) return;
    const reason =
      b.kind === 'burst'
        ? `a route has at most one burst limit (also ${index(field, i)})`
        : `same per ${quote(b.per)}${b.header !== undefined ? ` (header ${quote(b.header)})` : ''} and unit ${quote(b.every)} as ${index(field, i)}; the rate-limit service would see two rules for one key, merge them into one limit`;
    problems.push(index(field, j), reason);
  });
}

// ---------------------------------------------------------------------------------------------
// backend.rs: `http[s]://host[:port][/]`, parsed by hand and strictly, because every lenient URL
// parser is a way to smuggle an address past the checks (`http://0x7f.1`, `http://127.1`,
// `http://evil@169.254.169.254`)

const METADATA_NAMES = ['metadata.google.internal', 'instance-data.ec2.internal', 'instance-data'];

type BackendHost = { kind: 'name'; name: string } | { kind: 'v4'; ip: number[] } | { kind: 'v6'; ip: number[] };
interface Backend {
  readonly host: BackendHost;
  readonly port: number;
}

/** Parses and judges a backend URL. */
function checkBackend(url: string, policy: Policy): Why {
  const parsed = parseBackend(url);
  if (typeof parsed === 'string') return parsed;
  const judged = judge(parsed.host, policy);
  if (judged !== undefined) return judged;
  if (parsed.port >= PROXY_RESERVED_PORTS.first && parsed.port <= PROXY_RESERVED_PORTS.last) {
    return `port ${parsed.port} is reserved for the proxy task's own services (ports ${PROXY_RESERVED_PORTS.first}-${PROXY_RESERVED_PORTS.last}); use another port`;
  }
  return undefined;
}

/** The backend, or why it is not `http[s]://host[:port][/]`. */
function parseBackend(url: string): Backend | string {
  if (url === '') return 'must not be empty; e.g. "https://invoices.internal.example:8443"';
  const bad = chars(url).find((c) => isWhitespace(c) || isControl(c) || (c.codePointAt(0) ?? 0) > 0x7f);
  if (bad !== undefined) return `${quote(url)} contains ${quote(bad)}; a backend URL is printable ASCII without spaces`;
  let tls: boolean;
  let rest: string;
  if (url.startsWith('https://')) [tls, rest] = [true, url.slice('https://'.length)];
  else if (url.startsWith('http://')) [tls, rest] = [false, url.slice('http://'.length)];
  else {
    const lower = asciiLower(url);
    let reason: string;
    if (lower.startsWith('http://') || lower.startsWith('https://')) reason = 'the scheme must be lowercase http:// or https://';
    else if (url.includes('://')) reason = `scheme ${quote(url.slice(0, url.indexOf('://')))} is not supported; use http:// or https://`;
    else reason = 'must start with http:// or https://';
    return `${quote(url)}: ${reason}`;
  }
  if (rest.includes('#')) return `${quote(url)} has a fragment ("#"); give only scheme, host and port`;
  if (rest.includes('?')) return `${quote(url)} has a query ("?"); give only scheme, host and port`;
  const slash = rest.indexOf('/');
  const authority = slash < 0 ? rest : rest.slice(0, slash);
  const path = slash < 0 ? '' : rest.slice(slash);
  if (path !== '' && path !== '/') {
    return `${quote(url)} has a path ${quote(path)}; a backend is scheme, host and port only, requests keep their own path`;
  }
  // Not quoted back: whatever is before the "@" may be a password.
  if (authority.includes('@')) return 'must not carry user information ("user:password@"); give only scheme, host and port';
  if (authority === '') return `${quote(url)} has no host`;
  const split = splitHostPort(authority);
  if (typeof split === 'string') return split;
  const [host, port] = split;
  if (port === undefined) return { host, port: tls ? 443 : 80 };
  const parsedPort = parsePort(port);
  return typeof parsedPort === 'string' ? parsedPort : { host, port: parsedPort };
}

function splitHostPort(authority: string): [BackendHost, string | undefined] | string {
  if (authority.startsWith('[')) {
    const bracketed = authority.slice(1);
    const close = bracketed.indexOf(']');
    if (close < 0) return `${quote(authority)} opens "[" without a closing "]"`;
    const inside = bracketed.slice(0, close);
    const after = bracketed.slice(close + 1);
    let port: string | undefined;
    if (after !== '') {
      if (!after.startsWith(':')) return `${quote(authority)} has ${quote(after)} after the IPv6 address; expected ":PORT"`;
      port = after.slice(1);
    }
    if (inside.includes('%')) return `IPv6 address ${quote(inside)} has a zone id; zone ids are not allowed`;
    const ip = parseIpv6(inside);
    if (!ip) return `${quote(inside)} is not a valid IPv6 address`;
    return [{ kind: 'v6', ip }, port];
  }
  const colon = authority.indexOf(':');
  let host = authority;
  let port: string | undefined;
  if (colon >= 0) {
    const after = authority.slice(colon + 1);
    if (after.includes(':')) return `${quote(authority)}: an IPv6 address must be in brackets, e.g. http://[2001:db8::1]:8080`;
    [host, port] = [authority.slice(0, colon), after];
  }
  if (host === '') return `${quote(authority)} has no host`;
  if (looksNumeric(host)) {
    const ip = parseDottedQuad(host);
    return typeof ip === 'string' ? ip : [{ kind: 'v4', ip }, port];
  }
  const why = checkDnsName(host);
  if (why !== undefined) return `host ${why}`;
  return [{ kind: 'name', name: host }, port];
}

/** Whether a URL parser would read the host as IPv4 (its last label is decimal or 0x-hex). */
function looksNumeric(host: string): boolean {
  const labels = host.split('.').reverse();
  const last = labels.find((l) => l !== '') ?? host;
  return /^\d*$/.test(last) || /^0[xX][0-9a-fA-F]*$/.test(last);
}

/** Four decimal parts 0–255 without leading zeros; anything else names another address. */
function parseDottedQuad(host: string): number[] | string {
  const refuse = `${quote(host)} is not a dotted-quad IPv4 address; write four decimal parts 0-255 without leading zeros, e.g. 10.0.0.1`;
  const parts = host.split('.');
  if (parts.length !== 4) return refuse;
  const octets: number[] = [];
  for (const part of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(part) || Number(part) > 255) return refuse;
    octets.push(Number(part));
  }
  return octets;
}

function parsePort(p: string): number | string {
  const bad = `port ${quote(p)} must be a number 1-65535 without leading zeros`;
  if (!/^[1-9]\d{0,4}$/.test(p) || Number(p) > 65535) return bad;
  return Number(p);
}

/** Where the gateway must not send traffic, as far as the URL alone tells. */
function judge(host: BackendHost, policy: Policy): Why {
  if (host.kind === 'v4') return checkAddress(formatV4(host.ip), refusalsV4(host.ip), policy);
  if (host.kind === 'v6') return checkAddress(formatV6(host.ip), refusalsV6(host.ip), policy);
  return judgeName(host.name, policy);
}

function judgeName(name: string, policy: Policy): Why {
  if (METADATA_NAMES.includes(name)) return `${name} is a cloud metadata endpoint; the gateway never routes to it`;
  const localhost = name === 'localhost' || name.endsWith('.localhost');
  if (localhost && !policy.allowLoopbackBackends) return `${name} ${WHY.loopback}`;
  const base = asciiLower(trimTrailingDots(policy.baseDomain));
  if (base !== '' && (name === base || name.endsWith(`.${base}`))) {
    return `${name} is the gateway itself (under the base domain ${base}); routing the gateway to itself makes a loop`;
  }
  // The address a name spells is where wildcard DNS sends it: judged like that address.
  for (const ip of spelledAddresses(name)) {
    const why =
      ip.length === 4
        ? checkAddress(formatV4(ip), refusalsV4(ip), policy)
        : checkAddress(formatV6(ip), refusalsV6(ip), policy);
    if (why !== undefined) {
      const shown = ip.length === 4 ? formatV4(ip) : formatV6(ip);
      return `${name} spells the address ${shown}, which wildcard DNS (nip.io, sslip.io, localtest.me) answers with: ${why}`;
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// address.rs: where an IP address leads, from the gateway's network position

type AddressClass = 'link-local' | 'loopback' | 'unspecified' | 'multicast' | 'site-local';

const WHY: Record<AddressClass, string> = {
  'link-local': 'is a link-local/metadata address; the gateway never routes to it',
  loopback:
    "is a loopback address: from the gateway it reaches the gateway's own task, not your service (allowed only where GATEWAY_ALLOW_LOOPBACK_BACKENDS=true, for local runs and tests)",
  unspecified:
    "is an unspecified address: connecting to it reaches the gateway's own task (allowed only where GATEWAY_ALLOW_LOOPBACK_BACKENDS=true, for local runs and tests)",
  multicast: 'is a multicast or broadcast address, not a backend',
  'site-local': 'is a site-local address (fec0::/10, deprecated by RFC 3879): where it leads depends on the site, not on you',
};

/** A refused class, and the IPv6 form and IPv4 address that carried it, if any. */
type Refusal = [AddressClass, [string, number[]] | undefined];

/** Instance-metadata endpoints; the link-local ones are caught by their range too. */
const METADATA_V4 = ['169.254.169.254', '169.254.170.2', '100.100.100.200', '168.63.129.16'];

/** Judges one address: the first refused class the policy does not allow. */
function checkAddress(shown: string, refusals: Refusal[], policy: Policy): Why {
  const refused = refusals.find(([c]) => !(policy.allowLoopbackBackends && (c === 'loopback' || c === 'unspecified')));
  if (!refused) return undefined;
  const [cls, carried] = refused;
  if (!carried) return `${shown} ${WHY[cls]}`;
  return `${shown} is ${carried[0]} carrying the IPv4 address ${formatV4(carried[1])}, which ${WHY[cls]}`;
}

function classV4([a, b, c, d]: number[]): AddressClass | undefined {
  const dotted = `${a}.${b}.${c}.${d}`;
  if ((a === 169 && b === 254) || METADATA_V4.includes(dotted)) return 'link-local';
  if ((a >= 224 && a <= 239) || dotted === '255.255.255.255') return 'multicast';
  if (a === 127) return 'loopback';
  // 0.0.0.0/8 ("this network"): Linux connects 0.0.0.0 to the local host.
  if (a === 0) return 'unspecified';
  return undefined;
}

function refusalsV4(ip: number[]): Refusal[] {
  const cls = classV4(ip);
  return cls ? [[cls, undefined]] : [];
}

/** The refused classes of an IPv6 address: its own, or those of the IPv4 addresses it carries. */
function refusalsV6(s: number[]): Refusal[] {
  const zero = (from: number, to: number) => s.slice(from, to).every((x) => x === 0);
  let own: AddressClass | undefined;
  if (zero(0, 7) && s[7] === 1) own = 'loopback';
  else if (zero(0, 8)) own = 'unspecified';
  else if ((s[0] & 0xffc0) === 0xfe80 || (s[0] === 0xfd00 && s[1] === 0xec2 && zero(2, 7) && s[7] === 0x254)) own = 'link-local';
  else if ((s[0] & 0xffc0) === 0xfec0) own = 'site-local';
  else if ((s[0] & 0xff00) === 0xff00) own = 'multicast';
  if (own) return [[own, undefined]];
  return carriedV4(s).flatMap(([form, v4]): Refusal[] => {
    const cls = classV4(v4);
    return cls ? [[cls, [form, v4]]] : [];
  });
}

/** Every IPv4 address an IPv6 address may deliver to, with the name of the form. */
function carriedV4(s: number[]): [string, number[]][] {
  const v4 = (hi: number, lo: number) => [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff];
  const zero = (from: number, to: number) => s.slice(from, to).every((x) => x === 0);
  const found: [string, number[]][] = [];
  if (zero(0, 5) && s[5] === 0xffff) found.push(['an IPv4-mapped address', v4(s[6], s[7])]);
  if (zero(0, 6)) found.push(['an IPv4-compatible address', v4(s[6], s[7])]);
  if (zero(0, 4) && s[4] === 0xffff && s[5] === 0) found.push(['an IPv4-translated (SIIT) address', v4(s[6], s[7])]);
  if (s[0] === 0x2002) found.push(['a 6to4 address', v4(s[1], s[2])]);
  if (s[0] === 0x64 && s[1] === 0xff9b && zero(2, 6)) found.push(['a NAT64 address', v4(s[6], s[7])]);
  if (s[0] === 0x64 && s[1] === 0xff9b && s[2] === 1) {
    // RFC 6052 positions for a /48 and a /96; all-zero is the other length's unused one.
    for (const candidate of [[s[3] >> 8, s[3] & 0xff, s[4] & 0xff, s[5] >> 8], v4(s[6], s[7])]) {
      if (candidate.some((o) => o !== 0)) found.push(['a local-use NAT64 address', candidate]);
    }
  }
  if (s[0] === 0x2001 && s[1] === 0) {
    found.push(['a Teredo address', v4(s[2], s[3])]);
    found.push(['a Teredo address', v4(~s[6] & 0xffff, ~s[7] & 0xffff)]);
  }
  return found;
}

function formatV4(ip: number[]): string {
  return ip.join('.');
}

/** Rust's `Ipv6Addr` display: RFC 5952, and `::ffff:a.b.c.d` for IPv4-mapped addresses. */
function formatV6(s: number[]): string {
  if (s.slice(0, 5).every((x) => x === 0) && s[5] === 0xffff) {
    return `::ffff:${s[6] >> 8}.${s[6] & 0xff}.${s[7] >> 8}.${s[7] & 0xff}`;
  }
  let best = [0, 0];
  for (let i = 0; i < 8; ) {
    if (s[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && s[j] === 0) j++;
    if (j - i > best[1]) best = [i, j - i];
    i = j;
  }
  const hex = (g: number[]) => g.map((x) => x.toString(16)).join(':');
  if (best[1] > 1) return `${hex(s.slice(0, best[0]))}::${hex(s.slice(best[0] + best[1]))}`;
  return hex(s);
}

/** Eight 16-bit groups, parsed as Rust's `Ipv6Addr` parser does, or undefined. */
function parseIpv6(text: string): number[] | undefined {
  let pos = 0;
  const hexGroup = (): number | undefined => {
    const m = /^[0-9a-fA-F]+/.exec(text.slice(pos));
    if (!m || m[0].length > 4) return undefined;
    pos += m[0].length;
    return parseInt(m[0], 16);
  };
  const v4 = (): number[] | undefined => {
    const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)/.exec(text.slice(pos));
    if (!m) return undefined;
    const octets = m.slice(1).map((p) => (/^(0|[1-9]\d{0,2})$/.test(p) ? Number(p) : 256));
    if (octets.some((o) => o > 255)) return undefined;
    pos += m[0].length;
    return octets;
  };
  /** Up to `limit` groups separated by ":", an IPv4 address allowed as the last two. */
  const groups = (limit: number): [number[], boolean] => {
    const out: number[] = [];
    for (let i = 0; i < limit; i++) {
      const start = pos;
      if (i > 0) {
        if (text[pos] !== ':') break;
        pos++;
      }
      if (i < limit - 1) {
        const ip = v4();
        if (ip) {
          out.push((ip[0] << 8) | ip[1], (ip[2] << 8) | ip[3]);
          return [out, true];
        }
      }
      const g = hexGroup();
      if (g === undefined) {
        pos = start;
        break;
      }
      out.push(g);
    }
    return [out, false];
  };
  const [head, headV4] = groups(8);
  let result: number[] | undefined;
  if (head.length === 8) result = head;
  else if (!headV4 && text.startsWith('::', pos)) {
    pos += 2;
    const [tail] = groups(8 - (head.length + 1));
    result = [...head, ...new Array(8 - head.length - tail.length).fill(0), ...tail];
  }
  return result && pos === text.length ? result : undefined;
}

// ---------------------------------------------------------------------------------------------
// spelled.rs: names that spell an address (wildcard DNS answers with it)

/** Public names (and their subdomains) whose DNS always answers 127.0.0.1. */
const LOOPBACK_DOMAINS = ['localtest.me', 'lvh.me', 'vcap.me', 'localho.st', 'localhost.direct'];

/** Every address the name spells, in the order found (4 octets or 8 groups). */
function spelledAddresses(name: string): number[][] {
  const found: number[][] = [];
  if (LOOPBACK_DOMAINS.some((d) => name === d || name.endsWith(`.${d}`))) found.push([127, 0, 0, 1]);
  const octet = (p: string) => (/^\d{1,3}$/.test(p) && Number(p) <= 255 ? Number(p) : undefined);
  const quad = (parts: string[]) => {
    const o = parts.map(octet);
    return o.every((x) => x !== undefined) ? (o as number[]) : undefined;
  };
  const labels = name.split('.');
  for (let i = 0; i + 4 <= labels.length; i++) {
    const ip = quad(labels.slice(i, i + 4));
    if (ip) found.push(ip);
  }
  for (const label of labels) {
    // Rust's `rsplitn(5, '-')`: at most four pieces from the end, then the rest.
    const pieces = label.split('-');
    if (pieces.length >= 4) {
      const ip = quad(pieces.slice(-4));
      if (ip) found.push(ip);
    }
    const tail = pieces[pieces.length - 1];
    if (/^[0-9a-fA-F]{8}$/.test(tail)) {
      const n = parseInt(tail, 16);
      found.push([n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]);
    }
    if (label.includes('--')) {
      const ip = parseIpv6(label.replace(/-/g, ':'));
      if (ip) found.push(ip);
    }
  }
  return found;
}
