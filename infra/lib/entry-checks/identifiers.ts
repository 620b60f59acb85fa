/**
 * `team`, `service` and DNS labels (render/src/check/identifiers.rs).
 */
import { MAX_LABEL_LEN } from './bounds';
import { Why, asciiLower, chars, quote } from './report';

/** `team` and `service`: 1–63 of `a-z0-9-`, starting with a letter, not ending with `-`. */
export function checkIdentifier(s: string): Why {
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
export function checkDnsLabel(label: string): Why {
  if (label === '') return 'has an empty label (a leading, trailing or doubled ".")';
  if (label.includes('*')) {
    return `label ${quote(label)} is a wildcard; wildcards are not allowed, the gateway alone owns the catch-all virtual host`;
  }
  if (chars(label).some((c) => !/^[a-z0-9-]$/.test(c))) return `label ${quote(label)} must be lowercase a-z, 0-9 or "-"`;
  if (label.length > MAX_LABEL_LEN) return `label ${quote(label)} is ${label.length} characters long; at most ${MAX_LABEL_LEN}`;
  if (label.startsWith('-') || label.endsWith('-')) return `label ${quote(label)} must not start or end with "-"`;
  return undefined;
}

export function checkDnsName(name: string): Why {
  if (name === '') return 'must not be empty';
  if (name.endsWith('.')) return `${quote(name)} must not end with "."`;
  for (const label of name.split('.')) {
    const why = checkDnsLabel(label);
    if (why !== undefined) return why;
  }
  return undefined;
}
