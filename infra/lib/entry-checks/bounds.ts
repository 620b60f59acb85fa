/**
 * Bounds and settings shared by the checks (render/src/check/mod.rs).
 */

/** Largest entry document accepted, in bytes (the text the construct sends). */
export const MAX_ENTRY_BYTES = 64 * 1024;
export const MAX_ROUTES = 64;
export const MAX_LIMITS_PER_ROUTE = 8;
/** Distinct path prefixes: an entry must fit one DynamoDB transaction. */
export const MAX_PATH_PREFIXES = 45;
/** Labels in `host`: each enclosing host is one action in the registration transaction. */
export const MAX_HOST_LABELS = 4;
export const MAX_LABEL_LEN = 63;
export const MAX_FQDN_LEN = 253;
export const MAX_PATH_BYTES = 1024;
export const MAX_BURST = 1_000_000;
export const MAX_REQUESTS = 1_000_000_000;
export const MAX_HEADER_NAME_LEN = 128;
/** Longest slice of an offending value quoted back in a message. */
export const QUOTE_MAX_CHARS = 64;

/** Loopback ports of the proxy task's own services (render's PROXY_RESERVED_PORTS). */
export const PROXY_RESERVED_PORTS = { first: 15000, last: 15019 } as const;

/**
 * What the checks need to know about the gateway: render's `Policy` without the operators'
 * backend lists, which only the register function knows.
 */
export interface Policy {
  readonly baseDomain: string;
  readonly allowLoopbackBackends: boolean;
  /** `GATEWAY_MIN_HEALTH_CHECK_INTERVAL` in milliseconds (default 5 s). */
  readonly minHealthCheckIntervalMs?: number;
  /** `GATEWAY_MAX_ROUTE_TIMEOUT` in milliseconds (default 60 s). */
  readonly maxRouteTimeoutMs?: number;
  /** `GATEWAY_MAX_RETRY_ATTEMPTS` (default 3). */
  readonly maxRetryAttempts?: number;
}

/** Default of `GATEWAY_MIN_HEALTH_CHECK_INTERVAL`, in milliseconds. */
export const DEFAULT_MIN_HEALTH_CHECK_INTERVAL_MS = 5_000;
