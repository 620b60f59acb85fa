/**
 * Synth-time registration checks: a TypeScript port of DESIGN.md's registration rules (the Rust
 * `render::check` module), so a typo fails `cdk synth` in the team's pipeline instead of the
 * deploy. The register function runs the authoritative checks, plus everything that needs the
 * registry (host and path ownership); this port only catches what one entry shows on its own.
 */

/** Bounds shared with `render/src/check`: an entry must fit one DynamoDB transaction. */
export const MAX_ENTRY_BYTES = 64 * 1024;
export const MAX_ROUTES = 64;
export const MAX_LIMITS_PER_ROUTE = 8;
export const MAX_PATH_PREFIXES = 48;
const MAX_PATH_BYTES = 1024;
const MAX_FQDN = 253;

const HTTP_METHODS = ['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'TRACE'];
const PERS = ['client-ip', 'route', 'header'];
const UNITS = ['second', 'minute', 'hour', 'day'];
const ENTRY_KEYS = ['team', 'service', 'host', 'backend', 'routes'];
const ROUTE_KEYS = ['path', 'methods', 'limits'];

export interface CheckOptions {
  /** The gateway's base domain, when known: lets the check bound the full hostname (≤ 253). */
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

/** Every problem in `value`, in document order; empty when the entry passes. */
export function checkEntry(value: unknown, options: CheckOptions = {}): Problem[] {
  const problems: Problem[] = [];
  const add = (field: string, reason: string) => problems.push({ field, reason });

  if (!isObject(value)) {
    add('entry', 'expected a JSON object');
    return problems;
  }
  const size = Buffer.byteLength(JSON.stringify(value), 'utf8');
  if (size > MAX_ENTRY_BYTES) {
    add('entry', `${size} bytes; at most ${MAX_ENTRY_BYTES} allowed`);
  }
  unknownKeys(value, ENTRY_KEYS, '', add);

  checkIdentifier(value.team, 'team', add);
  checkIdentifier(value.service, 'service', add);
  checkHost(value.host, options, add);
  checkBackend(value.backend, options, add);
  checkRoutes(value.routes, add);
  return problems;
}

/** Throws `EntryRejected` unless the entry passes. */
export function assertEntry(value: unknown, options: CheckOptions = {}): void {
  const problems = checkEntry(value, options);
  if (problems.length > 0) {
    throw new EntryRejected(problems);
  }
}

type Add = (field: string, reason: string) => void;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function unknownKeys(obj: Record<string, unknown>, known: string[], prefix: string, add: Add): void {
  for (const key of Object.keys(obj)) {
    if (!known.includes(key)) {
      add(`${prefix}${key}`, `unknown field; expected one of ${known.join(', ')}`);
    }
  }
}

/** team and service: 1–63 of a-z0-9-, starting with a letter, not ending with `-`. */
function checkIdentifier(v: unknown, field: string, add: Add): void {
  if (typeof v !== 'string') {
    add(field, 'required string');
    return;
  }
  if (v.length < 1 || v.length > 63) {
    add(field, `"${v}" has ${v.length} characters; expected 1 to 63`);
  } else if (!/^[a-z][a-z0-9-]*$/.test(v)) {
    add(field, `"${v}" must start with a lowercase letter and contain only a-z, 0-9 and -`);
  } else if (v.endsWith('-')) {
    add(field, `"${v}" must not end with -`);
  }
}

/** One or more RFC 1123 labels; no wildcard (the gateway alone owns the catch-all). */
function checkHost(v: unknown, options: CheckOptions, add: Add): void {
  if (typeof v !== 'string') {
    add('host', 'required string');
    return;
  }
  if (v.includes('*')) {
    add('host', `"${v}": wildcards are not allowed; the gateway alone owns the catch-all host`);
    return;
  }
  const labels = v.split('.');
  labels.forEach((label, i) => {
    const reason = dnsLabelProblem(label);
    if (reason) {
      add('host', `label ${i + 1} "${label}" of "${v}": ${reason}`);
    }
  });
  if (options.baseDomain) {
    const fqdn = `${v}.${options.baseDomain}`;
    if (fqdn.length > MAX_FQDN) {
      add('host', `full hostname ${fqdn} has ${fqdn.length} characters; at most ${MAX_FQDN} allowed`);
    }
  }
}

function dnsLabelProblem(label: string): string | undefined {
  if (label.length < 1 || label.length > 63) {
    return `${label.length} characters; a DNS label has 1 to 63`;
  }
  if (!/^[a-z0-9-]+$/.test(label)) {
    return 'only lowercase a-z, 0-9 and - are allowed';
  }
  if (label.startsWith('-') || label.endsWith('-')) {
    return 'must not start or end with -';
  }
  return undefined;
}

/** http(s) URL with a host and an optional port, and nothing the gateway must not reach. */
function checkBackend(v: unknown, options: CheckOptions, add: Add): void {
  if (typeof v !== 'string') {
    add('backend', 'required string');
    return;
  }
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    add('backend', `"${v}" is not a URL`);
    return;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    add('backend', `"${v}": scheme must be http or https`);
    return;
  }
  if (url.username || url.password) {
    add('backend', `"${v}": credentials in the URL are not allowed`);
  }
  if (!/^[a-z]+:\/\/[^/?#]*\/?$/i.test(v)) {
    add('backend', `"${v}": only scheme, host and optional port are allowed (no path, query or fragment)`);
  }
  if (!url.hostname) {
    add('backend', `"${v}": host is missing`);
    return;
  }
  const kind = addressKind(url.hostname);
  if (kind === 'link-local') {
    add('backend', `"${v}": link-local addresses (169.254.0.0/16, fe80::/10, instance metadata) are never allowed`);
  } else if ((kind === 'loopback' || kind === 'unspecified') && !options.allowLoopbackBackends) {
    add('backend', `"${v}": ${kind} addresses are not allowed`);
  }
}

type AddressKind = 'loopback' | 'link-local' | 'unspecified' | 'other';

/** Classifies a URL hostname as WHATWG `URL` normalises it (IPv4 dotted, IPv6 in brackets). */
export function addressKind(hostname: string): AddressKind {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) {
    return 'loopback';
  }
  if (host.startsWith('[') && host.endsWith(']')) {
    return ipv6Kind(host.slice(1, -1));
  }
  const v4 = parseIpv4(host);
  return v4 ? ipv4Kind(v4) : 'other';
}

function parseIpv4(host: string): number[] | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (!m) {
    return undefined;
  }
  const octets = m.slice(1).map(Number);
  return octets.every((o) => o <= 255) ? octets : undefined;
}

function ipv4Kind([a, b]: number[]): AddressKind {
  if (a === 127) return 'loopback';
  if (a === 169 && b === 254) return 'link-local';
  if (a === 0) return 'unspecified';
  return 'other';
}

function ipv6Kind(addr: string): AddressKind {
  const groups = expandIpv6(addr);
  if (!groups) {
    return 'other';
  }
  if (groups.every((g) => g === 0)) return 'unspecified';
  if (groups.slice(0, 7).every((g) => g === 0) && groups[7] === 1) return 'loopback';
  if ((groups[0] & 0xffc0) === 0xfe80) return 'link-local';
  // fd00:ec2::254 is the instance metadata service over IPv6.
  if (groups[0] === 0xfd00 && groups[1] === 0x0ec2 && groups.slice(2, 7).every((g) => g === 0) && groups[7] === 0x254) {
    return 'link-local';
  }
  // IPv4-mapped (::ffff:a.b.c.d): judge the IPv4 address inside.
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return ipv4Kind([groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff]);
  }
  return 'other';
}

/** Eight 16-bit groups, or undefined. WHATWG URL already rewrote any dotted IPv4 tail to hex. */
function expandIpv6(addr: string): number[] | undefined {
  const halves = addr.split('::');
  if (halves.length > 2) return undefined;
  const parse = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const head = parse(halves[0]);
  const tail = halves.length === 2 ? parse(halves[1]) : [];
  const fill = halves.length === 2 ? 8 - head.length - tail.length : 0;
  const groups = [...head, ...new Array(Math.max(fill, 0)).fill(0), ...tail];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

function checkRoutes(v: unknown, add: Add): void {
  if (!Array.isArray(v)) {
    add('routes', 'required list with at least one route');
    return;
  }
  if (v.length === 0) {
    add('routes', 'at least one route is required');
    return;
  }
  if (v.length > MAX_ROUTES) {
    add('routes', `${v.length} routes; at most ${MAX_ROUTES} allowed`);
  }
  const prefixes = new Set<string>();
  const seen: { path: string; methods: Set<string> | undefined; index: number }[] = [];
  v.forEach((route, i) => {
    const field = `routes[${i}]`;
    if (!isObject(route)) {
      add(field, 'expected an object with path, methods and limits');
      return;
    }
    unknownKeys(route, ROUTE_KEYS, `${field}.`, add);
    const pathOk = checkPath(route.path, `${field}.path`, add);
    const methods = checkMethods(route.methods, `${field}.methods`, add);
    checkLimits(route.limits, `${field}.limits`, add);
    if (pathOk && typeof route.path === 'string') {
      prefixes.add(route.path);
      for (const other of seen) {
        if (other.path === route.path && methodsOverlap(other.methods, methods)) {
          add(field, `same path ${route.path} as routes[${other.index}] with an overlapping method set`);
        }
      }
      seen.push({ path: route.path, methods, index: i });
    }
  });
  if (prefixes.size > MAX_PATH_PREFIXES) {
    add('routes', `${prefixes.size} distinct path prefixes; at most ${MAX_PATH_PREFIXES} allowed`);
  }
}

function checkPath(v: unknown, field: string, add: Add): boolean {
  if (typeof v !== 'string') {
    add(field, 'required string');
    return false;
  }
  const fail = (reason: string) => {
    add(field, `"${v}": ${reason}`);
    return false;
  };
  if (!v.startsWith('/')) return fail('must start with /');
  if (Buffer.byteLength(v, 'utf8') > MAX_PATH_BYTES) return fail(`longer than ${MAX_PATH_BYTES} bytes`);
  if (/[\s\u0000-\u001f\u007f]/.test(v)) return fail('whitespace and control characters are not allowed');
  if (v.includes('?') || v.includes('#')) return fail('? and # are not allowed (a prefix matches paths only)');
  if (v.includes('//')) return fail('// is not allowed');
  const segments = v.split('/');
  if (segments.includes('.') || segments.includes('..')) return fail('/./ and /../ are not allowed');
  return true;
}

function checkMethods(v: unknown, field: string, add: Add): Set<string> | undefined {
  if (v === undefined) {
    return undefined;
  }
  if (!Array.isArray(v) || v.length === 0) {
    add(field, 'a non-empty list of HTTP methods, or omit it for every method');
    return undefined;
  }
  const set = new Set<string>();
  v.forEach((m, j) => {
    if (typeof m !== 'string' || !HTTP_METHODS.includes(m)) {
      add(`${field}[${j}]`, `unknown method ${JSON.stringify(m)}; expected one of ${HTTP_METHODS.join(', ')}`);
    } else if (set.has(m)) {
      add(`${field}[${j}]`, `${m} is listed twice`);
    } else {
      set.add(m);
    }
  });
  return set;
}

/** Two method sets overlap when either is "every method" or they share one. */
function methodsOverlap(a: Set<string> | undefined, b: Set<string> | undefined): boolean {
  if (!a || !b) return true;
  return [...a].some((m) => b.has(m));
}

function checkLimits(v: unknown, field: string, add: Add): void {
  if (v === undefined) {
    return;
  }
  if (!Array.isArray(v)) {
    add(field, 'expected a list of limits');
    return;
  }
  if (v.length > MAX_LIMITS_PER_ROUTE) {
    add(field, `${v.length} limits; at most ${MAX_LIMITS_PER_ROUTE} allowed`);
  }
  v.forEach((limit, k) => checkLimit(limit, `${field}[${k}]`, add));
}

function checkLimit(v: unknown, field: string, add: Add): void {
  if (!isObject(v)) {
    add(field, 'expected {"burst": N} or {"per", "requests", "every"}');
    return;
  }
  if ('burst' in v) {
    unknownKeys(v, ['burst'], `${field}.`, add);
    if (!isPositiveInt(v.burst)) {
      add(`${field}.burst`, `${JSON.stringify(v.burst)}: expected an integer of at least 1`);
    }
    return;
  }
  unknownKeys(v, ['per', 'header', 'requests', 'every'], `${field}.`, add);
  if (typeof v.per !== 'string' || !PERS.includes(v.per)) {
    add(`${field}.per`, `unknown ${JSON.stringify(v.per)}; expected client-ip, route or header`);
  } else if (v.per === 'header') {
    if (typeof v.header !== 'string' || !/^[a-z0-9!#$%&'*+.^_`|~-]+$/.test(v.header)) {
      add(`${field}.header`, `${JSON.stringify(v.header)}: per header needs a valid lowercase header name`);
    }
  } else if (v.header !== undefined) {
    add(`${field}.header`, `only allowed with per header, not per ${v.per}`);
  }
  if (!isPositiveInt(v.requests)) {
    add(`${field}.requests`, `${JSON.stringify(v.requests)}: expected a positive integer`);
  }
  if (typeof v.every !== 'string' || !UNITS.includes(v.every)) {
    add(`${field}.every`, `unknown unit ${JSON.stringify(v.every)}; expected second, minute, hour or day`);
  }
}

function isPositiveInt(v: unknown): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 0xffffffff;
}
