#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Packet-level tests: a scripted TCP peer (selftests/helpers/pktpeer.py, a packet socket; packetdrill is not
# packaged) talks to the guest kernel's TCP, whose sender uses each congestion control in
# turn, and shapes the ACKs: plain, ECN echoes until CWR, a hole repaired through SACK,
# an ACK beyond snd_nxt, SACK blocks beyond snd_nxt, malformed or unknown options, the
# delay-stamp option offered, refused and corrupted, its echoes forged and replayed on
# duplicate ACKs (delay_replay: only echoes of data an ACK newly acknowledges are samples),
# and random options on every ACK (options_fuzz: a seeded grammar over the kernel's option
# parser, the new option's too). md5_syn_full (once) has the kernel listen with a TCP-MD5
# key and take a signed SYN whose options leave its SYN-ACK no room for the delay-stamp
# option: the connection must not use it, and nothing WARNs (skipped without TCP_MD5SIG).
# Each transfer must arrive intact; the kernel must answer the bogus ACK with a challenge
# ACK and discard the bogus SACK blocks (its MIB counters say so), and stay clean in dmesg.
# These are the paths the DX and RC3 patches change; the tests fix today's behaviour.
#
# With tcp_rc3.ko among the modules (RC3's policy at its defaults, patches 0012-0015), the
# rc3_* scenarios turn TCP_RC3 on for their connection (the others keep it off and must see
# no low-priority packet). The peer tells the low-priority copies of the tail by their DS
# field (DSCP 1, Not-ECT, no timestamp; as many as TCPRC3Sent counts) and ACKs over them
# cumulatively (rc3_bump: TCPRC3AckBump counts, TCP's next segment starts at the ACK and
# it never sends bumped data), inside one of them (rc3_ack_mid_skb: the skb is split
# there), beyond everything queued (rc3_ack_beyond_write_seq), over queued data the loop
# had not sent (rc3_ack_unsent_data) or over the FIN, which the loop never sends
# (rc3_ack_unsent_fin): these three must draw challenge ACKs and no bump, and the FIN come;
# TCP may skip only what the peer SACKed.
# rc3_lp_ack_echo has the peer send low-priority data with t1 first: the kernel's ACKs of it
# go at that DSCP without the timestamp and must carry no delay-stamp echo either.
# rc3_copy_window: while the client's congestion window holds its data back, the peer
# sends it data, the application reads it, and a duplicate ACK gives RC3's loop a walk: in
# every rc3_* scenario, no low-priority copy may offer a receive window TCP did not offer
# itself (a copy may be dropped; TCP must still send the ACKs and window updates it owes;
# not judged where packets were lost on the way to a slow peer).
# rc3_tlp_below_skip: the peer holds every byte, TCP took the SACKed tail without sending
# it, and the ACK of TCP's last segment is lost: the loss probe retransmits that segment,
# below the tail, and its DSACK must end the episode (no TCPLossProbeRecovery, no CWR).
# rc3_sack_beyond_snd_nxt only SACKs the copies and never ACKs past snd_nxt: TCP skips
# what the blocks cover (TCPRC3SackSkip, patch 0022), only data the peer holds, and never
# sends it, unless the kernel declared the peer reneging (TCPSACKReneging: this peer's ACK
# rests at the start of the SACKed data until it sees TCP's next segment, and a peer
# slower than the kernel's 10 ms grace looks like one that dropped them).
#
#   tcp_cc_packets.sh MODULE.ko [PARAM=VALUE...] [MODULE.ko [PARAM=VALUE...]]...
#   PKT_ONLY="SCENARIO..." runs only those scenarios (while working on one).
set -u
source "$(dirname "$0")/lib.sh"
PEER=$(cd "$(dirname "$0")/.." && pwd)/selftests/helpers/pktpeer.py
NS_DUT=pkt-dut NS_PEER=pkt-peer DUT_IP=10.10.9.1 PEER_IP=10.10.9.2
SCENARIOS=(plain ecn_echo sack_hole ack_beyond_snd_nxt sack_beyond_snd_nxt bad_options
	delay_stamps delay_refused delay_bad delay_replay options_fuzz)
# Controls that offer the delay-stamp option on their SYNs (TCP_CONG_DELAY_STAMPS).
STAMP_CONTROLS=" dx timely timely_patched swift "
RC3_SCENARIOS=(rc3_bump rc3_ack_mid_skb rc3_ack_beyond_write_seq rc3_ack_unsent_data
	rc3_ack_unsent_fin rc3_sack_beyond_snd_nxt rc3_lp_ack_echo rc3_copy_window
	rc3_tlp_below_skip)
# Bumped packets reach every control's ACK processing (kept from its counts): rc3_bump runs
# over each. The others test tcp_ack()'s checks and the bump's walk, before any control
# sees the ACK: cubic is enough.
# rc3_lp_ack_echo too: only the controls that offer the option have an echo to leave off.
RC3_EVERY_CONTROL=" rc3_bump rc3_lp_ack_echo "

parse_module_args "$@" || { echo "usage: $0 MODULE.ko [PARAM=VALUE...]..." >&2; exit 4; }

cleanup() {
	local m
	ip netns del $NS_DUT 2>/dev/null; ip netns del $NS_PEER 2>/dev/null
	for m in "${kos[@]}"; do rmmod "$(basename "$m" .ko)" 2>/dev/null; done
	return 0
}
trap cleanup EXIT

before=$(cat /proc/sys/net/ipv4/tcp_available_congestion_control)
# The scripted peer answers in milliseconds (Python), and Swift's targets are absolute
# delays: above its target (3 ms for the dumbbell) on every ACK, swift keeps its window at
# the floor, a packet every many RTTs, and options_fuzz's 400 KB did not finish in 20 s.
# These exchanges test what the stack does with the peer's packets, not Swift's answer to
# a path slower than its target: here its target is 100 ms (its largest), above this
# peer's RTT (tens of milliseconds in the x86_64 guest under TCG and KASAN).
# (Replaced, not appended: a Rust module parameter given twice fails the load, EEXIST.)
for i in "${!kos[@]}"; do
	[ "$(basename "${kos[$i]}")" != tcp_swift.ko ] ||
		params[i]="$(sed 's/ base_target_ns=[0-9]*//' <<<"${params[$i]}") base_target_ns=100000000"
done
for i in "${!kos[@]}"; do
	# shellcheck disable=SC2086 # parameters are PARAM=VALUE words
	insmod "${kos[$i]}" ${params[$i]} || { echo "Bail out! insmod ${kos[$i]} failed"; exit 1; }
done
controls=(cubic dctcp)
for c in $(cat /proc/sys/net/ipv4/tcp_available_congestion_control); do
	grep -qw "$c" <<<"$before" || controls+=("$c")
done
rc3=0
for m in "${kos[@]}"; do [ "$(basename "$m")" = tcp_rc3.ko ] && rc3=1; done
rc3_cases=()
for s in "${RC3_SCENARIOS[@]}"; do
	for cc in "${controls[@]}"; do
		[ "$cc" = cubic ] || [[ "$RC3_EVERY_CONTROL" == *" $s "* ]] && rc3_cases+=("$cc:$s")
	done
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
# Both off by default: the DUT's namespace opts in to the delay-stamp option (its controls
# that ask offer it), and the initial namespace lets it run RC3's loop (TCP_RC3).
ip netns exec $NS_DUT sysctl -qw net.ipv4.tcp_delay_stamps=1
rc3_allow_netns 1

dmesg -C
# One peer process runs every exchange (starting Python costs more than an exchange) and
# checks the MIB counters around each: a challenge ACK for the ACK beyond snd_nxt, a
# discarded SACK block for the SACK beyond it, delay samples exactly when stamps were used.
cases=() port=8000
add_case() { # CC:SCENARIO, on the next port; OFFER 1 if the control's SYN offers the option
	local offer=0
	port=$((port + 1))
	[ -z "${PKT_ONLY:-}" ] || [[ " $PKT_ONLY " == *" ${1#*:} "* ]] || return 0
	[[ "$STAMP_CONTROLS" == *" ${1%%:*} "* ]] && offer=1
	cases+=("$1:$port:$offer")
}
for cc in "${controls[@]}"; do
	for s in "${SCENARIOS[@]}"; do add_case "$cc:$s"; done
done
add_case cubic:md5_syn_full
[ $rc3 = 1 ] && for c in "${rc3_cases[@]}"; do add_case "$c"; done
ktap_plan $(( ${#cases[@]} + (rc3 == 1 ? 0 : ${#rc3_cases[@]}) + 1 ))
[ $rc3 = 1 ] || for c in "${rc3_cases[@]}"; do ktap_skip "${c/:/ }" "no tcp_rc3.ko given (RC3's policy)"; done
results=0
shopt -s lastpipe # the loop below counts in this shell (the guest has no /dev/fd for <(...))
ip netns exec $NS_PEER /usr/bin/python3 "$PEER" batch --iface p0 --ip $PEER_IP \
	--dut-ns $NS_DUT --dut-ip $DUT_IP --case "${cases[@]}" 2>&1 |
while IFS=$'\t' read -r kind verdict name fig why; do
	case $kind in
	RESULT)
		results=$((results + 1))
		if [ "$verdict" = ok ]; then
			ktap_ok "$name"; diag "$name: $fig"
		elif [ "$verdict" = skip ]; then
			ktap_skip "$name" "$why"
		else
			ktap_not_ok "$name"; diag "$name: $why; $fig"
		fi ;;
	DETAIL) diag "  $verdict" ;;
	*) diag "peer: $kind${verdict:+ $verdict}${name:+ $name}" ;;
	esac
done
# A peer that died early leaves exchanges without a result: count them as failures.
while [ $results -lt ${#cases[@]} ]; do
	c=${cases[$results]%:*:*} results=$((results + 1))
	ktap_not_ok "${c/:/ } (no result from the peer)"
done
check "dmesg has no WARN, BUG, Oops or sanitizer report" dmesg_clean
ktap_finish
