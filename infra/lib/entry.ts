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
  readonly routes: Route[];
}

/** `team/service`: the entry's key in the registry and the custom resource's physical id. */
export function entryKey(entry: Pick<Entry, 'team' | 'service'>): string {
  return `${entry.team}/${entry.service}`;
}
