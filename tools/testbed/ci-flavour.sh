#!/usr/bin/env bash
# CI's run of one other UML kernel flavour: its kernel (tools/testbed/setup.sh), then a make
# target on it. So that CI stays inside its budget on a cold cache, the kernel build stops
# BUILD_BY seconds after CI_START (epoch seconds, set by .ci/run); the tree keeps what was
# compiled and the next run resumes it. A run whose build was stopped says so with a SKIP
# line and runs nothing on that flavour: neither passed nor failed.
#
#   ci-flavour.sh FLAVOR BUILD_BY MAKE_TARGET
#   (.ci/run: debug, 2100 s, test-debug-short; nonetns, 2400 s, test-nonetns)
set -uo pipefail
cd "$(dirname "$0")/../.."
[ $# = 3 ] || { echo "usage: $0 FLAVOR BUILD_BY_SECONDS MAKE_TARGET" >&2; exit 2; }
flavour=$1 build_by=$2 target=$3
start=${CI_START:-$(date +%s)}

echo "== the $flavour flavour (make $target)"
# tools/testbed/setup.sh directly: make would turn its status 75 into 2.
RFL_BUILD_DEADLINE=$((start + build_by)) KERNEL_FLAVOR=$flavour tools/testbed/setup.sh all
status=$?
if [ "$status" = 75 ]; then
	echo "SKIP $flavour flavour: its kernel was not built within CI's budget (RFL_BUILD_DEADLINE); the next run resumes the build"
	echo "0 passed, 0 failed"
	exit 0
fi
[ "$status" = 0 ] || { echo "FAIL $flavour flavour: its kernel setup failed (status $status)"; echo "0 passed, 1 failed"; exit 1; }
make "$target"
