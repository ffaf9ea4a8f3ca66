#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Boots the x86_64 packages on a fresh Debian image under QEMU (TCG, multi-threaded, so
# the vCPUs run in parallel on host threads; KVM fails on this kind of machine: docs/
# x86_64.md) and runs tools/vm/guest-checks.sh there. The guest has no network device:
# its traffic stays between the namespaces the selftests create inside it. Prints each
# result as PASS/FAIL/SKIP lines and ends with "N passed, N failed".
#
#   tools/vm/run.sh [--cpus N] [--mem SIZE] [--timeout SEC] [--job checks|all|SUITE,...]
#   (make x86-test: packages, image, one boot per suite)
set -uo pipefail
source "$(dirname "$0")/../testbed/config.sh"
source "$(dirname "$0")/console.sh"
cpus=2 mem=3G timeout_s=900 job=checks
while [ $# -gt 0 ]; do
	case "$1" in
	--cpus) cpus=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--job) job=$2; shift 2 ;;
	*) die "usage: $0 [--cpus N] [--mem SIZE] [--timeout SEC per boot] [--job checks|all|SUITE,...]" ;;
	esac
done
# One boot per suite (tools/vm/guest-checks.sh), as the UML guests: each starts with no
# module loaded and every sysctl at its default. checks: what CI runs.
case "$job" in
checks) suites=(install cc_autoload cc_stress cc_packets rc3 tcp_dx tcp_timely) ;;
all) suites=(install cc_autoload cc_stress cc_packets rc3 tcp_dx tcp_timely cc_faults wire_defaults cc_trace tstamp ecn_share
	     cc_module_rust_reno cc_module_timely cc_module_timely_patched cc_module_rust_dctcp cc_module_dx cc_module_swift) ;;
*) IFS=, read -r -a suites <<<"$job" ;;
esac
work=$(mktemp -d "${TMPDIR:-/tmp}/rfl-vm.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$PROJECT_ROOT/tools/vm/image.sh" "$work/root.img" || exit 1
log=${RFL_VM_LOG:-$work/console.log}
: > "$log"
step "booting the image under QEMU (TCG, $cpus vCPUs, $mem), once per suite: ${suites[*]}; console in $log"
passed=0 failed=0
for suite in "${suites[@]}"; do
	t0=$SECONDS
	# -nic none: no network to the host. panic=-1 and -no-reboot: a panic ends QEMU.
	timeout -k 10 "$timeout_s" qemu-system-x86_64 -accel tcg,thread=multi -cpu "$VM_CPU" -smp "$cpus" \
		-m "$mem" -nographic -no-reboot -nic none -serial stdio -monitor none \
		-kernel "$work/root.img.vmlinuz" \
		-append "root=/dev/vda rw console=ttyS0 init=/opt/rfl-tcp-cc/tools/vm/guest-init.sh panic=-1 rfl.job=$suite" \
		-drive file="$work/root.img",format=raw,if=virtio < /dev/null > "$work/console.raw" 2>&1
	status=$?
	echo "  # vm $suite: guest ran $((SECONDS - t0)) s (QEMU status $status)"
	vm_count "$work/console.raw" "$suite" "$log"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
