#!/usr/bin/env python3
"""moto's server with every request serialised: `moto_server.py PORT [--exit-with-stdin]`.

Stock `moto_server` handles requests on parallel threads, and its TransactWriteItems checks
conditions and writes without a lock: in a 30-way race for one guard key more than one racer
"won" in 23 of 40 rounds. Real DynamoDB is atomic, so a race test against the stock server
tests moto's bug. One global lock around each whole request (including draining the response
body) makes every request atomic, which is what the project's race tests need.

With `--exit-with-stdin` the server exits when its stdin closes, so a test process that dies
without running its cleanup does not leave a server behind.
"""

import os
import sys
import threading

from werkzeug.serving import run_simple

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)


class Serialised:
    """WSGI middleware: one request at a time, body drained inside the lock."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        with self.lock:
            body = self.app(environ, start_response)
            try:
                return [b"".join(body)]
            finally:
                close = getattr(body, "close", None)
                if close is not None:
                    close()


def exit_when_stdin_closes():
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        os._exit(0)


def main():
    args = sys.argv[1:]
    watch_stdin = "--exit-with-stdin" in args
    args = [a for a in args if a != "--exit-with-stdin"]
    if len(args) != 1 or not args[0].isdigit():
        print("usage: moto_server.py PORT [--exit-with-stdin]", file=sys.stderr)
        sys.exit(2)
    port = int(args[0])
    os.environ.setdefault("MOTO_PORT", str(port))
    if watch_stdin:
        threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(
        "127.0.0.1",
        port,
        Serialised(app),
        threaded=True,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()
