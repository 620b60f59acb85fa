/**
 * How problems are worded: field paths, quoted values, JSON type names, and Rust's view of
 * strings and numbers (render/src/check/report.rs).
 */
import { QUOTE_MAX_CHARS } from './bounds';

/** One problem: the field path (`routes[1].limits[0].every`) and why. */
export interface Problem {
  readonly field: string;
  readonly reason: string;
}

export type Json = null | boolean | number | string | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}

/** What a check returns: nothing, or why (`Result<(), String>` on the Rust side). */
export type Why = string | undefined;

export class Problems {
  readonly list: Problem[] = [];
  push(field: string, reason: string): void {
    this.list.push({ field, reason });
  }
  get length(): number {
    return this.list.length;
  }
}

/** Unicode scalar values of a string (Rust's `chars()`). */
export function chars(s: string): string[] {
  return Array.from(s);
}

/** Rust's `char::escape_default` for a character outside printable ASCII. */
export function escapeDefault(c: string): string {
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
export function quote(s: string): string {
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
export function child(parent: string, key: string): string {
  const plain = key.length > 0 && key.length <= QUOTE_MAX_CHARS && /^[A-Za-z0-9_-]+$/.test(key);
  if (!plain) return `${parent}[${quote(key)}]`;
  return parent === '' ? key : `${parent}.${key}`;
}

export function index(parent: string, i: number): string {
  return `${parent}[${i}]`;
}

export const U64_MAX = BigInt('18446744073709551615');
export const I64_MIN = BigInt('-9223372036854775808');

/**
 * A number as the Rust checks read it from the text `JSON.stringify` writes: an integer when the
 * text is one and fits 64 bits, otherwise a double.
 */
export function readNumber(n: number): { unsigned?: bigint; text: string } {
  const text = JSON.stringify(n);
  if (/^-?\d+$/.test(text)) {
    const big = BigInt(text);
    if (big >= BigInt(0) && big <= U64_MAX) return { unsigned: big, text };
    if (big < BigInt(0) && big >= I64_MIN) return { text };
  }
  return { text: rustFloat(n) };
}

/** How serde_json prints a double: shortest digits, `.0` on integers, `e±` beyond 16 digits. */
export function rustFloat(f: number): string {
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
export function describe(v: Json): string {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return `boolean ${v}`;
  if (typeof v === 'number') return readNumber(v).text;
  if (typeof v === 'string') return 'string';
  return Array.isArray(v) ? 'array' : 'object';
}

export function oneOf(options: string[]): string {
  if (options.length <= 1) return options.join('');
  return `${options.slice(0, -1).join(', ')} or ${options[options.length - 1]}`;
}

export function asciiLower(s: string): string {
  return s.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

export function asciiUpper(s: string): string {
  return s.replace(/[a-z]/g, (c) => c.toUpperCase());
}

/** The reason for an unknown field, with a suggestion when the key is a likely typo. */
export function unknownField(key: string, known: string[]): string {
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

export function editDistance(a: string, b: string): number {
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

export function utf8Length(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** Rust's `str` order (by code point), which is how the checks meet an object's keys. */
export function compareRust(a: string, b: string): number {
  const ca = chars(a);
  const cb = chars(b);
  for (let i = 0; i < Math.min(ca.length, cb.length); i++) {
    const d = (ca[i].codePointAt(0) ?? 0) - (cb[i].codePointAt(0) ?? 0);
    if (d !== 0) return d;
  }
  return ca.length - cb.length;
}

/** Rust's `char::is_whitespace` (Unicode White_Space). */
export function isWhitespace(c: string): boolean {
  return /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]$/u.test(c);
}

/** Rust's `char::is_control` (general category Cc). */
export function isControl(c: string): boolean {
  return /^[\u0000-\u001f\u007f-\u009f]$/u.test(c);
}
