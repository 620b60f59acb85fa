/**
 * Where an IP address leads, from the gateway's network position, and how Rust writes an
 * address (render/src/check/address.rs).
 */
import { Policy } from './bounds';
import { Why } from './report';

export type AddressClass = 'link-local' | 'loopback' | 'unspecified' | 'multicast' | 'site-local';

export const WHY: Record<AddressClass, string> = {
  'link-local': 'is a link-local/metadata address; the gateway never routes to it',
  loopback:
    "is a loopback address: from the gateway it reaches the gateway's own task, not your service (allowed only where GATEWAY_ALLOW_LOOPBACK_BACKENDS=true, for local runs and tests)",
  unspecified:
    "is an unspecified address: connecting to it reaches the gateway's own task (allowed only where GATEWAY_ALLOW_LOOPBACK_BACKENDS=true, for local runs and tests)",
  multicast: 'is a multicast or broadcast address, not a backend',
  'site-local': 'is a site-local address (fec0::/10, deprecated by RFC 3879): where it leads depends on the site, not on you',
};

/** A refused class, and the IPv6 form and IPv4 address that carried it, if any. */
export type Refusal = [AddressClass, [string, number[]] | undefined];

/** Instance-metadata endpoints; the link-local ones are caught by their range too. */
export const METADATA_V4 = ['169.254.169.254', '169.254.170.2', '100.100.100.200', '168.63.129.16'];

/** Judges one address: the first refused class the policy does not allow. */
export function checkAddress(shown: string, refusals: Refusal[], policy: Policy): Why {
  const refused = refusals.find(([c]) => !(policy.allowLoopbackBackends && (c === 'loopback' || c === 'unspecified')));
  if (!refused) return undefined;
  const [cls, carried] = refused;
  if (!carried) return `${shown} ${WHY[cls]}`;
  return `${shown} is ${carried[0]} carrying the IPv4 address ${formatV4(carried[1])}, which ${WHY[cls]}`;
}

export function classV4([a, b, c, d]: number[]): AddressClass | undefined {
  const dotted = `${a}.${b}.${c}.${d}`;
  if ((a === 169 && b === 254) || METADATA_V4.includes(dotted)) return 'link-local';
  if ((a >= 224 && a <= 239) || dotted === '255.255.255.255') return 'multicast';
  if (a === 127) return 'loopback';
  // 0.0.0.0/8 ("this network"): Linux connects 0.0.0.0 to the local host.
  if (a === 0) return 'unspecified';
  return undefined;
}

export function refusalsV4(ip: number[]): Refusal[] {
  const cls = classV4(ip);
  return cls ? [[cls, undefined]] : [];
}

/** The refused classes of an IPv6 address: its own, or those of the IPv4 addresses it carries. */
export function refusalsV6(s: number[]): Refusal[] {
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
export function carriedV4(s: number[]): [string, number[]][] {
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

export function formatV4(ip: number[]): string {
  return ip.join('.');
}

/** Rust's `Ipv6Addr` display: RFC 5952, and `::ffff:a.b.c.d` for IPv4-mapped addresses. */
export function formatV6(s: number[]): string {
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
export function parseIpv6(text: string): number[] | undefined {
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
