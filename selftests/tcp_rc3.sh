#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# RC3's low-priority loop (patches 0011-0015, 0022-0024, rust/tcp_rc3.ko), in the UML guest:
# - the policy module refuses invalid parameters, naming them;
# - TCP_RC3 reads back what was set, refuses other values than 0 and 1, and needs
#   CAP_NET_ADMIN to turn on (and, in cli, net.ipv4.tcp_rc3_netns_allowed, which the test
#   sets: cli is not the initial namespace);
# - with net.ipv4.tcp_rc3=1 in the sender's namespace and the policy loaded (levels up to
#   20, 80 and 320 packets from the tail, DSCP 3, 7, 11), a 300 KB transfer leaves the
#   sender's prio qdisc (one band per DSCP, u32 filters on the DS field) with packets at
#   every level, each level's count within what the TSO rule allows (an skb goes at the
#   level of its first byte, so a level never holds more than its bound), as many as
#   TcpExt TCPRC3Sent counts; TCP takes the tail without sending it (ACK bumps, or skips
#   of what the receiver SACKed beyond snd_nxt); the data arrives intact (SHA-256),
#   also through 1% loss with reordering, through 0.1% loss, with no priority queue
#   anywhere, and to a receiver without SACK (where the loop stays off); the same levels
#   over IPv6, whose traffic class carries the DSCP;
# - with the sysctl off, or the policy unloaded, nothing is sent at low priority;
# - a receiver with RC3 on ACKs the loop's data at its DSCP (counted by DSCP as the ACKs
#   leave the router), one without RC3 ACKs everything at DSCP 0 (patch 0023);
# - with every level-2 packet dropped in the network, TCP sends that hole itself and skips
#   the tail the receiver SACKed (TcpExt TCPRC3SackSkip, patch 0022);
# - DSACKs of the duplicates where the loop and TCP meet stay out of tcpi_dsack_dups
#   (patch 0024).
#
# - bumped and skipped packets are not credited to the congestion control: at the end of
#   a transfer, tcpi_delivered and the packets ACK bumps took or TCP skipped add up to the
#   packets of the transfer (with those counted as delivered too, the sum would be larger
#   by them);
# - the same over dctcp and over the controllers of the modules given (timely,
#   timely_patched, dx), each skipped, saying so, when no module registers it. How much
#   TCP takes without sending depends on the controller: one that starts at line rate
#   (TIMELY) sends most of it before the loop's copies, which wait behind it at the
#   sender, arrive.
#
#   tcp_rc3.sh RC3.ko [MODULE.ko [PARAM=VALUE...]]...
set -u
ko=$1
shift
source "$(dirname "$0")/lib.sh"
OTHER_CCS="dctcp timely timely_patched dx swift"
selftest_dir
BYTES=300000

ktap_plan 52
dmesg -C

check "rejects levels=16" rejects_param "$ko" levels levels=16
check "rejects a cumulative list that does not grow" rejects "$ko" "invalid levels: level 2 ends at 40" level_factor=1
check "rejects dscp_map=2" rejects_param "$ko" dscp_map dscp_map=2
if [ $# -gt 0 ]; then
	parse_module_args "$@" || { echo "usage: tcp_rc3.sh RC3.ko [MODULE.ko [PARAM=VALUE...]]..."; exit 1; }
	for i in "${!kos[@]}"; do
		# shellcheck disable=SC2086 # params are PARAM=VALUE words
		insmod "${kos[$i]}" ${params[$i]} || diag "insmod ${kos[$i]} failed"
	done
fi

DELAY_US=500
setup_dumbbell 100 $DELAY_US 1000 && dumbbell_ipv6 || diag "dumbbell setup failed"
for ns in $NS_CLI $NS_SRV; do
	ip netns exec $ns sysctl -qw net.ipv4.tcp_wmem="4096 4194304 8388608" net.ipv4.tcp_rmem="4096 4194304 8388608"
done
# The whole transfer fits in the receiver's first window (the loop sends nothing beyond it).
ip -n $NS_SRV route replace 10.10.1.0/24 via 10.10.2.1 initrwnd 1000
ip -n $NS_SRV -6 route replace fd00:10:1::/64 via fd00:10:2::1 initrwnd 1000
# dscp_prio NS DEV: strict priority at DEV's egress, band n for DSCP 0, 3, 7, 11 (DS
# field 0x00, 0x0c, 0x1c, 0x2c; IPv6's traffic class, the same byte).
dscp_prio() {
	local ns=$1 dev=$2 band=1 ds
	tc -n "$ns" qdisc add dev "$dev" root handle 1: prio bands 4 priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
	for ds in 0x00 0x0c 0x1c 0x2c; do
		tc -n "$ns" filter add dev "$dev" parent 1: prio $band protocol ip u32 \
			match ip dsfield $ds 0xfc flowid 1:$band
		tc -n "$ns" filter add dev "$dev" parent 1: prio $((band + 4)) protocol ipv6 u32 \
			match ip6 priority $ds 0xfc flowid 1:$band
		band=$((band + 1))
	done
}
# dscp_counts NS DEV: packets per band of dscp_prio's qdisc, "b1 b2 b3 b4".
dscp_counts() {
	tc -n "$1" -s class show dev "$2" | awk '/^class prio/ { c = $3 } / Sent / { n[c] = $4 }
		END { print n["1:1"] + 0, n["1:2"] + 0, n["1:3"] + 0, n["1:4"] + 0 }'
}
# The sender's egress.
dscp_prio $NS_CLI c0
bands() { dscp_counts $NS_CLI c0; }

cat > "$out/peer.py" <<'PY'
import hashlib, os, socket, sys, time
sys.path.insert(0, os.environ["TOOLS_LIB"])
import tcpinfo
TCP_RC3 = 47
mode = sys.argv[1]
if mode == "sockopt":
    s = socket.socket()
    assert s.getsockopt(socket.IPPROTO_TCP, TCP_RC3) == int(sys.argv[2]), "default"
    s.setsockopt(socket.IPPROTO_TCP, TCP_RC3, 1)
    assert s.getsockopt(socket.IPPROTO_TCP, TCP_RC3) == 1
    s.setsockopt(socket.IPPROTO_TCP, TCP_RC3, 0)
    assert s.getsockopt(socket.IPPROTO_TCP, TCP_RC3) == 0
    for bad in (2, -1):
        try:
            s.setsockopt(socket.IPPROTO_TCP, TCP_RC3, bad)
            raise SystemExit(f"TCP_RC3={bad} accepted")
        except OSError as e:
            assert e.errno == 22, e
elif mode == "serve":
    # IPv4 and IPv6 alike (v4-mapped addresses). "serve FILE PORT rc3": the listener
    # (and so every connection it accepts) has TCP_RC3 on.
    l = socket.socket(socket.AF_INET6)
    l.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if sys.argv[4:] == ["rc3"]:
        l.setsockopt(socket.IPPROTO_TCP, TCP_RC3, 1)
    l.bind(("::", int(sys.argv[3]))); l.listen(4)
    print("ready", flush=True)
    while True:
        c, _ = l.accept()
        h = hashlib.sha256()
        while True:
            b = c.recv(65536)
            if not b:
                break
            h.update(b)
        open(sys.argv[2], "a").write(h.hexdigest() + "\n")
        c.close()
else:
    data = bytes((i * 7 + i // 251) & 0xFF for i in range(int(sys.argv[2])))
    s = socket.socket(socket.AF_INET6 if ":" in sys.argv[3] else socket.AF_INET)
    s.settimeout(20)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, sys.argv[4].encode())
    s.connect((sys.argv[3], int(sys.argv[6])))
    # "warm": one byte first. The SYN-ACK's window is not scaled (at most 64 KB) and the
    # loop sends nothing beyond the window; the ACK of this byte opens it to initrwnd
    # before the rest is written. "cold": everything at once; the loop sends the tail
    # from the ACK path when the peer's first ACK opens the window.
    if sys.argv[5] == "warm":
        s.sendall(data[:1])
        time.sleep(0.1)
        s.sendall(data[1:])
    elif sys.argv[5] == "gate":
        # "gate": as "warm", then say so in GATE.ready and write the rest only once the
        # file GATE (argument 7) exists: the test stops the receiver's ACKs in between.
        s.sendall(data[:1])
        time.sleep(0.2)
        open(sys.argv[7] + ".ready", "w").close()
        while not os.path.exists(sys.argv[7]):
            time.sleep(0.01)
        s.sendall(data[1:])
    else:
        s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)
    # Everything is acknowledged: the receiver read it all before closing.
    info = tcpinfo.get(s, ("snd_mss", "snd_cwnd", "delivered", "total_retrans", "dsack_dups"))
    s.close()
    print(hashlib.sha256(data).hexdigest(), *info.values())
PY
# cli is not the initial namespace: the initial one's administrator allows the loop there
# (tcp_wire_defaults.sh checks that it is refused without).
rc3_allow_netns 1
check "TCP_RC3 set, read back, invalid values refused" ip netns exec $NS_CLI python3 "$out/peer.py" sockopt 0
# The loop sends outside congestion control: turning it on needs CAP_NET_ADMIN.
unprivileged_rc3() {
	setpriv --reuid=65534 --regid=65534 --clear-groups python3 -c '
import errno, socket
s = socket.socket()
try:
    s.setsockopt(socket.IPPROTO_TCP, 47, 1)
    print("accepted")
except OSError as e:
    print(errno.errorcode[e.errno])
'
}
check "TCP_RC3 refused to an unprivileged user (EPERM)" test "$(unprivileged_rc3)" = EPERM

# Port 5300: a receiver without RC3; 5301: one with TCP_RC3 on, which ACKs low-priority
# data at its own DSCP.
ip netns exec $NS_SRV python3 "$out/peer.py" serve "$out/received" 5300 > "$out/serve.log" 2>&1 &
ip netns exec $NS_SRV python3 "$out/peer.py" serve "$out/received" 5301 rc3 > "$out/serve_rc3.log" 2>&1 &
for _ in $(seq 50); do grep -q ready "$out/serve.log" 2>/dev/null && grep -q ready "$out/serve_rc3.log" && break; sleep 0.1; done

# The receiver's packets (ACKs) by DSCP as the router forwards them to the sender, through
# a strict-priority qdisc like the sender's (the reverse path's WQoS).
dscp_prio $NS_RTR r0
acks() { dscp_counts $NS_RTR r0; }

# The sender's counters: TCPRC3Sent, TCPRC3AckBump, TCPRC3SackSkip, TCPRC3DSack.
rc3_counters() { tcpext $NS_CLI TCPRC3Sent TCPRC3AckBump TCPRC3SackSkip TCPRC3DSack | paste -sd ' '; }
# transfer NAME [CC [cold [DST [PORT]]]]: one transfer (congestion control CC, default
# cubic; "cold": no warm-up byte, see peer.py; to DST, default $SRV_ADDR, port PORT,
# default 5300); its hash compared with the receiver's; counters, bands and the receiver's
# packets by DSCP before and after in $out/NAME.{ctr,bands,acks}{0,1}; the sender's MSS,
# cwnd, tcpi_delivered, tcpi_total_retrans and tcpi_dsack_dups at the end in
# $out/NAME.info.
transfer() {
	local name=$1 cc=${2:-cubic} start=${3:-warm} dst=${4:-$SRV_ADDR} port=${5:-5300} sent got
	rc3_counters > "$out/$name.ctr0"
	bands > "$out/$name.bands0"
	acks > "$out/$name.acks0"
	: > "$out/received"
	diag "$name: bands before $(cat "$out/$name.bands0")"
	sent=$(ip netns exec $NS_CLI timeout 60 python3 "$out/peer.py" send $BYTES "$dst" "$cc" "$start" "$port") || { echo "transfer failed"; return 1; }
	echo "${sent#* }" > "$out/$name.info"
	sent=${sent%% *}
	for _ in $(seq 50); do [ -s "$out/received" ] && break; sleep 0.1; done
	got=$(cat "$out/received")
	rc3_counters > "$out/$name.ctr1"
	acks > "$out/$name.acks1"
	bands > "$out/$name.bands1"; diag "$name: bands after $(cat "$out/$name.bands1"), TCPRC3Sent/AckBump/SackSkip $(cat "$out/$name.ctr1"), receiver's packets by DSCP 0/3/7/11 $(cat "$out/$name.acks1")"
	[ "$sent" = "$got" ] || { echo "sent $sent, received ${got:-nothing}"; return 1; }
}
# delta NAME FIELD FILE [FROM TO]: FILE1's FIELD less FILE0's (FILE$TO's less FILE$FROM's).
delta() {
	local a b
	a=$(awk -v f="$2" '{ print $f }' "$out/$1.${3}${5:-1}") b=$(awk -v f="$2" '{ print $f }' "$out/$1.${3}${4:-0}")
	echo $((a - b))
}

check "no policy: transfer intact" transfer nopolicy
check "no policy: nothing sent at low priority" test "$(delta nopolicy 1 ctr)" -eq 0

insmod "$ko" levels=3 first_level_pkts=20 level_factor=4 dscp_map=1 || diag "insmod failed"
check "sysctl off: transfer intact" transfer off
check "sysctl off: nothing sent at low priority" test "$(delta off 1 ctr)" -eq 0

ip netns exec $NS_CLI sysctl -qw net.ipv4.tcp_rc3=1
check "TCP_RC3 follows net.ipv4.tcp_rc3" ip netns exec $NS_CLI python3 "$out/peer.py" sockopt 1
check "rc3: transfer intact" transfer on
# TCP's write queue holds skbs of up to 64 KB (45 packets), which go out whole at the level
# of their first byte (the TSO rule): levels 1 and 1-2 hold at most 20 and 80 packets, and
# every level gets some (the tail skb is under 45 packets, the next one starts before 80).
levels_ok() { # [NAME [MIN1]]: of transfer NAME (default on), at least MIN1 (default 1) at level 1
	local name=${1:-on} min1=${2:-1} b1 b2 b3 sent
	b1=$(delta $name 2 bands) b2=$(delta $name 3 bands) b3=$(delta $name 4 bands) sent=$(delta $name 1 ctr)
	echo "per band: DSCP3 $b1, DSCP7 $b2, DSCP11 $b3; TCPRC3Sent $sent; DSCP0 $(delta $name 1 bands)"
	[ "$b1" -ge "$min1" ] && [ "$b2" -ge 1 ] && [ "$b3" -ge 1 ] && [ "$b1" -le 20 ] &&
		[ $((b1 + b2)) -le 80 ] && [ $((b1 + b2 + b3)) -eq "$sent" ]
}
check "rc3: DSCP per level as the policy says" levels_ok
# TCP takes the tail the receiver got from the loop without sending it: by an ACK bump,
# or by a SACK of the copies it saw before its send head got there (patch 0022; with
# the copies in flight ahead of TCP, this is the common case).
taken() { echo $(($(delta "$1" 2 ctr) + $(delta "$1" 3 ctr))); }
# (Which of the two depends on timing: on the debug kernel, bumps take most of it. The
# skips are checked where they must happen, with a level dropped below.)
check "rc3: the tail taken without TCP sending it (ACK bumps, SACK skips)" test "$(taken on)" -gt 0
diag "rc3: $(levels_ok | head -1), $(delta on 2 ctr) packets taken by ACK bumps, $(delta on 3 ctr) skipped"
# IPv6: the skb's DSCP reaches the traffic class (inet6_csk_xmit_ds(), patch 0011).
check "rc3 over IPv6: transfer intact" transfer on6 cubic warm $SRV_ADDR6
# Where the skbs are cut depends on the MSS (1428 bytes here, 1448 over IPv4): the tail
# skb may start more than 20 packets from the end, leaving level 1 empty. The bounds hold.
check "rc3 over IPv6: DSCP per level in the traffic class, within the policy's bounds" levels_ok on6 0
check "rc3 over IPv6: the tail taken without TCP sending it" test "$(taken on6)" -gt 0
diag "rc3 over IPv6: $(levels_ok on6 | head -1), $(delta on6 2 ctr) packets taken by ACK bumps, $(delta on6 3 ctr) skipped"

# not_credited NAME: what ACK bumps took, and what TCP skipped because the receiver had
# SACKed the loop's copy, is not in tcpi_delivered (patches 0013, 0022). A lossless
# transfer's packets are each delivered by TCP, taken by a bump or skipped, once: the sum
# is the transfer's packet count (data, SYN, FIN), give or take the partial packets where
# skbs end, plus at most one per retransmission (a DSACK of a spurious one counts as
# delivered). Were bumped or skipped packets credited too, the sum would exceed it by their
# count.
not_credited() {
	local mss cwnd delivered retrans dsack bumped skipped pkts
	read -r mss cwnd delivered retrans dsack < "$out/$1.info"
	bumped=$(delta "$1" 2 ctr) skipped=$(delta "$1" 3 ctr) pkts=$(((BYTES + mss - 1) / mss + 2))
	echo "$1: tcpi_delivered $delivered + $bumped bumped + $skipped skipped, against $pkts packets and $retrans retransmitted; cwnd $cwnd, tcpi_dsack_dups $dsack"
	[ $((delivered + $(taken "$1"))) -ge $((pkts - 4)) ] &&
		[ $((delivered + $(taken "$1"))) -le $((pkts + 12 + retrans)) ]
}
check "rc3: bumped packets not credited to the congestion control" not_credited on
diag "$(not_credited on)"
# The receiver holds the loop's copy and TCP's packet of the data where they met, and
# DSACKs the second: that is RC3 at work, not a spurious retransmission, and the sender
# keeps it out of tcpi_dsack_dups and loss-recovery undo (patch 0024).
# (TCPRC3DSack counts them: the check needs some to mean anything.)
check "rc3: DSACKs of the loop's duplicates kept out of tcpi_dsack_dups" \
	test "$(delta on 4 ctr)" -gt 0 -a "$(awk '{ print $5 }' "$out/on.info")" -eq 0
diag "on: $(delta on 4 ctr) DSACKs of the loop's duplicates received and kept out of tcpi_dsack_dups"

# A receiver with RC3 on (port 5301) ACKs the loop's data at its DSCP (patch 0023), so
# that those ACKs wait behind the primary loop's on the way back too; one without RC3
# (port 5300, every transfer above) ACKs everything at DSCP 0.
low_acks() { echo $(($(delta "$1" 2 acks) + $(delta "$1" 3 acks) + $(delta "$1" 4 acks))); }
check "rc3, receiver with RC3: transfer intact" transfer rxrc3 cubic warm $SRV_ADDR 5301
check "rc3, receiver with RC3: low-priority data ACKed at its own DSCP" test "$(low_acks rxrc3)" -gt 0
check "rc3, receiver with RC3: bumped packets not credited" not_credited rxrc3
check "rc3, receiver without RC3: every ACK at DSCP 0" test "$(low_acks on)" -eq 0
diag "rxrc3: receiver's packets at DSCP 0/3/7/11: $(delta rxrc3 1 acks) $(delta rxrc3 2 acks) $(delta rxrc3 3 acks) $(delta rxrc3 4 acks); $(levels_ok rxrc3 | head -1)"

# The network drops every level-2 packet (DSCP 7): the receiver holds the tail (level 1)
# and level 3 with a hole between them. TCP sends the hole itself and skips the tail the
# receiver SACKed (patch 0022): it resends only the holes.
tc -n $NS_RTR class add dev r1 parent 1: classid 1:2 htb rate 100mbit
tc -n $NS_RTR qdisc add dev r1 parent 1:2 handle 20: netem loss 100%
tc -n $NS_RTR filter add dev r1 parent 1: prio 1 protocol ip u32 match ip dsfield 0x1c 0xfc flowid 1:2
check "rc3, level 2 dropped in the network: transfer intact" transfer hole
check "rc3, level 2 dropped in the network: TCP skipped what the receiver SACKed" \
	test "$(delta hole 3 ctr)" -gt 0
check "rc3, level 2 dropped in the network: skipped packets not credited" not_credited hole
diag "hole: $(levels_ok hole | head -1); TCP skipped $(delta hole 3 ctr), ACK bumps took $(delta hole 2 ctr)"
drops=$(tc -n $NS_RTR -s qdisc show dev r1 | awk '/^qdisc netem 20:/ { q = 1 } q && / Sent / { print $7; exit }' | tr -d ,)
diag "hole: the network dropped ${drops:-?} level-2 packets"
tc -n $NS_RTR filter del dev r1 parent 1: prio 1
tc -n $NS_RTR class del dev r1 classid 1:2

# Without the warm-up byte the whole transfer is written while the window is the SYN-ACK's
# 64 KB: the tail goes out when the peer's first ACK opens the window (the loop runs from
# the ACK path too), and ACK bumps take it. The tail's skb starts within 45 packets of the
# end, so it goes at level 1 or 2 (which one depends on where the skbs were cut).
check "rc3, tail beyond the first window: transfer intact" transfer cold cubic cold
check "rc3, tail beyond the first window: the tail sent (level 1 or 2)" \
	test $(($(delta cold 2 bands) + $(delta cold 3 bands))) -ge 1
check "rc3, tail beyond the first window: the tail taken without TCP sending it" test "$(taken cold)" -gt 0
diag "cold: per band: DSCP3 $(delta cold 2 bands), DSCP7 $(delta cold 3 bands), DSCP11 $(delta cold 4 bands); $(delta cold 2 ctr) packets taken by ACK bumps, $(delta cold 3 ctr) skipped"

# The primary loop under other congestion controls.
available=" $(cat /proc/sys/net/ipv4/tcp_available_congestion_control) "
for cc in $OTHER_CCS; do
	if [[ $available != *" $cc "* ]]; then
		for what in "transfer intact" "bumped packets not credited"; do
			ktap_skip "rc3 over $cc: $what" "no module given registers $cc"
		done
		continue
	fi
	check "rc3 over $cc: transfer intact" transfer "on_$cc" "$cc"
	check "rc3 over $cc: bumped packets not credited" not_credited "on_$cc"
	diag "$(not_credited "on_$cc")"
done

# bottleneck QDISC...: the bottleneck's queue (under the dumbbell's htb class 1:1) made
# anew: `tc qdisc replace` keeps a handle's kind, and refuses another.
bottleneck() {
	tc -n $NS_RTR qdisc del dev r1 parent 1:1 handle 10: &&
		tc -n $NS_RTR qdisc add dev r1 parent 1:1 handle 10: "$@"
}
# Forward path: 1% loss and reordering at the bottleneck.
bottleneck netem delay 200us reorder 25% 50% loss 1% limit 1000 || diag "netem refused"
check "rc3: transfer intact through 1% loss and reordering" transfer lossy
bottleneck netem delay 200us loss 0.1% limit 1000 || diag "netem refused"
check "rc3: transfer intact through 0.1% loss" transfer lossy01
bottleneck pfifo limit 1000
diag "loss: $(taken lossy) and $(taken lossy01) packets taken by ACK bumps or skipped at 1% and 0.1%"

# No priority anywhere (the copies compete equally with TCP's packets, at the sender too).
tc -n $NS_CLI qdisc del dev c0 root
check "rc3, no priority queue anywhere: transfer intact" transfer fifo
check "rc3, no priority queue anywhere: sent at low priority" test "$(delta fifo 1 ctr)" -gt 0

# The loop's budget on the hosts' default qdiscs (patch rc3/0012): with fq or fq_codel at
# the sender's egress, the copies share the socket's flow queue with TCP's packets, so the
# loop paces them at the policy's line rate (50 Mbit/s here, below the 100 Mbit/s
# bottleneck) and a walk schedules at most one minimum RTT of them ahead: one BDP. With
# the receiver's ACKs stopped, no later walk runs, and TCPRC3Sent counts the first walk's
# copies alone: at most one BDP at the line rate and the skb that crosses it (with 20 ms
# more of delay, about 86 + 45 packets; the loop without a budget sent the whole 1 MB
# tail, some 690). Once the ACKs
# flow again, later walks send more where the first one stopped (TcpExt TCPRC3Budget).
# fq honours the copies' departure times and puts TCP's earlier ones before them;
# fq_codel ignores them, so there the copies leave together, one BDP at most per walk.
rmmod tcp_rc3
insmod "$ko" levels=3 first_level_pkts=20 level_factor=4 dscp_map=1 line_rate_mbps=50 ||
	diag "insmod line_rate_mbps=50 failed"
bottleneck netem delay 20ms limit 10000 || diag "netem refused"
budget_bytes=1000000 budget_rate_mbps=50
# budget_run NAME: a 1 MB transfer whose rest is written while the receiver's ACKs are
# dropped for a second (its egress netem, the dumbbell's delay, with 100% loss); in $out/NAME.*: the counters TCPRC3Sent and
# TCPRC3Budget before (ctr0), after the first walk (ctrw) and at the end (ctr1), and the
# connection's minimum RTT in us (minrtt).
budget_counters() { tcpext $NS_CLI TCPRC3Sent TCPRC3Budget | paste -sd ' '; }
budget_run() {
	local name=$1 gate=$out/$1.go sent got pid
	rm -f "$gate" "$gate.ready"
	: > "$out/received"
	budget_counters > "$out/$name.ctr0"
	ip netns exec $NS_CLI timeout 60 python3 "$out/peer.py" send $budget_bytes $SRV_ADDR cubic gate 5300 "$gate" > "$out/$name.sent" &
	pid=$!
	for _ in $(seq 100); do [ -e "$gate.ready" ] && break; sleep 0.05; done
	[ -e "$gate.ready" ] || { echo "the sender did not connect"; return 1; }
	ip netns exec $NS_CLI ss -tin dst $SRV_ADDR:5300 | grep -o 'minrtt:[0-9.]*' | head -1 |
		awk -F: '{ printf "%d\n", $2 * 1000 }' > "$out/$name.minrtt"
	tc -n $NS_SRV qdisc change dev s0 root netem delay ${DELAY_US}us loss 100% limit 100000
	touch "$gate"
	sleep 1
	budget_counters > "$out/$name.ctrw"
	tc -n $NS_SRV qdisc change dev s0 root netem delay ${DELAY_US}us limit 100000
	wait $pid || { echo "transfer failed"; return 1; }
	for _ in $(seq 50); do [ -s "$out/received" ] && break; sleep 0.1; done
	budget_counters > "$out/$name.ctr1"
	sent=$(awk '{ print $1 }' "$out/$name.sent") got=$(cat "$out/received")
	diag "$name: min RTT $(cat "$out/$name.minrtt") us; TCPRC3Sent/TCPRC3Budget $(cat "$out/$name.ctr0") before, $(cat "$out/$name.ctrw") after the first walk, $(cat "$out/$name.ctr1") at the end"
	[ "$sent" = "$got" ] || { echo "sent $sent, received ${got:-nothing}"; return 1; }
}
# first_walk_ok NAME: the first walk's copies are some, and no more than one BDP at the
# line rate over the minimum RTT (1500-byte packets) and the skb that crosses it: TCP's
# skbs hold up to 64 KB (45 packets), and the loop sends or keeps an skb whole.
first_walk_ok() {
	local first rtt bdp
	first=$(delta "$1" 1 ctr 0 w)
	rtt=$(cat "$out/$1.minrtt")
	bdp=$((budget_rate_mbps * rtt / 8 / 1500))
	echo "$1: the first walk sent $first packets; one BDP at $budget_rate_mbps Mbit/s over $rtt us is $bdp, plus one skb $((bdp + 45))"
	[ "$rtt" -gt 0 ] && [ "$first" -ge 8 ] && [ "$first" -le $((bdp + 45)) ]
}
# resumed_ok NAME: later walks went on (TCPRC3Budget counted a walk that stopped at its
# budget, and more copies left after the ACKs came back).
resumed_ok() {
	local budget later
	budget=$(delta "$1" 2 ctr) later=$(delta "$1" 1 ctr w 1)
	echo "$1: $budget walks stopped at the budget; $later packets copied after the first walk"
	[ "$budget" -gt 0 ] && [ "$later" -gt 0 ]
}
for qdisc in fq fq_codel; do
	tc -n $NS_CLI qdisc replace dev c0 root $qdisc
	check "rc3 on $qdisc: transfer intact" budget_run "$qdisc"
	check "rc3 on $qdisc: the first walk sends at most one BDP at the line rate" first_walk_ok "$qdisc"
	check "rc3 on $qdisc: later walks send more as ACKs return" resumed_ok "$qdisc"
	diag "$(first_walk_ok "$qdisc"); $(resumed_ok "$qdisc")"
done
tc -n $NS_CLI qdisc del dev c0 root
bottleneck pfifo limit 1000

# A receiver without SACK: the loop stays off (TCP would resend all it delivered).
ip netns exec $NS_SRV sysctl -qw net.ipv4.tcp_sack=0
check "rc3, receiver without SACK: transfer intact" transfer nosack
check "rc3, receiver without SACK: nothing sent at low priority" test "$(delta nosack 1 ctr)" -eq 0
ip netns exec $NS_SRV sysctl -qw net.ipv4.tcp_sack=1

rmmod tcp_rc3
check "policy unloaded: transfer intact" transfer unloaded
check "policy unloaded: nothing sent at low priority" test "$(delta unloaded 1 ctr)" -eq 0
ktap_finish
