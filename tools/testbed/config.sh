# Shared settings for the project's scripts: the pinned kernel, where slow
# artefacts are cached, and the toolchain paths. Sourced, never executed.

KERNEL_SERIES=7.3
KERNEL_DEB_VERSION=7.3.4-1~bpo13+1
KERNEL_DEB=linux-source-${KERNEL_SERIES}_${KERNEL_DEB_VERSION}_all.deb
KERNEL_DEB_SHA256=703e369ddd4cce971452f5a593ee55df3a5c10c83caf0fa0df039633ed181ee3
KERNEL_DEB_MIRROR=${KERNEL_DEB_MIRROR:-http://deb.debian.org/debian}
KERNEL_DEB_SUITE=trixie-backports

BINDGEN_VERSION=0.73.2
CARGO_FUZZ_VERSION=0.13.2   # make fuzz: cargo-fuzz, installed in $CACHE_DIR/cargo-fuzz

PROJECT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE_DIR=${RFL_CC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rfl-tcp-cc}
# The kernel tree we build in: patched source plus in-tree build output. One per flavour:
# KERNEL_FLAVOR=normal (default) is linux-7.3; KERNEL_FLAVOR=debug is linux-7.3-debug, the
# same source, patches and tools/testbed/kernel.config plus tools/testbed/kernel-debug.config (KASAN,
# lockdep, UBSAN, kmemleak, ...), built with clang (LLVM=-19): Rust with KASAN needs a
# clang-built kernel (init/Kconfig: config RUST ... depends on !KASAN || CC_IS_CLANG).
# UML compiles C with -mcmodel=large, for which clang (unlike gcc) puts all data in .ldata
# and .lbss; arch/um's linker script leaves those outside _sdata.._edata and
# __bss_start..__bss_stop, so kmemleak never scans the kernel's static data (hundreds of
# false leaks at boot) and lockdep takes static lock keys for dynamic ones (a "bad unlock
# balance" at boot turned it off). -mlarge-data-threshold keeps the data in .data/.bss, as
# gcc does; the code is the same (64-bit absolute addressing either way). Given to cc1
# (-Xclang=), as the driver rejects it for objects built without -mcmodel=large (the vDSO).
KERNEL_FLAVOR=${KERNEL_FLAVOR:-normal}
# KERNEL_FLAVOR=nonetns is the normal UML kernel with CONFIG_NET_NS=n (tools/testbed/
# kernel-nonetns.config): the abstraction must build and its KUnit suites pass without
# namespaces. KERNEL_FLAVOR=x86_64 is not UML: an x86_64 kernel (tools/testbed/
# kernel-x86_64.config: kCFI, lockdep, KASAN) built with clang 19 as Debian packages, for
# QEMU guests (tools/vm/); x86_64-kcsan is that kernel with KCSAN in place of KASAN
# (tools/testbed/kernel-x86_64-kcsan.config over kernel-x86_64.config), x86_64-release
# the same without the checkers, for a host of your own (kernel-x86_64-release.config).
KERNEL_ARCH=um
case "$KERNEL_FLAVOR" in
normal) KERNEL_TREE=$CACHE_DIR/linux-$KERNEL_SERIES KERNEL_MAKE_ARGS=() ;;
nonetns) KERNEL_TREE=$CACHE_DIR/linux-$KERNEL_SERIES-nonetns KERNEL_MAKE_ARGS=() ;;
debug) KERNEL_TREE=$CACHE_DIR/linux-$KERNEL_SERIES-debug
       KERNEL_MAKE_ARGS=(LLVM=-19 KCFLAGS=-Xclang=-mlarge-data-threshold=2147483647) ;;
x86_64|x86_64-kcsan|x86_64-release) KERNEL_TREE=$CACHE_DIR/linux-$KERNEL_SERIES-$KERNEL_FLAVOR KERNEL_ARCH=x86_64
        KERNEL_MAKE_ARGS=(LLVM=-19) ;;
*) echo "error: KERNEL_FLAVOR=$KERNEL_FLAVOR: expected normal, nonetns, debug, x86_64, x86_64-kcsan or x86_64-release" >&2; exit 1 ;;
esac
export KERNEL_FLAVOR

export RUSTC=/usr/bin/rustc
export RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library
export BINDGEN=$CACHE_DIR/bindgen/bin/bindgen
export LIBCLANG_PATH=/usr/lib/llvm-19/lib
KMAKE=(make -C "$KERNEL_TREE" "ARCH=$KERNEL_ARCH" "RUSTC=$RUSTC" "BINDGEN=$BINDGEN"
       "RUST_LIB_SRC=$RUST_LIB_SRC" "HOSTRUSTC=$RUSTC" CLIPPY_DRIVER=/usr/bin/clippy-driver
       ${KERNEL_MAKE_ARGS[@]+"${KERNEL_MAKE_ARGS[@]}"})

# TIMELY's constants for a testbed: the papers' values (10 Gbit/s) scaled by
# C_paper / C, the spec's rule, so that delta/C, Seg/(C T_low) and T_high/T_low hold.
TIMELY_PARAMS_1G="t_low_us=500 t_high_us=5000 delta_kbps=1000 min_rtt_us=200 min_rate_kbps=1000 max_rate_mbps=1000"
TIMELY_PARAMS_100M="t_low_us=5000 t_high_us=50000 delta_kbps=100 min_rtt_us=2000 min_rate_kbps=100 max_rate_mbps=100"
# make demo's set (100 Mbit/s, 500 us base RTT, a 100-packet buffer of 12 ms, 5 s per run):
# the 100M set above keeps the paper's ratios with its 16 KB segment, so every time constant
# is 100x the paper's (T_high 50 ms is 4x that buffer, and a flow needs tens of seconds to
# converge). Here the segment is 4 KB, so T_low = 1 ms keeps Seg/(C T_low) near the paper's
# (0.33 against 0.26), T_high = 10 T_low fits the buffer, and the gradient is normalised by
# the demo's base RTT. delta/C is 2.5 times the paper's: at the paper's (100 kbit/s) patched
# TIMELY's 4 flows kept apart for the whole run (Jain 0.73-0.95 over 4-8 s), at 250 kbit/s
# they meet within the warm-up (0.995).
TIMELY_PARAMS_DEMO="t_low_us=1000 t_high_us=10000 delta_kbps=250 min_rtt_us=500 min_rate_kbps=100 max_rate_mbps=100 seg_bytes=4096"
# DX on the same dumbbell: software stamps in UML jitter by tens of microseconds (one guest
# CPU runs both hosts and the router), so the headroom is 200 us (under 2 packets at
# 100 Mbit/s) and the slack 20 us; the defaults suit a 10 Gbit/s host.
DX_PARAMS_100M="headroom_ns=200000 base_rtt_slack_ns=20000"
# At 1 Gbit/s in the bench (simulated clock: the guest's processing takes no time, so the
# stamps' noise is the stack's batching): 30 us of headroom, about 2.5 packets.
DX_PARAMS_1G="headroom_ns=30000 base_rtt_slack_ns=5000"

# Swift on the same dumbbell: its targets are absolute delays (the defaults suit a 10 Gbit/s
# host's tens of microseconds), and this path's base RTT is 500 us with software stamps
# and one guest CPU for both hosts and the router; the fault matrix's netem adds 1 ms of
# delay and 1 ms of jitter to it. Above its target on every ACK, Swift holds its window at
# the floor (a 1 ms target let 1.2 of 2 MB through the reordering fault in 20 s). A 3 ms
# fabric target stays above every path of the selftests; flow scaling adds up to 0.5 ms
# for small windows; the endpoint target is 1 ms (UML's receive hold: tens to hundreds of us).
SWIFT_PARAMS_100M="base_target_ns=3000000 fs_range_ns=500000 endpoint_target_ns=1000000"

die() { echo "error: $*" >&2; exit 1; }
step() { echo "==> $*"; }
