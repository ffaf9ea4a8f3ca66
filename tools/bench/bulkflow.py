#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Long flows over connections established before any of them sends (the bench's
"preconnect" scenarios).

    bulkflow.py server --port 5201 --count 64
    bulkflow.py client --dst 10.10.2.2 --port 5201 --schedule '[[cc, start_s, stop_s], ...]'
                       --t0 T --out flows.json

One iperf3 per flow connects when its flow starts; with many flows starting within a few
milliseconds, the first ones fill the bottleneck's queue and the SYNs of the others are
dropped and wait out the 1 s SYN timeout (64 flows took up to 2.5 s to connect). Here the
client opens every connection first (flow i to port + i, its congestion control chosen
before connect(), so ECN is negotiated as the control asks), sends nothing until each
flow's start, CLOCK_MONOTONIC `t0 + start_s` (the caller's clock origin), and sends as fast
as the socket takes data until `t0 + stop_s`. It writes, per flow, the control the socket
used, its start and stop, bytes ACKed (tcp_info), retransmissions and mean rate.

The server discards what arrives, one event loop for every connection; with --read-mbps
it reads no faster than that (a slow receiver, for Swift's endpoint window).
"""
import argparse
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import tcpinfo  # noqa: E402 (tools/lib: shared with the selftests)
import tcpserver  # noqa: E402

CHUNK = 64 * 1024


class SlowReader(tcpserver.TcpServer):
    """A receiver that cannot keep up (issue 31's endpoint congestion): the application
    reads every connection together at `read_mbps` at most, sleeping in its one loop when
    ahead; what it has not read waits in the sockets' receive queues, and the kernel holds
    ACKs while the window they would advertise shrinks."""

    def __init__(self, ports, read_mbps):
        super().__init__(ports, backlog=16, recv_bytes=CHUNK)
        self.bytes_per_s = read_mbps * 1e6 / 8
        self.read = 0
        self.t0 = None

    def received(self, conn, state, data):
        now = time.monotonic()
        if self.t0 is None:
            self.t0 = now
        self.read += len(data)
        ahead_s = self.read / self.bytes_per_s - (now - self.t0)
        if ahead_s > 0:
            time.sleep(ahead_s)


def serve(port, count, read_mbps=None):
    ports = range(port, port + count)
    server = (SlowReader(ports, read_mbps) if read_mbps else
              tcpserver.TcpServer(ports, backlog=16, recv_bytes=1 << 20))
    print("listening", flush=True)
    server.run()  # discards what arrives


def run_flow(s, t0, start_s, stop_s, result):
    payload = bytes(CHUNK)
    now = time.monotonic()
    if t0 + start_s > now:
        time.sleep(t0 + start_s - now)
    result["start_s"] = round(max(start_s, time.monotonic() - t0), 4)
    # A blocking send returns once the send buffer took part of the chunk: the flow sends
    # as fast as its congestion control lets it, and checks the clock at least that often.
    s.settimeout(0.05)
    while time.monotonic() < t0 + stop_s:
        try:
            s.send(payload)
        except socket.timeout:
            pass
    info = tcpinfo.get(s, ("total_retrans", "bytes_acked"))
    result["stop_s"] = stop_s
    result["retransmits"] = info["total_retrans"]
    result["bytes"] = info["bytes_acked"]
    result["mbps"] = result["bytes"] * 8 / max(stop_s - result["start_s"], 1e-3) / 1e6
    s.close()


def client(dst, port, schedule, t0, out):
    socks, results = [], []
    for i, (cc, start_s, stop_s) in enumerate(schedule):
        s = socket.socket()
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        s.connect((dst, port + i))
        used = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16)
        socks.append(s)
        results.append({"cc": used.split(b"\0", 1)[0].decode()})
    late = time.monotonic() - t0 - min(start for _, start, _ in schedule)
    if late > 0:
        print(f"bulkflow: connections ready {late:.3f} s after the first start", file=sys.stderr)
    threads = [threading.Thread(target=run_flow, args=(s, t0, a, b, r))
               for s, (_, a, b), r in zip(socks, schedule, results)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(out, "w") as f:
        json.dump(results, f)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    srv = sub.add_parser("server")
    srv.add_argument("--port", type=int, required=True)
    srv.add_argument("--count", type=int, required=True)
    srv.add_argument("--read-mbps", type=float,
                     help="read at most this rate, every connection together (a slow receiver)")
    cli = sub.add_parser("client")
    cli.add_argument("--dst", required=True)
    cli.add_argument("--port", type=int, required=True)
    cli.add_argument("--schedule", required=True, help="JSON [[cc, start_s, stop_s], ...]")
    cli.add_argument("--t0", type=float, required=True, help="CLOCK_MONOTONIC origin, s")
    cli.add_argument("--out", required=True)
    a = p.parse_args()
    if a.cmd == "server":
        serve(a.port, a.count, a.read_mbps)
    else:
        client(a.dst, a.port, json.loads(a.schedule), a.t0, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
