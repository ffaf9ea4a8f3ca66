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
"""
import hashlib
import json
import os
import socket
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
    elif a[0] == "wait":
        sys.exit(wait(a[1], int(a[2]), float(a[3])))
    sys.exit(__doc__)
