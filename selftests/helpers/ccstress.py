#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Stress load for congestion control modules: live TCP_CONGESTION switches and get_info reads.

    ccstress.py server --port 5301
    ccstress.py client --dst 10.10.2.2 --port 5301 --controls rust_reno,cubic,dctcp \
        [--seconds 10] [--conns 8] [--seed 1]
    ccstress.py diag --controls rust_reno,cubic,dctcp [--seconds 10]

The server accepts any number of connections and reads and discards; on SIGTERM it prints
one JSON line of counts. The client keeps --conns connections busy, each with one sending
thread; the socket in slot i starts with control i of the list, and every reopen moves it
to the next. Beside the senders, for --seconds:
  - a switcher sets TCP_CONGESTION on random live sockets to random controls of the list,
    as fast as it can, and reads it back (the kernel must report what was set);
  - a reader gets TCP_CONGESTION and TCP_CC_INFO (get_info) of random live sockets in a
    tight loop, unsynchronised with the ACK path, as `ss -ti` does;
  - each sender closes and reopens its connection every few hundred milliseconds, half
    the time gracefully (the orphan drains under the control, then releases it), half with
    an abortive close (RST: released at once), so init and release run under load.
At the end it closes every socket gracefully and prints one JSON line: bytes sent, sockets
opened per control, switches that succeeded per control and failed per errno, reads,
reconnects, and the first unexpected errors. Exit status 1 on any unexpected error (any
failed setsockopt or getsockopt among them: every control of the list is registered and
allowed), 2 on bad usage. Threads draw from random.Random(seed), so with one --seed the
sequences of choices repeat; their interleaving does not.

diag dumps every TCP socket of its network namespace over inet_diag netlink, asking for
the congestion control's name and info (what `ss -ti` asks for: each dump calls get_info
on every socket, without the socket lock), back to back for --seconds, then prints one
JSON line of counts. Spawning `ss` costs tens of milliseconds in the UML guest; a dump
costs a system call. Exit status 1 if a dump fails or names a control not in the list.
"""
import argparse
import collections
import contextlib
import errno
import json
import os
import random
import socket
import struct
import sys
import threading
import time

# tools/lib: the inet_diag dump and the test server, shared with the bench and ccfaults.py.
# Imported where used: the client runs as nobody, reading this script from stdin, where
# __file__ does not locate tools/lib (which nobody may not be able to read) and needs none.
LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lib")
sys.path.insert(0, LIB)

TCP_CONGESTION = 13
TCP_CC_INFO = 26
TCP_CA_NAME_MAX = 16
CC_INFO_LEN = 64  # larger than any union tcp_cc_info member
CHUNK = 64 * 1024
# A small send buffer drains quickly, so orphans of graceful closes go away soon after the
# run, even under a controller that has cut its rate.
SNDBUF = 64 * 1024
SEND_TIMEOUT_S = 0.2  # how often a blocked sender looks at the stop flag
CONNECT_TIMEOUT_S = 10
MAX_ERRORS_KEPT = 20


def errname(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) \
        else type(e).__name__


def describe(e):
    return f"{errname(e)}: {e}"


# dctcp on a connection that did not negotiate ECN (a retransmitted SYN drops ECN)
# hands the socket to its Reno fallback, which has its own name: "dctcp-reno", and for the
# Rust abstraction's ECN fallback "<name>-reno" (rust_dctcp-reno).
def fallback_of(name):
    """The control an ECN fallback stands in for, or the name itself."""
    return name[: -len("-reno")] if name.endswith("-reno") and name != "reno" else name


def cc_name(sock):
    """The socket's control, its fallback reported as the control it stands in for."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, TCP_CA_NAME_MAX)
    name = raw.split(b"\0", 1)[0].decode()
    return fallback_of(name)


# ---------------------------------------------------------------------------- diag

# What `ss -ti` asks for: tcp_info, the control's name, and its own info.
def diag_loop(controls, seconds):
    import inetdiag  # tools/lib (see LIB)
    diag = inetdiag.InetDiag()
    ext = inetdiag.EXT_INFO | inetdiag.EXT_CC_INFO | inetdiag.EXT_CONG
    c = collections.Counter()
    by_control = collections.Counter()
    errors = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds and len(errors) < MAX_ERRORS_KEPT:
        try:
            socks = diag.tcp(ext=ext)  # every state
        except OSError as e:
            errors.append(f"dump: {errname(e)}")
            socks = []
        for s in socks:
            c["sockets"] += 1
            if s.cc is not None:
                name = fallback_of(s.cc)
                by_control[name] += 1
                if name not in controls and len(errors) < MAX_ERRORS_KEPT:
                    errors.append(f"a socket reports control {name!r}")
            if s.cc_info is not None:
                c["cc_info"] += 1
        c["dumps"] += 1
    return {"seconds": round(time.monotonic() - t0, 3), "dumps": c["dumps"],
            "sockets": c["sockets"], "cc_info": c["cc_info"],
            "sockets_by_control": dict(by_control), "errors": errors}


# ---------------------------------------------------------------------------- server


def serve(port):
    import tcpserver  # tools/lib (see LIB)

    class Sink(tcpserver.TcpServer):
        """Reads and discards; counts connections, bytes, closes and resets."""

        def accepted(self, conn, addr):
            counts["accepted"] += 1

        def received(self, conn, state, data):
            counts["bytes_received"] += len(data)

        def ended(self, conn, state, how):
            counts["closed" if how == "eof" else "resets"] += 1  # reset: an abortive close

    counts = collections.Counter()
    tcpserver.exit_on_signals()
    server = Sink([port])
    try:
        server.run()
    finally:
        print(json.dumps(dict(counts), sort_keys=True), flush=True)


# ---------------------------------------------------------------------------- client


class Slot:
    """One connection's place. The switcher and the reader borrow its socket for one call;
    its sender withdraws it, waiting for borrowers to finish, before closing it, so no
    call ever reaches a closed descriptor (or one reused by a newer socket)."""

    def __init__(self, index):
        self.index = index
        self.cond = threading.Condition()
        self.sock = None
        self.users = 0

    @contextlib.contextmanager
    def borrow(self):
        with self.cond:
            sock = self.sock
            if sock is not None:
                self.users += 1
        try:
            yield sock
        finally:
            if sock is not None:
                with self.cond:
                    self.users -= 1
                    if self.users == 0:
                        self.cond.notify_all()

    def publish(self, sock):
        with self.cond:
            self.sock = sock

    def withdraw(self):
        with self.cond:
            sock, self.sock = self.sock, None
            while self.users:
                self.cond.wait()
            return sock


class Stress:
    def __init__(self, a):
        self.a = a
        self.controls = a.controls
        self.stop = threading.Event()
        self.slots = [Slot(i) for i in range(a.conns)]
        self.lock = threading.Lock()
        self.c = collections.Counter()
        self.sockets_by_control = collections.Counter()
        self.switches_ok = collections.Counter()
        self.switches_failed = collections.Counter()
        self.info_len = collections.defaultdict(set)
        self.errors = []

    def error(self, what):
        with self.lock:
            self.c["errors"] += 1
            if len(self.errors) < MAX_ERRORS_KEPT:
                self.errors.append(what)

    def add(self, counter, key, n=1):
        with self.lock:
            counter[key] += n

    def rng(self, stream):
        return random.Random(self.a.seed * 1000 + stream)

    # Opens a connection that uses `cc` from the start (set before connect, as iperf3 -C).
    def open(self, cc):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SNDBUF)
            s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, cc.encode())
            s.settimeout(CONNECT_TIMEOUT_S)
            s.connect((self.a.dst, self.a.port))
            s.settimeout(SEND_TIMEOUT_S)
            got = cc_name(s)
            if got != cc:
                raise RuntimeError(f"opened with {cc}, socket reports {got}")
        except BaseException:
            s.close()
            raise
        return s

    def sender(self, slot):
        rng = self.rng(slot.index)
        payload = memoryview(bytes(CHUNK))
        generation = 0
        while not self.stop.is_set():
            cc = self.controls[(slot.index + generation) % len(self.controls)]
            try:
                sock = self.open(cc)
            except (OSError, RuntimeError) as e:
                self.error(f"slot {slot.index}: open with {cc}: {describe(e)}")
                return
            self.add(self.sockets_by_control, cc)
            slot.publish(sock)
            until = time.monotonic() + rng.uniform(self.a.reopen_min_s, self.a.reopen_max_s)
            sent = 0
            try:
                while not self.stop.is_set() and time.monotonic() < until:
                    try:
                        sent += sock.send(payload)
                    except socket.timeout:
                        pass
            except OSError as e:
                self.error(f"slot {slot.index}: send: {describe(e)}")
                self.stop.set()  # the run no longer shows what it claims
            self.add(self.c, "bytes_sent", sent)
            sock = slot.withdraw()
            # Abortive close (linger 0: RST, released at once) half the time between runs;
            # at the end always graceful, so every orphan has to drain and release.
            if not self.stop.is_set() and rng.random() < 0.5:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.add(self.c, "aborts")
            sock.close()
            generation += 1
            if not self.stop.is_set():
                self.add(self.c, "reconnects")

    def switcher(self):
        rng = self.rng(100)
        ok, failed = collections.Counter(), collections.Counter()
        skipped = 0
        while not self.stop.is_set():
            slot, cc = rng.choice(self.slots), rng.choice(self.controls)
            with slot.borrow() as sock:
                if sock is None:  # between close and reopen
                    skipped += 1
                    continue
                try:
                    sock.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, cc.encode())
                except OSError as e:
                    failed[errname(e)] += 1
                    if sum(failed.values()) <= 3:
                        self.error(f"setsockopt(TCP_CONGESTION, {cc}): {describe(e)}")
                    continue
                try:
                    got = cc_name(sock)
                except OSError as e:
                    self.error(f"getsockopt(TCP_CONGESTION): {describe(e)}")
                    continue
            ok[cc] += 1
            if got != cc:
                self.error(f"switched to {cc}, socket reports {got}")
        with self.lock:
            self.switches_ok.update(ok)
            self.switches_failed.update(failed)
            self.c["switch_skipped"] += skipped

    def reader(self):
        rng = self.rng(200)
        reads = 0
        lengths = collections.defaultdict(set)
        while not self.stop.is_set():
            slot = rng.choice(self.slots)
            with slot.borrow() as sock:
                if sock is None:
                    continue
                try:
                    name = cc_name(sock)
                    info = sock.getsockopt(socket.IPPROTO_TCP, TCP_CC_INFO, CC_INFO_LEN)
                except OSError as e:
                    self.error(f"getsockopt: {describe(e)}")
                    continue
            reads += 1
            # The name and the info are two calls: a switch may fall between them, so the
            # length is only recorded, never checked against the name.
            lengths[name].add(len(info))
            if name not in self.controls:
                self.error(f"socket reports control {name!r}, not one of the list")
        with self.lock:
            self.c["cc_info_reads"] += reads
            for name, ls in lengths.items():
                self.info_len[name] |= ls

    def guarded(self, fn, *args):
        """A thread body whose crash is an error of the run, not a lost thread."""
        def body():
            try:
                fn(*args)
            except BaseException as e:
                self.error(f"{threading.current_thread().name}: {describe(e)}")
                self.stop.set()
        return body

    def run(self):
        threads = [threading.Thread(target=self.guarded(self.sender, s), name=f"sender{s.index}")
                   for s in self.slots]
        threads += [threading.Thread(target=self.guarded(self.switcher), name="switcher"),
                    threading.Thread(target=self.guarded(self.reader), name="reader")]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        self.stop.wait(self.a.seconds)
        self.stop.set()
        for t in threads:
            t.join(CONNECT_TIMEOUT_S + 5)
            if t.is_alive():
                self.error(f"thread {t.name} did not stop")
        elapsed = time.monotonic() - t0
        c = self.c
        return {
            "seconds": round(elapsed, 3),
            "conns": self.a.conns,
            "controls": self.controls,
            "bytes_sent": c["bytes_sent"],
            "sockets_by_control": {k: self.sockets_by_control[k] for k in self.controls},
            "reconnects": c["reconnects"],
            "aborts": c["aborts"],
            "switches_ok": sum(self.switches_ok.values()),
            "switches_ok_by_control": {k: self.switches_ok[k] for k in self.controls},
            "switches_failed": dict(self.switches_failed),
            "switch_skipped": c["switch_skipped"],
            "cc_info_reads": c["cc_info_reads"],
            "cc_info_len": {k: sorted(v) for k, v in sorted(self.info_len.items())},
            "error_count": c["errors"],
            "errors": self.errors,
        }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("server")
    s.add_argument("--port", type=int, required=True)
    c = sub.add_parser("client")
    c.add_argument("--dst", required=True)
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--controls", required=True, type=lambda v: [x for x in v.split(",") if x],
                   help="comma-separated congestion controls")
    c.add_argument("--seconds", type=float, default=10.0)
    c.add_argument("--conns", type=int, default=8)
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--reopen-min-s", type=float, default=0.2)
    c.add_argument("--reopen-max-s", type=float, default=1.0)
    d = sub.add_parser("diag")
    d.add_argument("--controls", required=True, type=lambda v: [x for x in v.split(",") if x])
    d.add_argument("--seconds", type=float, default=10.0)
    a = p.parse_args()
    if a.cmd == "server":
        serve(a.port)
        return 0
    if a.cmd == "diag":
        res = diag_loop(a.controls, a.seconds)
        print(json.dumps(res, sort_keys=True), flush=True)
        return 1 if res["errors"] else 0
    if not a.controls or a.conns < 1 or a.seconds <= 0 or a.reopen_min_s > a.reopen_max_s:
        p.error("need at least one control, one connection, a positive duration")
    res = Stress(a).run()
    print(json.dumps(res, sort_keys=True), flush=True)
    failed = res["error_count"] or res["switches_failed"] or res["switches_ok"] == 0 \
        or res["bytes_sent"] == 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
