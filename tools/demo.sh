#!/usr/bin/env bash
# The main job (`make demo`): boot the test kernel, load the project's controllers, and
# compare them with cubic, dctcp and bbr through a shaped bottleneck between network
# namespaces (100 Mbit/s, the guest's normal clock). Prints a table; the JSON lands in
# results/demo.json. Extra arguments go to tools/netbench.py.
set -euo pipefail
source "$(dirname "$0")/config.sh"
cd "$PROJECT_ROOT"
mkdir -p results
ALGOS=${ALGOS:-rust_reno,timely,timely_patched,cubic,dctcp,bbr}
for ko in rust/tcp_rust_reno.ko rust/tcp_timely.ko; do
	[ -f "$ko" ] || die "$ko not built: run 'make'"
done
tools/uml-run.sh --timeout 900 -- bash -c "
	insmod rust/tcp_rust_reno.ko && insmod rust/tcp_timely.ko $TIMELY_PARAMS_100M || exit 1
	python3 tools/netbench.py --algos $ALGOS --json results/demo.json $*
" | grep -v '^\['
