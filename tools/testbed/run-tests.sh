#!/usr/bin/env bash
# The project's whole test suite (`make test`):
#   1. host: cargo test of the pure control-law core, and the style checks (make check);
#   2. KUnit in UML: the abstraction's suite at boot, each module's suite on insmod;
#   3. netns selftests in UML, kselftest TAP, one boot per module, the timestamping tool,
#      and one of the bench's instruments.
# Prints every result, then a last line "N passed, N failed". Exit status 0 only if
# nothing failed and every expected suite reported.
set -uo pipefail
source "$(dirname "$0")/config.sh"
cd "$PROJECT_ROOT"

# Per module: file | algorithms it registers | its KUnit suites | insmod parameters |
# its own selftest (run besides tcp_cc_module.sh, which runs per algorithm). Parameters suit
# the selftests' 100 Mbit/s, 500 us dumbbell (TIMELY: see tools/testbed/config.sh).
MODULES=(
	"rust/tcp_rust_reno.ko|rust_reno|rust_reno||"
	"rust/tcp_timely.ko|timely timely_patched|rust_timely|$TIMELY_PARAMS_100M|selftests/tcp_timely.sh"
	"rust/tcp_rust_dctcp.ko|rust_dctcp|rust_dctcp||"
	"rust/tcp_dx.ko|dx|rust_dx|$DX_PARAMS_100M|selftests/tcp_dx.sh"
	"rust/tcp_swift.ko|swift|rust_swift|$SWIFT_PARAMS_100M|"
)
field() { cut -d'|' -f"$2" <<<"$1"; }
BUILTIN_KUNIT_SUITES=(rust_tcp_cong rust_tcp_rc3)

# Guest time limits (uml-run.sh --timeout) are the normal kernel's times TIMEOUT_SCALE. The
# debug kernel runs TCP about 15 times slower (KASAN, lockdep, ...; see README), and the
# selftests relax their bounds there (RFL_KERNEL_FLAVOR=debug), so its guests run longer:
# measured on 2 cores, cc_packets 829 s (limit 300 s on the normal kernel; 141 s since it
# runs one peer process), cc_faults 1247-1664 s (900 s), the others 70-190 s (300 s).
# SCALE_DEBUG gives each at least twice that.
# TIMEOUT_SCALE in the environment overrides both flavours' factor.
SCALE_DEBUG=5
if [ -z "${TIMEOUT_SCALE:-}" ]; then
	case $KERNEL_FLAVOR in debug) TIMEOUT_SCALE=$SCALE_DEBUG ;; *) TIMEOUT_SCALE=1 ;; esac
fi

passed=0 failed=0
work=$(mktemp -d "${TMPDIR:-/tmp}/rfl-tests.XXXXXX")
trap 'rm -rf "$work"' EXIT
pass() { passed=$((passed + 1)); echo "PASS $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
# KERNEL_FLAVOR=debug: every guest ends with tools/testbed/guest-debug-checks.sh (kmemleak, and the
# kernel log scanned for KASAN/lockdep/UBSAN/WARN/BUG/... reports); one result per guest.
debug_checks() { # NAME CONSOLE_LOG
	[ "$KERNEL_FLAVOR" = debug ] || return 0
	if grep -q '^debug-checks: ok' "$2"; then pass "debug checks: $1"; return; fi
	grep '^debug-checks: ' "$2" | sed 's/^/  /'
	grep -q '^debug-checks: FAIL' "$2" || echo "  debug-checks: no verdict (the guest crashed or timed out first)"
	fail "debug checks: $1"
}

# Counts "ok"/"not ok" lines of a TAP/KTAP log at the given indent ("" or "    ").
count_tap() { # FILE INDENT PREFIX
	local line
	while IFS= read -r line; do
		case "$line" in
		"$2ok "*"# SKIP"*) echo "SKIP $3${line#"$2"ok }" ;;
		"$2ok "*) pass "$3${line#"$2"ok }" ;;
		"$2not ok "*) fail "$3${line#"$2"not ok }" ;;
		esac
	done < "$1"
}

# RFL_HOST_TESTS=0 leaves out the host part (cargo test, make check, fuzz smoke), which is
# the same on every kernel flavour: CI runs it once, on the normal flavour.
if [ "${RFL_HOST_TESTS:-1}" = 0 ]; then
	echo "SKIP host tests: RFL_HOST_TESTS=0"
else
	echo "== host: cargo test (rust/core)"
	if (cd rust/core && cargo test --quiet 2>&1) > "$work/cargo.log"; then
		n=$(grep -Eo '[0-9]+ passed' "$work/cargo.log" | awk '{s += $1} END {print s + 0}')
		passed=$((passed + n)); echo "PASS cargo test: $n tests"
	else
		cat "$work/cargo.log"; n=$(grep -Eo '[0-9]+ failed' "$work/cargo.log" | awk '{s += $1} END {print s + 0}')
		failed=$((failed + (n > 0 ? n : 1))); echo "FAIL cargo test"
	fi

	echo "== style: make check (rustfmt, clippy with CLIPPY=1, checkpatch)"
	if make -s check > "$work/check.log" 2>&1 && ! grep -qiE '^(warning|error)' "$work/check.log"; then
		pass "make check"
	else
		cat "$work/check.log"; fail "make check"
	fi

	echo "== host: Python unit tests of the tools (test_*.py in tools/, tools/bench/, tools/lib/, selftests/helpers/)"
	for d in tools tools/bench tools/lib selftests/helpers; do
		if python3 -m unittest discover -s "$d" -p 'test_*.py' > "$work/pyunit.log" 2>&1; then
			n=$(awk '/^Ran [0-9]+ test/ {print $2}' "$work/pyunit.log")
			passed=$((passed + n)); echo "PASS python unittest $d: $n tests"
		else
			cat "$work/pyunit.log"; fail "python unittest ($d/test_*.py)"
		fi
	done

	echo "== host: fuzz smoke (make fuzz-smoke: every target of rust/core/fuzz from the kept corpus)"
	while read -r r msg; do if [ "$r" = PASS ]; then pass "$msg"; else fail "$msg"; fi; done < <(make -s fuzz-smoke 2>&1 |
		awk '/^(PASS|FAIL) / {print; n++} END {if (!n) print "FAIL fuzz smoke: no result from make fuzz-smoke"}')
fi

echo "== KUnit in UML"
kos=()
for m in "${MODULES[@]}"; do kos+=("$(field "$m" 1)"); done
cat > "$work/kunit.sh" <<EOS
for ko in ${kos[*]}; do insmod "\$ko" || echo "insmod \$ko failed" >&2; rmmod "\$(basename "\$ko" .ko)"; done
dmesg > "$work/kunit.dmesg"
EOS
t0=$SECONDS
tools/testbed/uml-run.sh --timeout $((300 * TIMEOUT_SCALE)) --kunit 'rust_*' -- bash "$work/kunit.sh" > "$work/kunit.console" 2>&1 \
	|| { cat "$work/kunit.console"; fail "KUnit boot (status $?)"; }
echo "  # KUnit guest: $((SECONDS - t0)) s"
debug_checks kunit "$work/kunit.console"
sed -E 's/^\[[ 0-9.]+\] //' "$work/kunit.dmesg" 2>/dev/null > "$work/kunit.ktap"
# Per-ACK CPU cost of each controller beside the kernel's C ones, as the suites measured it
# (rust/kunit_cpu_cost.rs): figures, not results.
grep -ho 'cpu_cost: .*' "$work/kunit.ktap" 2>/dev/null | sed 's/^/  # /'
expected=("${BUILTIN_KUNIT_SUITES[@]}")
for m in "${MODULES[@]}"; do expected+=($(field "$m" 3)); done
for suite in "${expected[@]}"; do
	awk -v s="$suite" '$0 ~ "# Subtest: " s "$" {on = 1; next} on && /^    (not )?ok / {print} on && /^(not )?ok / {exit}' \
		"$work/kunit.ktap" > "$work/suite.$suite"
	if [ -s "$work/suite.$suite" ]; then
		count_tap "$work/suite.$suite" "    " "kunit $suite: "
	else
		fail "kunit suite $suite did not run"
	fi
done

# selftest NAME COMMAND...: boot, run a kselftest TAP script, count its results. A guest
# that crashes (no plan) or ends with a status other than pass/fail is a failure too.
selftest() {
	local name=$1 log=$work/selftest.$1.log status; shift
	# SELFTESTS="NAME ...": only these (CI's short debug run: make test-debug SELFTESTS=cc_stress).
	[ -z "${SELFTESTS+set}" ] || [[ " $SELFTESTS " == *" $name "* ]] || { echo "SKIP selftest $name: not in SELFTESTS"; return 0; }
	local t0=$SECONDS
	tools/testbed/uml-run.sh --timeout $((${SELFTEST_TIMEOUT:-300} * TIMEOUT_SCALE)) -- "$@" > "$log" 2>&1
	status=$?
	echo "  # selftest $name: guest ran $((SECONDS - t0)) s"
	grep -E '^# ' "$log" | grep -v '^# totals' | sed 's/^/  /'
	count_tap "$log" "" "selftest $name: "
	grep -q '^1\.\.' "$log" || fail "selftest $name: no TAP plan (guest status $status)"
	[ "$status" = 0 ] || [ "$status" = 1 ] || fail "selftest $name: guest ended with status $status"
	debug_checks "$name" "$log"
}

echo "== netns selftests in UML"
for m in "${MODULES[@]}"; do
	ko=$(field "$m" 1) params=$(field "$m" 4) own=$(field "$m" 5)
	for algo in $(field "$m" 2); do
		# shellcheck disable=SC2086 # params is a list of PARAM=VALUE words
		selftest "$algo" selftests/tcp_cc_module.sh "$ko" "$algo" $params
	done
	# shellcheck disable=SC2086
	[ -z "$own" ] || selftest "$(basename "$own" .sh)" "$own" "$ko" $params
done

# The tcp:tcp_cong_decision tracepoint through tracefs: each controller's decisions, with
# its name and the flow's addresses, over a short flow (docs/timely.md, dx.md, dctcp.md).
# module_args ALGO...: "file.ko PARAM=VALUE..." of each module registering one of ALGO.
module_args() {
	local m a
	for m in "${MODULES[@]}"; do
		for a in "$@"; do
			if [[ " $(field "$m" 2) " == *" $a "* ]]; then
				# shellcheck disable=SC2046 # parameters are PARAM=VALUE words
				printf '%s\n' "$(field "$m" 1)" $(field "$m" 4)
				break
			fi
		done
	done
}
mapfile -t trace_args < <(module_args timely dx rust_dctcp)
selftest cc_trace selftests/tcp_cc_trace.sh "${trace_args[@]}"

# The delay-based controls' opt-in ECN answer (ecn_share=1): ECN requested whatever
# net.ipv4.tcp_ecn says, dctcp's answer traced while the bottleneck marks, the -reno sibling
# where the listener refuses ECN; with ecn_share 0, no ECN asked.
mapfile -t share_args < <(module_args timely dx swift)
selftest ecn_share selftests/tcp_ecn_share.sh "${share_args[@]}"

# Installed but not loaded: every algorithm autoloaded by a route's congctl (under RTNL), the
# sysctl and setsockopt(TCP_CONGESTION), each within a bound that ends a hang.
autoload_args=()
for m in "${MODULES[@]}"; do autoload_args+=("$(field "$m" 1):$(field "$m" 2 | tr ' ' ',')"); done
selftest cc_autoload selftests/tcp_cc_autoload.sh "${autoload_args[@]}"

# Every algorithm at once under load: ss -ti / TCP_CC_INFO in tight loops while sockets switch
# TCP_CONGESTION back and forth, open and close; the modules must unload cleanly after.
stress_args=()
for m in "${MODULES[@]}"; do
	# shellcheck disable=SC2206 # parameters are PARAM=VALUE words
	stress_args+=("$(field "$m" 1)" $(field "$m" 4))
done
selftest cc_stress selftests/tcp_cc_stress.sh "${stress_args[@]}"

# Scripted TCP exchanges (selftests/helpers/pktpeer.py) with every algorithm: ECN echoes, SACK holes,
# ACK and SACK beyond snd_nxt, malformed options; data intact. With RC3's policy loaded,
# ACKs over, inside and beyond the low-priority copies of the tail (patches 0012-0014).
selftest cc_packets selftests/tcp_cc_packets.sh rust/tcp_rc3.ko "${stress_args[@]}"

# Fault matrix: load/unload cycles under traffic, 1000 concurrent flows through one
# bottleneck, netem faults with SHA-256-checked transfers, every invalid module parameter,
# unprivileged selection of a control that is not allowed (2 minutes on an idle 2-core
# machine, 6 on the CI machine: the limit leaves room for a slower one).
SELFTEST_TIMEOUT=900 selftest cc_faults selftests/tcp_cc_faults.sh -r rust/tcp_rc3.ko "${stress_args[@]}"

# RC3's low-priority loop (patches 0011-0015) with its policy module: DSCP per level at a
# strict-priority qdisc, ACK bumps kept from congestion control, data intact; over cubic,
# dctcp and every algorithm of the modules.
selftest rc3 selftests/tcp_rc3.sh rust/tcp_rc3.ko "${stress_args[@]}"

# User-space SO_TIMESTAMPING (tools/tstamp.py): capabilities, hardware stamping on and off,
# and the UDP ping-pong's RTT and one-way-delay noise per stamp source, software and veth's
# emulated hardware clock (DX's accuracy figures).
selftest tstamp selftests/tcp_tstamp.sh

# What a host nobody configured does on the wire: the delay-stamp option neither answered
# nor offered, receive timestamping not turned on and off by peers' connections, RC3's loop
# refused outside the initial namespace unless it allows it.
selftest wire_defaults selftests/tcp_wire_defaults.sh

# The bench's instruments (netlink sampler, flow-size workload) measure what they claim.
selftest bench_tools selftests/bench_tools.sh

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
