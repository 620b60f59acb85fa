#!/usr/bin/env bash
# The scale table (docs/benchmarks.md, "Scale: one table"): per route count, the whole reconcile
# run against Envoy's own `--mode validate` of the same config, the unchanged run, bundle bytes
# raw and gzip, the sidecar's first-delivery peak and idle RSS, and publish → serving under
# steady traffic with the failed-request count. Release build (the bench profile) of the
# sidecar binary and the test kit's scale bench only; moto's server and the pinned Envoy from .venv.
# Prints the table and writes it to target/bench.md.
#   scripts/bench.sh [--reconcile-only | --delivery-only] [ROUTES...]     default: 10000
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-python.sh >/dev/null
export PATH="$PWD/.venv/bin:$PATH" ENVOY_BIN="$PWD/.venv/bin/envoy"
[ "$#" -gt 0 ] || set -- 10000
# The bench runs the sidecar binary beside it in target/release; cargo builds it only for the
# sidecar crate's own targets.
cargo build --locked --release -p gateway-sidecar --bin gateway-sidecar
cargo bench --locked -p gateway-testkit --bench scale -- "$@"
