#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Inside the x86_64 guest, on a fresh Debian with the packages installed by dpkg: what a
# user's host does with them (install), or one of the project's selftests (the same
# scripts as in UML) on 2 vCPUs, under kCFI, lockdep and KASAN; then the kernel's reports.
# One suite per boot, as in UML: no module, sysctl or namespace left from another. Each
# suite's KTAP goes to the console between "rfl-suite: NAME" and "rfl-suite-end: NAME
# STATUS" lines, which tools/vm/run.sh counts.
#
#   guest-checks.sh SUITE
set -u
job=${1:?usage: $0 SUITE}
release=$(uname -r)
moddir=/lib/modules/$release/updates/rfl-tcp-cc
export TOOLS_LIB=/opt/rfl-tcp-cc/tools/lib
# A KASAN and lockdep kernel under TCG: the selftests' allowances for UML's debug kernel
# (longer runs, lower progress floors, ss that takes most of a second) apply here too.
export RFL_KERNEL_FLAVOR=debug
source selftests/lib.sh
# The x86_64-kcsan kernel (KCSAN in place of KASAN) has its debugfs directory.
kcsan=0 sanitizer=KASAN
[ ! -e /sys/kernel/debug/kcsan ] || { kcsan=1 sanitizer=KCSAN; }

suite() { # NAME COMMAND...: one suite's KTAP between markers
	local name=$1 status; shift
	echo "rfl-suite: $name"
	( "$@" ) 2>&1
	status=$?
	echo "rfl-suite-end: $name $status"
}

# What the packages installed, before anything is loaded.
install_checks() {
	local m p
	ktap_plan 8
	check "2 CPUs online" test "$(nproc)" -ge 2
	# KASAN (KCSAN in the x86_64-kcsan kernel) and lockdep say so at boot; kCFI gives each
	# function a __cfi_ preamble symbol.
	checkers() {
		if [ "$kcsan" = 1 ]; then
			dmesg | grep -q "kcsan: enabled" || { echo "no KCSAN"; return 1; }
		else
			dmesg | grep -q "KernelAddressSanitizer initialized" || { echo "no KASAN"; return 1; }
		fi
		dmesg | grep -q "Lock dependency validator" || { echo "no lockdep"; return 1; }
		grep -q " __cfi_tcp_reno_cong_avoid$" /proc/kallsyms || { echo "no kCFI preambles"; return 1; }
	}
	check "the kernel has kCFI, lockdep and $sanitizer (CONFIG_CFI, PROVE_LOCKING, $sanitizer)" checkers
	check "modules installed under updates/ and indexed by depmod" \
		eval "ls $moddir/*.ko >/dev/null && grep -q 'updates/rfl-tcp-cc/tcp_timely.ko' /lib/modules/$release/modules.dep"
	check "none of them loaded at boot" eval '! grep -qE "^tcp_(timely|dx|rust_reno|rust_dctcp|swift|rc3) " /proc/modules'
	modinfo_ok() {
		for m in tcp_timely tcp_dx tcp_rust_reno tcp_rust_dctcp tcp_swift tcp_rc3; do
			modinfo "$m" | grep -q '^license: *GPL' || { echo "$m: no GPL license"; return 1; }
			modinfo "$m" | grep -q '^description: ' || { echo "$m: no description"; return 1; }
			modinfo "$m" | grep -q "^vermagic: *$release " || { echo "$m: vermagic not $release"; return 1; }
		done
		modinfo -F alias tcp_timely | grep -qx tcp_timely_patched || { echo "tcp_timely: no alias tcp_timely_patched"; return 1; }
		modinfo -F parm tcp_timely | grep -q '^max_rate_mbps:' || { echo "tcp_timely: no max_rate_mbps parameter"; return 1; }
	}
	check "modinfo: license, description, vermagic, timely_patched's alias, parameters" modinfo_ok
	check "modprobe tcp_timely: its parameters in /sys/module/tcp_timely/parameters" \
		eval 'modprobe tcp_timely && test -r /sys/module/tcp_timely/parameters/max_rate_mbps && test -r /sys/module/tcp_timely/parameters/t_low_us'
	# Restricted by default: loaded, but not in net.ipv4.tcp_allowed_congestion_control,
	# so a process without CAP_NET_ADMIN cannot select it.
	restricted() {
		! sysctl -n net.ipv4.tcp_allowed_congestion_control | grep -qw timely || { echo "timely allowed by default"; return 1; }
		setpriv --reuid=65534 --regid=65534 --clear-groups python3 -c '
import errno, socket
s = socket.socket()
try:
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"timely")
except OSError as e:
    raise SystemExit(0 if e.errno == errno.EPERM else f"errno {e.errno}")
raise SystemExit("an unprivileged process selected timely")'
	}
	check "restricted by default: an unprivileged setsockopt(TCP_CONGESTION) gets EPERM" restricted
	check "modprobe -r tcp_timely" modprobe -r tcp_timely
	ktap_finish
}

# Two guests over a virtio-net link (tools/vm/pair.sh): pair_rx receives, pair_tx sends.
PAIR_TX=10.77.0.1 PAIR_RX=10.77.0.2 PAIR_PORT=7000 PAIR_DONE=7999 PAIR_BYTES=5000000
# RC3's DS fields per level with dscp_map=1 (level n at DSCP 4n - 1), as tcp_rc3.sh counts them.
RC3_LEVEL_DS=(0x0c 0x1c 0x2c)
pair_link() { # the guest's virtio-net device up with ADDR
	local dev
	# The virtio-net device (the kernel also has dummy0, and lo).
	for dev in /sys/class/net/*; do
		[ "$(basename "$(readlink -f "$dev/device/driver" 2>/dev/null)")" = virtio_net ] && break
	done
	dev=$(basename "$dev")
	[ -e "/sys/class/net/$dev/device" ] || return 1
	ip addr add "$1/24" dev "$dev" && ip link set "$dev" up && echo "$dev"
}
offloads() { ethtool -k "$1" | grep -E '^(tcp-segmentation-offload|generic-segmentation-offload|generic-receive-offload):' | tr -s ' \n' ' '; }

pair_rx() {
	local dev i n
	ktap_plan $((3 + ${#RC3_LEVEL_DS[@]}))
	dev=$(pair_link $PAIR_RX)
	check "virtio-net link up ($dev)" test -n "$dev"
	# pair.sh --rx-gro off: each segment reaches TCP (and the DSCP counter) on its own.
	if grep -qw 'rfl.gro=off' /proc/cmdline; then ethtool -K "$dev" gro off; fi
	diag "receiver offloads: $(offloads "$dev")"
	sysctl -qw net.ipv4.tcp_delay_stamps=1
	# RC3's levels counted by DSCP as they arrive (an AF_PACKET socket: the x86_64
	# kernel has no ingress qdisc).
	python3 tools/vm/pair.py dscp "$dev" $PAIR_PORT /tmp/dscp.json & local counter=$!
	python3 tools/vm/pair.py sink $PAIR_PORT & local sink=$!
	# The sender says it is done by connecting here; give it 40 minutes at most.
	check "the sender finished (connected to the done port)" \
		timeout 2400 python3 -c 'import socket; s = socket.create_server(("", '$PAIR_DONE')); s.accept()'
	kill $sink
	kill -TERM $counter; wait $counter
	diag "segments to port $PAIR_PORT by DSCP: $(cat /tmp/dscp.json 2>/dev/null)"
	diag "receiver link: $(ip -s link show "$dev" | tr -s ' \n' ' ' | cut -c1-300)"
	for i in "${!RC3_LEVEL_DS[@]}"; do
		n=$(python3 -c 'import json, sys; print(json.load(open("/tmp/dscp.json")).get(str(int(sys.argv[1], 16) >> 2), 0))' \
			"${RC3_LEVEL_DS[$i]}" 2>/dev/null)
		diag "RC3 level $((i + 1)) (DS field ${RC3_LEVEL_DS[$i]}): ${n:-0} segments received"
		if [ "$i" = 0 ]; then
			check "RC3's level-1 packets arrive at their DSCP (3) over the link" test "${n:-0}" -gt 0
		else
			ktap_ok "RC3 level $((i + 1)) counted (${n:-0} segments; reached only by a long enough tail)"
		fi
	done
	check "TCPDelayStampBad stays 0 at the receiver" test "$(nstat -az TcpExtTCPDelayStampBad | awk '/TcpExt/ { print $2 }')" = 0
	ktap_finish
}

pair_tx() {
	local dev cc out s0 b0 hw0 s1 b1 hw1
	local ccs=(cubic dctcp rust_reno timely timely_patched rust_dctcp dx swift)
	ktap_plan $((2 + 2 * ${#ccs[@]} + 2))
	dev=$(pair_link $PAIR_TX)
	check "virtio-net link up ($dev)" test -n "$dev"
	diag "sender offloads: $(offloads "$dev")"
	sysctl -qw net.ipv4.tcp_delay_stamps=1 net.ipv4.tcp_ecn=1
	for m in tcp_rust_reno tcp_rust_dctcp tcp_dx; do modprobe $m; done
	# Swift's targets are absolute: between two TCG guests the RTT is milliseconds, above
	# its 50 us default on every ACK (its window at the floor: 5 MB did not finish in 120 s).
	modprobe tcp_swift base_target_ns=20000000 fs_range_ns=5000000 endpoint_target_ns=5000000
	modprobe tcp_timely $TIMELY_PARAMS_1G
	check "the receiver answers over the link" python3 tools/vm/pair.py wait $PAIR_RX $PAIR_PORT 600
	stamps() { # samples, bad, hardware samples (nstat prints in the kernel's order: one each)
		local c
		for c in TCPDelayStampSample TCPDelayStampBad TCPDelayStampHWSample; do
			nstat -az "TcpExt$c" | awk '/TcpExt/ { printf "%s ", $2 }'
		done
	}
	for cc in "${ccs[@]}"; do
		read -r s0 b0 hw0 <<<"$(stamps)"
		out=$(python3 tools/vm/pair.py send $PAIR_RX $PAIR_PORT "$cc" $PAIR_BYTES 2>&1)
		read -r s1 b1 hw1 <<<"$(stamps)"
		check "$cc: $((PAIR_BYTES / 1000000)) MB over virtio-net, SHA-256 intact" grep -q '"intact": true' <<<"$out"
		diag "$cc: $out; delay samples $((s1 - s0)), bad $((b1 - b0)), hardware $((hw1 - hw0))"
		case " timely timely_patched dx swift " in
		# Samples come per ACK: TSO at the sender and GRO at the receiver make few ACKs
		# of a fast transfer (timely_patched once: 5 MB in 0.6 s, 59 samples).
		*" $cc "*) check "$cc: the delay-stamp option negotiated between the two kernels (samples, none bad)" \
			test $((s1 - s0)) -gt 10 -a $((b1 - b0)) -eq 0 ;;
		*) check "$cc: no delay sample (the option is not offered)" test $((s1 - s0)) -eq 0 ;;
		esac
	done
	# TSO and GSO off at the sender: each segment its own skb and its own t1; the samples
	# per MB and the throughput against the offloaded run above (what TSO does to the option).
	ethtool -K "$dev" tso off gso off
	read -r s0 b0 hw0 <<<"$(stamps)"
	out=$(python3 tools/vm/pair.py send $PAIR_RX $PAIR_PORT dx $PAIR_BYTES 2>&1)
	read -r s1 b1 hw1 <<<"$(stamps)"
	check "dx, TSO and GSO off: intact" grep -q '"intact": true' <<<"$out"
	diag "dx, TSO/GSO off: $out; delay samples $((s1 - s0)), bad $((b1 - b0))"
	ethtool -K "$dev" tso on gso on
	# RC3 over cubic, its levels at their DSCPs (dscp_map=1), counted by the receiver.
	modprobe tcp_rc3 levels=3 first_level_pkts=20 level_factor=4 dscp_map=1
	sysctl -qw net.ipv4.tcp_rc3=1
	out=$(python3 tools/vm/pair.py send $PAIR_RX $PAIR_PORT cubic $PAIR_BYTES --rc3 2>&1)
	check "RC3 over cubic: intact" grep -q '"intact": true' <<<"$out"
	diag "RC3 over cubic: $out; TCPRC3Sent $(nstat -az TcpExtTCPRC3Sent | awk '/TcpExt/ { print $2 }')"
	# Where RC3's copies go: the egress qdisc's drops and the device's counters.
	diag "sender qdisc: $(tc -s qdisc show dev "$dev" | tr -s ' \n' ' ' | cut -c1-300)"
	diag "sender link: $(ip -s link show "$dev" | tr -s ' \n' ' ' | cut -c1-300)"
	sysctl -qw net.ipv4.tcp_rc3=0
	python3 -c 'import socket; socket.create_connection(("'$PAIR_RX'", '$PAIR_DONE'), timeout=30).close()'
	ktap_finish
}

ko() { echo "$moddir/$1.ko"; }
# The modules' testbed parameters, as tools/testbed/run-tests.sh gives them (100 Mbit/s).
source tools/testbed/config.sh 2>/dev/null || true
TIMELY=("$(ko tcp_timely)" $TIMELY_PARAMS_100M)
DX=("$(ko tcp_dx)" $DX_PARAMS_100M)
SWIFT=("$(ko tcp_swift)" $SWIFT_PARAMS_100M)
ALL=("$(ko tcp_rust_reno)" "${TIMELY[@]}" "$(ko tcp_rust_dctcp)" "${DX[@]}" "${SWIFT[@]}")

case "$job" in
install) suite install install_checks ;;
# Autoload from the installed modules (no .ko paths: modprobe finds them).
cc_autoload) suite cc_autoload selftests/tcp_cc_autoload.sh tcp_rust_reno:rust_reno \
	tcp_timely:timely,timely_patched tcp_rust_dctcp:rust_dctcp tcp_dx:dx tcp_swift:swift ;;
cc_stress) suite cc_stress selftests/tcp_cc_stress.sh "${ALL[@]}" ;;
cc_packets) suite cc_packets selftests/tcp_cc_packets.sh "$(ko tcp_rc3)" "${ALL[@]}" ;;
rc3) suite rc3 selftests/tcp_rc3.sh "$(ko tcp_rc3)" "${ALL[@]}" ;;
tcp_dx) suite tcp_dx selftests/tcp_dx.sh "${DX[@]}" ;;
tcp_timely) suite tcp_timely selftests/tcp_timely.sh "${TIMELY[@]}" ;;
cc_faults) suite cc_faults selftests/tcp_cc_faults.sh -r "$(ko tcp_rc3)" "${ALL[@]}" ;;
wire_defaults) suite wire_defaults selftests/tcp_wire_defaults.sh ;;
cc_trace) suite cc_trace selftests/tcp_cc_trace.sh "${TIMELY[@]}" "${DX[@]}" "$(ko tcp_rust_dctcp)" ;;
tstamp) suite tstamp selftests/tcp_tstamp.sh ;;
ecn_share) suite ecn_share selftests/tcp_ecn_share.sh "${TIMELY[@]}" "${DX[@]}" "${SWIFT[@]}" ;;
# The per-control selftest UML runs for every algorithm (tcp_cc_module.sh), one boot each.
cc_module_rust_reno) suite "$job" selftests/tcp_cc_module.sh "$(ko tcp_rust_reno)" rust_reno ;;
cc_module_timely|cc_module_timely_patched)
	suite "$job" selftests/tcp_cc_module.sh "${TIMELY[0]}" "${job#cc_module_}" "${TIMELY[@]:1}" ;;
cc_module_rust_dctcp) suite "$job" selftests/tcp_cc_module.sh "$(ko tcp_rust_dctcp)" rust_dctcp ;;
cc_module_dx) suite "$job" selftests/tcp_cc_module.sh "${DX[0]}" dx "${DX[@]:1}" ;;
cc_module_swift) suite "$job" selftests/tcp_cc_module.sh "${SWIFT[0]}" swift "${SWIFT[@]:1}" ;;
pair_rx) suite pair_rx pair_rx ;;
pair_tx) suite pair_tx pair_tx ;;
*) echo "rfl-suite: $job"; echo "guest-checks.sh: no suite $job"; echo "rfl-suite-end: $job 2" ;;
esac
# Whatever the kernel's checkers said over all of it.
REPORTS="KASAN|possible circular|possible recursive|inconsistent lock|CFI failure|WARNING:|BUG:|Oops"
# This project's code in a stack frame: the series' C (the delay-stamp option, RC3, veth's
# clock, the send paths it adds) and the Rust modules and abstraction (v0-mangled _R
# symbols, rust_helper_ wrappers, frames in our modules).
export OURS='tcp_delay_|rc3_|veth_hwts|ip_queue_xmit_(ds|prio)|inet6_csk_xmit_ds|tcp_wmem_alloc_tx| _RN|rust_helper_|[[]tcp_(timely|dx|swift|rust_reno|rust_dctcp|rc3)[]]'
# kcsan_races: KCSAN's data-race reports, one line each ("BUG: KCSAN: data-race in A / B")
# with "ours" when a frame of either access is this project's code.
kcsan_races() {
	dmesg | awk '
		/BUG: KCSAN:/ { if (title != "") print title (mine ? "  [ours]" : ""); title = $0; sub(/.*BUG: /, "", title); mine = 0; next }
		title != "" && /\] ==========/ { print title (mine ? "  [ours]" : ""); title = ""; next }
		title != "" && $0 ~ ENVIRON["OURS"] { mine = 1 }
		END { if (title != "") print title (mine ? "  [ours]" : "") }' | sort | uniq -c
}
dmesg_report() {
	if [ "$kcsan" = 1 ]; then
		ktap_plan 2
		check "dmesg: no lockdep, CFI, WARN, BUG or Oops report (KCSAN's apart)" \
			eval '! dmesg | grep -E "$REPORTS" | grep -v "BUG: KCSAN:" | head -n 20 | grep .'
		# Races in the stock kernel's code are reported, not judged: this project's
		# code must have none.
		kcsan_races | while read -r line; do diag "KCSAN: $line"; done
		check "KCSAN: no data race with this project's code in either stack" \
			eval '! kcsan_races | grep "\[ours\]"'
	else
		ktap_plan 1
		check "dmesg: no KASAN, lockdep, CFI, WARN, BUG or Oops report" \
			eval '! dmesg | grep -E "$REPORTS" | head -n 20 | grep .'
	fi
	ktap_finish
}
suite "kernel_reports($job)" dmesg_report
