/**
 * Synth-time registration checks: the TypeScript copy of the Rust checks in `render/src/check`
 * (docs/design.md#registration-entry), so a typo fails `cdk synth` in the team's pipeline instead
 * of the deploy. The register function runs the authoritative checks, plus everything that needs
 * the registry or the network (host and path ownership, the backend name's DNS answer, the
 * operators' backend restrictions); this copy only judges what one entry shows on its own.
 *
 * It is held to the Rust checks by the differential corpus (`infra/test/entry-corpus.json`,
 * written by `render/tests/entry_corpus.rs`): for every case, the same problems with the same
 * field paths and messages in the same order. Each module of `entry-checks/` mirrors the Rust
 * module of the same name, function by function; change both together, regenerate the corpus,
 * and the jest suite says where they disagree.
 */

import { MAX_ENTRY_BYTES, Policy } from './entry-checks/bounds';
import { loneSurrogate } from './entry-checks/json';
import { Json, Problem, Problems } from './entry-checks/report';
import { walkEntry } from './entry-checks/walk';
export type { Problem } from './entry-checks/report';
export {
  MAX_ENTRY_BYTES,
  MAX_HOST_LABELS,
  MAX_LIMITS_PER_ROUTE,
  MAX_PATH_PREFIXES,
  MAX_ROUTES,
  PROXY_RESERVED_PORTS,
} from './entry-checks/bounds';

export interface CheckOptions {
  /**
   * The gateway's base domain, when known. Absent, the checks run as the Rust ones with an empty
   * base domain: no host or backend is judged against it, and `host` alone must fit 252 characters.
   */
  readonly baseDomain?: string;
  /** Mirrors `GATEWAY_ALLOW_LOOPBACK_BACKENDS`; link-local stays rejected regardless. */
  readonly allowLoopbackBackends?: boolean;
  /** Mirrors `GATEWAY_MIN_HEALTH_CHECK_INTERVAL`, in milliseconds (default 5 s). */
  readonly minHealthCheckIntervalMs?: number;
  /** The gateway's `GATEWAY_MAX_ROUTE_TIMEOUT` in milliseconds (default 60 s). */
  readonly maxRouteTimeoutMs?: number;
  /** The gateway's `GATEWAY_MAX_RETRY_ATTEMPTS` (default 3). */
  readonly maxRetryAttempts?: number;
}

/** Thrown at synth with every problem, one per line, each naming its field. */
export class EntryRejected extends Error {
  constructor(readonly problems: Problem[]) {
    super(`gateway entry rejected:\n${problems.map((p) => `  ${p.field}: ${p.reason}`).join('\n')}`);
    this.name = 'EntryRejected';
  }
}

/**
 * Every problem in `value`, in the order the Rust checks report them; empty when the entry
 * passes. `value` is judged as the text the construct sends, `JSON.stringify(value)`.
 */
export function checkEntry(value: unknown, options: CheckOptions = {}): Problem[] {
  const problems = new Problems();
  const text = JSON.stringify(value) as string | undefined;
  if (text === undefined) {
    problems.push('entry', 'empty document; expected a JSON object');
    return problems.list;
  }
  const size = Buffer.byteLength(text, 'utf8');
  if (size > MAX_ENTRY_BYTES) {
    problems.push('entry', `is ${size} bytes; at most ${MAX_ENTRY_BYTES}`);
    return problems.list;
  }
  const lone = loneSurrogate(text);
  if (lone) {
    problems.push(lone.field, lone.reason);
    return problems.list;
  }
  const policy: Policy = {
    baseDomain: options.baseDomain ?? '',
    allowLoopbackBackends: options.allowLoopbackBackends ?? false,
    minHealthCheckIntervalMs: options.minHealthCheckIntervalMs,
    maxRouteTimeoutMs: options.maxRouteTimeoutMs,
    maxRetryAttempts: options.maxRetryAttempts,
  };
  walkEntry(JSON.parse(text) as Json, policy, problems);
  return problems.list;
}

/** Throws `EntryRejected` unless the entry passes. */
export function assertEntry(value: unknown, options: CheckOptions = {}): void {
  const problems = checkEntry(value, options);
  if (problems.length > 0) {
    throw new EntryRejected(problems);
  }
}
