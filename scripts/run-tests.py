#!/usr/bin/env python3
"""Runs the workspace's test binaries a few at a time, as `cargo test` would run them one by one.

Reads the JSON messages of `cargo test --no-run --message-format=json-render-diagnostics` (the
file named by the first argument), runs every test executable it lists from its package's
directory with the variables cargo sets at run time, at most LANES at once (GATEWAY_TEST_LANES,
default 2), and prints each binary's whole output when it ends, under cargo's own `Running`
line, so the summary line and a failure read as they do from `cargo test`.

Most of the suites' time is spent waiting on Envoy, moto and backends, not on the cores, so two
binaries side by side finish in well under the time one after another takes. Not three: on two
cores, three suites' moto servers starved each other past the SDK's 5 s attempt timeout. Each binary
starts its own Envoy and moto on free loopback ports, so they do not meet. Longest first: the
integration suites (`tests/…`) before the unit tests, the known slow ones first of all.
"""

import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

# Integration suites measured slowest on CI, slowest first (package names).
SLOW_FIRST = [
    "gateway-testkit",
    "gateway-functions",
    "gateway-adapters",
    "gateway-sidecar",
    "gatewayctl",
]


def artifacts(messages_file):
    seen = set()
    out = []
    with open(messages_file, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            msg = json.loads(line)
            if msg.get("reason") != "compiler-artifact":
                continue
            exe = msg.get("executable")
            if not exe or not msg.get("profile", {}).get("test"):
                continue
            if exe in seen:
                continue
            seen.add(exe)
            target = msg["target"]
            package = msg["package_id"]
            name = package_name(msg)
            src = os.path.relpath(target["src_path"], os.path.dirname(msg["manifest_path"]))
            kind = "unittests" if target["kind"] != ["test"] else ""
            out.append(
                {
                    "exe": exe,
                    "dir": os.path.dirname(msg["manifest_path"]),
                    "package": name,
                    "package_id": package,
                    "label": f"{kind} {src}".strip(),
                    "integration": target["kind"] == ["test"],
                }
            )
    return out


def package_name(msg):
    # package_id is "path+file:///…/dir#name@version" or "…#version" (the name is the dir's).
    pid = msg["package_id"]
    tail = pid.rsplit("#", 1)[-1]
    if "@" in tail:
        return tail.split("@", 1)[0]
    return os.path.basename(os.path.dirname(msg["manifest_path"]))


def order(binaries):
    def key(b):
        slow = SLOW_FIRST.index(b["package"]) if b["package"] in SLOW_FIRST and b["integration"] else len(SLOW_FIRST)
        return (slow, not b["integration"], b["package"], b["label"])

    return sorted(binaries, key=key)


def main():
    if len(sys.argv) != 2:
        print("usage: run-tests.py CARGO_MESSAGES.json", file=sys.stderr)
        return 2
    binaries = order(artifacts(sys.argv[1]))
    if not binaries:
        print("no test binaries in the build's messages", file=sys.stderr)
        return 1
    lanes = int(os.environ.get("GATEWAY_TEST_LANES", "2"))
    lock = threading.Lock()
    failed = []
    started = time.monotonic()

    def run(b):
        env = dict(os.environ)
        env["CARGO_MANIFEST_DIR"] = b["dir"]
        env["CARGO_PKG_NAME"] = b["package"]
        t0 = time.monotonic()
        proc = subprocess.run(
            [b["exe"]],
            cwd=b["dir"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        took = time.monotonic() - t0
        rel = os.path.relpath(b["exe"], os.getcwd())
        with lock:
            print(f"     Running {b['label']} ({rel}) [{b['package']}, {took:.0f}s]", flush=True)
            sys.stdout.buffer.write(proc.stdout)
            sys.stdout.flush()
            if proc.returncode != 0:
                failed.append(f"{b['package']} {b['label']} (exit {proc.returncode})")

    with ThreadPoolExecutor(max_workers=lanes) as pool:
        list(pool.map(run, binaries))
    print(f"ran {len(binaries)} test binaries, {lanes} at a time, in {time.monotonic() - started:.0f}s")
    if failed:
        print("test binaries that failed:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
