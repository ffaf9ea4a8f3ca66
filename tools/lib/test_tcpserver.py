#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host tests of tools/lib's test TCP server, over loopback."""
import os
import socket
import struct
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tcpserver  # noqa: E402


class Recorder(tcpserver.TcpServer):
    """Counts bytes per connection, answers "<bytes>\\n" on EOF, records every end."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.ends = []

    def accepted(self, conn, addr):
        return {"bytes": 0, "port": addr[1]}

    def received(self, conn, st, data):
        st["bytes"] += len(data)

    def ended(self, conn, st, how):
        if how == "eof":
            conn.send(f"{st['bytes']}\n".encode())
        self.ends.append((st["port"], st["bytes"], how))


class Serving(unittest.TestCase):
    def setUp(self):
        self.server = Recorder([0, 0], backlog=16, recv_bytes=4096)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop)
        self.thread.start()

    def loop(self):
        while not self.stop.is_set():
            self.server.serve_once(0.05)

    def tearDown(self):
        self.stop.set()
        self.thread.join()

    def wait_ends(self, n):
        deadline = time.monotonic() + 5
        while len(self.server.ends) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        return sorted(self.server.ends)

    def connect(self, i):
        return socket.create_connection(("127.0.0.1", self.server.ports[i]), timeout=5)

    def test_eof_gets_the_reply(self):
        c = self.connect(0)
        c.sendall(bytes(100000))
        c.shutdown(socket.SHUT_WR)
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = c.recv(100)
            if not chunk:
                break
            reply += chunk
        self.assertEqual(reply, b"100000\n")
        self.assertEqual(c.recv(100), b"")  # closed after ended()
        self.assertEqual(self.wait_ends(1), [(c.getsockname()[1], 100000, "eof")])
        c.close()

    def test_reset_and_every_port(self):
        socks = [self.connect(i) for i in (0, 1, 1)]
        for s in socks:
            s.sendall(b"abc")
        time.sleep(0.2)
        socks[2].setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        socks[2].close()  # RST
        for s in socks[:2]:
            s.shutdown(socket.SHUT_WR)
        ends = self.wait_ends(3)
        self.assertEqual(sorted(how for _, _, how in ends), ["eof", "eof", "reset"])
        self.assertTrue(all(n == 3 for _, n, _ in ends))
        for s in socks[:2]:
            s.close()

    def test_many_pending_connections(self):
        socks = [self.connect(0) for _ in range(12)]
        for s in socks:
            s.shutdown(socket.SHUT_WR)
        self.assertEqual(len(self.wait_ends(12)), 12)
        for s in socks:
            s.close()


if __name__ == "__main__":
    unittest.main()
