#!/usr/bin/env bash
# The main job (`make demo`): boot the test kernel, load the project's controllers, and
# compare them with cubic, dctcp and bbr through a shaped bottleneck between network
# namespaces (100 Mbit/s, 500 us). Prints a table; the JSON lands in results/demo.json,
# which git ignores (a run's output, not the project's).
# Extra arguments go to tools/bench/netbench.py.
#
# The guest runs on simulated time by default (UML time-travel: time advances only when
# the guest idles, so timers fire on time and the host's speed and load do not show in
# the RTTs a delay-based controller reads). DEMO_CLOCK=normal runs on the guest's normal
# clock instead, whose timers fire late by up to hundreds of microseconds under UML.
set -euo pipefail
source "$(dirname "$0")/config.sh"
cd "$PROJECT_ROOT"
mkdir -p results
ALGOS=${ALGOS:-rust_reno,timely,timely_patched,dx,rust_dctcp,cubic,dctcp,bbr}
case ${DEMO_CLOCK:=simulated} in
simulated) clock=(--time-travel) ;;
normal) clock=() ;;
*) die "DEMO_CLOCK=$DEMO_CLOCK: expected simulated or normal" ;;
esac
kos=(rust/tcp_rust_reno.ko rust/tcp_timely.ko rust/tcp_rust_dctcp.ko rust/tcp_dx.ko)
for ko in "${kos[@]}"; do
	[ -f "$ko" ] || die "$ko not built: run 'make'"
done
echo "clock: $DEMO_CLOCK; algorithms: $ALGOS"
t0=$SECONDS
tools/testbed/uml-run.sh --timeout 900 "${clock[@]}" -- bash -c "
	insmod rust/tcp_rust_reno.ko && insmod rust/tcp_timely.ko $TIMELY_PARAMS_DEMO &&
		insmod rust/tcp_rust_dctcp.ko && insmod rust/tcp_dx.ko $DX_PARAMS_100M || exit 1
	python3 tools/bench/netbench.py --algos $ALGOS --json results/demo.json $*
" | grep -v '^\['
echo "demo took $((SECONDS - t0)) s of wall time"
