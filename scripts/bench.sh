#!/usr/bin/env bash
# The scale table (docs/benchmarks.md, "Scale: one table"): per route count, the whole reconcile
# run against Envoy's own `--mode validate` of the same config, the unchanged run, bundle bytes
# raw and gzip, the sidecar's first-delivery peak and idle RSS, and publish → serving under
# steady traffic with the failed-request count. Release build (the bench profile) of the
# sidecar binary and the test kit's scale bench only; moto's server and the pinned Envoy from .venv.
# Prints the table and writes it to target/bench.md.
#   scripts/bench.sh [--slow-resolver] [--reconcile-only | --delivery-only] [ROUTES...]     default: 10000
# --slow-resolver runs the bench in a mount namespace (root) whose resolv.conf names a throttled
# resolver of our own on 127.0.0.53 (scripts/slow_resolver.py: every query answered one at a
# time after SLOW_RESOLVER_DELAY seconds, default 2, and dropped while 4 wait), so every backend
# name the reconciler resolves goes through it. The generated backends are then names
# (`b{i}.internal.example`, answered 10.0.0.1) instead of addresses; SLOW_RESOLVER_DELAY=0 is
# the same run with a resolver that answers at once.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--slow-resolver" ]; then
  shift
  conf=$(mktemp)
  printf 'nameserver 127.0.0.53\noptions timeout:10 attempts:1\n' > "$conf"
  python3 scripts/slow_resolver.py 127.0.0.53 "${SLOW_RESOLVER_DELAY:-2}" 4 3600 &
  resolver=$!
  trap 'kill $resolver 2>/dev/null; rm -f "$conf"' EXIT
  sleep 0.5
  GATEWAY_BENCH_BACKEND_NAMES=1 unshare -m sh -c "mount --bind '$conf' /etc/resolv.conf && exec bash scripts/bench.sh $*"
  exit $?
fi
scripts/setup-python.sh >/dev/null
export PATH="$PWD/.venv/bin:$PATH" ENVOY_BIN="$PWD/.venv/bin/envoy"
[ "$#" -gt 0 ] || set -- 10000
# The bench runs the sidecar binary beside it in target/release; cargo builds it only for the
# sidecar crate's own targets.
cargo build --locked --release -p gateway-sidecar --bin gateway-sidecar
cargo bench --locked -p gateway-testkit --bench scale -- "$@"
