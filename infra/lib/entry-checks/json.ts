/**
 * A lone UTF-16 surrogate as the register function's strict JSON reader reports it
 * (render/src/check/json.rs).
 */
import { isObject } from './fields';
import { Json, Problem, chars, child, index, utf8Length } from './report';

/** Longest field path quoted for a syntax error (render/src/check/json.rs). */
export const MAX_PLACE_CHARS = 120;
export const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * A JavaScript string may hold a lone UTF-16 surrogate; `JSON.stringify` writes it as `\udXXX`,
 * which the register function's strict parser refuses (render/src/check/json.rs). The problem it
 * reports: the place of the first one in the text, and the path of the value holding it (for a
 * key, of the object).
 */
export function loneSurrogate(text: string): Problem | undefined {
  if (!/\\ud[89a-f]/.test(text)) return undefined;
  // The first escape in the text that is a surrogate: JSON.stringify writes pairs as they are.
  let at = -1;
  for (let i = 0; i < text.length; i++) {
    if (text[i] !== '\\') continue;
    if (text[i + 1] === 'u' && /^d[89a-f]$/.test(text.slice(i + 2, i + 4))) {
      at = i;
      break;
    }
    i++;
  }
  if (at < 0) return undefined;
  const after = utf8Length(text.slice(0, at + 6));
  let column: number;
  let message: string;
  if (parseInt(text.slice(at + 2, at + 6), 16) >= 0xdc00) {
    [column, message] = [after, 'lone leading surrogate in hex escape'];
  } else if (text[at + 6] !== '\\') {
    [column, message] = [after + 1, 'unexpected end of hex escape'];
  } else if (text[at + 7] !== 'u') {
    [column, message] = [after + 2, 'unexpected end of hex escape'];
  } else {
    [column, message] = [after + 6, 'lone leading surrogate in hex escape'];
  }
  const place = lonePlace(JSON.parse(text) as Json, '') ?? '';
  const shown = chars(place);
  const inside =
    shown.length > MAX_PLACE_CHARS ? ` (in ${shown.slice(0, MAX_PLACE_CHARS).join('')}…)` : place === '' ? '' : ` (in ${place})`;
  return { field: 'entry', reason: `invalid JSON at line 1 column ${column}${inside}: ${message}` };
}

/** The path of the first value (in text order) holding a lone surrogate, or of an object whose key does. */
export function lonePlace(v: Json, path: string): string | undefined {
  if (typeof v === 'string') return LONE.test(v) ? path : undefined;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const found = lonePlace(v[i], index(path, i));
      if (found !== undefined) return found;
    }
  } else if (isObject(v)) {
    for (const key of Object.keys(v)) {
      if (LONE.test(key)) return path;
      const found = lonePlace(v[key], child(path, key));
      if (found !== undefined) return found;
    }
  }
  return undefined;
}
