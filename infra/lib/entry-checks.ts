/**
 * Synth-time registration checks: a TypeScript port of the registration rules
 * (docs/design.md#registration-entry; the Rust `render::check` module), so a typo fails
 * `cdk synth` in the team's pipeline instead of the deploy. The register function runs the
 * authoritative checks, plus everything that needs the registry (host and path ownership); this
 * port only catches what one entry shows on its own.
 */

/** Bounds shared with `render/src/check`: an entry must fit one DynamoDB transaction. */
export const MAX_ENTRY_BYTES = 64 * 1024;
export const MAX_ROUTES = 64;
export const MAX_LIMITS_PER_ROUTE = 8;
export const MAX_PATH_PREFIXES = 45;
/** Labels in `host`: each enclosing host is one action in the registration transaction. */
export const MAX_HOST_LABELS = 4;
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

function unknownKeys(obj: Record<string, unknown>, known: string[], parent: string, add: Add): void {
  for (const key of Object.keys(obj)) {
    if (!known.includes(key)) {
      add(child(parent, key), `unknown field; expected one of ${known.join(', ')}`);
    }
  }
}

/** `parent.key`, or `parent["key"]` when the key is not a plain word (as the Rust check names it). */
function child(parent: string, key: string): string {
  const plain = key.length > 0 && key.length <= 64 && /^[A-Za-z0-9_-]+$/.test(key);
  if (plain) return parent === '' ? key : `${parent}.${key}`;
  return `${parent}[${JSON.stringify(key)}]`;
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
  if (v.endsWith('.')) {
    add('host', `"${v}" must not end with "."`);
    return;
  }
  const base = (options.baseDomain ?? '').replace(/\.$/, '');
  if (base && (v === base || v.endsWith(`.${base}`))) {
    add('host', `"${v}" already contains the base domain "${base}"; give only the label(s) in front of it`);
    return;
  }
  const labels = v.split('.');
  if (labels.length > MAX_HOST_LABELS) {
    add('host', `"${v}" has ${labels.length} labels; at most ${MAX_HOST_LABELS} in front of the base domain`);
  }
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

/**
 * `http[s]://host[:port][/]` and nothing else, parsed by hand and strictly (as the Rust check
 * does): every lenient URL parser is a way to smuggle an address past the policy
 * (`http://0x7f.1`, `http://127.1`, `http://evil@169.254.169.254`).
 */
function checkBackend(v: unknown, options: CheckOptions, add: Add): void {
  if (typeof v !== 'string') {
    add('backend', 'required string');
    return;
  }
  const reason = backendProblem(v, options);
  if (reason) {
    add('backend', reason);
  }
}

function backendProblem(url: string, options: CheckOptions): string | undefined {
  if (url === '') return 'must not be empty; e.g. "https://invoices.internal.example:8443"';
  if (/[^\x21-\x7e]/.test(url)) return `"${url}" must be printable ASCII without spaces`;
  let rest: string;
  if (url.startsWith('https://')) rest = url.slice(8);
  else if (url.startsWith('http://')) rest = url.slice(7);
  else if (/^https?:\/\//i.test(url)) return `"${url}": the scheme must be lowercase http:// or https://`;
  else if (url.includes('://')) return `"${url}": scheme "${url.split('://')[0]}" is not supported; use http:// or https://`;
  else return `"${url}" must start with http:// or https://`;
  if (rest.includes('#')) return `"${url}" has a fragment; give only scheme, host and port`;
  if (rest.includes('?')) return `"${url}" has a query; give only scheme, host and port`;
  const slash = rest.indexOf('/');
  const authority = slash < 0 ? rest : rest.slice(0, slash);
  const path = slash < 0 ? '' : rest.slice(slash);
  if (path !== '' && path !== '/') return `"${url}" has a path "${path}"; a backend is scheme, host and port only`;
  // Not quoted back: whatever is before the "@" may be a password.
  if (authority.includes('@')) return 'must not carry user information ("user:password@"); give only scheme, host and port';
  if (authority === '') return `"${url}" has no host`;

  let host: string;
  let port: string | undefined;
  let kind: AddressKind;
  if (authority.startsWith('[')) {
    const close = authority.indexOf(']');
    if (close < 0) return `"${authority}" opens "[" without a closing "]"`;
    host = authority.slice(1, close);
    const after = authority.slice(close + 1);
    if (after !== '' && !after.startsWith(':')) return `"${authority}": expected ":PORT" after the IPv6 address`;
    port = after === '' ? undefined : after.slice(1);
    if (host.includes('%')) return `IPv6 address "${host}" has a zone id; zone ids are not allowed`;
    const groups = parseIpv6(host);
    if (!groups) return `"${host}" is not a valid IPv6 address`;
    kind = ipv6Kind(groups);
  } else {
    const parts = authority.split(':');
    if (parts.length > 2) return `"${authority}": an IPv6 address must be in brackets, e.g. http://[2001:db8::1]:8080`;
    [host, port] = [parts[0], parts[1]];
    if (host === '') return `"${authority}" has no host`;
    if (looksNumeric(host)) {
      const octets = parseDottedQuad(host);
      if (!octets) return `"${host}" is not a dotted-quad IPv4 address; write four decimal parts 0-255 without leading zeros`;
      kind = ipv4Kind(octets);
    } else {
      const dns = dnsNameProblem(host);
      if (dns) return `host ${dns}`;
      kind = nameKind(host, options);
    }
  }
  if (port !== undefined && !/^[1-9]\d{0,4}$/.test(port)) return `port "${port}" must be a number 1-65535 without leading zeros`;
  if (port !== undefined && Number(port) > 65535) return `port "${port}" must be a number 1-65535 without leading zeros`;
  const portNumber = port === undefined ? (url.startsWith('https://') ? 443 : 80) : Number(port);
  if (portNumber >= PROXY_RESERVED_PORTS.first && portNumber <= PROXY_RESERVED_PORTS.last) {
    return `port ${portNumber} is reserved for the proxy task's own services (ports ${PROXY_RESERVED_PORTS.first}-${PROXY_RESERVED_PORTS.last}); use another port`;
  }

  switch (kind) {
    case 'link-local':
      return `${host} is a link-local/metadata address; the gateway never routes to it`;
    case 'multicast':
      return `${host} is a multicast or broadcast address, not a backend`;
    case 'site-local':
      return `${host} is a site-local address (fec0::/10, deprecated by RFC 3879), not a backend`;
    case 'gateway':
      return `${host} is the gateway itself (under the base domain); routing the gateway to itself makes a loop`;
    case 'loopback':
    case 'unspecified':
      return options.allowLoopbackBackends ? undefined : `${host} is a ${kind} address: from the gateway it reaches the gateway's own task`;
    default:
      return undefined;
  }
}

type AddressKind = 'loopback' | 'link-local' | 'unspecified' | 'multicast' | 'site-local' | 'gateway' | 'other';

/** Loopback ports of the proxy task's own services (render's PROXY_RESERVED_PORTS). */
export const PROXY_RESERVED_PORTS = { first: 15000, last: 15019 } as const;

/** Instance-metadata endpoints; the link-local ones are caught by their range too. */
const METADATA_V4 = ['169.254.169.254', '169.254.170.2', '100.100.100.200', '168.63.129.16'];
const METADATA_NAMES = ['metadata.google.internal', 'instance-data.ec2.internal', 'instance-data'];

/** Classifies a backend host: a name, a dotted quad, or a bracketed IPv6 address. */
export function addressKind(hostname: string, options: CheckOptions = {}): AddressKind {
  if (hostname.startsWith('[') && hostname.endsWith(']')) {
    const groups = parseIpv6(hostname.slice(1, -1));
    return groups ? ipv6Kind(groups) : 'other';
  }
  const octets = parseDottedQuad(hostname);
  return octets ? ipv4Kind(octets) : nameKind(hostname, options);
}

function nameKind(name: string, options: CheckOptions): AddressKind {
  if (METADATA_NAMES.includes(name)) return 'link-local';
  if (name === 'localhost' || name.endsWith('.localhost')) return 'loopback';
  const base = (options.baseDomain ?? '').replace(/\.$/, '').toLowerCase();
  if (base && (name === base || name.endsWith(`.${base}`))) return 'gateway';
  // A name spelling an address is where wildcard DNS (nip.io, sslip.io) sends it.
  const order: AddressKind[] = ['link-local', 'site-local', 'multicast', 'loopback', 'unspecified'];
  const kinds = spelledAddresses(name);
  return order.find((k) => kinds.includes(k)) ?? 'other';
}

/** Public names whose DNS always answers 127.0.0.1 (render/src/check/spelled.rs). */
const LOOPBACK_DOMAINS = ['localtest.me', 'lvh.me', 'vcap.me', 'localho.st', 'localhost.direct'];

/** The kinds of every address a name spells (render/src/check/spelled.rs). */
function spelledAddresses(name: string): AddressKind[] {
  const kinds: AddressKind[] = [];
  if (LOOPBACK_DOMAINS.some((d) => name === d || name.endsWith(`.${d}`))) kinds.push('loopback');
  const octet = (p: string) => /^\d{1,3}$/.test(p) && Number(p) <= 255;
  const labels = name.split('.');
  for (let i = 0; i + 4 <= labels.length; i++) {
    const w = labels.slice(i, i + 4);
    if (w.every(octet)) kinds.push(ipv4Kind(w.map(Number)));
  }
  for (const label of labels) {
    const parts = label.split('-');
    const last4 = parts.slice(-4);
    if (parts.length >= 4 && last4.every(octet)) kinds.push(ipv4Kind(last4.map(Number)));
    const tail = parts[parts.length - 1];
    if (/^[0-9a-f]{8}$/.test(tail)) {
      const n = parseInt(tail, 16);
      kinds.push(ipv4Kind([n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]));
    }
    if (label.includes('--')) {
      const groups = parseIpv6(label.replace(/-/g, ':'));
      if (groups) kinds.push(ipv6Kind(groups));
    }
  }
  return kinds;
}

/** Whether a URL parser would read the host as IPv4 (its last label is decimal or 0x-hex). */
function looksNumeric(host: string): boolean {
  const labels = host.split('.').filter((l) => l !== '');
  const last = labels.length > 0 ? labels[labels.length - 1] : host;
  return /^\d*$/.test(last) || /^0x[0-9a-f]*$/i.test(last);
}

/** Four decimal parts 0-255 without leading zeros; anything else names another address. */
function parseDottedQuad(host: string): number[] | undefined {
  const parts = host.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^(0|[1-9]\d{0,2})$/.test(p))) return undefined;
  const octets = parts.map(Number);
  return octets.every((o) => o <= 255) ? octets : undefined;
}

function ipv4Kind([a, b, c, d]: number[]): AddressKind {
  const dotted = `${a}.${b}.${c}.${d}`;
  if ((a === 169 && b === 254) || METADATA_V4.includes(dotted)) return 'link-local';
  if ((a >= 224 && a <= 239) || dotted === '255.255.255.255') return 'multicast';
  if (a === 127) return 'loopback';
  // 0.0.0.0/8 ("this network"): Linux connects 0.0.0.0 to the local host.
  if (a === 0) return 'unspecified';
  return 'other';
}

function ipv6Kind(g: number[]): AddressKind {
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return 'loopback';
  if (g.every((x) => x === 0)) return 'unspecified';
  if ((g[0] & 0xffc0) === 0xfe80) return 'link-local';
  // fd00:ec2::254 is the instance metadata service over IPv6.
  if (g[0] === 0xfd00 && g[1] === 0x0ec2 && g.slice(2, 7).every((x) => x === 0) && g[7] === 0x254) return 'link-local';
  if ((g[0] & 0xffc0) === 0xfec0) return 'site-local';
  if ((g[0] & 0xff00) === 0xff00) return 'multicast';
  // Forms carrying an IPv4 address are judged by it; the most severe one wins.
  const order: AddressKind[] = ['link-local', 'multicast', 'loopback', 'unspecified'];
  const kinds = carriedV4(g).map(ipv4Kind);
  return order.find((k) => kinds.includes(k)) ?? 'other';
}

/** The IPv4 addresses an IPv6 address may deliver to (render/src/check/address.rs). */
function carriedV4(g: number[]): number[][] {
  const v4 = (hi: number, lo: number) => [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff];
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  const found: number[][] = [];
  if (zero(0, 5) && g[5] === 0xffff) found.push(v4(g[6], g[7])); // IPv4-mapped
  if (zero(0, 6)) found.push(v4(g[6], g[7])); // IPv4-compatible
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) found.push(v4(g[6], g[7])); // SIIT
  if (g[0] === 0x2002) found.push(v4(g[1], g[2])); // 6to4
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) found.push(v4(g[6], g[7])); // NAT64
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) {
    // Local-use NAT64: the /48 and the /96 positions; all-zero is the other length's unused one.
    for (const c of [[g[3] >> 8, g[3] & 0xff, g[4] & 0xff, g[5] >> 8], v4(g[6], g[7])]) {
      if (c.some((o) => o !== 0)) found.push(c);
    }
  }
  if (g[0] === 0x2001 && g[1] === 0) {
    found.push(v4(g[2], g[3])); // Teredo server
    found.push(v4(~g[6] & 0xffff, ~g[7] & 0xffff)); // Teredo client, inverted
  }
  return found;
}

/** Eight 16-bit groups (a dotted IPv4 tail counts for two), or undefined. */
function parseIpv6(addr: string): number[] | undefined {
  const halves = addr.split('::');
  if (halves.length > 2) return undefined;
  const parse = (part: string): number[] | undefined => {
    if (part === '') return [];
    const out: number[] = [];
    const pieces = part.split(':');
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i];
      if (i === pieces.length - 1 && piece.includes('.')) {
        const v4 = parseDottedQuad(piece);
        if (!v4) return undefined;
        out.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      } else if (/^[0-9a-f]{1,4}$/i.test(piece)) {
        out.push(parseInt(piece, 16));
      } else {
        return undefined;
      }
    }
    return out;
  };
  const head = parse(halves[0]);
  const tail = halves.length === 2 ? parse(halves[1]) : [];
  if (!head || !tail) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  const fill = 8 - head.length - tail.length;
  return fill >= 1 ? [...head, ...new Array(fill).fill(0), ...tail] : undefined;
}

/** One or more RFC 1123 labels, no trailing dot. */
function dnsNameProblem(name: string): string | undefined {
  if (name.endsWith('.')) return `"${name}" must not end with "."`;
  if (name.includes('*')) return `"${name}": wildcards are not allowed`;
  for (const label of name.split('.')) {
    const why = dnsLabelProblem(label);
    if (why) return `label "${label}": ${why}`;
  }
  return undefined;
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
    unknownKeys(route, ROUTE_KEYS, field, add);
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

/** Characters RFC 3986 allows in a path besides letters, digits, `/` and `%XX`. */
const PATH_PUNCTUATION = "-._~!$&'()*+,;=:@";

/**
 * A segment-aware prefix. Anything a proxy or a backend could normalise differently (dot
 * segments, doubled or encoded slashes, backslashes) is rejected: a prefix that means one thing
 * to Envoy and another to the backend lets a request slip past its route.
 */
function checkPath(v: unknown, field: string, add: Add): boolean {
  if (typeof v !== 'string') {
    add(field, 'required string');
    return false;
  }
  const reason = pathProblem(v);
  if (reason) {
    add(field, `"${v}": ${reason}`);
    return false;
  }
  return true;
}

function pathProblem(path: string): string | undefined {
  if (path === '') return 'must not be empty; a path starts with "/"';
  if (Buffer.byteLength(path, 'utf8') > MAX_PATH_BYTES) return `longer than ${MAX_PATH_BYTES} bytes`;
  if (!path.startsWith('/')) return 'must start with "/"';
  for (const c of path) {
    if (/[a-zA-Z0-9/%]/.test(c) || PATH_PUNCTUATION.includes(c)) continue;
    if (/\s/.test(c)) return 'whitespace is not allowed in a path';
    if (/[\u0000-\u001f\u007f-\u009f]/.test(c)) return 'control characters are not allowed in a path';
    if (c === '?') return '"?" starts a query string; a route matches the path only';
    if (c === '#') return '"#" starts a fragment, which clients never send';
    if (c === '\\') return 'backslashes are not allowed (some servers read them as "/")';
    if (c.charCodeAt(0) > 0x7f) return 'non-ASCII characters are not allowed; percent-encode them (%XX)';
    return `character "${c}" is not allowed; use letters, digits, "/", %XX or one of ${PATH_PUNCTUATION}`;
  }
  for (let i = path.indexOf('%'); i >= 0; i = path.indexOf('%', i + 3)) {
    const hex = path.slice(i + 1, i + 3);
    if (!/^[0-9a-fA-F]{2}$/.test(hex)) return '"%" must be followed by two hex digits';
    const byte = parseInt(hex, 16);
    if (byte === 0x2e || byte === 0x2f || byte === 0x5c || byte === 0x25 || byte < 0x20 || byte === 0x7f) {
      return `%${hex} encodes a dot, slash, backslash, percent or control character; not allowed`;
    }
  }
  if (path.includes('//')) return 'contains "//" (an empty segment); write single slashes';
  // `..;` is how some servlet containers spell `..`: judge a segment without its parameters.
  if (path.split('/').some((seg) => ['.', '..'].includes(seg.split(';')[0]))) {
    return 'contains a dot segment; write the path without "/./" or "/../"';
  }
  return undefined;
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
  const keys = v.map((limit, k) => checkLimit(limit, `${field}[${k}]`, add));
  // One rule per key in the rate-limit service, one burst bucket per route.
  keys.forEach((key, j) => {
    const i = key === undefined ? -1 : keys.indexOf(key);
    if (i >= 0 && i < j) {
      add(`${field}[${j}]`, key === 'burst' ? `a route has at most one burst limit (also ${field}[${i}])` : `same per, header and unit as ${field}[${i}]; merge them into one limit`);
    }
  });
}

const GLOBAL_KEYS = ['per', 'header', 'requests', 'every'];

/** Checks one limit; returns its collision key (`burst`, or per/header/unit) when valid. */
function checkLimit(v: unknown, field: string, add: Add): string | undefined {
  if (!isObject(v)) {
    add(field, 'expected {"burst": N} or {"per", "requests", "every"}');
    return undefined;
  }
  unknownKeys(v, ['burst', ...GLOBAL_KEYS], field, add);
  const hasBurst = 'burst' in v;
  const hasGlobal = GLOBAL_KEYS.some((k) => k in v);
  if (hasBurst && hasGlobal) {
    add(field, 'mixes "burst" with a global limit\'s fields (per, header, requests, every); write them as two limits');
    return undefined;
  }
  if (!hasBurst && !hasGlobal) {
    add(field, 'expected {"burst": N} or {"per": ..., "requests": N, "every": ...}');
    return undefined;
  }
  if (hasBurst) {
    return checkCount(v.burst, `${field}.burst`, MAX_BURST, add) ? 'burst' : undefined;
  }
  let ok = true;
  if (typeof v.per !== 'string' || !PERS.includes(v.per)) {
    add(`${field}.per`, `unknown ${JSON.stringify(v.per)}; expected client-ip, route or header`);
    ok = false;
  } else if (v.per === 'header') {
    const why = typeof v.header === 'string' ? headerProblem(v.header) : 'required when per is "header": name the header whose value is counted';
    if (why) {
      add(`${field}.header`, why);
      ok = false;
    }
  } else if (v.header !== undefined) {
    add(`${field}.header`, `only allowed when per is "header" (per is "${v.per}")`);
    ok = false;
  }
  ok = checkCount(v.requests, `${field}.requests`, MAX_REQUESTS, add) && ok;
  if (typeof v.every !== 'string' || !UNITS.includes(v.every)) {
    add(`${field}.every`, `unknown unit ${JSON.stringify(v.every)}; expected second, minute, hour or day`);
    ok = false;
  }
  return ok ? JSON.stringify([v.per, v.header ?? null, v.every]) : undefined;
}

const MAX_BURST = 1_000_000;
const MAX_REQUESTS = 1_000_000_000;
const MAX_HEADER_NAME_LEN = 128;

/** A lowercase RFC 9110 token that a client cannot use to escape its bucket. */
function headerProblem(h: string): string | undefined {
  if (h === '') return 'must not be empty; name a request header such as "x-api-key"';
  if (h.startsWith(':')) return `"${h}" is an HTTP/2 pseudo-header, not a request header`;
  if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(h)) return `"${h}": only RFC 9110 token characters are allowed in a header name`;
  if (/[A-Z]/.test(h)) return `"${h}" must be lowercase: write "${h.toLowerCase()}"`;
  if (h.length > MAX_HEADER_NAME_LEN) return `is ${h.length} characters long; at most ${MAX_HEADER_NAME_LEN}`;
  if (['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authenticate'].includes(h)) {
    return `"${h}" cannot be a rate-limit key: it is a hop-by-hop header, consumed before routing`;
  }
  if (['x-forwarded-for', 'forwarded', 'x-real-ip'].includes(h)) {
    return `"${h}" cannot be a rate-limit key: a client sets it freely; use per "client-ip"`;
  }
  // A limit's key is stored in the rate-limit service's counters and logs: never a credential.
  if (['authorization', 'proxy-authorization', 'cookie', 'x-amz-security-token'].includes(h)) {
    return `"${h}" cannot be a rate-limit key: it carries a credential; key on a dedicated, non-secret header`;
  }
  if (h.startsWith('x-envoy-')) return `"${h}" cannot be a rate-limit key: Envoy sets and strips x-envoy- headers itself`;
  return undefined;
}

function checkCount(v: unknown, field: string, max: number, add: Add): boolean {
  if (!isPositiveInt(v)) {
    add(field, `${JSON.stringify(v)}: expected a positive integer`);
    return false;
  }
  if ((v as number) > max) {
    add(field, `is ${v}; at most ${max}`);
    return false;
  }
  return true;
}

function isPositiveInt(v: unknown): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 0xffffffff;
}
