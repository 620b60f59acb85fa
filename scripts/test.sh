#!/usr/bin/env bash
# Runs every test: the Rust workspace (real Envoy, moto's server) and the infrastructure checks.
# Installs what it needs itself: the Python venv (pinned Envoy, moto, cfn-lint) and infra's npm
# packages (npm ci).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
log=$(mktemp)
venv_log=$(mktemp)
trap 'rm -f "$log" "$venv_log"' EXIT

# The venv's install is mostly download; it runs while the workspace builds (nothing in the
# build needs it), and the tests start only once it is there.
echo "==> Python venv (pinned Envoy, moto's server, cfn-lint), installed while the workspace builds"
bash scripts/setup-python.sh >"$venv_log" 2>&1 &
venv_pid=$!

echo "==> Rust workspace build"
cargo test --workspace --locked --no-run 2>&1 | tee "$log"

if ! wait "$venv_pid"; then
  cat "$venv_log" >&2
  echo "setting up the Python venv failed" >&2
  exit 1
fi
export PATH="$root/.venv/bin:$PATH"
export ENVOY_BIN="$root/.venv/bin/envoy"
envoy --version | grep -o 'version: .*' | head -n 1

echo "==> Rust workspace tests"
cargo test --workspace --locked 2>&1 | tee -a "$log"

echo "==> Infrastructure checks (tsc, jest, cdk synth + cdk-nag, cfn-lint)"
bash infra/check.sh 2>&1 | tee -a "$log"

# One closing line for the whole run: cargo's per-binary results plus jest's total.
# Reaching this line means every step passed (set -e, pipefail).
total=$(awk '/^test result: ok\./ { n += $4 } /^Tests: / { for (i = 2; i <= NF; i++) if ($i ~ /^passed/) n += $(i-1) } END { print n + 0 }' "$log")
echo
echo "summary: $total passed, 0 failed"
