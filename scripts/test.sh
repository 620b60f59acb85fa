#!/usr/bin/env bash
# Runs every test: the Rust workspace (real Envoy, moto's server) and the infrastructure checks.
# Installs what it needs itself: the Python venv (pinned Envoy, moto, cfn-lint) and infra's npm
# packages (npm ci).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
log=$(mktemp)
venv_log=$(mktemp)
npm_log=$(mktemp)
infra_log=$(mktemp)
messages=$(mktemp)
trap 'rm -f "$log" "$venv_log" "$npm_log" "$infra_log" "$messages"' EXIT

# The venv's and infra's npm installs are mostly download; they run while the workspace builds
# (nothing in the build needs them), and what needs them starts only once they are there.
echo "==> Python venv (pinned Envoy, moto's server, cfn-lint) and infra's npm ci, installed while the workspace builds"
bash scripts/setup-python.sh >"$venv_log" 2>&1 &
venv_pid=$!
(cd infra && npm ci --no-audit --no-fund --loglevel=error) >"$npm_log" 2>&1 &
npm_pid=$!

echo "==> Rust workspace build"
# JSON messages on stdout (the test executables, for the runner), diagnostics on stderr.
cargo test --workspace --locked --no-run --message-format=json-render-diagnostics 2>&1 >"$messages" | tee "$log"

if ! wait "$venv_pid"; then
  cat "$venv_log" >&2
  echo "setting up the Python venv failed" >&2
  exit 1
fi
if ! wait "$npm_pid"; then
  cat "$npm_log" >&2
  echo "npm ci in infra/ failed" >&2
  exit 1
fi
export PATH="$root/.venv/bin:$PATH"
export ENVOY_BIN="$root/.venv/bin/envoy"
envoy --version | grep -o 'version: .*' | head -n 1

# The infrastructure checks take a core for under a minute; they run beside the Rust tests,
# which mostly wait on Envoy, moto and backends.
INFRA_SKIP_NPM_CI=1 bash infra/check.sh >"$infra_log" 2>&1 &
infra_pid=$!

echo "==> Rust workspace tests (each test binary as cargo test runs it, a few at a time)"
tests_ok=0
python3 scripts/run-tests.py "$messages" 2>&1 | tee -a "$log" || tests_ok=$?

echo "==> Infrastructure checks (tsc, jest, cdk synth + cdk-nag, cfn-lint)"
infra_ok=0
wait "$infra_pid" || infra_ok=$?
tee -a "$log" <"$infra_log"
[ "$tests_ok" -eq 0 ] || echo "the Rust tests failed (the binaries are named above)" >&2
[ "$infra_ok" -eq 0 ] || echo "the infrastructure checks failed (their output is above)" >&2
if [ "$tests_ok" -ne 0 ] || [ "$infra_ok" -ne 0 ]; then
  exit 1
fi

# One closing line for the whole run: cargo's per-binary results plus jest's total.
# Reaching this line means every step passed.
total=$(awk '/^test result: ok\./ { n += $4 } /^Tests: / { for (i = 2; i <= NF; i++) if ($i ~ /^passed/) n += $(i-1) } END { print n + 0 }' "$log")
echo
echo "summary: $total passed, 0 failed"
