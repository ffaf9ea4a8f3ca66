#!/usr/bin/env bash
# CI's x86_64 run (issue 29): the patched kernel and the modules as Debian packages, a
# fresh Debian 12 image with them installed by dpkg, booted under QEMU with 2 vCPUs, and
# tools/vm/guest-checks.sh there (make x86-test). The kernel build stops CI_X86_BUILD_BY
# seconds after CI_START (default 50 minutes: the image and the suites take about 22
# more) so that CI stays inside its budget; the tree keeps what was compiled and the next
# run resumes it. A run whose build was stopped says so with a SKIP line and runs nothing
# in the VM: neither passed nor failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/testbed/ci-build.sh

echo "== x86_64 packages under QEMU"
KERNEL_FLAVOR=x86_64 tools/testbed/setup.sh deps || { echo "FAIL x86_64: installing the packages it needs"; echo "0 passed, 1 failed"; exit 1; }
build_within x86_64 "${CI_X86_BUILD_BY:-3000}" tools/vm/packages.sh
tools/vm/run.sh
