/**
 * Typed values out of JSON, each wrong type or missing field a problem at its own path
 * (render/src/check/fields.rs).
 */
import { Json, JsonObject, Problems, child, compareRust, describe, readNumber, unknownField } from './report';

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
