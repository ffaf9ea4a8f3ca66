#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Scripted TCP peer for packet-level tests (what packetdrill does, over a packet socket).

The peer owns an interface that has no IP address in its namespace, so the kernel there
ignores the traffic and this script alone answers: it completes the handshake, receives
the stream the kernel under test sends, and shapes its ACKs by scenario (ECN echoes,
holes with SACK, ACKs and SACK blocks beyond what was sent, malformed options, and
RC3's low-priority copies of the unsent tail: ACKs over them, inside them, beyond them).
The kernel under test is a normal client in another namespace using the congestion control
being tested (with TCP_RC3 on in the rc3_* scenarios only). The script checks that every
byte arrived, in order, exactly once.

  pktpeer.py client --dst IP      (in the namespace under test; the peer starts it itself)
  pktpeer.py peer --iface DEV --ip IP --dut-ns NS --dut-ip IP --cc NAME --scenario S
  pktpeer.py batch --iface DEV --ip IP --dut-ns NS --dut-ip IP --case CC:SCENARIO:PORT:OFFER...

`peer` runs one exchange and prints one JSON line: scenario, bytes, digest match, what it
saw (CWR, segments, retransmissions) and the client's report (tcp_info retransmits, ECN
state); exit 0 only if the transfer completed intact and the scenario's expectation held.
md5_syn_full turns the roles round: the kernel under test listens with a TCP-MD5 key for
the peer, whose signed SYN (MSS, TS, WS, the delay-stamp option, no SACK_PERM) leaves its
SYN-ACK no room for the option; the connection must then not use it (and nothing WARNs).
`batch` runs many exchanges in one process (starting python and the client takes longer
than an exchange), reads the namespace under test's TcpExt counters around each, and
checks them too (OFFER: 1 if the control's SYN must offer the delay-stamp option). Per
case it prints a line "RESULT<TAB>ok|not ok<TAB>CC SCENARIO<TAB>figures<TAB>why" and, when
the case failed, a line "DETAIL<TAB>json".
"""

import argparse
import hashlib
import json
import os
import random
import select
import socket
import struct
import subprocess
import sys
import time

# tools/lib: struct tcp_info, shared with the bench and the other helpers.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tools", "lib"))
import tcpinfo  # noqa: E402

SCENARIOS = ("plain", "ecn_echo", "sack_hole", "ack_beyond_snd_nxt", "sack_beyond_snd_nxt",
             "bad_options", "delay_stamps", "delay_refused", "delay_bad", "options_fuzz",
             "rc3_bump", "rc3_ack_mid_skb", "rc3_ack_beyond_write_seq", "rc3_ack_unsent_data",
             "rc3_ack_unsent_fin", "rc3_sack_beyond_snd_nxt", "delay_replay", "rc3_lp_ack_echo",
             "md5_syn_full", "rc3_copy_window", "rc3_tlp_below_skip")
# RC3 (patches 0012-0014): the client turns TCP_RC3 on; its low-priority copies of the
# unsent tail carry the policy's DSCP (tcp_rc3.ko's default: 1, Lower-Effort).
TCP_RC3, RC3_DSCP = 47, 1
# In these the peer's cumulative ACK never passes the sender's snd_nxt: what it holds
# beyond is only SACKed, so any ACK bump would come from the scenario's own hostile ACK;
# TCP skips what the SACKs cover (patch 0022).
RC3_CAPPED = ("rc3_ack_beyond_write_seq", "rc3_ack_unsent_data", "rc3_ack_unsent_fin",
              "rc3_sack_beyond_snd_nxt")
RC3_HOSTILE = ("rc3_ack_beyond_write_seq", "rc3_ack_unsent_data", "rc3_ack_unsent_fin")
# A bump needs the peer's ACK over LP data to reach the sender before TCP has sent that data
# itself. This peer answers a packet in a few ms (more on a slow machine) and falls behind
# a sender paced at the default rate by tens of segments; in the scenarios that must see
# bumps TCP is paced well below the peer's pace (bumped data costs TCP no time).
RC3_BUMP_SCENARIOS, RC3_BUMP_RATE = ("rc3_bump", "rc3_ack_mid_skb"), 40000
# The delay-stamp option (patches/0009): kind 253, RFC 6994 ExID.
DELAY_KIND, DELAY_EXID = 253, 0xD1A7
SO_MAX_PACING_RATE = 47
# delay_replay: the first echo names a t1 never sent (on an ACK of new data); at these data
# segments the peer first replays its last echo on DELAY_REPLAYS duplicate ACKs, more than
# the device-boundary path's TCP_DELAY_DEV_MISSES (64) unmatched samples in a row.
DELAY_REPLAY_AT, DELAY_REPLAYS = (12, 30), 70
# rc3_lp_ack_echo: before the client sends, the peer sends it PEER_SEGS segments of 100 bytes
# at RC3's DSCP, with t1 where the option was agreed: the client's ACKs of them go at that
# DSCP without TSopt, and must carry no echo either.
PEER_SEGS, PEER_SEG_BYTES = 4, 100
# rc3_copy_window: the client's receive buffer (SO_RCVBUF, so that its window is what the
# buffer holds, not the initial window), and the data the peer sends it while the client
# is bound by its congestion window: WINDOW_SEGS segments of WINDOW_SEG_BYTES. Its transfer
# is WINDOW_BYTES_FACTOR times --bytes, so that walks later than the first find a tail
# still to copy.
WINDOW_RCVBUF, WINDOW_SEGS, WINDOW_SEG_BYTES, WINDOW_BYTES_FACTOR = 8192, 2, 1000, 10
# rc3_tlp_below_skip: the client waits this long between its last write and its FIN, so
# that TCP reaches the skipped tail and its loss probe comes (after at most an RTO, 200 ms
# here) before TCP sends the FIN.
TLP_PAUSE_MS = 1500
# How many packets from the client may pass before a copy's window or ACK beyond TCP's
# counts (window_edge()): two CPUs can swap a copy and TCP's segment sent before it.
REORDER_SLACK = 16
# ... and its SACK blocks start this far above TCP's segments: a block over a segment TCP
# has in flight (sent, not yet seen by this slow peer) would newly SACK it, and the sender
# would leave the Open state, in which alone it sends loss probes (tcp_schedule_loss_probe()).
# TCP is paced at RC3_BUMP_RATE there, so that what it has in flight stays below the margin
# however far behind the peer runs (276 ms once in the x86_64 guest under TCG and KASAN:
# 11 KB at that rate, 69 KB at the default one, which went into SACK recovery instead).
TLP_SACK_MARGIN = 16 * 1448
# md5_syn_full: the listener's TCP-MD5 key for the peer (TCP_MD5SIG), and what it sends.
TCP_MD5SIG, MD5_KEY, MD5_BYTES = 14, "rfl-tcp-cc-md5", 30000


def pattern(n):
    """The bytes the client sends: a deterministic, position-dependent pattern."""
    block = hashlib.sha256(b"rfl-tcp-cc").digest() * 64
    return (block * (n // len(block) + 1))[:n]


def transfer(dst, port, cc, nbytes, max_rate, rc3=False, recv_first=0, rcvbuf=0, pause_ms=0):
    """One connection from the namespace under test: send the pattern, wait for the close.
    With recv_first, first read that many bytes from the peer; with rcvbuf, set SO_RCVBUF;
    with pause_ms, wait that long after the last write before the FIN. Whatever the peer
    sends after the pattern is read (and dropped) as it arrives."""
    data = pattern(nbytes)
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    if rc3:
        # Per socket (needs CAP_NET_ADMIN): the other scenarios keep the default, off.
        s.setsockopt(socket.IPPROTO_TCP, TCP_RC3, 1)
        # Room for the whole transfer at once, as RC3 assumes (the loop walks the send
        # buffer from its tail): with the default buffer, the write blocks every few skbs
        # and each push finds only the newest ones to copy.
        s.setsockopt(socket.SOL_SOCKET, 32, 4 << 20)  # SO_SNDBUFFORCE
    # A scripted peer in Python is slow: cap the sending rate (this also turns on TCP's
    # internal pacing) so that every controller's segments are answered as they arrive,
    # and a controller without slow start does not turn the peer's backlog into timeouts.
    s.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, max_rate)
    s.settimeout(20)
    try:
        s.connect((dst, port))
        got = 0
        if recv_first:
            # Out of the socket while the peer's segments arrive: a segment that finds
            # the socket owned by a reader is processed at its release, and that ACK goes
            # at the socket's own DSCP (docs/rc3.md); each is then ACKed as it arrives.
            time.sleep(0.3)
        while got < recv_first:
            chunk = s.recv(recv_first - got)
            if not chunk:
                break
            got += len(chunk)
        s.sendall(data)
        if pause_ms:
            time.sleep(pause_ms / 1000)
        s.shutdown(socket.SHUT_WR)
        while s.recv(4096):
            pass
        info = tcpinfo.get(s, ("total_retrans", "options"))
        cc_used = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16)
        return {"cc": cc_used.rstrip(b"\0").decode(), "total_retrans": info["total_retrans"],
                "options": info["options"], "sha256": hashlib.sha256(data).hexdigest()}
    finally:
        s.close()


def md5sig(peer_ip, key):
    """struct tcp_md5sig for TCP_MD5SIG: the peer's sockaddr_in in a sockaddr_storage, flags,
    prefix length, key length, ifindex, key[80]."""
    addr = struct.pack("=H", socket.AF_INET) + struct.pack("!H", 0) + socket.inet_aton(peer_ip)
    return addr.ljust(128, b"\0") + struct.pack("=BBHi", 0, 0, len(key), 0) + key.ljust(80, b"\0")


def serve(max_rate, port, cc, nbytes, peer_ip, key):
    """md5_syn_full's side in the namespace under test: listen with a TCP-MD5 key for the
    peer, answering the delay-stamp option (net.ipv4.tcp_delay_stamps 1 for the while), and
    send the pattern to the one connection. Prints {"listening": true} (or "skip" when the
    kernel has no TCP-MD5) before it accepts; returns the report."""
    knob = "/proc/sys/net/ipv4/tcp_delay_stamps"
    with open(knob) as f:
        saved = f.read().strip()
    ls = socket.socket()
    try:
        try:
            ls.setsockopt(socket.IPPROTO_TCP, TCP_MD5SIG, md5sig(peer_ip, key.encode()))
        except OSError as e:
            print(json.dumps({"skip": f"no TCP-MD5 in this kernel (TCP_MD5SIG: {e.strerror})"}),
                  flush=True)
            return None
        with open(knob, "w") as f:
            f.write("1")
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        ls.bind(("0.0.0.0", port))
        ls.listen(1)
        ls.settimeout(20)
        print(json.dumps({"listening": True}), flush=True)
        c, _ = ls.accept()
        data = pattern(nbytes)
        try:
            c.settimeout(20)
            c.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, max_rate)
            c.sendall(data)
            c.shutdown(socket.SHUT_WR)
            while c.recv(4096):
                pass
            info = tcpinfo.get(c, ("total_retrans", "options"))
            cc_used = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16)
        finally:
            c.close()
        return {"cc": cc_used.rstrip(b"\0").decode(), "total_retrans": info["total_retrans"],
                "options": info["options"], "sha256": hashlib.sha256(data).hexdigest()}
    finally:
        ls.close()
        with open(knob, "w") as f:
            f.write(saved)


def tcp_options(opts):
    """(kind, offset, length) of each option in a TCP header's option bytes, up to the end
    of the list or the first malformed length; a length may run past the end."""
    i = 0
    while i < len(opts):
        kind = opts[i]
        if kind == 0:
            return
        if kind == 1:
            i += 1
            continue
        if i + 1 >= len(opts) or opts[i + 1] < 2:
            return
        yield kind, i, opts[i + 1]
        i += opts[i + 1]


def tcpext():
    """The TcpExt counters of this process's network namespace, by name."""
    with open("/proc/net/netstat") as f:
        lines = [ln.split() for ln in f if ln.startswith("TcpExt:")]
    return {k: int(v) for k, v in zip(lines[0][1:], lines[1][1:])}


def client(args):
    """Serve the peer from inside the namespace under test, one request per stdin line:
    "run PORT CC BYTES RC3 RATE [RECV [RCVBUF PAUSE_MS]]" makes a transfer (TCP_RC3 set to
    RC3, paced at RATE bytes per second, 0: --max-rate; first reading RECV bytes; transfer()),
    "serve PORT CC BYTES PEER
    KEY" accepts one (serve(): a line when it listens, then the report), and each reports
    it with the TcpExt counters read before and after it. Each answer is one JSON line.
    (One process for every exchange: Python starts slowly in UML.)"""
    for line in sys.stdin:
        words = line.split()
        try:
            if len(words) in (6, 7, 9) and words[0] == "run":
                before = tcpext()
                extra = [int(w) for w in words[6:]]
                reply = transfer(args.dst, int(words[1]), words[2], int(words[3]),
                                 int(words[5]) or args.max_rate, words[4] == "1", *extra)
                after = tcpext()
                reply["tcpext"] = {k: after[k] - before.get(k, 0) for k in after}
            elif len(words) == 6 and words[0] == "serve":
                before = tcpext()
                reply = serve(args.max_rate, int(words[1]), words[2], int(words[3]), words[4],
                              words[5])
                if reply is None:
                    continue
                after = tcpext()
                reply["tcpext"] = {k: after[k] - before.get(k, 0) for k in after}
            else:
                reply = {"error": f"unknown request {line.strip()!r}"}
        except Exception as e:  # the peer reports it with the exchange
            reply = {"error": repr(e)}
        print(json.dumps(reply), flush=True)


class DutClient:
    """The client process in the namespace under test (pktpeer.py client)."""

    def __init__(self, ns, dst):
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, os.path.abspath(__file__), "client",
             "--dst", dst], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def request(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def fileno(self):
        return self.proc.stdout.fileno()

    def reply(self, timeout):
        """The answer to the last request, or None if none came within timeout s."""
        r, _, _ = select.select([self.proc.stdout], [], [], max(0, timeout))
        line = self.proc.stdout.readline() if r else ""
        return json.loads(line) if line else None

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


class Ipv4:
    """The fields of a received IPv4 packet the peer reads (from an Ethernet frame)."""
    __slots__ = ("tos", "len", "ihl", "proto", "src", "dst", "payload")

    def __init__(self, packet):
        ver_ihl, self.tos, self.len = struct.unpack_from("!BBH", packet)
        self.ihl = ver_ihl & 0xF
        self.proto = packet[9]
        self.src = socket.inet_ntoa(packet[12:16])
        self.dst = socket.inet_ntoa(packet[16:20])
        self.payload = packet[self.ihl * 4:self.len]


class PacketSocket:
    """An AF_PACKET socket on the peer's interface for IPv4 frames: what it receives with
    the kernel's receive time (to measure how far behind the peer runs), what it sends as
    written. Plain struct work: a scapy dissection per packet cost the peer several ms in
    the x86_64 guest (TCG, KASAN), enough for a paced sender to get ahead of its ACKs."""
    ETH_P_IP, PACKET_OUTGOING, SO_TIMESTAMPNS = 0x0800, 4, 35

    def __init__(self, iface):
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(self.ETH_P_IP))
        self.sock.bind((iface, self.ETH_P_IP))
        # RC3 sends its copies of the tail in one unpaced burst: room for all of it while
        # the peer answers packet by packet.
        self.sock.setsockopt(socket.SOL_SOCKET, 33, 4 << 20)  # SO_RCVBUFFORCE
        self.sock.setsockopt(socket.SOL_SOCKET, self.SO_TIMESTAMPNS, 1)
        self.mac = self.sock.getsockname()[4]

    def fileno(self):
        return self.sock.fileno()

    def recv(self):
        """(source MAC, Ipv4, ns the packet waited in the socket) of the next incoming
        IPv4 frame, or None for one this host sent or one too short."""
        frame, anc, _, addr = self.sock.recvmsg(65536, 64)
        if addr[2] == self.PACKET_OUTGOING or len(frame) < 34:
            return None
        waited = 0
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == self.SO_TIMESTAMPNS and len(data) >= 16:
                sec, nsec = struct.unpack_from("=qq", data)
                waited = max(0, time.time_ns() - (sec * 1_000_000_000 + nsec))
        return frame[6:12], Ipv4(frame[14:]), waited

    def drops(self):
        """Frames this socket dropped since it was opened (PACKET_STATISTICS: a full
        receive buffer)."""
        return struct.unpack("II", self.sock.getsockopt(263, 6, 8))[1]

    def send(self, src_mac, dst_mac, src_ip, dst_ip, tos, l4):
        """One IPv4 frame (TTL 64, no fragmentation) carrying the TCP bytes l4."""
        hdr = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(l4), 1, 0, 64, 6, 0,
                          socket.inet_aton(src_ip), socket.inet_aton(dst_ip))
        hdr = hdr[:10] + struct.pack("!H", checksum(hdr)) + hdr[12:]
        self.sock.send(dst_mac + src_mac + struct.pack("!H", self.ETH_P_IP) + hdr + l4)

    def close(self):
        self.sock.close()


class Peer:
    def __init__(self, args):
        self.args = args
        self.sock = PacketSocket(args.iface)
        self.mac = self.sock.mac
        self.lag_max_ns = 0      # the longest a packet waited in the socket for the peer
        self.dut_mac = None
        self.rng = random.Random(args.seed)
        self.iss = self.rng.randrange(1 << 32)
        self.snd_nxt = self.iss
        self.irs = None          # client's initial sequence number
        self.rcv_nxt = None
        self.ooo = {}            # seq -> payload, above rcv_nxt
        self.received = bytearray()
        self.highest_end = None  # highest sequence number seen + 1 (the client's snd_nxt)
        self.ecn = False
        self.ece_until_cwr = False
        self.saw_cwr = 0
        self.segments = 0
        self.retransmissions = 0
        self.hole = None         # sequence number of the segment being withheld
        self.hole_done = False
        self.fin_seen = False
        self.done = False
        self.ts_val = 1
        self.peer_ts = 0
        self.bad_index = 0
        self.special_sent = False
        self.delay_offered = False   # the client's SYN offered the delay-stamp option
        self.delay_ok = False        # ... and the SYN-ACK answered it
        self.delay_data_opts = 0     # data segments that carried t1
        self.delay_pending = None    # (t1, t2) of the newest in-order segment
        self.delay_echoes = 0        # echoes sent (bad ones in delay_bad)
        self.delay_forged = 0        # delay_replay: echoes of a t1 never sent (among those)
        self.delay_replays = 0       # ... and echoes replayed on duplicate ACKs (not among them)
        self.replay_echo = None      # ... (t1, t2) of the last echo of a t1 the sender sent
        self.lp_acks = 0             # pure ACKs from the client at a DSCP other than 0
        self.peer_data_first_ack = None  # rc3_lp_ack_echo: what first ACKed the peer's data
        self.peer_data_first_ack_ok = False
        self.peer_data_sent_at = None
        self.lp_ack_echoes = 0       # ... with a delay-stamp echo
        self.peer_data_sent = 0      # rc3_lp_ack_echo: bytes the peer sent to the client
        self.lport = args.port       # the peer's port (md5_syn_full: its own, it connects)
        self.md5_key = None          # md5_syn_full: every segment signed with it
        self.synack = None           # md5_syn_full: what the SYN-ACK's options held
        self.fuzzed_acks = 0         # ACKs whose options were drawn at random (options_fuzz)
        self.fuzz_rng = random.Random(args.seed * 1000003 + args.port)
        self.window = 65535          # the window field of ACKs (scaled by 7 after the SYN)
        # RC3: low-priority (LP) segments, told by their DS field, and what TCP's own
        # (DSCP 0) segments show of its snd_nxt (highest_end, above).
        self.lp_segments = 0
        self.lp_bytes = 0
        self.lp_dscps = set()
        self.lp_bad = 0              # LP segments with an ECN codepoint or a timestamp
        self.lp_end = None           # highest end of LP data seen
        self.jumps = []              # (from, to): TCP's next segment started above its snd_nxt
        self.bumped_resent = 0       # TCP segments overlapping a jump: data sent after a bump
        self.jumps_unheld = 0        # jumps over data the peer did not hold (a bad skip)
        self.dup_bytes = 0           # TCP payload the peer already held (from LP copies)
        self.hostile = []            # ACKs the scenario sent beyond what the sender may take
        self.hostile_lp_end = None   # lp_end when they were sent
        self.mid = None              # rc3_ack_mid_skb: where the peer cut an LP segment
        self.peer_fin = False        # rc3_ack_unsent_fin: the peer closed first (see exchange)
        # The right edge of the client's receive window (ACK + scaled window) offered by
        # its own segments (DSCP 0), the highest so far, and the LP copies offering more.
        self.dut_wscale = 0
        self.normal_edge = None
        self.lp_edges_beyond = []    # how far beyond normal_edge each such copy reached
        self.normal_ack = None       # the highest ACK of TCP's own segments
        self.lp_acks_beyond = 0      # copies ACKing more than TCP's own segments had
        # A copy and TCP's segment sent just before it may arrive swapped (on two CPUs,
        # veth queues them on two backlogs): a copy beyond TCP counts only if none of the
        # next REORDER_SLACK packets from TCP offers as much. [kind, value, packets left]
        self.lp_pending = []
        # rc3_copy_window's steps (tick()): 0 hold the ACKs of the client's data; 1 its data
        # sent to the client; 2 a duplicate ACK sent, after the client read it; 3 ACK all.
        self.window_step, self.window_step_at = 0, None
        self.window_lp_before_dup = 0
        self.window_lp_after_read = 0    # LP copies sent on the duplicate ACK's walk
        # rc3_tlp_below_skip: the loss probe TCP sent once the peer held every byte, and
        # whether the peer has answered it (then it ACKs everything, uncapped).
        self.last_tcp_retrans = False
        self.tcp_newest = None       # (seq, end) of TCP's newest segment
        self.tlp_probe = None
        self.tlp_released = False
        self.tlp_sacked_all = False  # an ACK has SACKed every byte beyond TCP's segments
        self.tlp_held_acks = 0       # ACKs that left the newest segment of TCP unACKed

    # -- output ----------------------------------------------------------------------
    def ack_seq(self):
        """The cumulative ACK: rcv_nxt, or in the capped RC3 scenarios at most the sender's
        snd_nxt as its own segments show it."""
        if self.rcv_nxt is None:
            return 0
        capped = self.args.scenario in RC3_CAPPED or \
            (self.args.scenario == "rc3_tlp_below_skip" and not self.tlp_released)
        if capped and ((self.rcv_nxt - self.highest_end) & 0xFFFFFFFF) in range(1, 1 << 31):
            return self.highest_end
        return self.rcv_nxt

    def send(self, flags, options=b"", ece=False, ack=None, window=None, payload=b"", tos=0):
        a = self.args
        if self.md5_key:
            # The TCP-MD5 option last, after NOPs that align it (RFC 2385), signed below.
            options += b"\x01" * (-(len(options) + 18) % 4) + b"\x13\x12" + b"\0" * 16
        dataofs = (20 + len(options)) // 4
        flag_bits = flags | (0x40 if ece else 0)
        ack = self.ack_seq() if ack is None else ack
        hdr = struct.pack("!HHIIBBHHH", self.lport, self.cport, self.snd_nxt & 0xFFFFFFFF,
                          ack & 0xFFFFFFFF, dataofs << 4, flag_bits,
                          self.window if window is None else window, 0, 0) + options
        pseudo = socket.inet_aton(a.ip) + socket.inet_aton(a.dut_ip) + struct.pack(
            "!BBH", 0, 6, len(hdr) + len(payload))
        if self.md5_key:
            # Pseudo-header, the fixed header with a zero checksum, the data, the key.
            digest = hashlib.md5(pseudo + hdr[:20] + payload + self.md5_key).digest()
            hdr = hdr[:-16] + digest
        csum = checksum(pseudo + hdr + payload)
        hdr = hdr[:16] + struct.pack("!H", csum) + hdr[18:]
        self.sock.send(self.mac, self.dut_mac, a.ip, a.dut_ip, tos, hdr + payload)

    def ts_opt(self):
        self.ts_val += 1
        return b"\x01\x01\x08\x0a" + struct.pack("!II", self.ts_val, self.peer_ts)

    def sack_opt(self, blocks):
        if not blocks:
            return b""
        body = b"".join(struct.pack("!II", l & 0xFFFFFFFF, r & 0xFFFFFFFF) for l, r in blocks)
        return b"\x01\x01\x05" + bytes([2 + len(body)]) + body

    def sack_blocks(self):
        """Contiguous ranges held above the cumulative ACK, highest first (RFC 2018 puts the
        newest first)."""
        ranges = []
        if self.ack_seq() != self.rcv_nxt:  # capped: what it holds above the ACK
            start = self.ack_seq()
            if self.args.scenario == "rc3_tlp_below_skip":
                start = (start + TLP_SACK_MARGIN) & 0xFFFFFFFF
            if ((self.rcv_nxt - start) & 0xFFFFFFFF) in range(1, 1 << 31):
                ranges.append([start, self.rcv_nxt])
        for seq in sorted(self.ooo):
            end = seq + len(self.ooo[seq])
            if ranges and seq <= ranges[-1][1]:
                ranges[-1][1] = max(ranges[-1][1], end)
            else:
                ranges.append([seq, end])
        return [tuple(r) for r in reversed(ranges)][:3]

    def bad_option(self):
        """Malformed or unusual options, in rotation; each must be ignored by the receiver."""
        cases = [
            b"\x05\x03\x00\x00",            # SACK with a length that holds no block
            b"\x08\x02\x00\x00",            # timestamp option with length 2
            b"\x1e\xff\x00\x00",            # MPTCP kind with a length past the header
            b"\xfd\x02\x00\x00",            # experimental kind 253 without its ExID
            b"\xfe\x08\x12\x34\xde\xad\xbe\xef",  # experimental kind 254, unknown ExID
            b"\x05\x0a\x00\x00\x00\x01\x00\x00",  # SACK length 10 in 8 bytes: truncated
            b"\x02\x00\x00\x00",            # MSS with length 0 (would loop a naive parser)
            b"\x01" * 40,                   # 40 NOPs: the longest option space
        ]
        opt = cases[self.bad_index % len(cases)]
        self.bad_index += 1
        return (opt + b"\x00" * 3)[: (len(opt) + 3) // 4 * 4]

    def fuzz_options(self, room):
        """Random options for options_fuzz, at most `room` bytes: a grammar over what the
        kernel's parser meets (SACK blocks with arbitrary edges, lengths of 0, 1 and past
        the header, unknown and experimental kinds, the delay-stamp option in every length
        with arbitrary stamps, EOL and NOP runs). It never writes a timestamp option (kind
        8), nor a byte 8 where a short length could make the parser read one: a random
        TSval that the receiver took would fail every later ACK's PAWS check, and the test
        is about parsing, not about a connection the peer itself broke."""
        r = self.fuzz_rng

        def byte():
            return r.randrange(256)

        def u32():
            return bytes(byte() for _ in range(4))

        out = b""
        while len(out) < room:
            left = room - len(out)
            pick = r.randrange(10)
            if pick == 0:
                opt = b"\x00" + bytes(byte() for _ in range(r.randrange(left)))  # EOL, then junk
            elif pick == 1:
                opt = b"\x01" * r.randrange(1, 5)
            elif pick == 2:  # SACK: up to 4 blocks, edges near what was sent or anywhere
                blocks = b""
                base = self.highest_end or 0
                for _ in range(r.randrange(5)):
                    if r.randrange(2):
                        lo = (base + r.randrange(-200000, 200000)) & 0xFFFFFFFF
                        hi = (lo + r.randrange(-3000, 30000)) & 0xFFFFFFFF
                        edges = struct.pack("!II", lo, hi)
                    else:
                        edges = u32() + u32()
                    blocks += edges
                length = 2 + len(blocks) if r.randrange(4) else r.randrange(256)
                opt = bytes([5, length]) + blocks
            elif pick in (3, 4):  # the delay-stamp option, any length, any stamps
                body = struct.pack("!H", DELAY_EXID if r.randrange(4) else r.randrange(65536))
                n = r.choice((0, 2, 4, 12, 16, r.randrange(20)))
                body += bytes(byte() for _ in range(n))
                length = 2 + len(body) if r.randrange(4) else r.randrange(256)
                opt = bytes([DELAY_KIND, length]) + body
            elif pick == 5 and self.delay_pending is not None and self.delay_ok:
                # A well-formed echo whose stamps are off by arbitrary amounts.
                t1, t2 = self.delay_pending
                opt = self.delay_echo(t1 + r.choice((0, 1, -1, 1 << 31, r.randrange(1 << 32))),
                                      t2 + r.randrange(1 << 32),
                                      r.choice((0, 0x7FFFFFFF, 0xFFFFFFFF, r.randrange(1 << 32))),
                                      hw=r.choice((None, r.randrange(1 << 32))))
            elif pick == 6:  # a silly length: 0 or 1 (the parser must stop), or too long
                opt = bytes([r.choice((2, 3, 5, 30, 34, 99, DELAY_KIND, 254)),
                             r.choice((0, 1, left + 1, 255))])
            else:  # any other kind, any length, any body
                kind = r.choice((2, 3, 4, 6, 7, 9, 15, 19, 27, 28, 29, 30, 34, 76, 254, 255,
                                 r.randrange(9, 256)))
                body = bytes(byte() for _ in range(r.randrange(min(left, 12) + 1)))
                length = 2 + len(body) if r.randrange(3) else r.randrange(256)
                opt = bytes([kind, length]) + body
            out += bytes(9 if b == 8 else b for b in opt)  # see above: never a byte 8, anywhere
        return out[:room]

    def delay_echo(self, t1, t2, hold, hw=None):
        """An echo; with `hw`, the 20-byte form that adds a hardware receive stamp t2'
        (patches/0016), which a sender without hardware stamps must take as the
        16-byte one."""
        if hw is None:
            return struct.pack("!BBHIII", DELAY_KIND, 16, DELAY_EXID, t1 & 0xFFFFFFFF,
                               t2 & 0xFFFFFFFF, hold & 0xFFFFFFFF)
        return struct.pack("!BBHIIII", DELAY_KIND, 20, DELAY_EXID, t1 & 0xFFFFFFFF,
                           t2 & 0xFFFFFFFF, hold & 0xFFFFFFFF, hw & 0xFFFFFFFF)

    def delay_opt(self):
        """The echo of the newest in-order segment's stamps (delay_stamps), or a malformed,
        misplaced, implausible or repeated one (delay_bad), each of which the sender must
        count and ignore."""
        t1, t2 = self.delay_pending
        hold = (time.time_ns() - t2) & 0x7FFFFFFF
        if self.args.scenario == "delay_stamps":
            # Every other echo in the hardware form: valid too, its t2' unused here.
            hw = time.time_ns() if self.delay_echoes % 2 else None
            return self.delay_echo(t1, t2, hold, hw=hw)
        if self.args.scenario == "delay_replay":
            if not self.delay_forged:
                # A plausible t1 the sender never sent, on the ACK of the data it sent.
                self.delay_forged = 1
                return self.delay_echo(t1 - 4096, t2, hold)
            self.replay_echo = (t1, t2)
            return self.delay_echo(t1, t2, hold)
        cases = [
            struct.pack("!BBHH", DELAY_KIND, 6, DELAY_EXID, 0) + b"\x01\x01",  # no such length
            self.delay_echo(t1 + (1 << 31), t2, hold),       # t1 the sender never sent
            self.delay_echo(t1, t2, 0x7FFFFFFF),             # hold longer than the RTT
            struct.pack("!BBH", DELAY_KIND, 4, DELAY_EXID),  # the SYN form after the SYN
            struct.pack("!BBHI", DELAY_KIND, 8, DELAY_EXID, t1) * 2,  # two in one header
        ]
        opt = cases[self.delay_echoes % len(cases)]
        return opt

    def ack(self):
        a = self.args
        opts = self.ts_opt() if self.peer_ts else b""
        blocks = self.sack_blocks()
        if a.scenario == "sack_beyond_snd_nxt" and self.highest_end is not None and \
                self.segments > 5:
            # A block beyond anything sent: the receiver must discard it.
            blocks = [(self.highest_end + 20000, self.highest_end + 30000)] + blocks[:1]
        opts += self.sack_opt(blocks)
        if self.delay_ok and self.delay_pending is not None and a.scenario != "options_fuzz":
            echo = self.delay_opt()
            if len(opts) + len(echo) <= 40:  # else it waits, as the kernel's receiver does
                opts += echo
                self.delay_echoes += 1
                self.delay_pending = None
        if a.scenario == "bad_options":
            opts += self.bad_option()
        if a.scenario == "options_fuzz":
            # The timestamp stays first and valid; the rest of the space is random.
            ts = self.ts_opt() if self.peer_ts else b""
            opts = ts + self.fuzz_options(40 - len(ts))
            opts = opts[: len(opts) // 4 * 4]
            self.fuzzed_acks += 1
        opts = opts[:20 if self.md5_key else 40]
        self.send(0x10, opts, ece=self.ece_until_cwr)

    def replay(self):
        """delay_replay: the last echo again, with its hold grown by the time since, on
        duplicate ACKs sent while the sender has data in flight (the segment that just
        came, not yet ACKed): none may give a sample."""
        t1, t2 = self.replay_echo
        for _ in range(DELAY_REPLAYS):
            self.send(0x10, (self.ts_opt() if self.peer_ts else b"") +
                      self.delay_echo(t1, t2, (time.time_ns() - t2) & 0x7FFFFFFF))
            self.delay_replays += 1

    def send_peer_data(self):
        """rc3_lp_ack_echo: PEER_SEGS segments to the client at RC3's DSCP, as its loop
        sends them (no timestamp, so the receiver takes its slow path, where it notes the
        DSCP), but with t1 where the option was agreed (an RC3 sender leaves it off; a peer
        need not): the client ACKs each (quick ACKs) at that DSCP."""
        self.peer_data_sent_at = time.monotonic()
        for i in range(PEER_SEGS):
            opts = b""
            if self.delay_ok:
                opts += struct.pack("!BBHI", DELAY_KIND, 8, DELAY_EXID,
                                    (time.time_ns() + i) & 0xFFFFFFFF)
            self.send(0x18, opts, payload=bytes([0x41 + i]) * PEER_SEG_BYTES, tos=RC3_DSCP << 2)
            self.snd_nxt = (self.snd_nxt + PEER_SEG_BYTES) & 0xFFFFFFFF
            self.peer_data_sent += PEER_SEG_BYTES

    # -- input -----------------------------------------------------------------------
    def handle(self, ip, tcp_bytes):
        a = self.args
        sport, dport, seq, ack, off, flags = struct.unpack_from("!HHIIBB", tcp_bytes)
        if dport != self.lport:
            return
        doff = (off >> 4) * 4
        opts = tcp_bytes[20:doff]
        payload = tcp_bytes[doff:ip.len - ip.ihl * 4]
        self.parse_ts(opts)
        delay = self.delay_options(opts)
        acked = (ack - self.iss - 1) & 0xFFFFFFFF
        if self.peer_data_sent and self.peer_data_first_ack is None and flags & 0x10 and \
                acked in range(1, self.peer_data_sent + 1):
            after_ms = (time.monotonic() - self.peer_data_sent_at) * 1000
            self.peer_data_first_ack = ("data" if payload else "pure ACK") + \
                f" at DSCP {ip.tos >> 2}, {acked // PEER_SEG_BYTES} of {PEER_SEGS} segments, " \
                f"{after_ms:.0f} ms after they left"
            # RC3's rule (tcp_rc3_ack_dsfield()): a segment's pure ACK goes at its DSCP
            # unless an ACK of earlier data is pending, which then covers it at the
            # socket's own; and a delayed ACK (the timer's) goes at the socket's own.
            self.peer_data_first_ack_ok = bool(payload) or ip.tos >> 2 != 0 or \
                acked > PEER_SEG_BYTES or after_ms >= 30
        if flags & 0x10 and not flags & 0x02 and self.rcv_nxt is not None:
            self.window_edge(ack, struct.unpack_from("!H", tcp_bytes, 14)[0], ip.tos >> 2,
                             bool(payload))
        if not payload and not flags & 0x07 and ip.tos >> 2:
            self.lp_acks += 1
            if 16 in delay or 20 in delay:
                self.lp_ack_echoes += 1
        if flags & 0x02:  # SYN
            self.cport = sport
            self.irs = seq
            self.rcv_nxt = (seq + 1) & 0xFFFFFFFF
            self.highest_end = self.rcv_nxt
            self.ecn = bool(flags & 0x40 and flags & 0x80)
            syn_opts = b"\x02\x04\x05\xb4" + b"\x01\x03\x03\x07" + b"\x04\x02" + \
                (b"\x08\x0a" + struct.pack("!II", self.ts_val, self.peer_ts) if self.peer_ts else b"\x01\x01")
            self.delay_offered = 4 in delay
            for kind, i, n in tcp_options(opts):
                if kind == 3 and n == 3 and i + 3 <= len(opts):
                    self.dut_wscale = min(opts[i + 2], 14)
            self.delay_ok = self.delay_offered and a.scenario in (
                "delay_stamps", "delay_bad", "delay_replay", "options_fuzz", "rc3_lp_ack_echo")
            if self.delay_ok:
                syn_opts += struct.pack("!BBH", DELAY_KIND, 4, DELAY_EXID)
            self.snd_nxt = self.iss
            self.send(0x12, syn_opts.ljust((len(syn_opts) + 3) // 4 * 4, b"\x01"), ece=self.ecn,
                      window=65535)
            self.snd_nxt = (self.iss + 1) & 0xFFFFFFFF
            if a.scenario == "ecn_echo":
                # At most about 8 KB in flight (64 << 7), so that the sender still has new
                # data to send, which must carry CWR, when the echoes begin at the 10th
                # segment, however fast it is (a debug kernel once had the whole 100 KB
                # out before the first ECE).
                self.window = 64
            if a.scenario == "rc3_ack_unsent_data":
                # The loop sends nothing beyond the window: after the SYN-ACK's 64 KB (what
                # the loop sends at the first push), 39936 bytes from snd_una keep the
                # tail unsent by the loop until TCP itself is within 40 KB of it.
                self.window = 312
            return
        if self.rcv_nxt is None:
            return
        if a.scenario == "rc3_lp_ack_echo" and not self.peer_data_sent and flags & 0x10:
            # The handshake's ACK: the client reads this before it sends.
            self.send_peer_data()
        if flags & 0x80:
            self.saw_cwr += 1
            self.ece_until_cwr = False
        if payload or flags & 0x01:
            end = (seq + len(payload) + (flags & 0x01)) & 0xFFFFFFFF
            if ip.tos >> 2:
                self.lp_segment(ip, opts, seq, end)
            else:
                self.tcp_segment(seq, end, len(payload))
        if payload:
            self.segments += 1
            if 8 in delay:
                self.delay_data_opts += 1
                if seq == self.rcv_nxt:
                    self.delay_pending = (delay[8], time.time_ns())
            self.data(seq, payload, bool(ip.tos >> 2))
        if flags & 0x01:  # FIN
            if seq == self.rcv_nxt or (seq + len(payload)) == self.rcv_nxt:
                if not self.fin_seen:
                    self.fin_seen = True
                    self.rcv_nxt = (self.rcv_nxt + 1) & 0xFFFFFFFF
                    if self.peer_fin:
                        self.ack()
                    else:
                        self.send(0x11)  # FIN|ACK
                        self.snd_nxt = (self.snd_nxt + 1) & 0xFFFFFFFF
                else:
                    self.ack()
            return
        if flags & 0x10 and self.fin_seen and not payload:
            self.done = True

    def lp_segment(self, ip, opts, seq, end):
        """A low-priority copy (RC3): never a FIN, Not-ECT, no timestamp (patch 0012)."""
        self.lp_segments += 1
        self.lp_bytes += (end - seq) & 0xFFFFFFFF
        self.lp_dscps.add(ip.tos >> 2)
        if ip.tos & 3 or b"\x08\x0a" in opts:
            self.lp_bad += 1
        if self.lp_end is None or ((end - self.lp_end) & 0xFFFFFFFF) in range(1, 1 << 31):
            self.lp_end = end

    def tcp_segment(self, seq, end, nbytes):
        """One of TCP's own segments: follow its snd_nxt. A segment starting above it means
        TCP skipped data (an ACK bump made it sent, or the peer had SACKed the loop's copy
        of it, patch 0022: then the peer must hold all of it); one overlapping such a gap
        later sent skipped data again."""
        gap = (seq - self.highest_end) & 0xFFFFFFFF
        if 0 < gap < 1 << 31:
            self.jumps.append((self.highest_end, seq))
            if ((seq - self.rcv_nxt) & 0xFFFFFFFF) in range(1, 1 << 31):
                self.jumps_unheld += 1
        elif gap and any(((seq - lo) & 0xFFFFFFFF) < ((hi - lo) & 0xFFFFFFFF) or
                         ((lo - seq) & 0xFFFFFFFF) < ((end - seq) & 0xFFFFFFFF)
                         for lo, hi in self.jumps):
            self.bumped_resent += 1
        self.last_tcp_retrans = False
        if ((end - self.highest_end) & 0xFFFFFFFF) in range(1, 1 << 31):
            self.highest_end = end
            self.tcp_newest = (seq, end)
        elif nbytes:
            # Nothing above what was already sent: a retransmission.
            self.retransmissions += 1
            self.last_tcp_retrans = True

    @staticmethod
    def delay_options(opts):
        """The delay-stamp options in a header: {length: first 32-bit field or None}."""
        found = {}
        for kind, i, n in tcp_options(opts):
            if kind == DELAY_KIND and n >= 4 and i + n <= len(opts) and \
                    struct.unpack_from("!H", opts, i + 2)[0] == DELAY_EXID:
                found[n] = struct.unpack_from("!I", opts, i + 4)[0] if n >= 8 else None
        return found

    def parse_ts(self, opts):
        for kind, i, n in tcp_options(opts):
            if kind == 8 and n == 10 and i + 10 <= len(opts):
                self.peer_ts = struct.unpack_from("!I", opts, i + 2)[0]

    def data(self, seq, payload, lp):
        a = self.args
        end = (seq + len(payload)) & 0xFFFFFFFF
        if a.scenario == "delay_replay" and self.replay_echo and \
                self.segments in DELAY_REPLAY_AT:
            self.replay()
        # Scenario-driven drops and extra ACKs.
        if a.scenario in ("sack_hole", "sack_beyond_snd_nxt", "ack_beyond_snd_nxt") and \
                self.hole is None and self.segments == 10:
            self.hole = seq
            if a.scenario == "ack_beyond_snd_nxt":
                # An ACK for data never sent. If the sender took it, it would never
                # retransmit the segment withheld here and the transfer could not finish.
                saved = self.rcv_nxt
                self.rcv_nxt = (self.highest_end + 100000) & 0xFFFFFFFF
                self.send(0x10, self.ts_opt() if self.peer_ts else b"")
                self.rcv_nxt = saved
                self.special_sent = True
            self.ack()
            return
        if a.scenario == "ecn_echo" and self.ecn and self.segments == 10:
            self.ece_until_cwr = True
        if a.scenario == "rc3_ack_mid_skb" and lp and self.mid is None and \
                end == (self.irs + 1 + a.bytes) & 0xFFFFFFFF and len(payload) > 1:
            # A TSO skb the loop sent leaves as several packets, and the network may drop
            # some: the ACK then ends inside the skb. The peer keeps the first half of the
            # last LP packet, so that its ACK ends inside an skb whatever the skbs' sizes,
            # in the data TCP reaches last.
            payload = payload[:len(payload) // 2]
            end = self.mid = (seq + len(payload)) & 0xFFFFFFFF
        # Segments may overlap what is held (LP copies, TCP's own, a cut one): take the
        # bytes past rcv_nxt, keep what lies above it.
        off = (self.rcv_nxt - seq) & 0xFFFFFFFF
        if off < len(payload):
            self.received += payload[off:]
            self.rcv_nxt = end
            self.absorb()
        elif off < 1 << 31:
            if not lp:
                self.dup_bytes += len(payload)
        elif len(payload) > len(self.ooo.get(seq, b"")):
            self.ooo[seq] = payload
        if not self.hostile:
            self.hostile_ack()
        if a.scenario == "rc3_copy_window" and self.window_step < 3:
            return  # tick() decides when the client's data is ACKed
        if a.scenario == "rc3_tlp_below_skip" and self.tlp_hold(seq, end, lp):
            return
        self.ack()

    def window_edge(self, ack, window, dscp, payload):
        """Follow the right edge of the window the client offers: its own segments' edges,
        and LP copies that offer more than any of those did (a copy may be dropped: what
        it offers, TCP must also have offered), or whose ACK is beyond TCP's."""
        edge = (ack + (window << self.dut_wscale)) & 0xFFFFFFFF

        def above(x, ref):
            return ref is not None and ((x - ref) & 0xFFFFFFFF) in range(1, 1 << 31)

        for p in self.lp_pending:
            p[2] -= 1
        if not (dscp and payload):  # TCP's own (an LP ACK too: RC3's receiver sends it)
            if self.normal_edge is None or above(edge, self.normal_edge):
                self.normal_edge = edge
            if self.normal_ack is None or above(ack, self.normal_ack):
                self.normal_ack = ack
            self.lp_pending = [p for p in self.lp_pending if above(
                p[1], self.normal_edge if p[0] == "edge" else self.normal_ack)]
        else:
            if above(ack, self.normal_ack):
                self.lp_pending.append(["ack", ack, REORDER_SLACK])
            if above(edge, self.normal_edge):
                self.lp_pending.append(["edge", edge, REORDER_SLACK])
        for p in self.lp_pending:
            if p[2] <= 0:
                self.settle(p)
        self.lp_pending = [p for p in self.lp_pending if p[2] > 0]

    def settle(self, p):
        """A copy's window or ACK beyond TCP's, not explained by reordering."""
        if p[0] == "ack":
            self.lp_acks_beyond += 1
        else:
            self.lp_edges_beyond.append((p[1] - self.normal_edge) & 0xFFFFFFFF)

    def tick(self):
        """rc3_copy_window's steps, in time. The client's congestion window holds its data
        back once the peer stops ACKing it; its loop copies the tail. Then the peer's data
        reaches the client, whose ACKs of it (DSCP 0) offer its window with that data held;
        the application reads it, which opens the window by less than a read must to send
        an update (tcp_cleanup_rbuf()); a duplicate ACK gives the loop a walk while TCP still
        cannot send; its copies must offer no more than TCP did. Then the peer ACKs all."""
        a = self.args
        if a.scenario != "rc3_copy_window" or self.rcv_nxt is None:
            return
        now = time.monotonic()
        step = self.window_step
        if step == 0 and self.segments >= 10 and self.lp_segments and \
                now - self.last_rx_at > 0.03:
            for i in range(WINDOW_SEGS):
                self.send(0x18, self.ts_opt() if self.peer_ts else b"", ack=self.irs + 1,
                          payload=bytes([0x61 + i]) * WINDOW_SEG_BYTES)
                self.snd_nxt = (self.snd_nxt + WINDOW_SEG_BYTES) & 0xFFFFFFFF
        elif step == 1 and now - self.window_step_at > 0.06:
            self.window_lp_before_dup = self.lp_segments
            self.send(0x10, self.ts_opt() if self.peer_ts else b"", ack=self.irs + 1)
        elif step == 2 and now - self.window_step_at > 0.04:
            self.window_lp_after_read = self.lp_segments - self.window_lp_before_dup
            self.ack()
        else:
            return
        self.window_step, self.window_step_at = step + 1, now

    def tlp_hold(self, seq, end, lp):
        """rc3_tlp_below_skip, once the peer holds every byte (the loop's copies of the tail
        and TCP's own segments) and one ACK has SACKed all of it beyond TCP's segments: the
        ACK of TCP's newest segment is lost, so when TCP has taken the SACKed tail without
        sending it, its loss probe retransmits that segment, below the tail. Each ACK until
        then covers what TCP sent before its newest segment, without SACK blocks (which
        could cover TCP's segments in flight and have RACK mark the newest lost); the
        probe's ACK covers everything and DSACKs the probe (the original had arrived).
        True if the ACK was handled here."""
        a = self.args
        data_end = (self.irs + 1 + a.bytes) & 0xFFFFFFFF
        if self.tlp_released or self.rcv_nxt != data_end:
            return False
        if not self.tlp_sacked_all:
            self.tlp_sacked_all = True
            return False
        ts = self.ts_opt() if self.peer_ts else b""
        if not lp and self.last_tcp_retrans:
            self.tlp_probe = (seq, end)
            self.tlp_released = True
            self.send(0x10, ts + self.sack_opt([(seq, end)]))
            return True
        if lp or self.tcp_newest is None:
            return True
        self.send(0x10, ts, ack=self.tcp_newest[0])
        self.tlp_held_acks += 1
        return True

    def absorb(self):
        """Move what the out-of-order queue holds up to rcv_nxt into the stream."""
        while True:
            for seq, p in self.ooo.items():
                off = (self.rcv_nxt - seq) & 0xFFFFFFFF
                if off < 1 << 31:
                    break
            else:
                return
            del self.ooo[seq]
            if off < len(p):
                self.received += p[off:]
                self.rcv_nxt = (seq + len(p)) & 0xFFFFFFFF

    def hostile_ack(self):
        """The hostile RC3 scenarios' ACKs, once the peer holds LP data beyond snd_nxt (so
        that the sender's send head is an skb the loop sent, where a bump would start)."""
        a = self.args
        data_end = (self.irs + 1 + a.bytes) & 0xFFFFFFFF
        beyond = ((self.rcv_nxt - self.highest_end) & 0xFFFFFFFF) in range(1, 1 << 31)
        if a.scenario == "rc3_ack_beyond_write_seq" and beyond and self.rcv_nxt == data_end:
            # It holds every byte: ACK past write_seq (the data and the FIN), just past
            # and far past it. No bump may take either.
            self.hostile = [(data_end + 2) & 0xFFFFFFFF, (data_end + 100000) & 0xFFFFFFFF]
        elif a.scenario == "rc3_ack_unsent_fin" and beyond and self.rcv_nxt == data_end:
            # It holds every byte: ACK the FIN too, which the loop never sends (its copy
            # of an skb with the FIN goes without it) and TCP has not sent yet.
            self.hostile = [(data_end + 1) & 0xFFFFFFFF]
        elif a.scenario == "rc3_ack_unsent_data" and beyond:
            # The end of the data, whose tail the window kept from the loop: a bump must
            # stop at the first skb the loop did not send, and drop the ACK.
            self.hostile = [data_end]
        for ack in self.hostile:
            self.send(0x10, self.ts_opt() if self.peer_ts else b"", ack=ack)
        if self.hostile:
            self.hostile_lp_end = self.lp_end

    def settle_all(self):
        for p in self.lp_pending:
            self.settle(p)
        self.lp_pending = []

    def run(self, dut):
        """One exchange with the client dut; the result as a dict. The packet socket is
        closed whatever happens (batch mode goes on to the next exchange)."""
        try:
            return self.exchange(dut)
        finally:
            self.sock.close()

    def dut_link(self, stats=False):
        """`ip -j addr show` (with -s: its counters) of the namespace under test's
        interface holding --dut-ip."""
        a = self.args
        out = subprocess.run(["ip", "-n", a.dut_ns] + (["-s"] if stats else []) +
                             ["-j", "addr", "show"], capture_output=True, text=True,
                             check=True).stdout
        for link in json.loads(out):
            if any(i.get("local") == a.dut_ip for i in link.get("addr_info", [])):
                return link
        raise RuntimeError(f"no interface with {a.dut_ip} in {a.dut_ns}")

    def dut_link_mac(self):
        """The MAC of the namespace under test's interface holding --dut-ip (the peer opens
        the connection, before that side has sent anything)."""
        return bytes.fromhex(self.dut_link()["address"].replace(":", ""))

    def dut_tx_dropped(self):
        """Packets the client's device has dropped on transmission (veth: its peer's
        backlog full)."""
        return self.dut_link(stats=True).get("stats64", {}).get("tx", {}).get("dropped", 0)

    @staticmethod
    def warnings():
        out = subprocess.run(["dmesg"], capture_output=True, text=True).stdout
        return sum(1 for ln in out.splitlines() if "WARNING:" in ln)

    def md5_exchange(self, dut):
        """md5_syn_full: open a connection to the kernel under test, which listens with a
        TCP-MD5 key for this peer, with a signed SYN whose options take 40 bytes: MSS, the
        delay-stamp option, TS, WS, MD5, no SACK_PERM (beside MD5 the listener keeps TS only
        without SACK). Its SYN-ACK has MSS 4, WS 4, TS 12 and MD5 20: no room for the
        option, so it must not carry it, and the connection must not use it after (no t1 on
        its data), without a WARN. Then receive its data, every segment signed."""
        a = self.args
        warned = self.warnings()
        dut.request(f"serve {a.port} {a.cc} {MD5_BYTES} {a.ip} {MD5_KEY}")
        first = dut.reply(15) or {"error": "client silent"}
        if "skip" in first:
            return {"ok": False, "skip": first["skip"], "delay_offered": False,
                    "client": {}}
        if "listening" not in first:
            return {"ok": False, "client": first, "delay_offered": False}
        self.md5_key = MD5_KEY.encode()
        self.cport, self.lport = a.port, 20000 + a.port
        self.dut_mac = self.dut_link_mac()
        syn = b"\x02\x04\x05\xb4" + struct.pack("!BBH", DELAY_KIND, 4, DELAY_EXID) + \
            b"\x08\x0a" + struct.pack("!II", self.ts_val, 0) + b"\x03\x03\x07"
        deadline = time.time() + a.timeout
        fd = self.sock.fileno()
        report = None
        syn_sent = 0
        while not self.done and time.time() < deadline:
            if self.synack is None and time.time() - syn_sent > 1:
                self.snd_nxt = self.iss
                self.send(0x02, syn, window=65535)  # again after a second without SYN-ACK
                self.snd_nxt = (self.iss + 1) & 0xFFFFFFFF
                syn_sent = time.time()
            r, _, _ = select.select([fd, dut], [], [], 0.05)
            if dut in r:
                report = dut.reply(0) or {"error": "client closed"}
                break
            if not r:
                continue
            got = self.sock.recv()
            if got is None:
                continue
            _, ip, waited_ns = got
            self.lag_max_ns = max(self.lag_max_ns, waited_ns)
            if ip.src != a.dut_ip or ip.dst != a.ip or ip.proto != 6 or len(ip.payload) < 20:
                continue
            tcp_bytes = ip.payload
            dport, seq, flags = struct.unpack_from("!2xHI5xB", tcp_bytes)
            if dport != self.lport:
                continue
            if flags & 0x12 == 0x12:
                if self.synack is None:
                    opts = tcp_bytes[20:(tcp_bytes[12] >> 4) * 4]
                    kinds = {k: n for k, _, n in tcp_options(opts)}
                    self.synack = {"delay": 4 in self.delay_options(opts),
                                   "md5": kinds.get(19) == 18, "ts": 8 in kinds,
                                   "ws": 3 in kinds, "sack_perm": 4 in kinds}
                    self.parse_ts(opts)
                    self.irs = seq
                    self.rcv_nxt = self.highest_end = (seq + 1) & 0xFFFFFFFF
                self.ack()
                continue
            if self.synack is not None:
                self.handle(ip, tcp_bytes)
        if report is None:
            report = dut.reply(deadline + 25 - time.time()) or {"error": "client silent"}
        want = pattern(MD5_BYTES)
        why = []
        if self.synack is None:
            why.append("no SYN-ACK")
        elif not self.synack["md5"] or not self.synack["ts"] or not self.synack["ws"]:
            why.append(f"the SYN-ACK's options were not MD5, TS and WS: {self.synack}")
        elif self.synack["delay"]:
            why.append("the SYN-ACK carried the delay-stamp option with MD5, TS and WS")
        if self.delay_data_opts:
            why.append(f"{self.delay_data_opts} of {self.segments} data segments carried t1 "
                       "though the SYN-ACK did not answer the option")
        warned = self.warnings() - warned
        if warned:
            why.append(f"{warned} WARNING lines in dmesg")
        result = {
            "scenario": a.scenario, "cc": a.cc, "bytes_expected": MD5_BYTES,
            "bytes_received": len(self.received), "intact": bytes(self.received) == want,
            "segments": self.segments, "retransmissions_seen": self.retransmissions,
            "client": report, "synack": self.synack, "delay_offered": False,
            "peer_lag_max_ms": round(self.lag_max_ns / 1e6, 1),
            "delay_data_opts": self.delay_data_opts, "why": why,
        }
        result["ok"] = result["intact"] and "error" not in report and \
            report.get("cc") == a.cc and not why
        return result

    def exchange(self, dut):
        a = self.args
        if a.scenario == "md5_syn_full":
            return self.md5_exchange(dut)
        rate = RC3_BUMP_RATE if a.scenario in RC3_BUMP_SCENARIOS + ("rc3_tlp_below_skip",) \
            else 0
        rc3 = a.scenario.startswith("rc3_")
        # Only the RC3 scenarios judge what the peer saw of the client's window
        tx_dropped0 = self.dut_tx_dropped() if rc3 else 0
        recv = PEER_SEGS * PEER_SEG_BYTES if a.scenario == "rc3_lp_ack_echo" else 0
        rcvbuf = WINDOW_RCVBUF if a.scenario == "rc3_copy_window" else 0
        pause = TLP_PAUSE_MS if a.scenario == "rc3_tlp_below_skip" else 0
        dut.request(f"run {a.port} {a.cc} {a.bytes} {int(a.scenario.startswith('rc3_'))} {rate}"
                    f" {recv} {rcvbuf} {pause}")
        deadline = time.time() + a.timeout
        fd = self.sock.fileno()
        report = None
        last_rx = time.time()
        self.last_rx_at = time.monotonic()
        while not self.done and time.time() < deadline:
            self.tick()
            # tick()'s steps are tens of ms apart; the rest only waits for packets
            r, _, _ = select.select([fd, dut], [], [], 0.01 if a.scenario == "rc3_copy_window"
                                    else 0.05)
            if dut in r:
                # The client is done: it saw our FIN, or gave up.
                report = dut.reply(0) or {"error": "client closed"}
                break
            if a.scenario == "rc3_ack_unsent_fin" and self.hostile and not self.fin_seen and \
                    not self.peer_fin and time.time() - last_rx > 1:
                # The sender went quiet without its FIN (the ACK of the FIN was taken):
                # close first, so that its client ends now and reports its counters.
                self.peer_fin = True
                self.send(0x11)
                self.snd_nxt = (self.snd_nxt + 1) & 0xFFFFFFFF
            if not r:
                continue
            got = self.sock.recv()
            if got is None:
                continue
            mac, ip, waited_ns = got
            if ip.src != a.dut_ip or ip.dst != a.ip or ip.proto != 6 or len(ip.payload) < 20:
                continue
            self.dut_mac = mac
            self.lag_max_ns = max(self.lag_max_ns, waited_ns)
            last_rx = time.time()
            self.last_rx_at = time.monotonic()
            self.handle(ip, ip.payload)
        self.settle_all()
        if report is None:
            # Its socket times out after 20 s, so an answer is due.
            report = dut.reply(deadline + 25 - time.time()) or {"error": "client silent"}
        want = pattern(a.bytes)
        result = {
            "scenario": a.scenario, "cc": a.cc, "bytes_expected": a.bytes,
            "bytes_received": len(self.received),
            "intact": bytes(self.received) == want,
            "ecn": self.ecn, "cwr_seen": self.saw_cwr, "segments": self.segments,
            "retransmissions_seen": self.retransmissions, "client": report,
            "delay_offered": self.delay_offered, "delay_answered": self.delay_ok,
            "delay_data_opts": self.delay_data_opts, "delay_echoes": self.delay_echoes,
            "delay_forged": self.delay_forged, "delay_replays": self.delay_replays,
            "lp_acks": self.lp_acks, "lp_ack_echoes": self.lp_ack_echoes,
            "peer_data_first_ack": self.peer_data_first_ack,
            "fuzzed_acks": self.fuzzed_acks,
            # How far behind the peer ran: the longest a packet waited for it in its socket.
            "peer_lag_max_ms": round(self.lag_max_ns / 1e6, 1),
            "lp_segments": self.lp_segments, "lp_bytes": self.lp_bytes,
            "lp_dscps": sorted(self.lp_dscps), "lp_bad": self.lp_bad,
            "jumps": len(self.jumps),
            "jumps_unheld": self.jumps_unheld,
            "jumped_bytes": sum((hi - lo) & 0xFFFFFFFF for lo, hi in self.jumps),
            "bumped_resent": self.bumped_resent, "dup_bytes": self.dup_bytes,
            "hostile_acks": len(self.hostile),
            "lp_edges_beyond": len(self.lp_edges_beyond),
            "lp_edge_beyond_max": max(self.lp_edges_beyond, default=0),
            "lp_acks_beyond": self.lp_acks_beyond,
            "dut_wscale": self.dut_wscale,
            "window_step": self.window_step, "window_lp_after_read": self.window_lp_after_read,
            "tlp_held_acks": self.tlp_held_acks,
            # Relative to the client's initial sequence number, as the figures print them.
        }
        ok = result["intact"] and "error" not in report and report.get("cc") == a.cc
        if a.scenario == "ecn_echo":
            ok = ok and self.ecn and self.saw_cwr > 0
        if a.scenario in ("sack_hole", "ack_beyond_snd_nxt", "sack_beyond_snd_nxt"):
            ok = ok and self.retransmissions > 0

        def rel(x):  # sequence numbers as the figures print them
            return None if x is None or self.irs is None else (x - self.irs) & 0xFFFFFFFF

        result["hostile_rel"] = [rel(h) for h in self.hostile]
        result["hostile_lp_end_rel"] = rel(self.hostile_lp_end)
        result["tlp_probe_rel"] = [rel(x) for x in self.tlp_probe] if self.tlp_probe else None
        why = []
        if not rc3 and self.lp_segments:
            why.append(f"{self.lp_segments} low-priority segments with TCP_RC3 off")
        if rc3 and (not self.lp_segments or self.lp_dscps != {RC3_DSCP} or self.lp_bad):
            why.append(f"low-priority segments {self.lp_segments} at DSCP "
                       f"{sorted(self.lp_dscps)}, {self.lp_bad} ECN-marked or timestamped")
        if a.scenario in ("rc3_bump", "rc3_ack_mid_skb"):
            # A bump shows as TCP's next segment starting at the ACK (or its FIN there),
            # and TCP never sends what the bump took.
            if not self.jumps:
                why.append("TCP sent every byte itself (no ACK taken beyond snd_nxt)")
            if self.bumped_resent:
                why.append(f"{self.bumped_resent} segments of bumped data sent again")
        if a.scenario == "rc3_ack_mid_skb" and \
                (self.mid is None or self.mid not in [hi for _, hi in self.jumps]):
            why.append(f"no segment started where the ACK cut an LP segment ({rel(self.mid)})")
        if a.scenario in RC3_CAPPED:
            # No ACK passes snd_nxt, but the peer SACKs the loop's copies beyond it: TCP
            # may skip what was SACKed (patch 0022), only that; whether it may send it
            # again depends on the kernel's counters (counter_expectations).
            if self.jumps_unheld:
                why.append(f"{self.jumps_unheld} skips over data the peer did not hold: "
                           f"{[(rel(lo), rel(hi)) for lo, hi in self.jumps]}")
        if a.scenario == "rc3_sack_beyond_snd_nxt" and not self.jumps:
            why.append("TCP sent everything the peer had SACKed (no skip)")
        host_drops = self.dut_tx_dropped() - tx_dropped0 + self.sock.drops() if rc3 else 0
        result["host_drops"] = host_drops
        if rc3 and self.lp_edges_beyond and host_drops:
            # Packets were dropped on the way to this slow peer (veth's backlog or the
            # packet socket overflowed): TCP's own segments may be among them.
            result["note"] = f"{len(self.lp_edges_beyond)} copies beyond TCP's window not " \
                f"judged: {host_drops} packets dropped on the way to the peer"
        elif rc3 and self.lp_edges_beyond:
            # A copy may be dropped: the window it offers must be one TCP offered.
            why.append(f"{len(self.lp_edges_beyond)} LP copies offered a window beyond any "
                       f"TCP offered (by up to {max(self.lp_edges_beyond)} bytes)")
        if a.scenario == "rc3_copy_window" and (self.window_step < 3 or
                                                not self.window_lp_after_read):
            why.append(f"no copy went while TCP was held after the read (step "
                       f"{self.window_step}, {self.window_lp_after_read} copies): the "
                       "scenario shows nothing")
        if a.scenario == "rc3_tlp_below_skip":
            data_end = (self.irs + 1 + a.bytes) & 0xFFFFFFFF if self.irs is not None else None
            if self.tlp_probe is None:
                why.append("no retransmission once the peer held every byte (no loss probe)")
            elif data_end is None or \
                    ((data_end - self.tlp_probe[1]) & 0xFFFFFFFF) not in range(1, 1 << 31):
                why.append(f"the probe {result['tlp_probe_rel']} was not below a skipped tail")
            if self.jumps_unheld:
                why.append(f"{self.jumps_unheld} skips over data the peer did not hold")
        if a.scenario in RC3_HOSTILE and not self.hostile:
            why.append("the hostile ACK was never due (no LP data held beyond snd_nxt)")
        if rc3 and not self.fin_seen:
            why.append("the sender's FIN never came" +
                       (" (the peer closed first)" if self.peer_fin else ""))
        if a.scenario == "rc3_lp_ack_echo":
            # The client ACKs the peer's low-priority data at that priority (patch "ACK
            # low-priority data at its own priority"), with no echo on those ACKs.
            # The first ACK of the peer's data must follow RC3's rule: at the data's DSCP,
            # or at the socket's own where the rule says so (an ACK carried on data, one
            # covering several segments because an ACK was pending, or the delayed-ACK
            # timer's). Any other best-effort ACK fails, as does no ACK at all.
            # On the debug kernels (RFL_KERNEL_FLAVOR=debug) which ACK goes first is
            # timing: in 5 of 40 flows over five runs there, an ACK went at the socket's
            # own DSCP 17-24 ms after one segment left, which the peer cannot tell from a
            # deferred ACK (docs/rc3.md); there the first ACK is reported, and only its
            # absence fails.
            first = self.peer_data_first_ack
            judged = os.environ.get("RFL_KERNEL_FLAVOR", "normal") != "debug"
            if first is None or (judged and not self.peer_data_first_ack_ok):
                why.append("the peer's low-priority data was not ACKed by RC3's rule (first "
                           f"ACK of it: {first or 'none'})")
            if self.lp_ack_echoes:
                why.append(f"{self.lp_ack_echoes} of {self.lp_acks} low-priority ACKs carried "
                           "a delay-stamp echo")
        if a.scenario == "rc3_ack_unsent_data" and self.hostile_lp_end is not None and \
                ((self.hostile[0] - self.hostile_lp_end) & 0xFFFFFFFF) not in range(1, 1 << 31):
            why.append("the loop had sent the tail before the ACK: nothing unsent to ACK")
        ok = ok and not why
        result["why"] = why
        if a.scenario.startswith("delay_"):
            # Data carries t1 exactly when the option was answered, on every segment.
            want = self.segments if self.delay_ok else 0
            ok = ok and self.delay_data_opts == want
            if self.delay_ok:
                ok = ok and self.delay_echoes > 0
        result["ok"] = ok
        return result


def counter_expectations(scenario, delta, offered, want_offer, r):
    """What the kernel's counters must show after a scenario; a list of failures."""
    why = []
    sent, bumped = delta["TCPRC3Sent"], delta["TCPRC3AckBump"]
    if not scenario.startswith("rc3_") and (sent or bumped):
        why.append(f"RC3 off, yet TCPRC3Sent +{sent} TCPRC3AckBump +{bumped}")
    if scenario.startswith("rc3_") and sent != r.get("lp_segments"):
        # Every copy the kernel counted reached the peer at low priority (veth loses none).
        why.append(f"TCPRC3Sent +{sent}, low-priority segments seen {r.get('lp_segments')}")
    if scenario in ("rc3_bump", "rc3_ack_mid_skb") and bumped <= 0:
        why.append("no ACK bump counted")
    if scenario in RC3_CAPPED and bumped != 0:
        why.append(f"TCPRC3AckBump +{bumped} though no ACK may be taken")
    hostile = r.get("hostile_acks", 0)
    if hostile and delta["TCPChallengeACK"] + delta["TCPACKSkippedChallenge"] < hostile:
        why.append(f"{hostile} hostile ACKs, challenge ACKs +"
                   f"{delta['TCPChallengeACK'] + delta['TCPACKSkippedChallenge']}")
    if scenario in RC3_CAPPED and r.get("bumped_resent") and delta["TCPSACKReneging"] <= 0:
        # TCP never sends again what it skipped, unless it declared the peer reneging:
        # this peer's ACK stops at snd_nxt, which after a skip is the start of SACKed data
        # until the peer sees TCP's next segment, and the kernel allows a receiver 10 ms
        # to ACK past it (tcp_check_sack_reneging) before its RTO forgets the SACKs and
        # sends it all again (tcp_timeout_mark_lost), as it must for a receiver that may
        # have dropped them. A peer slower than that (a loaded machine) sees the latter.
        why.append(f"{r['bumped_resent']} segments of skipped data sent again, with no "
                   "SACK reneging declared")
    if scenario in ("rc3_sack_beyond_snd_nxt", "rc3_tlp_below_skip") and \
            delta["TCPRC3SackSkip"] <= 0:
        why.append("no packet skipped for a SACK beyond snd_nxt (TCPRC3SackSkip)")
    if scenario == "rc3_tlp_below_skip":
        # The probe's DSACK says the original had arrived: no loss, no CWR episode.
        if delta["TCPLossProbes"] <= 0:
            why.append("no loss probe counted (TCPLossProbes)")
        if delta["TCPLossProbeRecovery"]:
            why.append(f"TCPLossProbeRecovery +{delta['TCPLossProbeRecovery']}: the probe's "
                       "DSACK was not taken, and a CWR episode followed")
    if scenario == "ack_beyond_snd_nxt" and \
            delta["TCPChallengeACK"] + delta["TCPACKSkippedChallenge"] <= 0:
        why.append("no challenge ACK counted")
    if scenario == "sack_beyond_snd_nxt" and delta["TCPSACKDiscard"] <= 0:
        why.append("no SACK block discarded")
    if scenario.startswith("delay_"):
        samples, bad = delta["TCPDelayStampSample"], delta["TCPDelayStampBad"]
        if offered != want_offer:
            why.append(f"SYN offered the delay-stamp option: {'yes' if offered else 'no'}")
        if offered and scenario == "delay_stamps":
            if samples <= 0 or bad != 0:
                why.append(f"samples +{samples} bad +{bad}")
        elif offered and scenario == "delay_bad":
            if bad <= 0:
                why.append("no bad option counted")
        elif offered and scenario == "delay_replay":
            # Samples only from echoes of data each ACK newly acknowledged; each replay on a
            # duplicate ACK is counted bad (the forged t1 rides an ACK of new data, where a
            # retransmission could explain it: dropped, not counted).
            legit = r.get("delay_echoes", 0) - r.get("delay_forged", 0)
            replays = r.get("delay_replays", 0)
            if not replays:
                why.append("no echo replayed")
            if samples <= 0 or samples > legit:
                why.append(f"samples +{samples} from {legit} echoes of new data, "
                           f"{r.get('delay_forged', 0)} of a t1 never sent and {replays} "
                           "replayed on duplicate ACKs")
            if bad < replays:
                why.append(f"bad +{bad} for {replays} echoes replayed on duplicate ACKs")
        elif samples != 0 or bad != 0:
            why.append(f"samples +{samples} bad +{bad} without the option")
    return why


COUNTERS = ("TCPSACKDiscard", "TCPChallengeACK", "TCPACKSkippedChallenge",
            "TCPDelayStampSample", "TCPDelayStampBad", "TCPRC3Sent", "TCPRC3AckBump",
            "TCPRC3SackSkip", "TCPSACKReneging", "TCPLossProbes", "TCPLossProbeRecovery")


def batch(args):
    failed = 0
    dut = DutClient(args.dut_ns, args.ip)
    for spec in args.case:
        cc, scenario, port, want_offer = spec.split(":")
        a = argparse.Namespace(**vars(args))
        a.cc, a.scenario, a.port = cc, scenario, int(port)
        if scenario == "options_fuzz":
            a.bytes *= 4  # more ACKs to draw options for (about 280)
        if scenario == "rc3_copy_window":
            a.bytes *= WINDOW_BYTES_FACTOR
        t0 = time.monotonic()
        try:
            r = Peer(a).run(dut)
        except Exception as e:  # one broken exchange must not hide the others' results
            r = {"ok": False, "error": repr(e), "delay_offered": False}
        if "skip" in r:
            print(f"RESULT\tskip\t{cc} {scenario}\t-\t{r['skip']}", flush=True)
            continue
        if "client" not in r or r["client"].get("error") in ("client silent", "client closed"):
            dut.close()  # a stuck or dead client: the next exchange gets a new one
            dut = DutClient(args.dut_ns, args.ip)
        took = time.monotonic() - t0
        # The client's own count, read around its connection: nothing else runs there.
        counted = r.get("client", {}).get("tcpext", {})
        delta = {k: counted.get(k, 0) for k in COUNTERS}
        why = [] if r["ok"] else [r.get("error") or r.get("client", {}).get("error") or
                                  ("" if r.get("intact") else "transfer not intact")]
        why = [w for w in why + r.get("why", []) if w]
        if not r["ok"] and not why:
            why = ["transfer or scenario expectation failed"]
        why += counter_expectations(scenario, delta, r["delay_offered"], want_offer == "1", r)
        fig = " ".join(f"{k}={r.get(k)}" for k in (
            "bytes_received", "intact", "segments", "retransmissions_seen", "cwr_seen", "ecn",
            "fuzzed_acks"))
        fig += f" stamps={r.get('delay_answered')}/{r.get('delay_data_opts')}/" \
               f"{r.get('delay_echoes')}"
        if scenario == "delay_replay":
            fig += f" forged={r.get('delay_forged')} replayed={r.get('delay_replays')}"
        if scenario == "rc3_lp_ack_echo":
            fig += f" lp_acks={r.get('lp_acks')} with_echo={r.get('lp_ack_echoes')}" \
                   f" first_ack=({r.get('peer_data_first_ack')})"
        if scenario == "md5_syn_full":
            fig += f" synack={r.get('synack')}"
        if scenario == "rc3_copy_window":
            fig += f" host_drops={r.get('host_drops')} wscale={r.get('dut_wscale')}" \
                   f" copies_after_read=" \
                   f"{r.get('window_lp_after_read')} beyond={r.get('lp_edges_beyond')}/" \
                   f"{r.get('lp_edge_beyond_max')}B acks_beyond={r.get('lp_acks_beyond')}"
        if scenario == "rc3_tlp_below_skip":
            fig += f" probe={r.get('tlp_probe_rel')} held_acks={r.get('tlp_held_acks')}" \
                   f" probes+{delta['TCPLossProbes']} probe_recovery+" \
                   f"{delta['TCPLossProbeRecovery']}"
        fig += " challenge+%d sack_discard+%d delay_samples+%d delay_bad+%d" % (
            delta["TCPChallengeACK"] + delta["TCPACKSkippedChallenge"],
            delta["TCPSACKDiscard"], delta["TCPDelayStampSample"], delta["TCPDelayStampBad"])
        if scenario.startswith("rc3_"):
            fig += (" rc3_sent+%d rc3_bump+%d rc3_sack_skip+%d sack_reneging+%d lp=%s/%sB"
                    " dscp=%s jumps=%s/%sB bumped_resent=%s"
                    " dup=%sB hostile=%s@lp_end=%s retrans=%s") % (
                delta["TCPRC3Sent"], delta["TCPRC3AckBump"], delta["TCPRC3SackSkip"],
                delta["TCPSACKReneging"],
                r.get("lp_segments"),
                r.get("lp_bytes"), r.get("lp_dscps"), r.get("jumps"), r.get("jumped_bytes"),
                r.get("bumped_resent"), r.get("dup_bytes"), r.get("hostile_rel"),
                r.get("hostile_lp_end_rel"), r.get("client", {}).get("total_retrans"))
        if r.get("note"):
            fig += f" ({r['note']})"
        fig += f" peer_lag_max={r.get('peer_lag_max_ms')}ms in {took:.2f} s"
        print("RESULT\t%s\t%s %s\t%s\t%s" % ("not ok" if why else "ok", cc, scenario, fig,
                                             "; ".join(why)), flush=True)
        if why:
            failed += 1
            r["counters"] = delta
            print("DETAIL\t" + json.dumps(r), flush=True)
    dut.close()
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("client")
    c.add_argument("--dst", required=True)
    c.add_argument("--max-rate", type=int, default=250000, help="bytes per second")
    p = sub.add_parser("peer")
    b = sub.add_parser("batch")
    for q in (p, b):
        q.add_argument("--iface", required=True)
        q.add_argument("--ip", required=True)
        q.add_argument("--dut-ns", required=True)
        q.add_argument("--dut-ip", required=True)
        q.add_argument("--bytes", type=int, default=100000)
        q.add_argument("--seed", type=int, default=1)
        q.add_argument("--timeout", type=float, default=30)
    p.add_argument("--cc", required=True)
    p.add_argument("--scenario", choices=SCENARIOS, required=True)
    p.add_argument("--port", type=int, default=8080)
    b.add_argument("--case", nargs="+", required=True,
                   help="CC:SCENARIO:PORT:OFFER, OFFER 1 if the SYN must offer delay stamps")
    a = ap.parse_args()
    if a.mode == "client":
        client(a)
        return 0
    if a.mode == "batch":
        for spec in a.case:
            if len(spec.split(":")) != 4 or spec.split(":")[1] not in SCENARIOS:
                ap.error(f"--case {spec}: want CC:SCENARIO:PORT:OFFER with SCENARIO one of "
                         + ", ".join(SCENARIOS))
        return batch(a)
    dut = DutClient(a.dut_ns, a.ip)
    result = Peer(a).run(dut)
    dut.close()
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
