#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A fresh Debian 12 for the x86_64 guests: a minbase root file system from the registry
# (mmdebstrap; cached as a tarball by its package list), the packages of
# tools/vm/packages.sh installed into it with dpkg as a user would, this checkout's
# selftests and tools copied to /opt/rfl-tcp-cc, then an ext4 disk image of it.
#
#   tools/vm/image.sh IMAGE.img      (the kernel to boot is left in IMAGE.img.vmlinuz)
set -euo pipefail
# X86_FLAVOR: x86_64 (kCFI, lockdep, KASAN), x86_64-kcsan (KCSAN in place of KASAN) or
# x86_64-release (no checkers: for a host of your own).
export KERNEL_FLAVOR=${X86_FLAVOR:-x86_64}
case "$KERNEL_FLAVOR" in x86_64|x86_64-kcsan|x86_64-release) ;;
*) echo "X86_FLAVOR=$KERNEL_FLAVOR: expected x86_64, x86_64-kcsan or x86_64-release" >&2; exit 2 ;; esac
source "$(dirname "$0")/../testbed/config.sh"
img=${1:?usage: $0 IMAGE.img}
DEBS=$CACHE_DIR/$KERNEL_FLAVOR-debs
SUITE=bookworm MIRROR=${KERNEL_DEB_MIRROR:-http://deb.debian.org/debian}
# What the selftests run in the guest; nothing else.
PACKAGES=iproute2,kmod,iperf3,python3,procps,ethtool,iputils-ping,util-linux,e2fsprogs
[ "$(id -u)" = 0 ] || die "$0 needs root (dpkg in a chroot of the image, files owned by root)"

key=$(echo "$SUITE $MIRROR $PACKAGES" | sha256sum | cut -c1-12)
base=$CACHE_DIR/vm/debian-$SUITE-$key.tar
if [ ! -f "$base" ]; then
	step "mmdebstrap: Debian $SUITE minbase + $PACKAGES (cached in $base)"
	mkdir -p "$CACHE_DIR/vm"
	rm -f "$CACHE_DIR"/vm/debian-"$SUITE"-*.tar
	# The format is the file name's (.tar): write a partial one, rename it when complete.
	mmdebstrap --quiet --variant=minbase --include="$PACKAGES" "$SUITE" "${base%.tar}.part.tar" "$MIRROR"
	mv "${base%.tar}.part.tar" "$base"
fi

root=$(mktemp -d "${TMPDIR:-/tmp}/rfl-vm-root.XXXXXX")
trap 'rm -rf "$root"' EXIT
tar -C "$root" -xf "$base"
# As a user would: dpkg -i the kernel, then the modules (its postinst runs depmod).
mkdir -p "$root/tmp/debs"
cp "$DEBS"/linux-image-*.deb "$DEBS"/rfl-tcp-cc-modules-*.deb "$root/tmp/debs/"
chroot "$root" sh -c 'dpkg -i /tmp/debs/linux-image-*.deb && dpkg -i /tmp/debs/rfl-tcp-cc-modules-*.deb' \
	> "$img.dpkg.log" 2>&1 || { cat "$img.dpkg.log"; die "dpkg -i in the image failed"; }
rm -rf "$root/tmp/debs"
release=$(ls "$root/lib/modules")
cp "$root/boot/vmlinuz-$release" "$img.vmlinuz"
# The tests: the same scripts the UML guest runs, and the guest's init.
mkdir -p "$root/opt/rfl-tcp-cc/tools"
cp -a "$PROJECT_ROOT/selftests" "$root/opt/rfl-tcp-cc/"
cp -a "$PROJECT_ROOT/tools/lib" "$PROJECT_ROOT/tools/vm" "$root/opt/rfl-tcp-cc/tools/"
mkdir -p "$root/opt/rfl-tcp-cc/tools/testbed"
cp "$PROJECT_ROOT/tools/testbed/config.sh" "$root/opt/rfl-tcp-cc/tools/testbed/"
cp "$PROJECT_ROOT/tools/tstamp.py" "$root/opt/rfl-tcp-cc/tools/"
echo "rfl-vm" > "$root/etc/hostname"
rm -f "$img"
mkfs.ext4 -q -F -L rfl-root -d "$root" "$img" 3G
step "image $img: Debian $SUITE with linux-image-$release and $(ls "$DEBS" | grep -o 'rfl-tcp-cc-modules[^_]*')"
