/**
 * The memory envelope (docs/design.md#memory-envelope): the largest registry the gateway must
 * hold, and the memory the reconcile function and the proxy task need for it, from the costs
 * measured in docs/benchmarks.md ("Memory envelope"). The functions refuse a registry past the
 * same figures (`GATEWAY_MAX_ROUTES`, `GATEWAY_MAX_CLUSTERS`), so nothing accepted can outgrow
 * what this sizes.
 */

/** The largest registry the gateway must hold. */
export interface GatewayCapacity {
  /** Team routes in the whole registry (`GATEWAY_MAX_ROUTES`). */
  readonly routes: number;
  /** Backend clusters in the whole registry, each priced as an https one (`GATEWAY_MAX_CLUSTERS`). */
  readonly clusters: number;
}

/** The defaults `render/src/bounds.rs` uses when the settings are unset. */
export const DEFAULT_CAPACITY: GatewayCapacity = { routes: 20_000, clusters: 2_500 };

/** `CapacityUsed` at or above this percent alarms. */
export const CAPACITY_ALARM_PERCENT = 80;

/** One stage's measured cost in MiB. */
export interface StageCost {
  readonly baseMiB: number;
  readonly perRouteMiB: number;
  /** Per https cluster with a one-certificate CA file. */
  readonly perClusterMiB: number;
  /** What the system CA bundle adds per https cluster (scaled by the CA file's certificates). */
  readonly systemCaPerClusterMiB: number;
}

/**
 * Measured costs (Envoy 1.40): a fixed part, per route, per cluster, and what the CA file adds
 * per cluster. Fitted on 10k/25k/50k routes with one cluster per ten routes, and 10k routes with
 * one per two, each with a one-certificate CA and the system bundle (docs/benchmarks.md).
 */
export const MEASURED = {
  /** One reconcile run: the function's own process plus its `envoy --mode validate` child. */
  reconcile: { baseMiB: 64, perRouteMiB: 0.024, perClusterMiB: 0.089, systemCaPerClusterMiB: 0.3 } as StageCost,
  /** Envoy serving the config (`VmRSS` once live). */
  envoy: { baseMiB: 68, perRouteMiB: 0.007, perClusterMiB: 0.0665, systemCaPerClusterMiB: 0.3 } as StageCost,
  /** One sidecar delivering the bundle (`VmHWM`); it never parses the CA. */
  sidecar: { baseMiB: 24, perRouteMiB: 0.007, perClusterMiB: 0.0155, systemCaPerClusterMiB: 0 } as StageCost,
  /** The rate-limit service and what the measurements do not cover in the task. */
  rateLimitMiB: 128,
} as const;

/** Room above the fitted figures: the fit, allocator slack and rule-heavy routes. */
export const HEADROOM = 1.25;

/** Lambda's largest memory setting. */
const LAMBDA_MAX_MIB = 10_240;

/**
 * A stage's cost for `cap` with a CA file costing `caShare` of the system bundle (1: the system
 * bundle; certificates / 144 for an operator's file).
 */
export function stageCost(c: StageCost, cap: GatewayCapacity, caShare: number): number {
  return c.baseMiB + c.perRouteMiB * cap.routes + (c.perClusterMiB + c.systemCaPerClusterMiB * caShare) * cap.clusters;
}

function check(cap: GatewayCapacity): void {
  for (const [name, value] of Object.entries(cap)) {
    if (!Number.isInteger(value) || value < 1) {
      throw new Error(`capacity.${name}: ${value} is not a positive integer`);
    }
  }
}

/**
 * The reconcile function's memory for `cap`, in MiB (a multiple of 64, at least 1024); `caShare`
 * as in [stageCost], default the system bundle's.
 */
export function reconcileMemoryMiB(cap: GatewayCapacity, caShare = 1): number {
  check(cap);
  const mib = Math.max(1024, Math.ceil((stageCost(MEASURED.reconcile, cap, caShare) * HEADROOM) / 64) * 64);
  if (mib > LAMBDA_MAX_MIB) {
    throw new Error(
      `capacity ${cap.routes} routes / ${cap.clusters} clusters needs ${mib} MiB for one reconcile run; ` +
        `a Lambda function has at most ${LAMBDA_MAX_MIB} MiB`,
    );
  }
  return mib;
}

/** Fargate's memory steps for one task size: the smallest CPU that allows `mib`. */
const FARGATE: { cpu: number; minMiB: number; maxMiB: number; stepMiB: number }[] = [
  { cpu: 1024, minMiB: 2048, maxMiB: 8192, stepMiB: 1024 },
  { cpu: 2048, minMiB: 4096, maxMiB: 16384, stepMiB: 1024 },
  { cpu: 4096, minMiB: 8192, maxMiB: 30720, stepMiB: 1024 },
];

/**
 * The proxy task's CPU and memory for `cap`: Envoy holding the config twice (a make-before-break
 * reload keeps the old clusters while the new ones warm), the two sidecars at their delivery
 * peak, the rate-limit service.
 */
export function proxyTaskSize(cap: GatewayCapacity, caShare = 1): { cpu: number; memoryMiB: number } {
  check(cap);
  const need =
    (2 * stageCost(MEASURED.envoy, cap, caShare) + 2 * stageCost(MEASURED.sidecar, cap, caShare) + MEASURED.rateLimitMiB) *
    HEADROOM;
  for (const size of FARGATE) {
    const mib = Math.max(size.minMiB, Math.ceil(need / size.stepMiB) * size.stepMiB);
    if (mib <= size.maxMiB) {
      return { cpu: size.cpu, memoryMiB: mib };
    }
  }
  throw new Error(
    `capacity ${cap.routes} routes / ${cap.clusters} clusters needs ${Math.ceil(need)} MiB per proxy task; ` +
      `a Fargate task has at most ${FARGATE[FARGATE.length - 1].maxMiB} MiB`,
  );
}

/** The settings the functions enforce the same envelope with. */
export function capacitySettings(cap: GatewayCapacity): Record<string, string> {
  check(cap);
  return { GATEWAY_MAX_ROUTES: String(cap.routes), GATEWAY_MAX_CLUSTERS: String(cap.clusters) };
}
