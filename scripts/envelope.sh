#!/usr/bin/env bash
# The memory envelope (docs/benchmarks.md, "Memory envelope"): reconcile + Envoy validate peak,
# sidecar peak and Envoy serving memory at each size, with a one-certificate CA and the system
# bundle, then the same routes with five times the clusters. Prints the tables; writes the last
# to target/bench-envelope.md. Sizes: scripts/envelope.sh [ROUTES,...] (default 10000,25000,50000).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-python.sh >/dev/null
export PATH="$PWD/.venv/bin:$PATH" ENVOY_BIN="$PWD/.venv/bin/envoy"
# The end-to-end test runs the sidecar binary beside it in target/debug.
cargo build --locked -p gateway-sidecar --bin gateway-sidecar
run() {
  cargo test --locked -p gateway-testkit --test suite envelope -- --ignored --nocapture 2>/dev/null \
    | grep '^|'
}
ENVELOPE_ROUTES="${1:-10000,25000,50000}" run
echo
ENVELOPE_ROUTES=10000 ENVELOPE_ROUTES_PER_ENTRY=2 run
