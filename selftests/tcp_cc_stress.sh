#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The congestion control abstraction stays safe under concurrency, in the UML guest: while
# connections of every loaded control (plus cubic and dctcp) carry traffic through the
# bottleneck, TCP_CONGESTION is switched on the live sockets as fast as possible, get_info
# is read by getsockopt(TCP_CC_INFO), by `ss -ti` and by back-to-back inet_diag dumps (none
# takes the socket lock, so all race the ACK path), and connections are closed and reopened
# (init and release under load). Afterwards no socket is left, every module can be removed
# (no leaked module reference), and dmesg has no warning, BUG, Oops or sanitizer report.
#
#   tcp_cc_stress.sh [-t SECONDS] [-n CONNS] [-s SEED] MODULE.ko [PARAM=VALUE...] \
#                    [MODULE.ko [PARAM=VALUE...]]...
#
# PARAM=VALUE words are insmod parameters of the module before them. Defaults: 10 s,
# 8 connections, seed 1.
set -u
source "$(dirname "$0")/lib.sh"
stress=$(cd "$(dirname "$0")/.." && pwd)/selftests/helpers/ccstress.py
PORT=5301
# A tenth of what a run on a 2-core host does (about 100 per second, sharing the guest's
# one CPU with the senders, the switcher and the dumps): fewer means the reader starved.
MIN_CC_INFO_READS_PER_S=10

usage() {
	echo "usage: $0 [-t SECONDS] [-n CONNS] [-s SEED] MODULE.ko [PARAM=VALUE...]..." >&2
	exit 2
}
seconds=10 conns=8 seed=1
while getopts t:n:s: opt; do
	case $opt in
	t) seconds=$OPTARG ;;
	n) conns=$OPTARG ;;
	s) seed=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
parse_module_args "$@" || usage

selftest_dir

ktap_plan $((2 * ${#kos[@]} + 12))
dmesg -C

available_controls > "$out/avail.before"
for i in "${!kos[@]}"; do
	# shellcheck disable=SC2086 # a list of PARAM=VALUE words
	check "insmod $(basename "${kos[$i]}")${params[$i]}" insmod "${kos[$i]}" ${params[$i]}
done
available_controls > "$out/avail.after"
registered=$(comm -13 "$out/avail.before" "$out/avail.after" | paste -sd " ")
check "the modules registered controls: ${registered:-none}" test -n "$registered"
controls=$(printf '%s\n' $registered cubic dctcp | awk '!seen[$0]++' | tr '\n' ' ')
controls=${controls% }

# The client runs without CAP_NET_ADMIN (below), so it may only use allowed controls:
# in-tree C modules register restricted, and the Rust ones will.
allow_all() {
	local c
	echo "$controls" > /proc/sys/net/ipv4/tcp_allowed_congestion_control || return 1
	for c in $controls; do
		grep -qw "$c" /proc/sys/net/ipv4/tcp_allowed_congestion_control ||
			{ echo "$c not in the allowed list"; return 1; }
	done
}
check "tcp_allowed_congestion_control = $controls" allow_all

start_server() {
	setup_dumbbell 100 500 500 || { echo "dumbbell setup failed"; return 1; }
	start_helper_server "$stress" $PORT
}
# Not through check: its subshell would lose server_pid.
if start_server > "$out/setup.log" 2>&1; then
	ktap_ok "dumbbell up, ccstress server listening"
else
	ktap_not_ok "dumbbell up, ccstress server listening"; diag_lines "$(cat "$out/setup.log")"
	ktap_finish
fi
diag "controls under test: $controls; $conns connections for $seconds s, seed $seed"

# Unprivileged (nobody, no capabilities); python reads the script from stdin because
# nobody may not be able to open the project's files.
ip netns exec $NS_CLI setpriv --reuid=65534 --regid=65534 --clear-groups \
	python3 -I - client --dst $SRV_ADDR --port $PORT --controls "${controls// /,}" \
	--seconds "$seconds" --conns "$conns" --seed "$seed" \
	< "$stress" > "$out/client.json" 2> "$out/client.err" &
client_pid=$!
pids+=($client_pid)

# inet_diag's get_info, from another process, for as long as the client runs. The
# connections of every 16th `ss -tni` (and of the first that shows any) are kept, to see
# that ss did find them.
ss_loop() {
	local n=0 bad=0
	while kill -0 $client_pid 2>/dev/null; do
		ss -N $NS_CLI -tni > "$out/ss.now" 2>&1 || bad=$((bad + 1))
		ss -N $NS_CLI -tniHe > /dev/null 2>&1 || bad=$((bad + 1))
		n=$((n + 2))
		[ $((n % 32)) -ne 0 ] && [ -s "$out/ss.sample" ] ||
			grep -h bytes_acked "$out/ss.now" >> "$out/ss.sample"
	done
	echo "$n $bad" > "$out/ss.count"
}
ss_loop &
ss_pid=$!
pids+=($ss_pid)
# The same, as fast as a system call allows (each ss costs a process start).
ip netns exec $NS_CLI python3 -I "$stress" diag --controls "${controls// /,}" \
	--seconds "$seconds" > "$out/diag.json" 2> "$out/diag.err" &
diag_pid=$!
pids+=($diag_pid)
wait $client_pid
client_status=$?
wait $diag_pid
diag_status=$?
wait $ss_pid

client_ok() {
	local got
	got=$(json "$out/client.json" "d['seconds']") || { cat "$out/client.json" "$out/client.err"; return 1; }
	diag_lines "$(cat "$out/client.err")"
	[ "$client_status" = 0 ] ||
		{ echo "exit status $client_status"; json "$out/client.json" "'\n'.join(d['errors'])"; return 1; }
	python3 -c "import sys; sys.exit(float('$got') < $seconds)" ||
		{ echo "ran $got s only"; return 1; }
}
check "ccstress ran ${seconds} s without an unexpected error" client_ok
python3 - "$out/client.json" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
print(f"# ccstress: {d['seconds']} s, {d['bytes_sent'] >> 20} MiB sent,"
      f" {sum(d['sockets_by_control'].values())} sockets opened, {d['reconnects']} reconnects"
      f" ({d['aborts']} abortive), {d['switches_ok']} switches"
      f" ({d['switch_skipped']} picks skipped: socket between close and reopen),"
      f" {d['cc_info_reads']} TCP_CC_INFO reads")
for c in d["controls"]:
    print(f"# {c}: {d['sockets_by_control'][c]} sockets opened with it,"
          f" switched to {d['switches_ok_by_control'][c]} times,"
          f" TCP_CC_INFO lengths {d['cc_info_len'].get(c, '-')}")
PY

# The server still reads: orphans of graceful closes drain into it.
sockets_closed() {
	local i left
	for i in $(seq 200); do
		left=$(ss -N $NS_CLI -tanH exclude time-wait 2>&1)
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	echo "$(wc -l <<<"$left") sockets still open in $NS_CLI after 20 s:"; head -5 <<<"$left"
	return 1
}
check "every client socket closes (TIME-WAIT aside)" sockets_closed
diag "$(ss -N $NS_CLI -tanH state time-wait | wc -l) sockets in TIME-WAIT"
kill -TERM $server_pid 2>/dev/null
wait $server_pid 2>/dev/null
diag "server: $(cat "$out/server.json")"

data_flowed() {
	local sent received
	sent=$(json "$out/client.json" "d['bytes_sent']")
	received=$(json "$out/server.json" "d.get('bytes_received', 0)")
	[ "${sent:-0}" -gt 0 ] && [ "${received:-0}" -gt 0 ] ||
		{ echo "sent ${sent:-?} bytes, server received ${received:-?}"; return 1; }
}
check "data flowed" data_flowed
switched_to_all() {
	local c n missing=""
	for c in $controls; do
		n=$(json "$out/client.json" "d['switches_ok_by_control']['$c']")
		[ "${n:-0}" -gt 0 ] || missing+=" $c"
	done
	[ -z "$missing" ] || { echo "never switched to:$missing"; return 1; }
}
check "every control was switched to on a live socket" switched_to_all
no_switch_failed() {
	local failed
	failed=$(json "$out/client.json" "' '.join(f'{k}:{v}' for k, v in d['switches_failed'].items())")
	[ -z "$failed" ] || { echo "failed setsockopt(TCP_CONGESTION) by errno: $failed"; return 1; }
}
check "setsockopt(TCP_CONGESTION) never failed" no_switch_failed
cc_info_reads() {
	local n min=$((MIN_CC_INFO_READS_PER_S * ${seconds%.*}))
	n=$(json "$out/client.json" "d['cc_info_reads']")
	[ "${n:-0}" -ge $min ] || { echo "${n:-?} TCP_CC_INFO reads, expected >= $min"; return 1; }
}
check "getsockopt(TCP_CC_INFO) read often" cc_info_reads
read -r ss_n ss_bad < "$out/ss.count" 2>/dev/null
diag "ss: $ss_n runs, $ss_bad failed;" \
	"$(cat "$out/ss.sample" 2>/dev/null | wc -l) connections in the sampled outputs"
ss_ran() {
	[ "${ss_n:-0}" -gt 0 ] && [ "${ss_bad:-1}" = 0 ] ||
		{ echo "ss ran ${ss_n:-?} times, ${ss_bad:-?} failed"; return 1; }
	grep -q bytes_acked "$out/ss.sample" 2>/dev/null ||
		{ echo "ss never showed a connection"; return 1; }
}
check "ss -ti ran throughout and saw the connections" ss_ran
diag "inet_diag: $(json "$out/diag.json" "f\"{d['dumps']} dumps in {d['seconds']} s, {d['sockets']} sockets,\"
	f\" {d['cc_info']} with congestion control info, by control {d['sockets_by_control']}\"")"
diag_ran() {
	local dumps info
	dumps=$(json "$out/diag.json" "d['dumps']") info=$(json "$out/diag.json" "d['cc_info']")
	[ "$diag_status" = 0 ] && [ "${dumps:-0}" -gt 0 ] && [ "${info:-0}" -gt 0 ] || {
		echo "status $diag_status, ${dumps:-?} dumps, ${info:-?} info attributes"
		json "$out/diag.json" "'\n'.join(d['errors'])"; cat "$out/diag.err"; return 1
	}
}
check "inet_diag dumps read get_info throughout" diag_ran

# No leaked module reference: each module goes once its sockets have (orphans can take a
# moment to drain, hence the retries).
for ((i = ${#kos[@]} - 1; i >= 0; i--)); do
	mod=$(basename "${kos[$i]}" .ko)
	check "rmmod $mod" rmmod_retry "$mod"
done

check "dmesg has no WARN, BUG, Oops, sanitizer or lockdep report" dmesg_clean
ktap_finish
