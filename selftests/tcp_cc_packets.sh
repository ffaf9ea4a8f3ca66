#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Packet-level tests: a scripted TCP peer (tools/pktpeer.py, scapy; packetdrill is not
# packaged) talks to the guest kernel's TCP, whose sender uses each congestion control in
# turn, and shapes the ACKs: plain, ECN echoes until CWR, a hole repaired through SACK,
# an ACK beyond snd_nxt, SACK blocks beyond snd_nxt, and malformed or unknown options.
# Each transfer must arrive intact; the kernel must answer the bogus ACK with a challenge
# ACK and discard the bogus SACK blocks (its MIB counters say so), and stay clean in dmesg.
# These are the paths the DX and RC3 patches will change; the tests fix today's behaviour.
#
#   tcp_cc_packets.sh MODULE.ko [PARAM=VALUE...] [MODULE.ko [PARAM=VALUE...]]...
set -u
source "$(dirname "$0")/lib.sh"
PEER=$(cd "$(dirname "$0")/.." && pwd)/tools/pktpeer.py
NS_DUT=pkt-dut NS_PEER=pkt-peer DUT_IP=10.10.9.1 PEER_IP=10.10.9.2
SCENARIOS=(plain ecn_echo sack_hole ack_beyond_snd_nxt sack_beyond_snd_nxt bad_options
	delay_stamps delay_refused delay_bad)
# Controls that offer the delay-stamp option on their SYNs (TCP_CONG_DELAY_STAMPS).
STAMP_CONTROLS=" dx "

parse_module_args "$@" || { echo "usage: $0 MODULE.ko [PARAM=VALUE...]..." >&2; exit 4; }

cleanup() {
	local m
	ip netns del $NS_DUT 2>/dev/null; ip netns del $NS_PEER 2>/dev/null
	for m in "${kos[@]}"; do rmmod "$(basename "$m" .ko)" 2>/dev/null; done
	return 0
}
trap cleanup EXIT

before=$(cat /proc/sys/net/ipv4/tcp_available_congestion_control)
for i in "${!kos[@]}"; do
	# shellcheck disable=SC2086 # parameters are PARAM=VALUE words
	insmod "${kos[$i]}" ${params[$i]} || { echo "Bail out! insmod ${kos[$i]} failed"; exit 1; }
done
controls=(cubic dctcp)
for c in $(cat /proc/sys/net/ipv4/tcp_available_congestion_control); do
	grep -qw "$c" <<<"$before" || controls+=("$c")
done

ip netns add $NS_DUT && ip netns add $NS_PEER || exit 1
ip link add d0 netns $NS_DUT type veth peer name p0 netns $NS_PEER
for nd in $NS_DUT:d0 $NS_PEER:p0; do
	ns=${nd%%:*} dev=${nd#*:}
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
	ip netns exec "$ns" ethtool -K "$dev" gso off tso off gro off >/dev/null 2>&1
	ip -n "$ns" link set lo up
	ip -n "$ns" link set "$dev" up
done
# The peer has no address: its kernel ignores the traffic and only the script answers.
ip -n $NS_DUT addr add $DUT_IP/24 dev d0
peer_mac=$(ip -n $NS_PEER -o link show p0 | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
ip -n $NS_DUT neigh replace $PEER_IP lladdr "$peer_mac" dev d0 nud permanent
ip netns exec $NS_DUT sysctl -qw net.ipv4.tcp_ecn=1

mib() { # NAME: a TcpExt counter of the namespace under test
	ip netns exec $NS_DUT awk -v n="$1" '
		/^TcpExt:/ { if (!h) { split($0, k); h = 1 } else { split($0, v); for (i in k) if (k[i] == n) print v[i] } }' \
		/proc/net/netstat
}

ktap_plan $(( ${#controls[@]} * ${#SCENARIOS[@]} + 1 ))
dmesg -C
port=8000
for cc in "${controls[@]}"; do
	for s in "${SCENARIOS[@]}"; do
		port=$((port + 1))
		sack0=$(mib TCPSACKDiscard) chal0=$(( $(mib TCPChallengeACK) + $(mib TCPACKSkippedChallenge) ))
		dly0=$(mib TCPDelayStampSample) bad0=$(mib TCPDelayStampBad)
		out=$(ip netns exec $NS_PEER /usr/bin/python3 "$PEER" peer --iface p0 --ip $PEER_IP \
			--dut-ns $NS_DUT --dut-ip $DUT_IP --cc "$cc" --scenario "$s" --port $port 2>&1)
		sack1=$(mib TCPSACKDiscard) chal1=$(( $(mib TCPChallengeACK) + $(mib TCPACKSkippedChallenge) ))
		dly1=$(mib TCPDelayStampSample) bad1=$(mib TCPDelayStampBad)
		res=$(tail -n1 <<<"$out")
		why=""
		grep -q '"ok": true' <<<"$res" || why="transfer or scenario expectation failed"
		case $s in
		ack_beyond_snd_nxt) [ "$chal1" -gt "$chal0" ] || why+=" no challenge ACK counted" ;;
		sack_beyond_snd_nxt) [ "$sack1" -gt "$sack0" ] || why+=" no SACK block discarded" ;;
		esac
		case $s in delay_*)
			offered=no; grep -q '"delay_offered": true' <<<"$res" && offered=yes
			[[ "$STAMP_CONTROLS" == *" $cc "* ]] && want=yes || want=no
			[ $offered = $want ] || why+=" SYN offered the delay-stamp option: $offered"
			case $s/$offered in
			delay_stamps/yes) [ "$dly1" -gt "$dly0" ] && [ "$bad1" -eq "$bad0" ] ||
				why+=" samples +$((dly1 - dly0)) bad +$((bad1 - bad0))" ;;
			delay_bad/yes) [ "$bad1" -gt "$bad0" ] || why+=" no bad option counted" ;;
			*) [ "$dly1" -eq "$dly0" ] && [ "$bad1" -eq "$bad0" ] ||
				why+=" samples +$((dly1 - dly0)) bad +$((bad1 - bad0)) without the option" ;;
			esac
		esac
		fig=$(python3 -c 'import json, sys; print("%(bytes_received)s B intact=%(intact)s segs=%(segments)s rexmit_seen=%(retransmissions_seen)s cwr=%(cwr_seen)s ecn=%(ecn)s stamps=%(delay_answered)s/%(delay_data_opts)s/%(delay_echoes)s" % json.loads(sys.argv[1]))' "$res" 2>/dev/null)
		fig+=" delay_samples+$((dly1 - dly0)) delay_bad+$((bad1 - bad0))"
		if [ -z "$why" ]; then
			ktap_ok "$cc $s"
			diag "$cc $s: $fig challenge+$((chal1 - chal0)) sack_discard+$((sack1 - sack0))"
		else
			ktap_not_ok "$cc $s"
			diag "$cc $s: $why; $fig"
			diag_lines "$(tail -n 5 <<<"$out")"
		fi
	done
done
check "dmesg has no WARN, BUG, Oops or sanitizer report" \
	bash -c "! dmesg | grep -E 'WARNING:|BUG:|Oops|general protection|Call Trace|KASAN|UBSAN'"
ktap_finish
