#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# What a host where nobody configured anything does on the wire, and what peers can make it
# do (issue 28), in the UML guest, on the dumbbell with no opt-in (DUMBBELL_DEFAULTS=1):
# - the delay-stamp option is off by default (net.ipv4.tcp_delay_stamps=0, in the initial
#   namespace and in a new one): a receiver at the default does not answer a client that
#   offers it (no delay sample at the client), and answers once its administrator sets 1;
# - the host's receive timestamping (netstamp_needed_key) follows the sysctl, not the
#   connections: a namespace takes one net_enable_timestamp() reference when the sysctl
#   leaves 0 and drops it when it returns to 0 (TcpExt TCPDelayStampNetstamp counts each),
#   and 200 connections that use the option, opened and closed in a loop, take none;
# - through a path that drops SYNs carrying the option, the retransmitted SYN goes without
#   it and the connection opens without the option (TcpExt TCPDelayStampSynFallback);
# - a receiver asking for hardware receive stamps gets none from the device-boundary t1
#   that waits, tagged, in the slot of the option's data packets;
# - RC3's low-priority loop cannot be turned on in a namespace other than the initial one
#   unless the initial one allows it (net.ipv4.tcp_rc3_netns_allowed, which only the initial
#   namespace has): net.ipv4.tcp_rc3=1 and TCP_RC3 fail with EPERM there, a socket does not
#   take the sysctl's 1 once the permission is withdrawn, and both work with it.
# (The guest kernel has no user namespaces: a user namespace's root is checked through the
# network namespace it would own, which is not the initial one.)
#
#   tcp_wire_defaults.sh [ARGS...]   (arguments are ignored: run-tests.sh may pass modules)
set -u
source "$(dirname "$0")/lib.sh"
PORT=9100 CONNS=200
selftest_dir

ktap_plan 15
DUMBBELL_DEFAULTS=1 setup_dumbbell 1000 0 1000 || diag "dumbbell setup failed"
in_ns() { ip netns exec "$@"; }

cat > "$out/conn.py" <<'PY'
import errno, socket, sys
TCP_RC3 = 47
def server(port):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(64)
    while True:
        c, _ = ls.accept()
        while c.recv(65536):
            pass
        c.close()
def loop(dst, port, n, nbytes):
    for _ in range(n):
        s = socket.create_connection((dst, port), timeout=10)
        s.sendall(b"x" * nbytes)
        s.shutdown(socket.SHUT_WR)
        s.recv(1)
        s.close()
def rc3(val):  # setsockopt(TCP_RC3, val): prints ok or the errno's name
    s = socket.socket()
    try:
        s.setsockopt(socket.IPPROTO_TCP, TCP_RC3, val)
        print("ok")
    except OSError as e:
        print(errno.errorcode[e.errno])
def rc3_get():  # a new socket's TCP_RC3
    print(socket.socket().getsockopt(socket.IPPROTO_TCP, TCP_RC3))
def stamped_server(port):
    """One connection's receiver asking for hardware receive stamps (SO_TIMESTAMPING:
    RX_HARDWARE, RAW_HARDWARE, and software ones): how many of its reads came with a
    hardware stamp. Prints the count when the sender closes."""
    import struct
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(1)
    print("listening", flush=True)
    c, _ = ls.accept()
    c.setsockopt(socket.SOL_SOCKET, 37, 4 | 8 | 16 | 64)  # SO_TIMESTAMPING
    reads = stamped = 0
    biggest = 0.0
    while True:
        data, anc, _, _ = c.recvmsg(65536, 256)
        if not data:
            break
        reads += 1
        for level, kind, val in anc:
            if level == socket.SOL_SOCKET and kind == 37 and len(val) >= 48:
                sec, nsec = struct.unpack_from("qq", val, 32)
                if sec or nsec:
                    stamped += 1
                    biggest = max(biggest, sec)
    import time
    print(f"{reads} reads, {stamped} with a hardware stamp"
          + (f" (up to {(biggest - time.time()) / 31557600:.0f} years ahead)" if stamped else ""),
          flush=True)
cmd = sys.argv[1]
if cmd == "server":
    server(int(sys.argv[2]))
elif cmd == "loop":
    loop(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
elif cmd == "rc3":
    rc3(int(sys.argv[2]))
elif cmd == "stamped_server":
    stamped_server(int(sys.argv[2]))
else:
    rc3_get()
PY
in_ns $NS_SRV python3 "$out/conn.py" server $PORT > "$out/server.err" 2>&1 &
pids+=($!)
wait_listening $NS_SRV tcp $PORT || diag "server not listening"

sysctl_is() { # NS NAME VALUE: NAME is VALUE in namespace NS ("-": the initial one)
	local v
	if [ "$1" = - ]; then v=$(sysctl -n "$2"); else v=$(in_ns "$1" sysctl -n "$2"); fi
	echo "$2 = $v"
	[ "$v" = "$3" ]
}
# ---------------------------------------------------------------- the delay-stamp option
check "tcp_delay_stamps is 0 by default in the initial namespace" sysctl_is - net.ipv4.tcp_delay_stamps 0
check "tcp_delay_stamps is 0 by default in a new namespace" sysctl_is $NS_SRV net.ipv4.tcp_delay_stamps 0

# samples NAME N BYTES: N connections of BYTES from cli (which offers the option on every
# connect) to srv; the delay samples cli took in $out/samples.NAME.
samples() {
	local before
	before=$(tcpext $NS_CLI TCPDelayStampSample)
	in_ns $NS_CLI python3 "$out/conn.py" loop $SRV_ADDR $PORT "$2" "$3" || return 1
	echo $(($(tcpext $NS_CLI TCPDelayStampSample) - before)) > "$out/samples.$1"
}
in_ns $NS_CLI sysctl -qw net.ipv4.tcp_delay_stamps=2
samples default 5 300000 || diag "transfers failed"
check "a receiver at the default does not answer the option (no delay sample at the client)" \
	test "$(cat "$out/samples.default")" -eq 0
diag "receiver at the default: $(cat "$out/samples.default") delay samples"

netstamp() { tcpext "$1" TCPDelayStampNetstamp; }
has_counter() { grep -qw TCPDelayStampNetstamp /proc/net/netstat || { echo "no TcpExt TCPDelayStampNetstamp"; return 1; }; }
srv0=$(netstamp $NS_SRV)
in_ns $NS_SRV sysctl -qw net.ipv4.tcp_delay_stamps=1
check "tcp_delay_stamps 0 -> 1 takes the namespace's timestamp reference (TCPDelayStampNetstamp +1)" \
	eval 'has_counter && test $(($(netstamp $NS_SRV) - srv0)) -eq 1'
samples answered 5 300000 || diag "transfers failed"
check "a receiver that opted in answers (delay samples at the client)" \
	test "$(cat "$out/samples.answered")" -gt 0
diag "receiver opted in: $(cat "$out/samples.answered") delay samples"

# The software t1 taken at the device boundary waits in the skb's hardware-stamp slot,
# tagged, until the ACK. The skb that crosses the testbed's veth devices keeps it: a
# receiver that asks for hardware receive stamps must not take it for one (none of these
# devices stamps; before the fix each read showed one about 146 years ahead).
in_ns $NS_SRV python3 "$out/conn.py" stamped_server $((PORT + 1)) > "$out/stamped" 2>&1 &
stamped_pid=$!
wait_listening $NS_SRV tcp $((PORT + 1)) || diag "stamped server not listening"
in_ns $NS_CLI python3 "$out/conn.py" loop $SRV_ADDR $((PORT + 1)) 1 300000 || diag "the transfer failed"
wait $stamped_pid
check "a receiver asking for hardware receive stamps gets none from the option's t1" \
	grep -q "^[1-9][0-9]* reads, 0 with" "$out/stamped"
diag "receiver with SO_TIMESTAMPING: $(tail -1 "$out/stamped")"

# A path that drops SYNs carrying the option (a middlebox that drops what it does not
# know): the router drops IPv4 SYNs (flags byte 33: SYN without ACK) with the option's
# first word (kind 253, length 4, ExID 0xD1A7) at any of the aligned places a SYN's options
# may put it. The retransmitted SYN goes without it, as ECN falls back, and the connection
# opens, without the option (TcpExt TCPDelayStampSynFallback; no delay samples).
# (They go to an htb class whose queue drops everything: the test kernel has no tc actions.)
syn_filter() { # add|del
	local at
	if [ "$1" = del ]; then
		tc -n $NS_RTR filter del dev r1 parent 1: prio 1 && tc -n $NS_RTR class del dev r1 classid 1:9
		return
	fi
	tc -n $NS_RTR class add dev r1 parent 1: classid 1:9 htb rate 1000mbit &&
		tc -n $NS_RTR qdisc add dev r1 parent 1:9 handle 90: netem loss 100% || return 1
	for at in 40 44 48 52 56 60 64 68 72 76; do
		tc -n $NS_RTR filter add dev r1 parent 1: prio 1 protocol ip u32 \
			match u8 0x02 0x12 at 33 match u32 0xfd04d1a7 0xffffffff at $at flowid 1:9 || return 1
	done
}
syn_filter add || diag "SYN filter refused"
fb0=$(tcpext $NS_CLI TCPDelayStampSynFallback)
samples dropped 1 300000 || diag "the connection through the SYN-dropping path failed"
fb=$(($(tcpext $NS_CLI TCPDelayStampSynFallback) - fb0))
syn_filter del
check "a path that drops SYNs with the option: the connection opens, without it" \
	eval '[ -s "$out/samples.dropped" ] && test "$(cat "$out/samples.dropped")" -eq 0 && test $fb -eq 1'
diag "SYN-dropping path: TCPDelayStampSynFallback +$fb, $(cat "$out/samples.dropped" 2>/dev/null || echo no) delay samples"

# The peer's loop: connections that use the option, opened and closed. Today each took a
# reference and dropped it, and every first/last one flipped the host-wide static key.
cli0=$(netstamp $NS_CLI) srv0=$(netstamp $NS_SRV)
s0=$(tcpext $NS_CLI TCPDelayStampSample)
in_ns $NS_CLI python3 "$out/conn.py" loop $SRV_ADDR $PORT $CONNS 20000 || diag "connection loop failed"
diag "$CONNS connections: $(($(tcpext $NS_CLI TCPDelayStampSample) - s0)) delay samples, TCPDelayStampNetstamp cli +$(($(netstamp $NS_CLI) - cli0)) srv +$(($(netstamp $NS_SRV) - srv0))"
check "$CONNS connections using the option, opened and closed: no timestamp reference taken or dropped" \
	eval 'has_counter && test $(($(netstamp $NS_CLI) - cli0)) -eq 0 -a $(($(netstamp $NS_SRV) - srv0)) -eq 0 &&
		test $(($(tcpext $NS_CLI TCPDelayStampSample) - s0)) -gt 0'
srv0=$(netstamp $NS_SRV)
in_ns $NS_SRV sysctl -qw net.ipv4.tcp_delay_stamps=2
in_ns $NS_SRV sysctl -qw net.ipv4.tcp_delay_stamps=0
in_ns $NS_SRV sysctl -qw net.ipv4.tcp_delay_stamps=0
check "tcp_delay_stamps 1 -> 2 -> 0 -> 0 drops the reference once (TCPDelayStampNetstamp +1)" \
	eval 'has_counter && test $(($(netstamp $NS_SRV) - srv0)) -eq 1'

# ---------------------------------------------------------------- RC3's loop
rc3_sysctl() { in_ns $NS_CLI sysctl -qw net.ipv4.tcp_rc3="$1" 2>&1; }
check "tcp_rc3_netns_allowed is 0 by default, in the initial namespace only" \
	eval 'sysctl_is - net.ipv4.tcp_rc3_netns_allowed 0 && ! in_ns $NS_CLI test -e /proc/sys/net/ipv4/tcp_rc3_netns_allowed'
check "without it, net.ipv4.tcp_rc3=1 in another namespace fails" \
	eval '! rc3_sysctl 1 && sysctl_is $NS_CLI net.ipv4.tcp_rc3 0'
check "without it, TCP_RC3 in another namespace fails with EPERM" \
	test "$(in_ns $NS_CLI python3 "$out/conn.py" rc3 1)" = EPERM
sysctl -qw net.ipv4.tcp_rc3_netns_allowed=1
check "with it, net.ipv4.tcp_rc3=1 and TCP_RC3 work in another namespace" \
	eval 'rc3_sysctl 1 && test "$(in_ns $NS_CLI python3 "$out/conn.py" rc3 1)" = ok &&
		test "$(in_ns $NS_CLI python3 "$out/conn.py" get)" = 1'
sysctl -qw net.ipv4.tcp_rc3_netns_allowed=0
check "withdrawn: a new socket there leaves RC3 off although its tcp_rc3 is 1" \
	eval 'sysctl_is $NS_CLI net.ipv4.tcp_rc3 1 && test "$(in_ns $NS_CLI python3 "$out/conn.py" get)" = 0'
check "withdrawn: turning net.ipv4.tcp_rc3 off there still works" rc3_sysctl 0
ktap_finish
