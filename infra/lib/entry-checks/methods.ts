/**
 * `methods`: an optional, non-empty set of HTTP methods, kept sorted
 * (render/src/check/methods.rs).
 */
import { distinctStrings, nonEmptyList } from './fields';
import { Json, Problems, Why, asciiUpper, describe, oneOf, quote } from './report';

export const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH'];

export function walkMethods(v: Json, field: string, problems: Problems): { ok: boolean; value?: string[] } {
  if (!Array.isArray(v)) {
    problems.push(field, `expected a list of HTTP methods, got ${describe(v)}; leave methods out to match every method`);
    return { ok: false };
  }
  const items = nonEmptyList(v, field, 'HTTP methods', 'must not be empty; leave methods out to match every method', problems);
  if (items === undefined) return { ok: false };
  const before = problems.length;
  const sorted = distinctStrings(items, field, 'a method name (a string)', problems, checkMethod);
  return problems.length > before ? { ok: false } : { ok: true, value: sorted };
}

export function checkMethod(m: string): Why {
  if (METHODS.includes(m)) return undefined;
  const upper = asciiUpper(m);
  if (METHODS.includes(upper)) return `${quote(m)} must be uppercase: write ${quote(upper)}`;
  return `unknown method ${quote(m)}; expected ${oneOf(METHODS)}`;
}

/** The methods two routes on one path would both answer (undefined is every method). */
export function sharedMethods(a: string[] | undefined, b: string[] | undefined): string[] {
  const all = METHODS;
  return (a ?? all).filter((m) => (b ?? all).includes(m));
}
