/**
 * `backend`: `http[s]://host[:port][/]`, parsed by hand and strictly, because every lenient URL
 * parser is a way to smuggle an address past the checks (`http://0x7f.1`, `http://127.1`,
 * `http://evil@169.254.169.254`) (render/src/check/backend.rs).
 */
import { WHY, checkAddress, formatV4, formatV6, parseIpv6, refusalsV4, refusalsV6 } from './address';
import { PROXY_RESERVED_PORTS, Policy } from './bounds';
import { trimTrailingDots } from './host';
import { checkDnsName } from './identifiers';
import { Why, asciiLower, chars, isControl, isWhitespace, quote } from './report';
import { spelledAddresses } from './spelled';

export const METADATA_NAMES = ['metadata.google.internal', 'instance-data.ec2.internal', 'instance-data'];

export type BackendHost = { kind: 'name'; name: string } | { kind: 'v4'; ip: number[] } | { kind: 'v6'; ip: number[] };
export interface Backend {
  readonly host: BackendHost;
  readonly port: number;
}

/** Parses and judges a backend URL. */
export function checkBackend(url: string, policy: Policy): Why {
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
export function parseBackend(url: string): Backend | string {
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

export function splitHostPort(authority: string): [BackendHost, string | undefined] | string {
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
export function looksNumeric(host: string): boolean {
  const labels = host.split('.').reverse();
  const last = labels.find((l) => l !== '') ?? host;
  return /^\d*$/.test(last) || /^0[xX][0-9a-fA-F]*$/.test(last);
}

/** Four decimal parts 0–255 without leading zeros; anything else names another address. */
export function parseDottedQuad(host: string): number[] | string {
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

export function parsePort(p: string): number | string {
  const bad = `port ${quote(p)} must be a number 1-65535 without leading zeros`;
  if (!/^[1-9]\d{0,4}$/.test(p) || Number(p) > 65535) return bad;
  return Number(p);
}

/** Where the gateway must not send traffic, as far as the URL alone tells. */
export function judge(host: BackendHost, policy: Policy): Why {
  if (host.kind === 'v4') return checkAddress(formatV4(host.ip), refusalsV4(host.ip), policy);
  if (host.kind === 'v6') return checkAddress(formatV6(host.ip), refusalsV6(host.ip), policy);
  return judgeName(host.name, policy);
}

export function judgeName(name: string, policy: Policy): Why {
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
