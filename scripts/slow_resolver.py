#!/usr/bin/env python3
"""A throttled DNS resolver on loopback, for `scripts/bench.sh --slow-resolver`.

It answers every query itself, one at a time, after DELAY seconds each, and drops a query that
arrives while QUEUE queries already wait (as a resolver over its packet budget does): names under
`internal.example` get an A record of 10.0.0.1 (a private address the bench's policy admits),
anything else NXDOMAIN. It listens on UDP ADDRESS:53 and stops by itself after LIFETIME seconds.

    slow_resolver.py ADDRESS DELAY QUEUE LIFETIME
"""

import queue
import signal
import socket
import struct
import sys
import threading
import time


def answer(query: bytes) -> bytes:
    """The response to one query: the question echoed, an A record or NXDOMAIN."""
    ident, _flags, qdcount = struct.unpack("!HHH", query[:6])
    # The question: labels up to the zero byte, then type and class.
    end = 12
    labels = []
    while query[end] != 0:
        length = query[end]
        labels.append(query[end + 1:end + 1 + length].decode("ascii", "replace").lower())
        end += 1 + length
    question = query[12:end + 5]
    qtype = struct.unpack("!H", query[end + 1:end + 3])[0]
    name = ".".join(labels)
    found = name.endswith("internal.example")
    if found and qtype == 1:
        header = struct.pack("!HHHHHH", ident, 0x8180, 1, 1, 0, 0)
        record = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton("10.0.0.1")
        return header + question + record
    # A name that exists with no record of the type asked (AAAA): NOERROR, no answer.
    rcode = 0 if found else 3
    header = struct.pack("!HHHHHH", ident, 0x8180 | rcode, 1, 0, 0, 0)
    return header + question


def main() -> None:
    address, delay, depth, lifetime = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((address, 53))
    waiting: "queue.Queue[tuple[bytes, tuple]]" = queue.Queue(maxsize=depth)
    dropped = answered = 0

    def worker() -> None:
        nonlocal answered
        while True:
            data, peer = waiting.get()
            time.sleep(delay)
            try:
                sock.sendto(answer(data), peer)
                answered += 1
            except (OSError, IndexError, struct.error):
                pass

    threading.Thread(target=worker, daemon=True).start()

    def report(*_args) -> None:
        print(f"slow resolver: {answered} answered, {dropped} dropped", file=sys.stderr, flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, report)
    deadline = time.monotonic() + lifetime
    sock.settimeout(1.0)
    while time.monotonic() < deadline:
        try:
            data, peer = sock.recvfrom(512)
        except socket.timeout:
            continue
        try:
            waiting.put_nowait((data, peer))
        except queue.Full:
            dropped += 1
    report()


if __name__ == "__main__":
    main()
