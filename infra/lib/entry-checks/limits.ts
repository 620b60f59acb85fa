/**
 * `limits`: global limits counted by the rate-limit service and one optional local burst bucket
 * per route (render/src/check/limits.rs).
 */
import { MAX_BURST, MAX_HEADER_NAME_LEN, MAX_LIMITS_PER_ROUTE, MAX_REQUESTS } from './bounds';
import { atMost, get, has, list, object, positiveInt, rejectUnknown, required, requiredChecked, string } from './fields';
import { Json, JsonObject, Problems, Why, asciiLower, chars, index, oneOf, quote } from './report';

/** A checked limit; a global one keeps what keys it in the rate-limit service. */
export type Limit =
  | { readonly kind: 'burst'; readonly burst: number }
  | { readonly kind: 'global'; readonly per: string; readonly header?: string; readonly every: string };

export const LIMIT_FIELDS = ['per', 'header', 'requests', 'every', 'burst'];
export const GLOBAL_FIELDS = ['per', 'header', 'requests', 'every'];
export const PERS = ['client-ip', 'route', 'header'];
export const UNITS = ['second', 'minute', 'hour', 'day'];

export function walkLimits(v: Json, field: string, problems: Problems): Limit[] | undefined {
  const items = list(v, field, 'limits', problems);
  if (items === undefined) return undefined;
  const before = problems.length;
  atMost(items, MAX_LIMITS_PER_ROUTE, field, 'limits', ' per route', problems);
  const checked = items.map((item, i) => walkLimit(item, index(field, i), problems));
  checkCollisions(checked, field, problems);
  if (problems.length > before) return undefined;
  return checked as Limit[];
}

export function walkLimit(v: Json, field: string, problems: Problems): Limit | undefined {
  const map = object(v, field, 'a limit', problems);
  if (!map) return undefined;
  const hasBurst = has(map, 'burst');
  const hasGlobal = GLOBAL_FIELDS.some((k) => has(map, k));
  rejectUnknown(map, field, LIMIT_FIELDS, problems);
  if (hasBurst && hasGlobal) {
    problems.push(
      field,
      'mixes "burst" with a global limit\'s fields (per, header, requests, every); write them as two limits',
    );
    return undefined;
  }
  if (hasBurst) {
    const burst = positiveInt(map.burst, `${field}.burst`, MAX_BURST, problems);
    return burst === undefined ? undefined : { kind: 'burst', burst };
  }
  if (hasGlobal) return walkGlobal(map, field, problems);
  problems.push(field, 'expected {"burst": N} or {"per": ..., "requests": N, "every": ...}');
  return undefined;
}

export function walkGlobal(map: JsonObject, field: string, problems: Problems): Limit | undefined {
  const perField = `${field}.per`;
  const perValue = required(map, field, 'per', problems);
  let per = perValue === undefined ? undefined : string(perValue, perField, problems);
  if (per !== undefined && !PERS.includes(per)) {
    problems.push(perField, `unknown key kind ${quote(per)}; expected ${oneOf(PERS)}`);
    per = undefined;
  }

  const headerField = `${field}.header`;
  const headerValue = get(map, 'header');
  let header: string | undefined;
  if (headerValue === undefined && per === 'header') {
    problems.push(headerField, 'required when per is "header": name the header whose value is counted');
  } else if (headerValue !== undefined && per !== undefined && per !== 'header') {
    problems.push(headerField, `only allowed when per is "header" (per is ${quote(per)})`);
  } else if (headerValue !== undefined) {
    const h = string(headerValue, headerField, problems);
    if (h !== undefined) {
      const why = checkHeaderName(h);
      if (why !== undefined) problems.push(headerField, why);
      else header = h;
    }
  }

  const requestsValue = required(map, field, 'requests', problems);
  const requests =
    requestsValue === undefined ? undefined : positiveInt(requestsValue, `${field}.requests`, MAX_REQUESTS, problems);

  const every = requiredChecked(map, field, 'every', problems, checkUnit);

  if (per === undefined || requests === undefined || every === undefined) return undefined;
  if (per === 'header' && header === undefined) return undefined;
  return { kind: 'global', per, header, every };
}

export function checkUnit(s: string): Why {
  if (UNITS.includes(s)) return undefined;
  let reason = `unknown unit ${quote(s)}; expected ${oneOf(UNITS)}`;
  const lower = asciiLower(s);
  const near = lower.endsWith('s') ? lower.slice(0, -1) : lower;
  if (UNITS.includes(near)) reason += ` (did you mean "${near}"?)`;
  return reason;
}

export const TCHAR = /^[A-Za-z0-9!#$%&'*+\-.^_`|~]$/;

/** A lowercase RFC 9110 token that is safe and meaningful as a rate-limit key. */
export function checkHeaderName(h: string): Why {
  if (h === '') return 'must not be empty; name a request header such as "x-api-key"';
  if (h.startsWith(':')) {
    return `${quote(h)} is an HTTP/2 pseudo-header, not a request header; the route and host already tell requests apart`;
  }
  const bad = chars(h).find((c) => !TCHAR.test(c));
  if (bad !== undefined) return `character ${quote(bad)} is not allowed in a header name (RFC 9110 token characters only)`;
  if (/[A-Z]/.test(h)) return `${quote(h)} must be lowercase: write ${quote(asciiLower(h))}`;
  if (h.length > MAX_HEADER_NAME_LEN) return `is ${h.length} characters long; at most ${MAX_HEADER_NAME_LEN}`;
  const why = unusableHeader(h);
  return why === undefined ? undefined : `${quote(h)} cannot be a rate-limit key: ${why}`;
}

/** Forwarding headers a client writes itself (limits.rs `CLIENT_WRITTEN_HEADERS`). */
const CLIENT_WRITTEN_HEADERS = [
  'forwarded', 'x-forwarded', 'x-real-ip', 'x-client-ip', 'true-client-ip', 'x-original-forwarded-for',
  'cf-connecting-ip', 'x-cluster-client-ip', 'fastly-client-ip', 'x-original-host', 'x-host',
];
/** Request and trace ids, new on every request (limits.rs `PER_REQUEST_HEADERS`). */
const PER_REQUEST_HEADERS = [
  'x-request-id', 'x-client-trace-id', 'x-amzn-trace-id', 'traceparent', 'tracestate', 'b3', 'x-b3-traceid',
  'x-b3-spanid', 'x-b3-parentspanid', 'x-cloud-trace-context', 'uber-trace-id', 'x-datadog-trace-id',
  'x-datadog-parent-id', 'x-ot-span-context',
];

export function unusableHeader(h: string): string | undefined {
  if (['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authenticate'].includes(h)) {
    return 'it is a hop-by-hop header, consumed before routing, so the limit would never apply';
  }
  if (h.startsWith('x-forwarded-') || CLIENT_WRITTEN_HEADERS.includes(h)) {
    return 'a client sets it freely and escapes its bucket by changing it; use per "client-ip"';
  }
  if (PER_REQUEST_HEADERS.includes(h)) {
    return "its value is new on every request, so each request starts a bucket of its own and the limit never applies (while the rate-limit service's keys grow without bound)";
  }
  if (['authorization', 'proxy-authorization', 'cookie', 'x-amz-security-token'].includes(h)) {
    return "it carries a credential, and a limit's key is stored in the rate-limit service's counters and logs; key on a dedicated, non-secret header";
  }
  if (h.startsWith('x-envoy-')) return 'Envoy sets and strips x-envoy- headers itself';
  return undefined;
}

/** At most one burst per route, and no two global limits keyed the same way. */
export function checkCollisions(limits: (Limit | undefined)[], field: string, problems: Problems): void {
  limits.forEach((b, j) => {
    if (!b) return;
    const i = limits.slice(0, j).findIndex((a) => {
      if (!a) return false;
      if (a.kind === 'burst' || b.kind === 'burst') return a.kind === b.kind;
      return a.per === b.per && a.header === b.header && a.every === b.every;
    });
    if (i < 0) return;
    const reason =
      b.kind === 'burst'
        ? `a route has at most one burst limit (also ${index(field, i)})`
        : `same per ${quote(b.per)}${b.header !== undefined ? ` (header ${quote(b.header)})` : ''} and unit ${quote(b.every)} as ${index(field, i)}; the rate-limit service would see two rules for one key, merge them into one limit`;
    problems.push(index(field, j), reason);
  });
}
