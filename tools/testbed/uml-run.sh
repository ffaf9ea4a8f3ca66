#!/usr/bin/env bash
# Boot the project's User-mode Linux kernel on the host's root file system, run one
# command inside it as init, stream the console, and exit with the command's status.
#
#   tools/testbed/uml-run.sh [--timeout SEC] [--time-travel] [--mem SIZE] [--kunit GLOB]
#                    [--log FILE] [--no-debug-checks] [--interactive] -- COMMAND [ARGS...]
#
# --interactive: the guest's console reads this script's standard input (con0=fd:0,fd:1)
# instead of nothing, and writes straight to its standard output (and --log, if given), as
# `make shell` needs; UML puts a terminal in raw mode, and its settings are restored after.
#
# The kernel is the flavour's (KERNEL_FLAVOR=normal|debug, see tools/testbed/config.sh). On the debug
# flavour, after COMMAND the guest runs tools/testbed/guest-debug-checks.sh (kmemleak scan, kernel
# log scan for KASAN/lockdep/UBSAN/WARN/BUG/... reports): its lines start with
# "debug-checks: " and the last says "debug-checks: ok" or "debug-checks: FAIL". The exit
# status stays COMMAND's; a failed check is also said on stderr.
#
# The guest sees the host's files read-write (hostfs) and runs as root: keep guest scripts
# to writing under the directories they are given. It always ends: after --timeout seconds
# (default 600) the whole UML process group is killed and the status is 124.
set -euo pipefail
source "$(dirname "$0")/config.sh"

# The comment above, as usage.
usage() { sed -n '2,/^set -euo/{/^#/{s/^# \{0,1\}//;p}}' "$0"; }

timeout_s=600 time_travel=0 mem=1G kunit_glob="" log="" debug_checks=0 interactive=0
[ "$KERNEL_FLAVOR" = normal ] || debug_checks=1
while [ $# -gt 0 ]; do
	case "$1" in
	--timeout) timeout_s=$2; shift 2 ;;
	--time-travel) time_travel=1; shift ;;
	--mem) mem=$2; shift 2 ;;
	--kunit) kunit_glob=$2; shift 2 ;;
	--log) log=$2; shift 2 ;;
	--no-debug-checks) debug_checks=0; shift ;;
	--interactive) interactive=1; shift ;;
	-h|--help) usage; exit 0 ;;
	--) shift; break ;;
	-*) die "unknown option $1 (tools/testbed/uml-run.sh --help)" ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || die "usage: $0 [options] -- COMMAND [ARGS...]"
# RFL_UML_KERNEL: another UML binary of the same build (a copy taken before a rebuild, so
# that a long bench keeps one kernel while the tree changes).
kernel=${RFL_UML_KERNEL:-$KERNEL_TREE/linux}
[ -x "$kernel" ] || die "no UML kernel at $kernel: run 'make setup' first"

rundir=$(mktemp -d "${TMPDIR:-/tmp}/uml-run.XXXXXX")
uml_pid="" tty_state="" feed_pid=""
cleanup() {
	if [ -n "$uml_pid" ] && kill -0 "$uml_pid" 2>/dev/null; then
		kill -KILL -- "-$uml_pid" 2>/dev/null || true
	fi
	# UML forks helper processes that may outlive the main one: end the whole group.
	[ -n "$uml_pid" ] && pkill -KILL -g "$uml_pid" 2>/dev/null || true
	[ -z "$feed_pid" ] || kill "$feed_pid" 2>/dev/null || true
	rm -rf "$rundir"
	[ -z "$tty_state" ] || stty "$tty_state" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

{
	echo "cd $(printf %q "$PWD")"
	printf 'exec'; printf ' %q' "$@"; echo
} > "$rundir/job.sh"

con0=null,fd:1
[ "$interactive" = 0 ] || con0=fd:0,fd:1
args=(mem="$mem" rootfstype=hostfs rootflags=/ rw
      init="$PROJECT_ROOT/tools/testbed/guest-init.sh" uml_dir="$rundir"
      con=null con0=$con0 quiet loglevel=4
      RFL_RUNDIR="$rundir")
[ "$time_travel" = 1 ] && args+=(time-travel=inf-cpu)
# KUnit's KTAP is read back from the kernel log after every module's suites ran: a log
# large enough to keep the suites that ran at boot (the default 128 KB lost them once the
# modules' suites grew).
if [ -n "$kunit_glob" ]; then args+=(kunit.enable=1 "kunit.filter_glob=$kunit_glob" log_buf_len=4M); fi
[ "$debug_checks" = 0 ] || args+=(RFL_DEBUG_CHECKS=1)
# Guest scripts can tell the debug kernel (about 10x slower per packet) by this variable.
[ "$KERNEL_FLAVOR" = normal ] || args+=("RFL_KERNEL_FLAVOR=$KERNEL_FLAVOR")

out=${log:-$rundir/console.log}
# setsid: UML and its helpers get their own process group, which cleanup() kills.
if [ "$interactive" = 1 ]; then
	input=/dev/stdin
	if [ -t 0 ]; then
		tty_state=$(stty -g)
	else
		# Not a terminal (a pipe, a file): at its end UML would hang up the console, and
		# the guest's output would stop; and input that arrives early in boot can go unread.
		# Feed it through a FIFO that stays open, once the guest's init says the console is
		# up (guest-init.sh), ending with ^D (end of input for the shell at a line's start).
		input=$rundir/stdin
		mkfifo "$input"
		{
			until [ -e "$rundir/console-ready" ]; do sleep 0.1; done
			cat; printf '\004'; exec sleep "$timeout_s"
		} <&0 > "$input" &
		feed_pid=$!
	fi
	if [ -n "$log" ]; then
		setsid "$kernel" "${args[@]}" < "$input" > >(tee "$out") 2>&1 &
	else
		setsid "$kernel" "${args[@]}" < "$input" &
	fi
else
	setsid "$kernel" "${args[@]}" </dev/null > >(tee "$out") 2>&1 &
fi
uml_pid=$!
deadline=$((SECONDS + timeout_s))
while kill -0 "$uml_pid" 2>/dev/null; do
	if [ $SECONDS -ge $deadline ]; then
		echo "uml-run: guest still running after ${timeout_s}s: killed" >&2
		exit 124
	fi
	sleep 0.2
done
wait "$uml_pid" 2>/dev/null || true
sleep 0.2 # let tee flush
if [ ! -f "$rundir/status" ]; then
	echo "uml-run: the guest ended without reporting a status (crash or panic: see the console above)" >&2
	exit 125
fi
if [ "$debug_checks" = 1 ]; then
	case "$(cat "$rundir/debug-checks" 2>/dev/null)" in
	0) ;;
	1) echo "uml-run: debug checks: the kernel reported problems (debug-checks: lines above)" >&2 ;;
	*) echo "uml-run: debug checks did not finish (see the console above)" >&2 ;;
	esac
fi
exit "$(cat "$rundir/status")"
