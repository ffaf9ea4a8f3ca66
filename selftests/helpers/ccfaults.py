#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Fault-matrix load for congestion control modules (selftests/tcp_cc_faults.sh).

    ccfaults.py server --port 5401 [--log FILE]
    ccfaults.py cycles --dst 10.10.2.2 --port 5401 --cycles 200 \
        --module rust/tcp_timely.ko timely,timely_patched "t_low_us=5000 ..." [--module ...]
    ccfaults.py flows --dst 10.10.2.2 --port 5401 --controls a,b --flows 1000 --seconds 8
    ccfaults.py transfer --dst 10.10.2.2 --port 5401 --control a --bytes 2000000 \
        --budget 20 --server-log FILE [--flap NS:DEV --flaps 3 --flap-down-ms 250]
    ccfaults.py unpriv --dst 10.10.2.2 --port 5401 --controls a,b --base reno

Protocol: a client connects, sends, and shuts its side down; on that EOF the server
answers one line "<bytes received> <SHA-256 of them>" and closes. With --log, the server
also appends one JSON line per connection that ended (by EOF or reset): the client's
port, the bytes received and their SHA-256, so a client that had to abort can still
check what arrived. Each client command prints one JSON line of figures and exits 1 if
anything it checks went wrong (2 on bad usage).

cycles: for each cycle, round-robin over the modules' controls: insmod the module, open
a connection with the control (setsockopt before connect), send 64 KB and wait until it is
ACKed, check that rmmod is refused (the socket holds the module), close, check that rmmod
succeeds (retrying while the socket finishes closing). A bulk connection using the
namespace's default control, paced at --background-mbps, runs throughout, so every load
and unload happens under traffic.

flows: opens --flows connections (controls round-robin) in batches, then for --seconds
one selector loop writes --chunk bytes to every writable one, least-served first (in the
guest a write costs up to milliseconds, so a round over 1000 sockets is slow); reads every
flow's tcpi_bytes_acked (data the receiver acknowledged) from an inet_diag dump every
--sample-s, and ends the flows with RST. Figures: bytes acked per flow, flows without
any, the longest time a flow waited for an ACK with data outstanding, and the flows
stalled (data outstanding at the end with neither an ACK nor a retransmission for longer
than the flow's retransmission timeout, backoff included, allows: its timer did not fire).

transfer: sends --bytes of random data under one control, checks the receiver's SHA-256.
If the transfer has not ended after --budget seconds it is aborted: the progress is what
the receiver acknowledged, and the server's log tells what arrived, checked against the
same prefix of what was sent. With --flap the bottleneck device is set down and up when
the acknowledged bytes pass 20%, 45% and 70% (as many as --flaps) of the transfer (with a
128 KB send buffer, so that the ACKs follow the writes closely); a flap that comes after
the receiver had everything is an error.

unpriv: (run as an unprivileged user) for each control, on a fresh socket and on a live
connection that uses --base, setsockopt(TCP_CONGESTION) must fail with EPERM and leave the
socket's control as it was; the live connection must still deliver intact data.
"""
import argparse
import errno
import hashlib
import json
import os
import random
import resource
import selectors
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time

# tools/lib: the inet_diag dump, struct tcp_info and the test server, shared with the bench
# and ccstress.py. Imported where used: `unpriv` runs as nobody, reading this script from
# stdin, where __file__ does not locate tools/lib (which nobody may not be able to read),
# and needs none of it.
LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lib")
sys.path.insert(0, LIB)

TCP_CONGESTION = 13
TCP_CA_NAME_MAX = 16
SO_MAX_PACING_RATE = 47
CHUNK = 64 * 1024
REPLY_MAX = 128
FLAP_SNDBUF = 64 * 1024  # the kernel doubles it
# Retransmissions after which a flow with nothing acked counts as in backoff, not stuck.
BACKOFF_RETRANSMITS = 1


def errname(e):
    n = getattr(e, "errno", None)
    return errno.errorcode.get(n, str(n)) if n else type(e).__name__


def cc_name(sock):
    """The socket's control. An algorithm that needs ECN runs as its ECN-less sibling
    "<name>-reno" when the peer did not negotiate ECN (C dctcp as "dctcp-reno"; here the
    receiver runs cubic, which refuses ECN for the ECT-marked SYN such algorithms send):
    reported as the control it stands in for."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, TCP_CA_NAME_MAX)
    name = raw.split(b"\0", 1)[0].decode()
    return name[: -len("-reno")] if name.endswith("-reno") and name != "reno" else name


def data_acked(bytes_acked):
    """Data bytes the receiver acknowledged: tcpi_bytes_acked counts the SYN as one."""
    return max(0, bytes_acked - 1)


def tcp_info(sock):
    """(data bytes acked by the receiver, total retransmitted segments)."""
    import tcpinfo  # tools/lib (see LIB)
    info = tcpinfo.get(sock, ("bytes_acked", "total_retrans"))
    if info is None:
        raise OSError("short tcp_info")
    return data_acked(info["bytes_acked"]), info["total_retrans"]


def abort(sock):
    """Close with RST: the socket is released at once."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


def raise_fd_limit(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (max(need, soft), max(need, hard)))
        except (ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def tcp_mem_pages():
    """Pages TCP has allocated, all namespaces (tcp_memory_allocated, as sockstat shows)."""
    with open("/proc/net/sockstat") as f:
        for line in f:
            if line.startswith("TCP:"):
                w = line.split()
                return int(w[w.index("mem") + 1])
    return -1


def mem_available_kb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return -1


# ---------------------------------------------------------------------------- inet_diag


class DiagSampler:
    """tcp_info of every established TCP socket of this namespace, by local port, in one
    inet_diag dump: a getsockopt per socket costs a system call each, slow in the guest."""

    def __init__(self):
        import inetdiag  # tools/lib (see LIB)
        self.diag = inetdiag.InetDiag()
        self.ext, self.states = inetdiag.EXT_INFO, 1 << inetdiag.TCP_ESTABLISHED

    def sample(self):
        """{local port: (bytes acked, total retransmits, retransmission timeout in s)}; the
        timeout is the current one, backoff included (icsk_rto)."""
        out = {}
        for s in self.diag.tcp(ext=self.ext, states=self.states):
            info = s.tcp_info(("bytes_acked", "total_retrans", "rto"))
            if info is not None:
                out[s.sport] = (data_acked(info["bytes_acked"]), info["total_retrans"],
                                info["rto"] / 1e6)
        return out


# ---------------------------------------------------------------------------- server


def serve(port, log_path):
    import tcpserver  # tools/lib (see LIB)

    class Checksummer(tcpserver.TcpServer):
        """Per connection: bytes and SHA-256 of what arrived; on EOF, the reply line."""

        def accepted(self, conn, addr):
            totals["accepted"] += 1
            return {"bytes": 0, "hash": hashlib.sha256(), "port": addr[1]}

        def received(self, conn, st, data):
            st["bytes"] += len(data)
            st["hash"].update(data)

        def ended(self, conn, st, how):
            totals[how] += 1
            totals["bytes"] += st["bytes"]
            digest = st["hash"].hexdigest()
            if how == "eof":
                try:
                    conn.send(f"{st['bytes']} {digest}\n".encode())
                except OSError:
                    how = "eof, reply failed"
            if log:
                log.write(json.dumps({"port": st["port"], "bytes": st["bytes"],
                                      "sha256": digest, "end": how}) + "\n")

    raise_fd_limit(65536)
    log = open(log_path, "a", buffering=1) if log_path else None
    totals = {"accepted": 0, "eof": 0, "reset": 0, "bytes": 0}
    tcpserver.exit_on_signals()
    server = Checksummer([port], backlog=4096)
    try:
        server.run()
    finally:
        print(json.dumps(totals, sort_keys=True), flush=True)


def read_reply(sock, deadline):
    """The server's "<bytes> <sha256>" line, or None by the deadline."""
    buf = b""
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        sock.settimeout(left)
        try:
            chunk = sock.recv(REPLY_MAX)
        except socket.timeout:
            return None
        if not chunk:
            break
        buf += chunk
    try:
        n, digest = buf.split(b"\n", 1)[0].decode().split()
        return int(n), digest
    except ValueError:
        return None


def server_record(log_path, port, wait_s=3.0):
    """The server log's line for the connection from local port `port`."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            with open(log_path) as f:
                for line in f:
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    if rec.get("port") == port:
                        return rec
        except OSError:
            pass
        time.sleep(0.05)
    return None


def connect(dst, port, control, timeout=10.0, sndbuf=0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if sndbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
        if control:
            s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, control.encode())
        s.settimeout(timeout)
        s.connect((dst, port))
    except BaseException:
        s.close()
        raise
    return s


# ---------------------------------------------------------------------------- cycles


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout.strip()


def available():
    with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
        return f.read().split()


def cycles(a):
    targets = []  # (ko, module name, control, params)
    for ko, controls, params in a.module:
        mod = os.path.basename(ko)[:-3] if ko.endswith(".ko") else os.path.basename(ko)
        for c in controls.split(","):
            if c:
                targets.append((ko, mod, c, params.split()))
    res = {"cycles": 0, "refusals": 0, "rmmod_retries": 0, "by_control": {},
           "errors": [], "background_bytes": 0}
    stop = threading.Event()

    def background():
        # Bulk traffic under the namespace's default control for the whole run.
        try:
            s = connect(a.dst, a.port, None)
            if a.background_mbps:
                s.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE,
                             a.background_mbps * 1_000_000 // 8)
            s.settimeout(0.2)
            payload = bytes(CHUNK)
            while not stop.is_set():
                try:
                    res["background_bytes"] += s.send(payload)
                except socket.timeout:
                    pass
            abort(s)
        except OSError as e:
            res["errors"].append(f"background flow: {errname(e)}: {e}")

    bg = threading.Thread(target=background)
    if a.background_mbps >= 0:
        bg.start()
    payload = os.urandom(a.flow_bytes)
    digest = hashlib.sha256(payload).hexdigest()
    cycle_times = []
    t0 = time.monotonic()
    for i in range(a.cycles):
        if len(res["errors"]) >= 10:
            break
        ko, mod, control, params = targets[i % len(targets)]
        tc = time.monotonic()
        err = None
        rc, out = run(["insmod", ko] + params)
        if rc != 0:
            res["errors"].append(f"cycle {i}: insmod {ko}: {out}")
            break
        sock = None
        try:
            if control not in available():
                raise RuntimeError(f"{control} not registered after insmod")
            sock = connect(a.dst, a.port, control)
            if cc_name(sock) != control:
                raise RuntimeError(f"socket reports {cc_name(sock)}, not {control}")
            sock.sendall(payload)
            deadline = time.monotonic() + 10
            while tcp_info(sock)[0] < len(payload):
                if time.monotonic() > deadline:
                    raise RuntimeError("64 KB not ACKed within 10 s")
                time.sleep(0.002)
            rc, out = run(["rmmod", mod])
            if rc == 0:
                err = f"cycle {i}: rmmod {mod} succeeded while a {control} socket was open"
                # The module is gone under a live socket: nothing after this is meaningful.
                res["errors"].append(err)
                break
            if "in use" not in out:
                raise RuntimeError(f"rmmod refused, but not as in use: {out}")
            res["refusals"] += 1
            res.setdefault("refusal_message", out)
            sock.shutdown(socket.SHUT_WR)
            reply = read_reply(sock, time.monotonic() + 10)
            if reply != (len(payload), digest):
                raise RuntimeError(f"server reply {reply}, expected {len(payload)} bytes + digest")
        except (OSError, RuntimeError) as e:
            err = f"cycle {i} ({control}): {errname(e) if isinstance(e, OSError) else ''} {e}"
        finally:
            if sock is not None:
                sock.close()
        if err:
            res["errors"].append(err)
        deadline = time.monotonic() + 5
        while True:
            rc, out = run(["rmmod", mod])
            if rc == 0:
                break
            if time.monotonic() > deadline:
                res["errors"].append(f"cycle {i}: rmmod {mod} after close: {out}")
                break
            res["rmmod_retries"] += 1
            time.sleep(0.01)
        if rc != 0:
            break
        if not err:
            res["cycles"] += 1
            res["by_control"][control] = res["by_control"].get(control, 0) + 1
        cycle_times.append(time.monotonic() - tc)
    res["seconds"] = round(time.monotonic() - t0, 2)
    stop.set()
    if bg.is_alive():
        bg.join(5)
    if cycle_times:
        res["cycle_ms_median"] = round(statistics.median(cycle_times) * 1000, 1)
        res["cycle_ms_max"] = round(max(cycle_times) * 1000, 1)
    ok = not res["errors"] and res["cycles"] == a.cycles and res["refusals"] == a.cycles
    return res, ok


# ---------------------------------------------------------------------------- flows


def flows(a):
    controls = a.controls
    limit = raise_fd_limit(a.flows + 64)
    res = {"flows": a.flows, "fd_limit": limit, "connected": 0, "errors": [],
           "mem_available_kb_min": mem_available_kb(), "tcp_mem_pages_max": tcp_mem_pages()}
    if limit < a.flows + 64:
        res["errors"].append(f"fd limit {limit} too low for {a.flows} flows")
        return res, False
    socks = []  # (sock, control)
    sel = selectors.DefaultSelector()
    t_connect = time.monotonic()
    for start in range(0, a.flows, a.batch):
        pending = {}
        for i in range(start, min(start + a.batch, a.flows)):
            control = controls[i % len(controls)]
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, a.sndbuf)
            s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, control.encode())
            s.setblocking(False)
            rc = s.connect_ex((a.dst, a.port))
            if rc not in (0, errno.EINPROGRESS):
                res["errors"].append(f"connect: {errno.errorcode.get(rc, rc)}")
                s.close()
                continue
            sel.register(s, selectors.EVENT_WRITE, control)
            pending[s] = control
        deadline = time.monotonic() + a.connect_timeout
        while pending and time.monotonic() < deadline:
            for key, _ in sel.select(0.5):
                s = key.fileobj
                sel.unregister(s)
                control = pending.pop(s)
                rc = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if rc:
                    res["errors"].append(f"connect: {errno.errorcode.get(rc, rc)}")
                    s.close()
                else:
                    socks.append((s, control))
        for s in pending:
            sel.unregister(s)
            s.close()
            res["errors"].append("connect timed out")
        if len(res["errors"]) > 20:
            break
    res["connect_seconds"] = round(time.monotonic() - t_connect, 2)
    res["connected"] = len(socks)
    mismatched = sum(1 for s, c in socks if cc_name(s) != c)
    if mismatched:
        res["errors"].append(f"{mismatched} sockets report another control than set")

    port_of = [s.getsockname()[1] for s, _ in socks]
    for idx, (s, control) in enumerate(socks):
        sel.register(s, selectors.EVENT_WRITE, idx)
    sampler = DiagSampler()
    payload = memoryview(bytes(a.chunk))
    n = len(socks)
    acked = [0] * n
    written = [0] * n
    retrans = [0] * n
    stall = [0.0] * n  # longest time with data waiting and no ACK progress
    last_progress = [0.0] * n
    # Last ACK progress or retransmission, and the timeout (backoff included) then.
    last_event = [0.0] * n
    rto = [0.0] * n
    last_sample_t = 0.0
    t0 = time.monotonic()
    next_sample = t0 + a.sample_s
    end = t0 + a.seconds
    mid_acked = mid_written = None
    send_errors = 0
    samples, sample_time, missing = 0, 0.0, 0

    def take_sample(now):
        nonlocal samples, sample_time, missing, mid_acked, mid_written
        nonlocal last_sample_t
        t = last_sample_t = now - t0
        samples += 1
        try:
            got = sampler.sample()
        except OSError as e:
            res["errors"].append(f"inet_diag: {errname(e)}: {e}")
            got = {}
        for i in range(n):
            b, r, rto_s = got.get(port_of[i], (None, None, None))
            if b is None:
                missing += 1
                continue
            if r != retrans[i]:
                last_event[i] = t
            retrans[i], rto[i] = r, rto_s
            if b > acked[i] or written[i] <= b:  # progress, or nothing waiting for an ACK
                acked[i] = max(acked[i], b)
                last_progress[i] = last_event[i] = t
            stall[i] = max(stall[i], t - last_progress[i])
        if mid_acked is None and t >= a.seconds / 2:
            mid_acked = list(acked)
            mid_written = list(written)
        res["mem_available_kb_min"] = min(res["mem_available_kb_min"], mem_available_kb())
        res["tcp_mem_pages_max"] = max(res["tcp_mem_pages_max"], tcp_mem_pages())
        sample_time += time.monotonic() - now

    while True:
        now = time.monotonic()
        if now >= end:
            take_sample(now)
            break
        if now >= next_sample:
            take_sample(now)
            next_sample = time.monotonic() + a.sample_s
        # One send per ready socket, least-served flows first: in the guest a send takes
        # up to milliseconds (it transmits, and forwards through the router in the same
        # context), so a round over 1000 sockets may not finish before the clock says stop.
        ready = sel.select(min(0.05, max(0.0, min(next_sample, end) - now)))
        ready.sort(key=lambda kv: written[kv[0].data])
        for k, (key, _) in enumerate(ready):
            if k % 32 == 31 and time.monotonic() >= min(next_sample, end):
                break
            try:
                written[key.data] += key.fileobj.send(payload)
            except (BlockingIOError, InterruptedError):
                pass
            except OSError as e:
                send_errors += 1
                if send_errors <= 5:
                    res["errors"].append(f"send: {errname(e)}")
                sel.unregister(key.fileobj)
    res["seconds"] = round(time.monotonic() - t0, 2)
    res["never_written"] = sum(1 for w in written if w == 0)
    if res["never_written"]:
        res["errors"].append(f"the sender never wrote to {res['never_written']} flows")
    res["samples"] = samples
    res["sample_ms_mean"] = round(sample_time / max(samples, 1) * 1000, 1)
    if missing:
        res["errors"].append(f"{missing} flow samples missing from the inet_diag dumps")
    for s, _ in socks:
        sel.unregister(s)
        abort(s)
    res["retransmits"] = sum(retrans)
    res["bytes_total"] = sum(acked)
    res["bytes_min"] = min(acked) if acked else 0
    res["bytes_median"] = int(statistics.median(acked)) if acked else 0
    res["bytes_max"] = max(acked) if acked else 0
    # No byte acked is no progress unless the flow is retransmitting: its first segment
    # lost at a bottleneck shared by 1000 flows (tens of thousands of drops in 8 s), then
    # its retransmissions, each doubling the timeout, may leave nothing acked by the end.
    # That its timer keeps firing is the stall count's to judge (below).
    res["no_progress"] = sum(1 for b, r in zip(acked, retrans) if b == 0 and r < BACKOFF_RETRANSMITS)
    res["backoff_unacked"] = sum(1 for b, r in zip(acked, retrans) if b == 0 and r >= BACKOFF_RETRANSMITS)
    res["stall_max_s"] = round(max(stall), 2) if stall else 0
    # Stalled: data waiting for an ACK at the end, and neither an ACK nor a retransmission
    # for longer than the flow's own retransmission timeout (backoff included) allows, with
    # two sampling periods and half a second of slack: its timer did not fire. (A flow
    # silent for the whole second half is not stalled when its timeout, doubled by each
    # timeout in a row under heavy loss, is longer: 1.6 s after four.)
    res["stalled"] = sum(
        1 for i in range(n) if written[i] > acked[i]
        and last_sample_t - last_event[i] > rto[i] + 2 * a.sample_s + 0.5)
    res["no_ack_second_half"] = sum(
        1 for i in range(n) if mid_acked is not None
        and mid_written[i] > mid_acked[i] and acked[i] == mid_acked[i])
    res["written_total"] = sum(written)
    by = {}
    for i, (_, c) in enumerate(socks):
        by.setdefault(c, []).append((acked[i], stall[i], retrans[i]))
    res["by_control"] = {
        c: {"flows": len(v), "min": min(x[0] for x in v),
            "median": int(statistics.median(x[0] for x in v)),
            "no_progress": sum(1 for x in v if x[0] == 0 and x[2] < BACKOFF_RETRANSMITS),
            "stall_max_s": round(max(x[1] for x in v), 2),
            "retransmits": sum(x[2] for x in v)}
        for c, v in by.items()}
    ok = (not res["errors"] and n == a.flows and res["no_progress"] == 0)
    return res, ok


# ---------------------------------------------------------------------------- transfer


def transfer(a):
    data = random.Random(a.seed).randbytes(a.bytes)
    digest = hashlib.sha256(data).hexdigest()
    res = {"control": a.control, "bytes": a.bytes, "errors": [], "flaps": 0, "outcome": "?"}
    flap_at = [f for f in (0.20, 0.45, 0.70)][:a.flaps] if a.flap else []
    ns, dev = a.flap.split(":") if a.flap else (None, None)

    def flap():
        acked = tcp_info(sock)[0]
        res.setdefault("flap_at_acked", []).append(acked)
        if acked >= a.bytes:
            res["errors"].append("a link flap came after the receiver had everything")
        for state in ("down", "up"):
            rc, out = run(["ip", "-n", ns, "link", "set", dev, state])
            if rc:
                res["errors"].append(f"ip link set {dev} {state}: {out}")
            if state == "down":
                time.sleep(a.flap_down_ms / 1000)
        res["flaps"] += 1

    t0 = time.monotonic()
    deadline = t0 + a.budget
    try:
        # With flaps, a small send buffer keeps what is ACKed close to what was written, so
        # the flaps fall where they are meant to, not after the data has all arrived.
        sock = connect(a.dst, a.port, a.control, timeout=min(10, a.budget),
                       sndbuf=FLAP_SNDBUF if a.flap else 0)
    except OSError as e:
        res["errors"].append(f"connect: {errname(e)}: {e}")
        res["outcome"] = "no connection"
        return res, False
    got = cc_name(sock)
    if got != a.control:
        res["errors"].append(f"socket reports control {got}")
    local_port = sock.getsockname()[1]
    sock.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_WRITE)
    view = memoryview(data)
    sent = 0
    reply = None
    shut = False
    while time.monotonic() < deadline:
        if flap_at:
            acked, _ = tcp_info(sock)
            if acked >= flap_at[0] * a.bytes:
                flap_at.pop(0)
                flap()
        if not shut and sent == a.bytes:
            sock.shutdown(socket.SHUT_WR)
            shut = True
            sel.modify(sock, selectors.EVENT_READ)
        if not sel.select(0.02):
            continue
        if not shut:
            try:
                sent += sock.send(view[sent:sent + CHUNK])
            except (BlockingIOError, InterruptedError):
                pass
            except OSError as e:
                res["errors"].append(f"send: {errname(e)}: {e}")
                break
        else:
            if flap_at:  # the rest of the flaps are due while the data drains
                continue
            sock.setblocking(True)
            reply = read_reply(sock, deadline)
            break
    elapsed = time.monotonic() - t0
    try:
        acked, retrans = tcp_info(sock)
    except OSError:
        acked, retrans = 0, -1
    res.update(seconds=round(elapsed, 3), retransmits=retrans, acked=min(acked, a.bytes),
               sent=sent)
    if reply is not None:
        sock.close()
        res["received"] = reply[0]
        res["mbps"] = round(reply[0] * 8 / elapsed / 1e6, 2)
        if reply == (a.bytes, digest):
            res["outcome"] = "complete"
            res["integrity"] = "sha256 match"
        else:
            res["outcome"] = "corrupt"
            res["integrity"] = f"received {reply[0]} bytes, sha256 {reply[1][:16]}..."
            res["errors"].append("receiver's bytes or SHA-256 differ from what was sent")
        return res, not res["errors"]
    # Out of time, or the connection failed: what did the receiver get, and is it the start
    # of what was sent?
    if time.monotonic() < deadline and not res["errors"]:
        res["errors"].append("the connection ended without the receiver's reply")
    abort(sock)
    rec = server_record(a.server_log, local_port) if a.server_log else None
    res["mbps"] = round(acked * 8 / elapsed / 1e6, 3)
    if rec is None:
        res["outcome"] = "no progress" if acked == 0 else "partial"
        res["integrity"] = "no server record"
        res["received"] = -1
        res["errors"].append("no server record of the aborted connection")
        return res, False
    res["received"] = rec["bytes"]
    prefix_ok = rec["bytes"] <= a.bytes and \
        hashlib.sha256(view[:rec["bytes"]]).hexdigest() == rec["sha256"]
    res["integrity"] = "prefix sha256 match" if prefix_ok else "prefix sha256 MISMATCH"
    if not prefix_ok:
        res["errors"].append("what arrived is not the start of what was sent")
    res["outcome"] = "partial" if rec["bytes"] > 0 else "no progress"
    # Running out of time is not an error here: the caller decides what a partial transfer
    # means. A failed connection is.
    return res, not res["errors"]


# ---------------------------------------------------------------------------- unpriv


def try_switch(s, control, r, which):
    """setsockopt(TCP_CONGESTION, control) on s, recorded in r as which_before (the
    socket's control), which_errno ("OK" or the errno's name) and which_after."""
    r[f"{which}_before"] = cc_name(s)
    try:
        s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, control.encode())
        r[f"{which}_errno"] = "OK"
    except OSError as e:
        r[f"{which}_errno"] = errname(e)
    r[f"{which}_after"] = cc_name(s)


def unpriv(a):
    res = {"uid": os.getuid(), "controls": {}, "errors": []}
    payload = os.urandom(64 * 1024)
    for control in a.controls:
        r = {}
        # A fresh socket.
        s = socket.socket()
        try_switch(s, control, r, "fresh")
        s.close()
        # A live connection that uses --base.
        try:
            s = connect(a.dst, a.port, a.base)
            s.sendall(payload)
            try_switch(s, control, r, "live")
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            reply = read_reply(s, time.monotonic() + 10)
            r["live_intact"] = reply == (2 * len(payload),
                                         hashlib.sha256(payload + payload).hexdigest())
            s.close()
        except OSError as e:
            res["errors"].append(f"{control}: live connection: {errname(e)}: {e}")
        bad = []
        if r.get("fresh_errno") != "EPERM":
            bad.append(f"fresh socket: {r.get('fresh_errno')}, expected EPERM")
        if r.get("fresh_after") != r.get("fresh_before"):
            bad.append(f"fresh socket changed {r.get('fresh_before')} -> {r.get('fresh_after')}")
        if r.get("live_errno") != "EPERM":
            bad.append(f"live socket: {r.get('live_errno')}, expected EPERM")
        if r.get("live_before") != a.base or r.get("live_after") != a.base:
            bad.append(f"live socket {r.get('live_before')} -> {r.get('live_after')}, "
                       f"expected {a.base} throughout")
        if not r.get("live_intact"):
            bad.append("live connection's data not delivered intact")
        r["ok"] = not bad
        res["errors"] += [f"{control}: {b}" for b in bad]
        res["controls"][control] = r
    return res, not res["errors"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    clist = lambda v: [x for x in v.split(",") if x]  # noqa: E731
    s = sub.add_parser("server")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--log")
    for name in ("cycles", "flows", "transfer", "unpriv"):
        c = sub.add_parser(name)
        c.add_argument("--dst", required=True)
        c.add_argument("--port", type=int, required=True)
    c = sub.choices["cycles"]
    c.add_argument("--cycles", type=int, default=200)
    c.add_argument("--module", nargs=3, action="append", required=True,
                   metavar=("KO", "CONTROLS", "PARAMS"))
    c.add_argument("--flow-bytes", type=int, default=64 * 1024)
    c.add_argument("--background-mbps", type=int, default=20,
                   help="pacing rate of the background flow; 0: unpaced, -1: none")
    c = sub.choices["flows"]
    c.add_argument("--controls", type=clist, required=True)
    c.add_argument("--flows", type=int, default=1000)
    c.add_argument("--seconds", type=float, default=8.0)
    c.add_argument("--sample-s", type=float, default=1.0)
    c.add_argument("--chunk", type=int, default=16384, help="bytes per send")
    c.add_argument("--sndbuf", type=int, default=16 * 1024)
    c.add_argument("--batch", type=int, default=100)
    c.add_argument("--connect-timeout", type=float, default=30.0)
    c = sub.choices["transfer"]
    c.add_argument("--control", required=True)
    c.add_argument("--bytes", type=int, default=2_000_000)
    c.add_argument("--budget", type=float, default=20.0)
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--server-log")
    c.add_argument("--flap", help="NS:DEV to set down and up during the transfer")
    c.add_argument("--flaps", type=int, default=3)
    c.add_argument("--flap-down-ms", type=int, default=250)
    c = sub.choices["unpriv"]
    c.add_argument("--controls", type=clist, required=True)
    c.add_argument("--base", default="reno")
    a = p.parse_args()
    if a.cmd == "server":
        serve(a.port, a.log)
        return 0
    if a.cmd == "flows" and (not a.controls or a.flows < 1 or a.seconds <= 0):
        p.error("need controls, at least one flow, a positive duration")
    if a.cmd == "transfer" and (a.bytes < 1 or a.budget <= 0 or not 0 <= a.flaps <= 3):
        p.error("need a positive size and budget, and at most 3 flaps")
    res, ok = {"cycles": cycles, "flows": flows, "transfer": transfer,
               "unpriv": unpriv}[a.cmd](a)
    print(json.dumps(res, sort_keys=True), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
