#!/usr/bin/env bash
# The main job (`make demo`): boot the test kernel, load the project's controllers, and
# compare them with cubic and dctcp (and bbr) through a shaped bottleneck between network
# namespaces. Prints a table; the JSON lands in results/demo.json.
set -euo pipefail
source "$(dirname "$0")/config.sh"
cd "$PROJECT_ROOT"
mkdir -p results
ALGOS=${ALGOS:-rust_reno,cubic,dctcp,bbr}
modules=(rust/tcp_rust_reno.ko)
for ko in "${modules[@]}"; do [ -f "$ko" ] || die "$ko not built: run 'make'"; done
tools/uml-run.sh --timeout 600 -- bash -c "
	for ko in ${modules[*]}; do insmod \$ko || exit 1; done
	python3 tools/netbench.py --algos $ALGOS --json results/demo.json $*
" | grep -v '^\['
