/**
 * Typed values out of JSON, each wrong type or missing field a problem at its own path
 * (render/src/check/fields.rs).
 */
import { Json, JsonObject, Problems, Why, child, compareRust, describe, index, quote, readNumber, unknownField } from './report';

export function isObject(v: Json | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function has(map: JsonObject, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(map, key);
}

export function get(map: JsonObject, key: string): Json | undefined {
  return has(map, key) ? map[key] : undefined;
}

export function object(v: Json, field: string, what: string, problems: Problems): JsonObject | undefined {
  if (isObject(v)) return v;
  problems.push(field, `expected ${what} (a JSON object), got ${describe(v)}`);
  return undefined;
}

export function rejectUnknown(map: JsonObject, field: string, known: string[], problems: Problems): void {
  for (const key of Object.keys(map).sort(compareRust)) {
    if (!known.includes(key)) problems.push(child(field, key), unknownField(key, known));
  }
}

export function required(map: JsonObject, field: string, key: string, problems: Problems): Json | undefined {
  const v = get(map, key);
  if (v === undefined) problems.push(child(field, key), 'required field is missing');
  return v;
}

export function string(v: Json, field: string, problems: Problems): string | undefined {
  if (typeof v === 'string') return v;
  problems.push(field, `expected a string, got ${describe(v)}`);
  return undefined;
}

/**
 * A required string field that must pass `rule` (`required_checked`): the string, or undefined
 * after a problem at the field's own path.
 */
export function requiredChecked(
  map: JsonObject,
  field: string,
  key: string,
  problems: Problems,
  rule: (s: string) => Why,
): string | undefined {
  const at = child(field, key);
  const v = required(map, field, key, problems);
  const s = v === undefined ? undefined : string(v, at, problems);
  if (s === undefined) return undefined;
  const why = rule(s);
  if (why === undefined) return s;
  problems.push(at, why);
  return undefined;
}

/** `v` as a list, or the problem `expected a list of {what}, got …` (`list`). */
export function list(v: Json, field: string, what: string, problems: Problems): Json[] | undefined {
  if (Array.isArray(v)) return v;
  problems.push(field, `expected a list of ${what}, got ${describe(v)}`);
  return undefined;
}

/** `v` as a list of at least one item: else the problem `list` pushes, or `whenEmpty` (`non_empty_list`). */
export function nonEmptyList(v: Json, field: string, what: string, whenEmpty: string, problems: Problems): Json[] | undefined {
  const items = list(v, field, what, problems);
  if (items === undefined) return undefined;
  if (items.length > 0) return items;
  problems.push(field, whenEmpty);
  return undefined;
}

/** The problem `has N {what}; at most {max}{scope}` when a list is longer than `max` (`at_most`). */
export function atMost(items: Json[], max: number, field: string, what: string, scope: string, problems: Problems): void {
  if (items.length > max) problems.push(field, `has ${items.length} ${what}; at most ${max}${scope}`);
}

/**
 * The distinct strings of `items` that pass `check`, sorted (`distinct_strings`): an item that is
 * not a string, that `check` refuses or that repeats an earlier one is a problem at its index.
 */
export function distinctStrings(items: Json[], field: string, item: string, problems: Problems, check: (s: string) => Why): string[] {
  const seen: [string, number][] = [];
  items.forEach((value, i) => {
    const at = index(field, i);
    if (typeof value !== 'string') {
      problems.push(at, `expected ${item}, got ${describe(value)}`);
      return;
    }
    const why = check(value);
    const first = seen.find(([x]) => x === value);
    if (why !== undefined) problems.push(at, why);
    else if (first) problems.push(at, `${quote(value)} is listed twice (also ${index(field, first[1])})`);
    else seen.push([value, i]);
  });
  return seen.map(([s]) => s).sort(compareRust);
}

/** A JSON integer in `1..=max`. */
export function positiveInt(v: Json, field: string, max: number, problems: Problems): number | undefined {
  let reason: string;
  if (typeof v === 'number') {
    const n = readNumber(v);
    if (n.unsigned === undefined) reason = `expected a positive integer, got ${n.text}`;
    else if (n.unsigned === BigInt(0)) reason = 'must be at least 1';
    else if (n.unsigned > BigInt(max)) reason = `is ${n.text}; at most ${max}`;
    else return Number(n.unsigned);
  } else {
    reason = `expected a positive integer, got ${describe(v)}`;
  }
  problems.push(field, reason);
  return undefined;
}
