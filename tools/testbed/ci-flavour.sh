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
source tools/testbed/ci-build.sh

echo "== the $flavour flavour (make $target)"
# tools/testbed/setup.sh directly: make would turn its status 75 into 2.
build_within "$flavour flavour" "$build_by" env KERNEL_FLAVOR="$flavour" tools/testbed/setup.sh all
make "$target"
