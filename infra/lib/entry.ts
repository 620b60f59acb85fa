/**
 * The registration entry, shaped as docs/design.md#registration-entry says: the same document the
 * CLI sends. The register function receives it verbatim as JSON.
 */

export type Per = 'client-ip' | 'route' | 'header';
export type Unit = 'second' | 'minute' | 'hour' | 'day';

/** A global limit, counted by the rate-limit service across every proxy task. */
export interface GlobalLimit {
  readonly per: Per;
  /** Set exactly when `per` is `header`: the lowercase header whose value is counted. */
  readonly header?: string;
  readonly requests: number;
  readonly every: Unit;
}

/** A local token bucket in each Envoy task: N tokens, refilled N per second. */
export interface BurstLimit {
  readonly burst: number;
}

export type Limit = GlobalLimit | BurstLimit;

export interface Route {
  /** Segment-aware path prefix starting with `/` (`/invoices` matches `/invoices/7`, not `/invoicesX`). */
  readonly path: string;
  /** HTTP methods this route answers; omitted means every method. */
  readonly methods?: string[];
  readonly limits?: Limit[];
}

export interface Entry {
  /** Owns the hostname. */
  readonly team: string;
  /** Owns its path prefixes. The entry key is `team/service`. */
  readonly service: string;
  /** DNS labels in front of the gateway's base domain (`invoices` → `invoices.api.example.com`). */
  readonly host: string;
  /** `http://` or `https://` URL with host and optional port; https means TLS with SNI to that host. */
  readonly backend: string;
  /** Upstream protocol: `http1` (default), `http2` (h2 over TLS, h2c over http) or `grpc`. */
  readonly protocol?: Protocol;
  /** A second backend taking `weight` percent of the traffic and a header cohort. */
  readonly canary?: Canary;
  /** Active HTTP health checking of the backend(s). */
  readonly health_check?: HealthCheck;
  readonly routes: Route[];
}

export type Protocol = 'http1' | 'http2' | 'grpc';

export interface Canary {
  /** Same rules as `backend`. */
  readonly backend: string;
  /** 0–100 percent of the service's traffic; 100 is a cutover. */
  readonly weight: number;
  /** Requests whose header `name` equals `value` go to the canary. Any client can send it. */
  readonly header?: { readonly name: string; readonly value: string };
}

export interface HealthCheck {
  /** Path the backend answers 200 on. */
  readonly path: string;
  /** `ms`, `s` or `m`; from the operators' minimum (default 5s) to 5m. */
  readonly interval: string;
}

/** `team/service`: the entry's key in the registry and the custom resource's physical id. */
export function entryKey(entry: Pick<Entry, 'team' | 'service'>): string {
  return `${entry.team}/${entry.service}`;
}
