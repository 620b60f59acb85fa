/**
 * Names that spell an address, which wildcard DNS answers with (`127.0.0.1.nip.io`,
 * `app-7f000001.nip.io`, `fe80--1.sslip.io`, `localtest.me`) (render/src/check/spelled.rs).
 */
import { parseIpv6 } from './address';

/** Public names (and their subdomains) whose DNS always answers 127.0.0.1. */
export const LOOPBACK_DOMAINS = ['localtest.me', 'lvh.me', 'vcap.me', 'localho.st', 'localhost.direct'];

/** Every address the name spells, in the order found (4 octets or 8 groups). */
export function spelledAddresses(name: string): number[][] {
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
