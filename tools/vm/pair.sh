#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Two x86_64 kernels talking over virtio-net (docs/x86_64.md): two QEMU guests from the
# same fresh Debian image with the packages installed, each with 2 vCPUs and one
# virtio-net device, linked to each other by a QEMU stream backend over a Unix socket in
# this run's directory (no host network, no tap). TSO, GSO and GRO stay on as virtio-net
# offers them. The receiver (tools/vm/guest-checks.sh pair_rx) counts RC3's levels by DS
# field; the sender (pair_tx) sends 5 MB with every control, data checked by SHA-256 end
# to end, the delay-stamp option's samples counted, then with TSO/GSO off, then RC3.
#
#   tools/vm/pair.sh [--timeout SEC]      (make x86-pair)
set -uo pipefail
source "$(dirname "$0")/../testbed/config.sh"
source "$(dirname "$0")/console.sh"
timeout_s=2700
[ "${1:-}" != --timeout ] || timeout_s=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/rfl-pair.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
"$PROJECT_ROOT/tools/vm/image.sh" "$work/rx.img" || exit 1
cp --sparse=always "$work/rx.img" "$work/tx.img"
link=$work/link.sock
boot() { # NAME MAC NETDEV-ARGS
	timeout -k 10 "$timeout_s" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m 2G \
		-nographic -no-reboot -serial stdio -monitor none \
		-kernel "$work/rx.img.vmlinuz" \
		-append "root=/dev/vda rw console=ttyS0 init=/opt/rfl-tcp-cc/tools/vm/guest-init.sh panic=-1 rfl.job=pair_$1" \
		-drive file="$work/$1.img",format=raw,if=virtio \
		-netdev "stream,id=n0,addr.type=unix,addr.path=$link,$3" -device "virtio-net-pci,netdev=n0,mac=$2" \
		< /dev/null > "$work/$1.raw" 2>&1
}
step "booting the receiver and the sender under QEMU (TCG, 2 vCPUs each), linked by $link"
t0=$SECONDS
boot rx 52:54:00:77:00:02 server=on & rx=$!
for _ in $(seq 100); do [ -S "$link" ] && break; sleep 0.2; done
boot tx 52:54:00:77:00:01 server=off & tx=$!
wait $tx; tx_status=$?
wait $rx; rx_status=$?
echo "  # vm pair: guests ran $((SECONDS - t0)) s (QEMU status rx $rx_status, tx $tx_status)"
passed=0 failed=0
for g in rx tx; do
	vm_count "$work/$g.raw" "pair_$g" "${RFL_VM_LOG:+$RFL_VM_LOG.$g}"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
