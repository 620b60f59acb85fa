/**
 * Synth-time validation of a registration entry against the entry's JSON Schema,
 * `schema/entry.schema.json`, which the Rust entry types generate (render/src/schema.rs). The
 * schema holds what one entry shows on its own: the shape (types, required fields, enums, no
 * unknown fields) and the fixed bounds (lengths, counts, ranges, character sets). Everything
 * else is the register function's to decide at deploy: what needs the gateway's settings (route
 * timeout, retry attempts, health-check interval, base domain, backend restrictions), the rules
 * across values (addresses, public suffixes, duplicate routes, durations) and the registry
 * (grants, owners, conflicts); it fails the deploy naming the field.
 */
import Ajv2020, { ErrorObject, ValidateFunction } from 'ajv/dist/2020';
import schema from '../../schema/entry.schema.json';

/** One problem: the field path as the register function spells it (`routes[1].limits[0].every`) and why. */
export interface Problem {
  readonly field: string;
  readonly reason: string;
}

/** Thrown at synth with every problem, one per line, each naming its field. */
export class EntryRejected extends Error {
  constructor(readonly problems: Problem[]) {
    super(`gateway entry rejected:\n${problems.map((p) => `  ${p.field}: ${p.reason}`).join('\n')}`);
    this.name = 'EntryRejected';
  }
}

/** The schema as committed, for tests and tools. */
export const ENTRY_SCHEMA = schema;

// verbose: each error carries its schema and data, which the reasons quote.
const ajv = new Ajv2020({ allErrors: true, strict: true, verbose: true });
const validate = ajv.compile(schema);

/** One alternative of an `anyOf`/`oneOf` on its own, its `$ref`s resolved in the schema's `$defs`. */
const alternatives = new WeakMap<object, ValidateFunction>();
function alternative(option: Schema): ValidateFunction {
  let v = alternatives.get(option);
  if (v === undefined) {
    v = ajv.compile({ ...option, $defs: schema.$defs });
    alternatives.set(option, v);
  }
  return v;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Schema = { [key: string]: unknown };

/**
 * Every problem the schema finds in `value`, in document order; empty when it passes. `value`
 * is judged as the text the construct sends, `JSON.stringify(value)`.
 */
export function entryProblems(value: unknown): Problem[] {
  const text = JSON.stringify(value) as string | undefined;
  if (text === undefined) {
    return [{ field: 'entry', reason: 'empty document; expected a JSON object' }];
  }
  const entry = JSON.parse(text) as Json;
  if (validate(entry)) {
    return [];
  }
  // One problem per field, the most basic first: a string that is not one is not also too
  // long, and an empty one does not also have a character outside the set.
  const found = explain(validate.errors ?? [], entry).sort((a, b) => a.rank - b.rank);
  const seen = new Set<string>();
  return found
    .filter(({ problem }) => !seen.has(problem.field) && seen.add(problem.field) !== undefined)
    .sort((a, b) => compareOrder(a.order, b.order))
    .map(({ problem }) => problem);
}

/** Which of a field's problems it reports: the first of these its value has. */
const RANK = ['type', 'required', 'additionalProperties', 'anyOf', 'enum', 'minLength', 'maxLength', 'pattern', 'minimum', 'maximum', 'minItems', 'maxItems', 'maxProperties', 'uniqueItems'];

interface Located {
  readonly problem: Problem;
  /** Where the field stands in the document: each step's position among its siblings. */
  readonly order: number[];
  /** The problem's keyword's place in `RANK`. */
  readonly rank: number;
}

/**
 * Ajv's errors as problems. Of each `anyOf`/`oneOf` (the schema's alternatives stand alone,
 * with no keyword beside them), only the alternative the value meant is explained: the one
 * whose fields it has, with the fewest problems. `base` is where `errors` were found.
 */
function explain(errors: ErrorObject[], entry: Json, base = ''): Located[] {
  const out: Located[] = [];
  const handled: string[] = [];
  const alternatives = errors
    .filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf')
    .sort((a, b) => a.instancePath.split('/').length - b.instancePath.split('/').length);
  for (const alt of alternatives) {
    const path = base + alt.instancePath;
    if (handled.some((h) => within(path, h))) continue;
    handled.push(path);
    const options = alt.schema as Schema[];
    if (options.every((o) => 'const' in o)) {
      out.push(at(entry, path, undefined, unknownValue(alt.data as Json, options.map((o) => String(o.const))), 'enum'));
      continue;
    }
    const meant = meantAlternative(options, alt.data as Json);
    if (meant === undefined) {
      out.push(at(entry, path, undefined, `expected ${options.map(shapeOf).join(' or ')}`, 'anyOf'));
    } else {
      const v = alternative(meant);
      out.push(...explain(v(alt.data) ? [] : (v.errors ?? []), entry, path));
    }
  }
  for (const e of errors) {
    const path = base + e.instancePath;
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === 'propertyNames') continue;
    if (handled.some((h) => within(path, h))) continue;
    out.push(problemOf(e, entry, path));
  }
  return out;
}

/**
 * The alternative an object value means: the one sharing the most fields with it, when only
 * one does (`{"per": …, "every": …}` is a global limit missing `requests`; `{}` or
 * `{"burst": …, "per": …}` is neither). A value that is not an object meets the first, whose
 * type it is not.
 */
function meantAlternative(options: Schema[], data: Json): Schema | undefined {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return options[0];
  const shared = options.map((o) => Object.keys(data).filter((k) => k in ((o.properties as Schema | undefined) ?? {})).length);
  const most = Math.max(...shared);
  const with_most = options.filter((_, i) => shared[i] === most);
  return most > 0 && with_most.length === 1 ? with_most[0] : undefined;
}

function within(path: string, parent: string): boolean {
  return path === parent || path.startsWith(`${parent}/`);
}

/** `{burst}`, `{per, header?, requests, every}`: an object alternative's fields. */
function shapeOf(option: Schema): string {
  const required = new Set((option.required as string[] | undefined) ?? []);
  const fields = Object.keys((option.properties as Schema | undefined) ?? {});
  return `{${fields.map((f) => (required.has(f) ? f : `${f}?`)).join(', ')}}`;
}

function problemOf(e: ErrorObject, entry: Json, path: string): Located {
  const params = e.params as Record<string, unknown>;
  const data = e.data as Json;
  // An error about a property name (propertyNames) is the name's own.
  if (e.propertyName !== undefined) {
    return at(entry, path, e.propertyName, reasonOf(e, e.propertyName), e.keyword);
  }
  switch (e.keyword) {
    case 'required':
      return at(entry, path, String(params.missingProperty), 'required field is missing', e.keyword);
    case 'additionalProperties': {
      const known = Object.keys(((e.parentSchema as Schema).properties as Schema | undefined) ?? {});
      return at(entry, path, String(params.additionalProperty), `unknown field; expected ${oneOf(known)}`, e.keyword);
    }
    case 'uniqueItems': {
      const [first, again] = [Number(params.i), Number(params.j)].sort((a, b) => a - b);
      const item = Array.isArray(data) ? data[again] : undefined;
      const shown = typeof item === 'string' ? quote(item) : JSON.stringify(item);
      return at(entry, `${path}/${again}`, undefined, `${shown} is listed twice (also ${fieldOf(entry, path)}[${first}])`, e.keyword);
    }
    default:
      return at(entry, path, undefined, reasonOf(e, data), e.keyword);
  }
}

function reasonOf(e: ErrorObject, data: Json): string {
  const params = e.params as Record<string, unknown>;
  const limit = Number(params.limit);
  switch (e.keyword) {
    case 'type':
      return `expected ${typeName(String(params.type))}, got ${describe(data)}`;
    case 'enum':
      return unknownValue(data, (e.schema as unknown[]).map(String));
    case 'minLength':
      return limit === 1 ? 'must not be empty' : `is ${length(data)} characters long; at least ${limit}`;
    case 'maxLength':
      return `is ${length(data)} characters long; at most ${limit}`;
    case 'pattern':
      return patternReason(String(data), String(params.pattern));
    case 'minItems':
      return limit === 1 ? 'must not be empty' : `has ${count(data)} items; at least ${limit}`;
    case 'maxItems':
      return `has ${count(data)} items; at most ${limit}`;
    case 'maxProperties':
      return `has ${count(data)} fields; at most ${limit}`;
    case 'minimum':
      return `is ${describe(data)}; at least ${limit}`;
    case 'maximum':
      return `is ${describe(data)}; at most ${limit}`;
    default:
      return e.message ?? `does not match the entry schema (${e.keyword})`;
  }
}

/** A charset pattern (`^[a-z0-9-]+$`): the first character outside it. */
function patternReason(value: string, pattern: string): string {
  const charset = /^\^\[(.*)\]\+\$$/u.exec(pattern)?.[1];
  if (charset !== undefined) {
    const allowed = new RegExp(`^[${charset}]$`, 'u');
    const bad = Array.from(value).find((c) => !allowed.test(c));
    if (bad !== undefined) {
      return `${quote(value)}: character ${quote(bad)} is not allowed; expected only [${charset.replace(/\t/g, '\\t')}]`;
    }
  }
  return `${quote(value)} does not match ${pattern}`;
}

function unknownValue(data: Json, values: string[]): string {
  const shown = typeof data === 'string' ? quote(data) : describe(data);
  return `unknown value ${shown}; expected ${oneOf(values)}`;
}

function typeName(type: string): string {
  switch (type) {
    case 'object':
      return 'a JSON object';
    case 'array':
      return 'a list';
    case 'boolean':
      return 'true or false';
    case 'integer':
      return 'an integer';
    default:
      return `a ${type}`;
  }
}

function length(data: Json): number {
  return typeof data === 'string' ? Array.from(data).length : 0;
}

function count(data: Json): number {
  if (Array.isArray(data)) return data.length;
  return data !== null && typeof data === 'object' ? Object.keys(data).length : 0;
}

/** A problem at the JSON pointer `pointer` (and its key `key`), with its place in the document. */
function at(entry: Json, pointer: string, key: string | undefined, reason: string, keyword: string): Located {
  const steps = pointer === '' ? [] : pointer.slice(1).split('/').map(unescapePointer);
  let node: Json | undefined = entry;
  let field = '';
  const order: number[] = [];
  for (const step of [...steps, ...(key !== undefined ? [key] : [])]) {
    if (Array.isArray(node)) {
      field = `${field}[${step}]`;
      order.push(Number(step));
      node = node[Number(step)];
    } else {
      field = child(field, step);
      const keys = node !== null && typeof node === 'object' ? Object.keys(node) : [];
      // A missing field sorts after the fields the entry has.
      order.push(keys.includes(step) ? keys.indexOf(step) : keys.length);
      node = node !== null && typeof node === 'object' ? node[step] : undefined;
    }
  }
  const rank = RANK.includes(keyword) ? RANK.indexOf(keyword) : RANK.length;
  return { problem: { field: field === '' ? 'entry' : field, reason }, order, rank };
}

function fieldOf(entry: Json, pointer: string): string {
  return at(entry, pointer, undefined, '', '').problem.field;
}

function unescapePointer(step: string): string {
  return step.replace(/~1/g, '/').replace(/~0/g, '~');
}

function compareOrder(a: number[], b: number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return a[i] - b[i];
  }
  return a.length - b.length;
}

const QUOTE_MAX_CHARS = 64;

/** A value from the entry as a message shows it: quoted, escaped as Rust escapes, long values cut. */
export function quote(s: string): string {
  let out = '"';
  let n = 0;
  for (const c of s) {
    if (n === QUOTE_MAX_CHARS) return `${out}"…`;
    n += 1;
    if (c === '"') out += '\\"';
    else if (c === '\\') out += '\\\\';
    else if (c >= ' ' && c <= '~') out += c;
    else if (c === '\t') out += '\\t';
    else if (c === '\r') out += '\\r';
    else if (c === '\n') out += '\\n';
    else out += `\\u{${(c.codePointAt(0) ?? 0).toString(16)}}`;
  }
  return `${out}"`;
}

/** `parent.key`, or `parent["key"]` when the key is not a plain word (render/src/check/report.rs). */
function child(parent: string, key: string): string {
  const plain = key.length > 0 && key.length <= QUOTE_MAX_CHARS && /^[A-Za-z0-9_-]+$/.test(key);
  if (!plain) return `${parent}[${quote(key)}]`;
  return parent === '' ? key : `${parent}.${key}`;
}

/** The JSON type of a value, for "expected X, got Y"; numbers and booleans show themselves. */
function describe(v: Json): string {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return `boolean ${v}`;
  if (typeof v === 'number') return JSON.stringify(v);
  if (typeof v === 'string') return 'string';
  return Array.isArray(v) ? 'array' : 'object';
}

function oneOf(options: string[]): string {
  if (options.length <= 1) return options.join('');
  return `${options.slice(0, -1).join(', ')} or ${options[options.length - 1]}`;
}
