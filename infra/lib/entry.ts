/**
 * The registration entry, shaped as docs/design.md#registration-entry says: the same document the
 * CLI sends. The register function receives it verbatim as JSON. These interfaces are held to
 * the entry's JSON Schema (schema/entry.schema.json, generated from the Rust entry types) by
 * test/entry-types.test.ts: the same fields, the same optional ones, the same enum values.
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

/** Retries of a failed try (docs/design.md#route-policy). */
export interface Retries {
  /** Retries after the first try, 1 to the gateway's maximum (default 3). */
  readonly attempts: number;
  /** `connect-failure`, `refused-stream`, `reset`, `5xx`, `gateway-error`, `retriable-status-codes`, or a gRPC status. */
  readonly on: string[];
  /** With `retriable-status-codes`: the statuses retried (400–599). */
  readonly status_codes?: number[];
  /** Time for one try (`"2s"`), below the route's timeout. */
  readonly per_try_timeout?: string;
}

/** Headers set (overwriting), appended to and removed: at most 16 set or appended, 16 removed. */
export interface HeaderChanges {
  /** Set, replacing any value (its meaning before `set` existed). */
  readonly add?: Record<string, string>;
  /** Set, replacing any value. */
  readonly set?: Record<string, string>;
  /** Added beside any value already there (Gateway API's `add`). */
  readonly append?: Record<string, string>;
  readonly remove?: string[];
}

/** A route's CORS policy, answered by the gateway's CORS filter. */
export interface Cors {
  /** Exact (`https://app.example.com`), a suffix pattern (`https://*.example.com`), or `*`. */
  readonly origins: string[];
  readonly methods?: string[];
  readonly headers?: string[];
  /** Response headers the page's script may read (`access-control-expose-headers`). */
  readonly expose_headers?: string[];
  /** How long a browser may cache the preflight (`"10m"`, at most a day). */
  readonly max_age?: string;
  readonly credentials?: boolean;
}

export interface Route {
  /** Segment-aware path prefix starting with `/` (`/invoices` matches `/invoices/7`, not
   * `/invoicesX`). A route has `path` or `exact`. */
  readonly path?: string;
  /** One exact path, in place of `path`. */
  readonly exact?: string;
  /** Request headers that must match too (at most 8): a value, or present or absent. */
  readonly headers?: HeaderMatch[];
  /** Query parameters that must match too (at most 8): a value, or present. */
  readonly query?: QueryMatch[];
  /** HTTP methods this route answers; omitted means every method. */
  readonly methods?: string[];
  readonly limits?: Limit[];
  /** The whole request (`"5s"`); default 15 s, at most the gateway's maximum (default 60 s). */
  readonly timeout?: string;
  readonly retries?: Retries;
  /** A path replaces the matched prefix by segments (`/v2/invoices`; `/` strips it), as does
   * `{ prefix }`; `{ path }` replaces the whole path. */
  readonly rewrite?: string | RewriteTo;
  readonly request_headers?: HeaderChanges;
  readonly response_headers?: HeaderChanges;
  readonly cors?: Cors;
  /** Allows the websocket upgrade on this (GET) route. */
  readonly websocket?: boolean;
  /** The Host the backend is sent instead of its own name (TLS SNI stays the backend's). */
  readonly host_rewrite?: string;
  /** Answers with a redirect instead of proxying (then no timeout, retries, rewrite, header
   * changes, cors, websocket or global limit). */
  readonly redirect?: Redirect;
  /** Copies `percent` of the route's requests to `backend` (judged and claimed like the entry's
   * backend); its answers are ignored. */
  readonly mirror?: Mirror;
  /** Client addresses (past the trusted hops) the route admits (`allow`) or refuses (`deny`);
   * others get 403. */
  readonly clients?: Clients;
  /** A valid token of one of the entry's `jwt` providers is required (401 without one). */
  readonly auth?: RouteAuth;
}

/** What a route requires: `jwt`, the name of one of the entry's `jwt` providers. */
export interface RouteAuth {
  readonly jwt: string;
}

/** A token issuer: its `iss`, accepted audiences, public keys inline (`jwks`) or fetched from
 * `jwks_uri` (only for an issuer the operators allow), claims copied to request headers. */
export interface JwtProvider {
  readonly issuer: string;
  readonly audiences?: string[];
  readonly jwks?: Jwks;
  readonly jwks_uri?: string;
  /** Claim name → header name; a client's own copy of the header never reaches the backend. */
  readonly claims_to_headers?: Record<string, string>;
  /** Sends the verified token on to the backend (removed by default). */
  readonly forward?: boolean;
}

/** Public keys only: RSA (`n`, `e`) or EC P-256 (`crv`, `x`, `y`). */
export interface Jwks {
  readonly keys: Jwk[];
}

export interface Jwk {
  readonly kty: 'RSA' | 'EC';
  readonly kid?: string;
  readonly alg?: string;
  readonly use?: 'sig';
  readonly n?: string;
  readonly e?: string;
  readonly crv?: 'P-256';
  readonly x?: string;
  readonly y?: string;
  /** `['verify']` when given. */
  readonly key_ops?: string[];
  /** The key's certificate chain (standard base64 DER), at most 4. */
  readonly x5c?: string[];
  readonly x5t?: string;
  readonly 'x5t#S256'?: string;
}

/** CIDR blocks in canonical form, at most 16 per list. */
export interface Clients {
  readonly allow?: string[];
  readonly deny?: string[];
}

/** A route's request mirror. */
export interface Mirror {
  readonly backend: string;
  /** 0–100. */
  readonly percent: number;
}

/** A request header condition: `value` exactly, or `present` (true: sent; false: not sent). */
export interface HeaderMatch {
  readonly name: string;
  readonly value?: string;
  readonly present?: boolean;
}

/** A query parameter condition: `value` exactly (as sent), or `present: true`. */
export interface QueryMatch {
  readonly name: string;
  readonly value?: string;
  readonly present?: true;
}

/** The object form of a rewrite: one of `path` (the whole path) or `prefix` (the matched one). */
export interface RewriteTo {
  readonly path?: string;
  readonly prefix?: string;
}

/** Where a redirect sends the client; each part left out stays the request's own. */
export interface Redirect {
  readonly scheme?: 'http' | 'https';
  readonly host?: string;
  readonly port?: number;
  /** Replaces the whole path (the query string is kept). */
  readonly path?: string;
  /** Replaces the matched prefix, as `rewrite` does. */
  readonly prefix?: string;
  /** 301, 302 (default), 303, 307 or 308. */
  readonly status?: 301 | 302 | 303 | 307 | 308;
}

/** One of an entry's `backends`: `weight` (0–100) parts of the traffic go to `url`. */
export interface WeightedBackend {
  readonly url: string;
  readonly weight: number;
}

export interface Entry {
  /** Owns the hostname. */
  readonly team: string;
  /** Owns its path prefixes. The entry key is `team/service`. */
  readonly service: string;
  /** DNS labels in front of the gateway's base domain (`invoices` → `invoices.api.example.com`). */
  readonly host: string;
  /** `http://` or `https://` URL with host and optional port; https means TLS with SNI to that host. */
  readonly backend?: string;
  /** 2–8 backends sharing the traffic by weight, in place of `backend`. */
  readonly backends?: WeightedBackend[];
  /** Upstream protocol: `http1` (default), `http2` (h2 over TLS, h2c over http) or `grpc`. */
  readonly protocol?: Protocol;
  /** A second backend taking `weight` percent of the traffic and a header cohort. */
  readonly canary?: Canary;
  /** Active HTTP health checking of the backend(s). */
  readonly health_check?: HealthCheck;
  /** The backend sees the client's Host instead of its own name (TLS SNI stays the backend's). */
  readonly preserve_host?: boolean;
  /** Token issuers the entry's routes may require (`auth.jwt`), by name. */
  readonly jwt?: Record<string, JwtProvider>;
  readonly routes: Route[];
  /** Serve this revision to part of the traffic first: a fixed `percent`, or `steps` judged by the gateway. */
  readonly rollout?: Rollout;
}

/** A rollout: `percent` (0–100, fixed) or `steps` (increasing, ending at 100) with `interval`. */
export interface Rollout {
  /** 0–100: the share of the entry's requests this revision serves; 100 promotes it. */
  readonly percent?: number;
  /** Increasing shares (1–100) ending at 100, each held for `interval` and judged. */
  readonly steps?: number[];
  /** How long each step lasts: `ms`, `s` or `m`, at least the operators' minimum. */
  readonly interval?: string;
  /** 0–1: how much the candidate's 5xx share may exceed the stable revision's. */
  readonly max_5xx_increase?: number;
  /** 1–100: how many times the stable revision's p99 latency the candidate's may be. */
  readonly max_p99_ratio?: number;
}

export type Protocol = 'http1' | 'http2' | 'grpc';

export interface Canary {
  /** Same rules as `backend`. */
  readonly backend: string;
  /** 0–100 percent of the service's traffic; 100 is a cutover. */
  readonly weight: number;
  /** Requests whose header `name` equals `value` go to the canary. Any client can send it. */
  readonly header?: CanaryHeader;
}

/** The team's own cohort header: a request carrying `name: value` goes to the canary. */
export interface CanaryHeader {
  /** A lowercase request header name. */
  readonly name: string;
  /** Visible ASCII and inner spaces, at most 256. */
  readonly value: string;
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
