#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The two x86_64 guests of tools/vm/pair.sh, linked by one virtio-net device each.

    pair.py sink PORT                 receiver: every connection's bytes hashed, the SHA-256
                                      sent back when the sender shuts its side
    pair.py send HOST PORT CC BYTES [--rc3]
                                      sender: BYTES random bytes with congestion control CC
                                      (selected before connect(), so that dx and swift offer
                                      the delay-stamp option on the SYN), optionally with
                                      RC3's low-priority loop on (TCP_RC3); prints one JSON
                                      line: digest match, seconds, Mbit/s, retransmits
    pair.py wait HOST PORT SECONDS    until HOST:PORT accepts a connection
    pair.py dscp DEV PORT OUT         receiver: counts the TCP segments to PORT arriving on
                                      DEV by DSCP, those not 0 (an AF_PACKET socket with a
                                      filter: after GRO, so a coalesced train counts once),
                                      written to OUT as JSON with the socket's drops when
                                      SIGTERM stops it
"""
import hashlib
import json
import os
import signal
import socket
import struct
import sys
import threading
import time

TCP_RC3 = 47  # patches/rc3: include/uapi/linux/tcp.h
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import tcpinfo  # noqa: E402


def sink(port):
    srv = socket.create_server(("", port), backlog=64)

    def serve(c):
        h = hashlib.sha256()
        with c:
            while True:
                b = c.recv(1 << 16)
                if not b:
                    break
                h.update(b)
            c.sendall(h.hexdigest().encode())
    while True:
        c, _ = srv.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def dscp(dev, port, out):
    """Counts, by DSCP, the TCP segments to `port` arriving on `dev` with a DSCP other than
    0 (RC3's levels), until SIGTERM; writes {dscp: segments, ..., "frames": {dscp: frames},
    "drops": n} to `out`, n the frames the socket dropped (PACKET_STATISTICS). A classic BPF filter keeps the others
    (TCP's own segments, 99% of them) out of the socket: counting them in Python under TCG
    overran it and lost most of RC3's copies."""
    ETH_P_IP, SO_ATTACH_FILTER, SO_RCVBUFFORCE = 0x0800, 26, 33
    SOL_PACKET, PACKET_STATISTICS = 263, 6
    s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETH_P_IP))
    # Offsets from the IP header (SOCK_DGRAM): protocol TCP, DS field's DSCP not 0, the
    # destination port after the IP header (x = its length), else drop.
    prog = [
        (0x30, 0, 0, 9),            # ldb [9]
        (0x15, 0, 6, 6),            # jeq #IPPROTO_TCP, next, drop
        (0x30, 0, 0, 1),            # ldb [1]
        (0x54, 0, 0, 0xFC),         # and #0xfc
        (0x15, 4, 0, 0),            # jeq #0, drop, next
        (0xB1, 0, 0, 0),            # ldxb 4*([0]&0xf)
        (0x48, 0, 0, 2),            # ldh [x + 2]
        (0x15, 0, 1, port),         # jeq #port, accept, drop
        (0x06, 0, 0, 256),          # ret #256
        (0x06, 0, 0, 0),            # ret #0
    ]
    code = b"".join(struct.pack("HBBI", *insn) for insn in prog)
    import ctypes
    buf = ctypes.create_string_buffer(code)
    fprog = struct.pack("HL", len(prog), ctypes.addressof(buf))
    s.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
    s.bind((dev, ETH_P_IP))
    s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)  # reading resets: count from here
    counts, frames, MSS = {}, {}, 1448

    def done(*_):
        _, drops = struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
        with open(out, "w") as f:
            json.dump({**counts, "frames": frames, "drops": drops}, f)
        sys.exit(0)
    signal.signal(signal.SIGTERM, done)
    while True:
        pkt, addr = s.recvfrom(256)
        # Incoming only (PACKET_OUTGOING is 4).
        if addr[2] == socket.PACKET_OUTGOING or len(pkt) < 24:
            continue
        # A frame may carry many segments (the sender's TSO skbs reach the receiver whole
        # over virtio, GRO or not): count the segments its payload holds, at the MSS.
        ihl = (pkt[0] & 0x0F) * 4
        payload = struct.unpack_from("!H", pkt, 2)[0] - ihl - (pkt[ihl + 12] >> 4) * 4
        key = str(pkt[1] >> 2)
        counts[key] = counts.get(key, 0) + max(1, -(-payload // MSS))
        frames[key] = frames.get(key, 0) + 1


def send(host, port, cc, nbytes, rc3):
    data = os.urandom(nbytes)
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    if rc3:
        s.setsockopt(socket.IPPROTO_TCP, TCP_RC3, 1)
    s.settimeout(120)
    t0 = time.monotonic()
    s.connect((host, port))
    s.sendall(data)
    info = tcpinfo.get(s, ("total_retrans", "snd_mss"))
    s.shutdown(socket.SHUT_WR)
    got = b""
    while len(got) < 64:
        b = s.recv(64 - len(got))
        if not b:
            break
        got += b
    secs = time.monotonic() - t0
    s.close()
    ok = got.decode(errors="replace") == hashlib.sha256(data).hexdigest()
    print(json.dumps({"cc": cc, "rc3": rc3, "bytes": nbytes, "intact": ok,
                      "seconds": round(secs, 2), "mbps": round(nbytes * 8 / secs / 1e6, 1),
                      "retransmits": info["total_retrans"], "snd_mss": info["snd_mss"]}))
    return 0 if ok else 1


def wait(host, port, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            socket.create_connection((host, port), timeout=2).close()
            return 0
        except OSError:
            time.sleep(0.5)
    return 1


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[0] == "sink":
        sink(int(a[1]))
    elif a[0] == "send":
        sys.exit(send(a[1], int(a[2]), a[3], int(a[4]), "--rc3" in a[5:]))
    elif a[0] == "dscp":
        dscp(a[1], int(a[2]), a[3])
    elif a[0] == "wait":
        sys.exit(wait(a[1], int(a[2]), float(a[3])))
    sys.exit(__doc__)
