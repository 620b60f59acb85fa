/** CloudWatch names the Rust binaries emit (docs/design.md#metrics-and-alarms); no dimensions. */
export const METRIC_NAMESPACE = 'Gateway';

export const METRICS = {
  validationFailed: 'ValidationFailed',
  configDrift: 'ConfigDrift',
  published: 'Published',
  reconcileFailed: 'ReconcileFailed',
  routesRendered: 'RoutesRendered',
  proxyConfigRejected: 'ProxyConfigRejected',
  rateLimiterErrors: 'RateLimiterErrors',
  /** Also emitted per team with dimension `Team`; the alarm watches the undimensioned total. */
  entryQuarantined: 'EntryQuarantined',
  /** Percent of the memory envelope the registry fills (docs/design.md#memory-envelope). */
  capacityUsed: 'CapacityUsed',
  /** Seconds from a bundle's publish (S3 LastModified) to a proxy's delivery; one datum per delivery. */
  deliveryLagSeconds: 'DeliveryLagSeconds',
} as const;

/**
 * Per-service request metrics the proxy's sidecar publishes, dimensions `Team` and `Service`
 * (docs/design.md#request-metrics).
 */
export const REQUEST_METRICS = {
  requests: 'Requests',
  responses4xx: 'Responses4xx',
  responses5xx: 'Responses5xx',
  upstreamConnectFailures: 'UpstreamConnectFailures',
  latencyP50: 'LatencyP50',
  latencyP99: 'LatencyP99',
} as const;

/** Names shared with the Rust side: table keys and bucket layout. */
export const BUNDLE_OBJECT = 'bundle.json';
export const FAILED_PREFIX = 'failed/';
/** The reconciler's own row (`STATE`/`PUBLISHED`); its writes must not wake the reconciler. */
export const STATE_PK = 'STATE';
export const ENTRY_PK_PREFIX = 'ENTRY#';
/** Per-entry status rows, written only by the reconciler (docs/design.md#entry-status). */
export const STATUS_PK_PREFIX = 'STATUS#';
/**
 * Proxy reports (docs/design.md#proxy-reports): one partition, `PROXIES` / `PROXY#{proxy id}`,
 * written by the sidecars, expiring through the table's TTL attribute.
 */
export const PROXIES_PK = 'PROXIES';
export const PROXY_TTL_ATTRIBUTE = 'expires_at';
