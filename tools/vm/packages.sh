#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The patched kernel for x86_64 as Debian packages, and the Rust modules as a package for
# it, in $CACHE_DIR/$KERNEL_FLAVOR-debs (docs/x86_64.md):
#   linux-image-<release>_<version>_amd64.deb     the kernel's own `make bindeb-pkg`
#   linux-headers-<release>_<version>_amd64.deb   (tools/testbed/kernel-x86_64.config)
#   rfl-tcp-cc-modules-<release>_<version>_amd64.deb  rust/*.ko in /lib/modules/<release>/updates
# Cached: the kernel by the series key (tools/testbed/setup.sh), the modules package by
# the sources it was built from.
#
#   tools/vm/packages.sh          (make x86-packages)
set -euo pipefail
# X86_FLAVOR: x86_64 (kCFI, lockdep, KASAN), x86_64-kcsan (KCSAN in place of KASAN) or
# x86_64-release (no checkers: for a host of your own).
export KERNEL_FLAVOR=${X86_FLAVOR:-x86_64}
case "$KERNEL_FLAVOR" in x86_64|x86_64-kcsan|x86_64-release) ;;
*) echo "X86_FLAVOR=$KERNEL_FLAVOR: expected x86_64, x86_64-kcsan or x86_64-release" >&2; exit 2 ;; esac
source "$(dirname "$0")/../testbed/config.sh"
OUT=$CACHE_DIR/$KERNEL_FLAVOR-debs

# The kernel: configured from x86_64_defconfig + the fragments, built by bindeb-pkg, which
# writes the packages next to the tree.
"$PROJECT_ROOT/tools/testbed/setup.sh" kernel
release=$("${KMAKE[@]}" -s kernelrelease)
mkdir -p "$OUT"
image_deb=$(ls -t "$CACHE_DIR"/linux-image-"$release"_*_amd64.deb 2>/dev/null | head -n 1)
[ -n "$image_deb" ] || die "bindeb-pkg left no linux-image-${release}_*.deb in $CACHE_DIR"
rm -f "$OUT"/linux-image-* "$OUT"/linux-headers-*
ln -f "$image_deb" "$OUT/"
headers_deb=${image_deb/linux-image-/linux-headers-}
[ ! -f "$headers_deb" ] || ln -f "$headers_deb" "$OUT/"
kernel_version=$(dpkg-deb -f "$image_deb" Version)

# The modules: built out of tree against that kernel from a copy of rust/ (the checkout's
# rust/*.ko are UML's), with the kernel's toolchain (clang, kCFI, KASAN as configured).
# KCSAN with kCFI: Linux 7.3's scripts/Makefile.modfinal drops the CFI flags from each
# module's generated .mod.c but keeps KCSAN's -fsanitize=thread, so clang gives the
# .mod.o a tsan.module_ctor with no kCFI type id, and do_init_module()'s indirect call
# of the module's constructors traps on every module load (C modules' too). Our
# modules' only C is that .mod.c (rustc has no KCSAN instrumentation), so it is built
# without KCSAN here; docs/x86_64.md.
local_make=()
[ "$KERNEL_FLAVOR" != x86_64-kcsan ] || local_make=(KCSAN_SANITIZE=n)
key=$( { echo "$release $kernel_version ${local_make[*]}"; cat "$PROJECT_ROOT/Kbuild";
	 find "$PROJECT_ROOT/rust" -path '*/target' -prune -o -path '*/fuzz' -prune -o \
		\( -name '*.rs' -o -name Kbuild -o -name Cargo.toml \) -print | sort | xargs cat; } |
       sha256sum | cut -c1-16)
name=rfl-tcp-cc-modules-$release
deb=$OUT/${name}_0.0+${key}_amd64.deb
if [ -f "$deb" ]; then
	step "modules package $(basename "$deb"): cached"
else
	step "building the Rust modules for $release"
	build=$CACHE_DIR/$KERNEL_FLAVOR-modules
	rm -rf "$build"; mkdir -p "$build"
	cp "$PROJECT_ROOT/Kbuild" "$build/"
	rsync -a --exclude target --exclude fuzz --exclude '*.o' --exclude '*.ko' --exclude '*.mod*' \
		--exclude '.*.cmd' --exclude modules.order "$PROJECT_ROOT/rust" "$build/"
	"${KMAKE[@]}" M="$build" ${local_make[@]+"${local_make[@]}"} -j"$(( $(nproc) + 1 ))" modules
	pkg=$build/pkg
	mkdir -p "$pkg/DEBIAN" "$pkg/lib/modules/$release/updates/rfl-tcp-cc" "$pkg/usr/share/doc/$name"
	install -m 644 "$build"/rust/*.ko "$pkg/lib/modules/$release/updates/rfl-tcp-cc/"
	cp "$PROJECT_ROOT/LICENSE" "$pkg/usr/share/doc/$name/copyright"
	cat > "$pkg/DEBIAN/control" <<CTRL
Package: $name
Version: 0.0+$key
Architecture: amd64
Maintainer: rfl-tcp-cc <rfl-tcp-cc@invalid>
Depends: linux-image-$release (= $kernel_version), kmod
Section: kernel
Priority: optional
Description: TCP congestion controls in Rust for Linux $release
 TIMELY (timely, timely_patched), DX (dx), Swift (swift), Reno and DCTCP in
 Rust (rust_reno, rust_dctcp) and RC3's policy (tcp_rc3), loaded on demand by sysctl
 net.ipv4.tcp_congestion_control, setsockopt(TCP_CONGESTION) or a route's congctl.
CTRL
	printf '#!/bin/sh\nset -e\ndepmod -a %s\n' "$release" > "$pkg/DEBIAN/postinst"
	printf '#!/bin/sh\nset -e\n[ "$1" != remove ] || depmod -a %s\n' "$release" > "$pkg/DEBIAN/postrm"
	chmod 755 "$pkg/DEBIAN/postinst" "$pkg/DEBIAN/postrm"
	rm -f "$OUT"/rfl-tcp-cc-modules-*
	dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >/dev/null
	step "modules package built: $deb"
fi
ls -1 "$OUT"
