#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Flow-size workload for the bench: open-loop flows of given sizes, their completion times.

    fctflow.py server --port 6000
    fctflow.py client --dst 10.10.2.2 --port 6000 --algo timely --workload '{...}' --out f.json

The client starts flows at Poisson arrivals so that their bytes offer `load_pct` of
`rate_mbit`, from `start_s` to `stop_s` after it starts; each flow's size is drawn from
`sizes_kb` ([[size, weight], ...]) with a fixed seed, so every algorithm sees the same
flows. A flow is a new connection using the given congestion control: connect, send the
bytes (one write of the whole flow, as much as the send buffer takes; the first 8 give its
length), shut down writing; the server answers one byte when every byte has arrived. The
flow completion time (FCT) is from the connection's start (connect()) to that byte; the
FCT from the first data byte (fct_data_us) leaves the handshake out, as the RC3 thesis's
model does: from the first write, once the connection is established, to that byte. Flows still open
`grace_s` after the last arrival are recorded as unfinished, never dropped.

Both sides are single-threaded event loops, so hundreds of concurrent flows cost little.
"""
import argparse
import errno
import json
import os
import random
import selectors
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import tcpserver  # noqa: E402 (tools/lib: the test server, shared with the selftests)

CHUNK = 256 * 1024


class Incoming:
    """A flow at the server: its size (the first 8 bytes, big-endian, count in it) and
    what has arrived."""

    def __init__(self):
        self.head, self.size, self.got, self.answered = b"", None, 0, False


class FlowServer(tcpserver.TcpServer):
    """Reads each flow's length, then its bytes; answers one byte when they have all
    arrived."""

    def accepted(self, conn, addr):
        return Incoming()

    def received(self, conn, flow, data):
        if len(flow.head) < 8:
            flow.head += data[:8 - len(flow.head)]
            if len(flow.head) == 8:
                flow.size = int.from_bytes(flow.head, "big")
        flow.got += len(data)
        if flow.size is not None and flow.got >= flow.size:
            self.answer(conn, flow)

    def ended(self, conn, flow, how):
        if how == "eof":  # the sender closed early
            self.answer(conn, flow)

    @staticmethod
    def answer(conn, flow):
        # Every byte arrived (or the sender closed early): one byte back is the sender's
        # completion signal. Not waiting for the FIN: an application that knows the length
        # (HTTP) is done with the last byte, and RC3's copies deliver data before TCP sends
        # its FIN. The socket is small, so this cannot block.
        if flow.answered:
            return
        flow.answered = True
        try:
            conn.send(b"k")
        except OSError:
            pass


def serve(port):
    FlowServer([port], backlog=4096, recv_bytes=CHUNK).run()


def draw_flows(w):
    """The workload's (arrival_s, size_bytes) list, the same for every run with one seed."""
    rng = random.Random(w.get("seed", 1))
    sizes = [int(s * 1024) for s, _ in w["sizes_kb"]]
    weights = [wt for _, wt in w["sizes_kb"]]
    mean_bytes = sum(s * wt for s, wt in zip(sizes, weights)) / sum(weights)
    flows_per_s = w["load_pct"] / 100 * w["rate_mbit"] * 1e6 / 8 / mean_bytes
    t, flows = w.get("start_s", 0.0), []
    while True:
        t += rng.expovariate(flows_per_s)
        if t >= w["stop_s"]:
            return flows
        flows.append((t, rng.choices(sizes, weights)[0]))


class Flow:
    def __init__(self, size, arrival):
        self.size, self.arrival, self.sent = size, arrival, 0
        self.start = self.first = self.end = None
        self.error = None


def run_client(dst, port, algo, w):
    plan = draw_flows(w)
    # Each flow is offered to its socket whole (as much as the send buffer takes), not in
    # chunks: RC3's loop sends the tail of what is queued, and TCP sees a flow, not a
    # series of small writes. Every algorithm gets the same writes.
    payload = bytearray(max((size for _, size in plan), default=8))
    sel = selectors.DefaultSelector()
    t0 = time.monotonic()
    flows, i, open_n = [], 0, 0
    deadline = w["stop_s"] + w.get("grace_s", 5.0)
    while True:
        now = time.monotonic() - t0
        while i < len(plan) and plan[i][0] <= now:
            f = Flow(plan[i][1], plan[i][0])
            i += 1
            flows.append(f)
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, algo.encode())
            s.setblocking(False)
            f.start = time.monotonic() - t0
            err = s.connect_ex((dst, port))
            if err not in (0, errno.EINPROGRESS):
                f.error = f"connect: {errno.errorcode.get(err, err)}"
                s.close()
                continue
            sel.register(s, selectors.EVENT_WRITE, f)
            open_n += 1
        if i >= len(plan) and open_n == 0:
            break
        if now > deadline:
            break
        timeout = plan[i][0] - now if i < len(plan) else deadline - now
        for key, ev in sel.select(max(0.0, min(timeout, 0.1))):
            f, s = key.data, key.fileobj
            try:
                if ev & selectors.EVENT_WRITE:
                    if f.sent == 0:
                        payload[:8] = f.size.to_bytes(8, "big")  # the server's length
                        if f.first is None:
                            f.first = time.monotonic() - t0
                    n = s.send(memoryview(payload)[:f.size - f.sent])
                    f.sent += n
                    if f.sent >= f.size:
                        s.shutdown(socket.SHUT_WR)
                        sel.modify(s, selectors.EVENT_READ, f)
                else:
                    if s.recv(1) != b"k":
                        raise OSError("closed without the completion byte")
                    f.end = time.monotonic() - t0
                    sel.unregister(s)
                    s.close()
                    open_n -= 1
            except (BlockingIOError, InterruptedError):
                pass
            except OSError as e:
                f.error = str(e)
                sel.unregister(s)
                s.close()
                open_n -= 1
    out = []
    for f in flows:
        r = {"size": f.size, "arrival_s": round(f.arrival, 6), "start_s": round(f.start, 6)}
        if f.end is not None:
            r["fct_us"] = round((f.end - f.start) * 1e6, 1)
            r["fct_data_us"] = round((f.end - f.first) * 1e6, 1)
        else:
            r["unfinished"] = f.error or f"open at the deadline ({f.sent} of {f.size} bytes sent)"
        out.append(r)
    return {"planned": len(plan), "flows": out}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("server")
    s.add_argument("--port", type=int, required=True)
    c = sub.add_parser("client")
    c.add_argument("--dst", required=True)
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--algo", required=True)
    c.add_argument("--workload", required=True, help="JSON: see the module docstring")
    c.add_argument("--out", required=True)
    a = p.parse_args()
    if a.cmd == "server":
        serve(a.port)
        return 0
    res = run_client(a.dst, a.port, a.algo, json.loads(a.workload))
    with open(a.out, "w") as f:
        json.dump(res, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
