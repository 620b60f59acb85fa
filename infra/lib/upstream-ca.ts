import * as fs from 'fs';

/**
 * The CA bundle https backends must chain to (docs/design.md#memory-envelope). Every https
 * cluster parses it on its own, in validation and in every proxy, so its size is the largest
 * per-cluster cost measured: the system bundle (about 140 certificates) costs about 0.3 MiB per
 * cluster, a one-certificate file almost nothing. Operators supply their own CA file; the
 * system bundle only on request (`'system'`).
 */

/** Where the CA file lives in the reconcile image and in the proxy's Envoy image. */
export const UPSTREAM_CA_PATH = '/etc/gateway/upstream-ca.pem';

/** Certificates in the system bundle the measurements used (Debian's ca-certificates). */
export const SYSTEM_BUNDLE_CERTIFICATES = 144;

export type UpstreamCa =
  | { readonly kind: 'file'; readonly pem: string; readonly certificates: number }
  | { readonly kind: 'system'; readonly certificates: number };

const BEGIN = '-----BEGIN CERTIFICATE-----';
const END = '-----END CERTIFICATE-----';
/** A Docker build argument carries the PEM; keep it far below any argument-size limit. */
const MAX_PEM_BYTES = 64 * 1024;

/**
 * `value` is a path to a PEM file holding only certificates, or `'system'` for the image's system
 * bundle. Errors name the setting and the reason.
 */
export function readUpstreamCa(value: string | undefined): UpstreamCa {
  if (value === undefined || value.trim() === '') {
    throw new Error(
      "upstreamCa is required: the path of a PEM file with the CA certificates your https backends chain to " +
        "(each https cluster parses it; a small file keeps the gateway's memory envelope small), " +
        "or 'system' for the system bundle",
    );
  }
  if (value === 'system') {
    return { kind: 'system', certificates: SYSTEM_BUNDLE_CERTIFICATES };
  }
  let pem: string;
  try {
    pem = fs.readFileSync(value, 'utf8');
  } catch (e) {
    throw new Error(`upstreamCa: cannot read ${value}: ${(e as Error).message}`);
  }
  if (Buffer.byteLength(pem) > MAX_PEM_BYTES) {
    throw new Error(`upstreamCa: ${value} is ${Buffer.byteLength(pem)} bytes; at most ${MAX_PEM_BYTES}`);
  }
  const blocks = pem.match(/-----BEGIN [^-]+-----/g) ?? [];
  const certificates = blocks.filter((b) => b === BEGIN).length;
  if (certificates === 0) {
    throw new Error(`upstreamCa: ${value} holds no PEM certificate`);
  }
  if (blocks.length !== certificates) {
    throw new Error(`upstreamCa: ${value} holds something other than certificates (${blocks.find((b) => b !== BEGIN)}); a private key never belongs here`);
  }
  if ((pem.match(new RegExp(END, 'g')) ?? []).length !== certificates) {
    throw new Error(`upstreamCa: ${value} has a certificate without its END line`);
  }
  return { kind: 'file', pem: pem.trim() + '\n', certificates };
}

/** The CA's share of the system bundle's per-cluster cost (1 for the system bundle). */
export function caCostShare(ca: UpstreamCa): number {
  return Math.min(1, ca.certificates / SYSTEM_BUNDLE_CERTIFICATES);
}
