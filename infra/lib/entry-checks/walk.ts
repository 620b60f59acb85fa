/**
 * The walk over an entry document: every field checked at its path, in the order the Rust checks
 * meet them (render/src/check/walk.rs).
 */
import { checkBackend } from './backend';
import { MAX_PATH_PREFIXES, MAX_ROUTES, Policy } from './bounds';
import { atMost, get, isObject, nonEmptyList, object, rejectUnknown, required, requiredChecked } from './fields';
import { walkEntryPolicy } from './entry-policy';
import { checkHost } from './host';
import { checkIdentifier } from './identifiers';
import { Limit, walkLimits } from './limits';
import { sharedMethods, walkMethods } from './methods';
import { checkPath } from './path';
import { Json, JsonObject, Problems, Why, child, describe, index, quote } from './report';
import { ROUTE_POLICY_FIELDS, RoutePolicy, checkSharedCors, grpcRetryConditionsAllowed, walkRoutePolicy } from './route-policy';

export const ENTRY_FIELDS = ['team', 'service', 'host', 'backend', 'protocol', 'canary', 'health_check', 'routes'];
export const ROUTE_FIELDS = ['path', 'methods', 'limits', ...ROUTE_POLICY_FIELDS];

export interface Route {
  readonly path: string;
  /** Sorted; undefined is every method. */
  readonly methods: string[] | undefined;
  readonly limits: Limit[];
  readonly policy: RoutePolicy;
}

export function walkEntry(v: Json, policy: Policy, problems: Problems): void {
  if (!isObject(v)) {
    problems.push('entry', `expected a JSON object, got ${describe(v)}`);
    return;
  }
  rejectUnknown(v, '', ENTRY_FIELDS, problems);
  checkedString(v, 'team', checkIdentifier, problems);
  checkedString(v, 'service', checkIdentifier, problems);
  checkedString(v, 'host', (h) => checkHost(h, policy.baseDomain), problems);
  checkedString(v, 'backend', (b) => checkBackend(b, policy), problems);
  walkEntryPolicy(v, policy, problems);
  const routesValue = required(v, '', 'routes', problems);
  if (routesValue !== undefined) walkRoutes(routesValue, 'routes', policy, grpcRetryConditionsAllowed(v), problems);
}

export function checkedString(map: JsonObject, key: string, rule: (s: string) => Why, problems: Problems): void {
  requiredChecked(map, '', key, problems, rule);
}

export function walkRoutes(v: Json, field: string, policy: Policy, grpc: boolean, problems: Problems): void {
  const items = nonEmptyList(v, field, 'routes', 'must list at least one route', problems);
  if (items === undefined) return;
  atMost(items, MAX_ROUTES, field, 'routes', ' per entry', problems);
  const checked = items.map((item, i) => walkRoute(item, index(field, i), policy, grpc, problems));
  checkDuplicates(checked, field, problems);
  checkSharedCors(checked, field, problems);
  const prefixes = new Set(checked.flatMap((r) => (r ? [r.path] : [])));
  if (prefixes.size > MAX_PATH_PREFIXES) {
    problems.push(
      field,
      `claims ${prefixes.size} distinct path prefixes; at most ${MAX_PATH_PREFIXES} (each is a guard row in the one registration transaction)`,
    );
  }
}

export function walkRoute(v: Json, field: string, policy: Policy, grpc: boolean, problems: Problems): Route | undefined {
  const map = object(v, field, 'a route', problems);
  if (!map) return undefined;
  rejectUnknown(map, field, ROUTE_FIELDS, problems);
  const path = requiredChecked(map, field, 'path', problems, checkPath);
  const methodsValue = get(map, 'methods');
  const methods = methodsValue === undefined ? { ok: true, value: undefined } : walkMethods(methodsValue, child(field, 'methods'), problems);
  const limitsValue = get(map, 'limits');
  const limits = limitsValue === undefined ? [] : walkLimits(limitsValue, child(field, 'limits'), problems);
  const routePolicy = walkRoutePolicy(map, field, policy, grpc, path, methods, problems);
  if (path === undefined || !methods.ok || limits === undefined || !routePolicy.timeoutOk || !routePolicy.policy) return undefined;
  return { path, methods: methods.value, limits, policy: routePolicy.policy };
}

/** Two routes with one path and a method in common: only the first would ever apply. */
export function checkDuplicates(routes: (Route | undefined)[], field: string, problems: Problems): void {
  routes.forEach((b, j) => {
    if (!b) return;
    for (let i = 0; i < j; i++) {
      const a = routes[i];
      if (!a || a.path !== b.path) continue;
      const shared = sharedMethods(a.methods, b.methods);
      if (shared.length === 0) continue;
      problems.push(
        index(field, j),
        `same path ${quote(b.path)} as ${index(field, i)} with overlapping methods (${shared.join(', ')}); give each path and method one route`,
      );
      break;
    }
  });
}
