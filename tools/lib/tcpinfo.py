# SPDX-License-Identifier: GPL-2.0
"""struct tcp_info (include/uapi/linux/tcp.h), the fields the tools read, in one place.

    info = tcpinfo.get(sock, ("total_retrans", "bytes_acked"))   # getsockopt(TCP_INFO)
    info = tcpinfo.parse(data, ("rtt", "snd_cwnd"))               # an inet_diag INET_DIAG_INFO

Both return {field: value} for the fields asked (all of FIELDS by default), or None when
the kernel's struct is too short to hold them. Names are the kernel's without "tcpi_";
units are the kernel's: rto and rtt in microseconds, pacing_rate in bytes per second.
"""
import socket
import struct

# Field: (offset, struct format). Offsets on every architecture: the struct is u8s, u32s
# and u64s laid out without padding.
FIELDS = {
    "options": (5, "B"),          # tcpi_options (TCPI_OPT_ECN: 8, ECN negotiated)
    "rto": (8, "I"),              # the retransmission timeout now, backoff included
    "snd_mss": (16, "I"),
    "last_ack_recv": (56, "I"),   # ms since the last ACK came in
    "rtt": (68, "I"),             # smoothed RTT
    "snd_cwnd": (80, "I"),
    "total_retrans": (100, "I"),
    "pacing_rate": (104, "Q"),
    "bytes_acked": (120, "Q"),    # counts the SYN as one
    "delivered": (192, "I"),      # packets delivered, the SYN among them
    "dsack_dups": (216, "I"),
}
# What getsockopt asks for: the struct up to tcpi_snd_wnd, every field above.
TCP_INFO_LEN = 232
TCPI_OPT_ECN = 8


def needed_len(names):
    """Bytes of struct tcp_info that hold every named field."""
    return max(FIELDS[n][0] + struct.calcsize(FIELDS[n][1]) for n in names)


def parse(data, names=None):
    """The named fields of a struct tcp_info, or None if data is too short for them."""
    names = tuple(FIELDS) if names is None else tuple(names)
    if len(data) < needed_len(names):
        return None
    return {n: struct.unpack_from(FIELDS[n][1], data, FIELDS[n][0])[0] for n in names}


def get(sock, names=None):
    """The named fields of the socket's tcp_info (getsockopt TCP_INFO), or None where the
    kernel's struct is too short for them."""
    return parse(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN), names)
