# SPDX-License-Identifier: GPL-2.0
"""The test TCP server of the selftests' helpers and the bench's workloads: one selector
loop accepts on one or more ports and serves every connection, without threads, so a
thousand concurrent connections cost little.

    class Counter(tcpserver.TcpServer):
        def accepted(self, conn, addr):          # a new connection: its state object
            return {"bytes": 0}
        def received(self, conn, state, data):   # data arrived
            state["bytes"] += len(data)
        def ended(self, conn, state, how):       # "eof" (the client shut down its side) or
            ...                                  # "reset" (recv failed); closed after this
    Counter([5301]).run()

A subclass overrides what it needs; the default discards everything. run() serves until
the process ends; exit_on_signals() makes SIGTERM and SIGINT end it through SystemExit,
so that the caller's `finally` can print a summary.
"""
import selectors
import signal
import socket

_LISTENER = object()  # the selector data of listening sockets


def exit_on_signals():
    """SIGTERM and SIGINT raise SystemExit(0) in the main thread."""
    def stop(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


class TcpServer:
    def __init__(self, ports, backlog=1024, recv_bytes=1 << 18):
        """Listens on every port of `ports` at every IPv4 address (SO_REUSEADDR); port 0
        takes a free one (self.ports has the bound ones)."""
        self.recv_bytes = recv_bytes
        self.sel = selectors.DefaultSelector()
        self.ports = []
        for port in ports:
            ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind(("0.0.0.0", port))
            ls.listen(backlog)
            ls.setblocking(False)
            self.sel.register(ls, selectors.EVENT_READ, _LISTENER)
            self.ports.append(ls.getsockname()[1])

    # ------------------------------------------------------------ what a subclass says

    def accepted(self, conn, addr):
        """A new connection from addr: returns its state, handed to the calls below."""
        return None

    def received(self, conn, state, data):
        """Data arrived on the connection (never empty)."""

    def ended(self, conn, state, how):
        """The connection ended: how is "eof" or "reset". It is closed after this returns
        (conn is still open: a reply can go out on "eof")."""

    # ------------------------------------------------------------ the loop

    def run(self):
        while True:
            self.serve_once()

    def serve_once(self, timeout=None):
        """One round of the loop: waits up to timeout seconds (None: until something
        happens) and serves every socket that is ready."""
        for key, _ in self.sel.select(timeout):
            if key.data is _LISTENER:
                self._accept(key.fileobj)
            else:
                self._read(key.fileobj, key.data)

    def _accept(self, ls):
        while True:  # every pending connection: with many clients, one per round is slow
            try:
                conn, addr = ls.accept()
            except (BlockingIOError, InterruptedError):
                return
            conn.setblocking(False)
            self.sel.register(conn, selectors.EVENT_READ, self.accepted(conn, addr))

    def _read(self, conn, state):
        try:
            data = conn.recv(self.recv_bytes)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # a reset (an abortive close), or another error of the connection
            self._end(conn, state, "reset")
            return
        if data:
            self.received(conn, state, data)
        else:
            self._end(conn, state, "eof")

    def _end(self, conn, state, how):
        self.sel.unregister(conn)
        try:
            self.ended(conn, state, how)
        finally:
            conn.close()
