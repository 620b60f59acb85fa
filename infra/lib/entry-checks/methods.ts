/**
 * `methods`: an optional, non-empty set of HTTP methods, kept sorted
 * (render/src/check/methods.rs).
 */
import { Json, Problems, Why, asciiUpper, compareRust, describe, index, oneOf, quote } from './report';

export const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH'];

export function walkMethods(v: Json, field: string, problems: Problems): { ok: boolean; value?: string[] } {
  if (!Array.isArray(v)) {
    problems.push(field, `expected a list of HTTP methods, got ${describe(v)}; leave methods out to match every method`);
    return { ok: false };
  }
  if (v.length === 0) {
    problems.push(field, 'must not be empty; leave methods out to match every method');
    return { ok: false };
  }
  const before = problems.length;
  const seen: [string, number][] = [];
  v.forEach((item, i) => {
    const at = index(field, i);
    if (typeof item !== 'string') {
      problems.push(at, `expected a method name (a string), got ${describe(item)}`);
      return;
    }
    const why = checkMethod(item);
    const first = seen.find(([s]) => s === item);
    if (why !== undefined) problems.push(at, why);
    else if (first) problems.push(at, `${quote(item)} is listed twice (also ${index(field, first[1])})`);
    else seen.push([item, i]);
  });
  if (problems.length > before) return { ok: false };
  return { ok: true, value: seen.map(([m]) => m).sort(compareRust) };
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
