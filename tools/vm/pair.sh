#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Two x86_64 kernels talking over virtio-net (docs/x86_64.md): two QEMU guests from the
# same fresh Debian image with the packages installed, each with 2 vCPUs and one
# virtio-net device. The link (--link):
#   tap     (the default) each guest's device on a tap with virtio-net headers, the two
#           taps on a bridge, all inside a network namespace this script creates and
#           deletes (nothing on the host's own network): TSO, GSO and GRO on, as a NIC
#           gives them;
#   stream  QEMU's stream backend over a Unix socket in this run's directory: no virtio
#           header, so no TSO or GSO (for a machine without /dev/net/tun).
# The receiver (tools/vm/guest-checks.sh pair_rx) counts RC3's levels by DS field; the
# sender (pair_tx) sends 5 MB with every control, data checked by SHA-256 end to end, the
# delay-stamp option's samples counted, then with TSO/GSO off, then RC3. --rx-gro off
# turns GRO off at the receiver (what GRO does to RC3's copies: the segments counted per
# DSCP against TCPRC3Sent).
#
#   tools/vm/pair.sh [--timeout SEC] [--link tap|stream] [--rx-gro on|off]   (make x86-pair)
set -uo pipefail
source "$(dirname "$0")/../testbed/config.sh"
source "$(dirname "$0")/console.sh"
timeout_s=2700 link_kind=tap rx_gro=on
while [ $# -gt 0 ]; do
	case "$1" in
	--timeout) timeout_s=$2; shift 2 ;;
	--link) link_kind=$2; shift 2 ;;
	--rx-gro) rx_gro=$2; shift 2 ;;
	*) die "usage: $0 [--timeout SEC] [--link tap|stream] [--rx-gro on|off]" ;;
	esac
done
work=$(mktemp -d "${TMPDIR:-/tmp}/rfl-pair.XXXXXX")
ns=rfl-pair-$$
cleanup() { kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; ip netns del "$ns" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
"$PROJECT_ROOT/tools/vm/image.sh" "$work/rx.img" || exit 1
cp --sparse=always "$work/rx.img" "$work/tx.img"
link=$work/link.sock
run_in=()
if [ "$link_kind" = tap ]; then
	# A bridge with no address in a namespace of its own: the guests see each other only.
	ip netns add "$ns" || die "cannot create network namespace $ns (try --link stream)"
	ip -n "$ns" link add br0 type bridge forward_delay 0 stp_state 0 || exit 1
	for t in tap-rx tap-tx; do
		ip -n "$ns" tuntap add dev $t mode tap vnet_hdr || die "no tap device (try --link stream)"
		ip -n "$ns" link set $t master br0 up
	done
	ip -n "$ns" link set br0 up
	run_in=(ip netns exec "$ns")
elif [ "$link_kind" != stream ]; then
	die "--link $link_kind: expected tap or stream"
fi
netdev() { # NAME SERVER(on|off): the guest's -netdev
	if [ "$link_kind" = tap ]; then
		echo "tap,id=n0,ifname=tap-$1,script=no,downscript=no,vnet_hdr=on"
	else
		echo "stream,id=n0,addr.type=unix,addr.path=$link,server=$2"
	fi
}
boot() { # NAME MAC SERVER
	timeout -k 10 "$timeout_s" "${run_in[@]}" qemu-system-x86_64 -accel tcg,thread=multi -cpu "$VM_CPU" -smp 2 -m 2G \
		-nographic -no-reboot -serial stdio -monitor none \
		-kernel "$work/rx.img.vmlinuz" \
		-append "root=/dev/vda rw console=ttyS0 init=/opt/rfl-tcp-cc/tools/vm/guest-init.sh panic=-1 rfl.job=pair_$1 rfl.gro=$rx_gro" \
		-drive file="$work/$1.img",format=raw,if=virtio \
		-netdev "$(netdev "$1" "$3")" -device "virtio-net-pci,netdev=n0,mac=$2" \
		< /dev/null > "$work/$1.raw" 2>&1
}
step "booting the receiver and the sender under QEMU (TCG, 2 vCPUs each), linked by $link_kind"
t0=$SECONDS
boot rx 52:54:00:77:00:02 on & rx=$!
if [ "$link_kind" = stream ]; then
	for _ in $(seq 100); do [ -S "$link" ] && break; sleep 0.2; done
fi
boot tx 52:54:00:77:00:01 off & tx=$!
wait $tx; tx_status=$?
wait $rx; rx_status=$?
echo "  # vm pair: guests ran $((SECONDS - t0)) s (QEMU status rx $rx_status, tx $tx_status)"
passed=0 failed=0
for g in rx tx; do
	vm_count "$work/$g.raw" "pair_$g" "${RFL_VM_LOG:+$RFL_VM_LOG.$g}"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
