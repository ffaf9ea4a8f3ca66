#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Boots the x86_64 packages on a fresh Debian image under QEMU (TCG, multi-threaded, so
# the vCPUs run in parallel on host threads; KVM fails on this kind of machine: docs/
# x86_64.md) and runs tools/vm/guest-checks.sh there. The guest has no network device:
# its traffic stays between the namespaces the selftests create inside it. Prints each
# result as PASS/FAIL/SKIP lines and ends with "N passed, N failed".
#
#   tools/vm/run.sh [--cpus N] [--mem SIZE] [--timeout SEC] [--job checks|all]
#   (make x86-test: packages, image, boot, checks)
set -uo pipefail
source "$(dirname "$0")/../testbed/config.sh"
cpus=2 mem=3G timeout_s=2400 job=checks
while [ $# -gt 0 ]; do
	case "$1" in
	--cpus) cpus=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--job) job=$2; shift 2 ;;
	*) die "usage: $0 [--cpus N] [--mem SIZE] [--timeout SEC] [--job checks|all]" ;;
	esac
done
work=$(mktemp -d "${TMPDIR:-/tmp}/rfl-vm.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$PROJECT_ROOT/tools/vm/image.sh" "$work/root.img" || exit 1
log=${RFL_VM_LOG:-$work/console.log}
step "booting the image under QEMU (TCG, $cpus vCPUs, $mem): $job; console in $log"
t0=$SECONDS
# -nic none: no network to the host. panic=-1 and -no-reboot: a panic ends QEMU.
timeout -k 10 "$timeout_s" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp "$cpus" -m "$mem" \
	-nographic -no-reboot -nic none -serial stdio -monitor none \
	-kernel "$work/root.img.vmlinuz" \
	-append "root=/dev/vda rw console=ttyS0 init=/opt/rfl-tcp-cc/tools/vm/guest-init.sh panic=-1 rfl.job=$job" \
	-drive file="$work/root.img",format=raw,if=virtio < /dev/null > "$log" 2>&1
status=$?
echo "  # guest ran $((SECONDS - t0)) s (QEMU status $status)"
tr -d '\r' < "$log" > "$work/console.txt"

# Count each suite's KTAP lines between its markers, as run-tests.sh does for UML's.
passed=0 failed=0
awk '
	/^rfl-suite: / { suite = $2; next }
	/^rfl-suite-end: / { if (!plan[suite]) print "FAIL vm " suite ": no TAP plan"; else if ($3 != 0 && !bad[suite]) print "FAIL vm " suite ": exit status " $3; suite = ""; next }
	suite == "" { next }
	/^1\.\.[0-9]+/ { plan[suite] = 1; next }
	/^#/ { print "  " $0; next }
	/^ok [0-9]+ .*# SKIP/ { sub(/^ok [0-9]+ /, ""); print "SKIP vm " suite ": " $0; next }
	/^ok [0-9]+ / { sub(/^ok [0-9]+ /, ""); print "PASS vm " suite ": " $0; next }
	/^not ok [0-9]+ / { sub(/^not ok [0-9]+ /, ""); print "FAIL vm " suite ": " $0; bad[suite] = 1; next }
	END { if (suite != "") print "FAIL vm " suite ": the guest stopped inside it" }
' "$work/console.txt" > "$work/results"
cat "$work/results"
passed=$(grep -c '^PASS ' "$work/results")
failed=$(grep -c '^FAIL ' "$work/results")
if ! grep -q '^rfl-suite-end: kernel_reports' "$work/console.txt"; then
	failed=$((failed + 1))
	echo "FAIL vm: the guest did not finish (QEMU status $status); its console's last lines:"
	tail -n 40 "$work/console.txt" | sed 's/^/  | /'
fi
grep -E 'KASAN|CFI failure|WARNING:|BUG:|Oops|possible circular' "$work/console.txt" | head -n 20 | sed 's/^/  | /'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
