/**
 * `host`: the labels a team puts in front of the gateway's base domain (render/src/check/host.rs).
 */
import { MAX_FQDN_LEN, MAX_HOST_LABELS } from './bounds';
import { checkDnsName } from './identifiers';
import { Why, quote, utf8Length } from './report';

export function trimTrailingDots(s: string): string {
  return s.replace(/\.+$/, '');
}

/** `host`: the labels in front of the gateway's base domain. */
export function checkHost(host: string, baseDomain: string): Why {
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
