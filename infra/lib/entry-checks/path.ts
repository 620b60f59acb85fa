/**
 * `path`: a segment-aware prefix. Anything a proxy or a backend could normalise differently (dot
 * segments, doubled or encoded slashes, backslashes) is refused (render/src/check/path.rs).
 */
import { MAX_PATH_BYTES } from './bounds';
import { Why, isControl, isWhitespace, quote, utf8Length } from './report';

export const PATH_PUNCTUATION = "-._~!$&'()*+,;=:@";

export function checkPath(path: string): Why {
  if (path === '') return 'must not be empty; a path starts with "/"';
  const bytes = utf8Length(path);
  if (bytes > MAX_PATH_BYTES) return `is ${bytes} bytes long; at most ${MAX_PATH_BYTES}`;
  if (!path.startsWith('/')) return `${quote(path)} must start with "/"`;
  const characters = checkPathCharacters(path);
  if (characters !== undefined) return characters;
  const escapes = checkPercentEscapes(path);
  if (escapes !== undefined) return escapes;
  if (path.includes('//')) return `${quote(path)} contains "//" (an empty segment); write single slashes`;
  for (const segment of path.split('/')) {
    // `..;` is how some servlet containers spell `..`: judge the segment without parameters.
    const bare = segment.split(';')[0];
    if (bare === '.' || bare === '..') {
      return `${quote(path)} contains the dot segment ${quote(segment)}; write the path without "/./" or "/../"`;
    }
  }
  return undefined;
}

export function checkPathCharacters(path: string): Why {
  for (const c of path) {
    let why: string;
    if (/^[a-zA-Z0-9/%]$/.test(c) || PATH_PUNCTUATION.includes(c)) continue;
    else if (isWhitespace(c)) why = 'whitespace is not allowed in a path';
    else if (isControl(c)) why = 'control characters are not allowed in a path';
    else if (c === '?') why = '"?" starts a query string; a route matches the path only';
    else if (c === '#') why = '"#" starts a fragment, which clients never send';
    else if (c === '\\') why = 'backslashes are not allowed (some servers read them as "/")';
    else if ((c.codePointAt(0) ?? 0) > 0x7f) why = 'non-ASCII characters are not allowed; percent-encode them (%XX)';
    else why = `character ${quote(c)} is not allowed; use letters, digits, "/", %XX or one of ${PATH_PUNCTUATION}`;
    return `${quote(path)}: ${why}`;
  }
  return undefined;
}

/** Every `%` starts a well-formed escape that hides none of `.`, `/`, `\`, `%` or a control. */
export function checkPercentEscapes(path: string): Why {
  // The characters check ran first: the path is ASCII, so string offsets are byte offsets.
  for (let at = path.indexOf('%'); at >= 0; at = path.indexOf('%', at + 3)) {
    const hex = path.slice(at + 1, at + 3);
    if (!/^[0-9a-fA-F]{2}$/.test(hex)) {
      return `${quote(path)}: "%" must be followed by two hex digits`;
    }
    const byte = parseInt(hex, 16);
    let what: string | undefined;
    if (byte === 0x2e) what = '"."';
    else if (byte === 0x2f) what = '"/"';
    else if (byte === 0x5c) what = '"\\\\"';
    else if (byte === 0x25) what = '"%" (double encoding)';
    else if (byte <= 0x1f || byte === 0x7f) what = 'a control character';
    if (what !== undefined) {
      return `${quote(path)}: %${hex} encodes ${what}; encoded dots, slashes, backslashes, percents and control characters are not allowed`;
    }
  }
  return undefined;
}
