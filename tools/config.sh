# Shared settings for the project's scripts: the pinned kernel, where slow
# artefacts are cached, and the toolchain paths. Sourced, never executed.

KERNEL_SERIES=7.3
KERNEL_DEB_VERSION=7.3.4-1~bpo13+1
KERNEL_DEB=linux-source-${KERNEL_SERIES}_${KERNEL_DEB_VERSION}_all.deb
KERNEL_DEB_SHA256=703e369ddd4cce971452f5a593ee55df3a5c10c83caf0fa0df039633ed181ee3
KERNEL_DEB_MIRROR=${KERNEL_DEB_MIRROR:-http://deb.debian.org/debian}
KERNEL_DEB_SUITE=trixie-backports

BINDGEN_VERSION=0.73.2

PROJECT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE_DIR=${RFL_CC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rfl-tcp-cc}
# The one kernel tree we build in: patched source plus in-tree build output.
KERNEL_TREE=$CACHE_DIR/linux-$KERNEL_SERIES

export RUSTC=/usr/bin/rustc
export RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library
export BINDGEN=$CACHE_DIR/bindgen/bin/bindgen
export LIBCLANG_PATH=/usr/lib/llvm-19/lib
KMAKE=(make -C "$KERNEL_TREE" ARCH=um "RUSTC=$RUSTC" "BINDGEN=$BINDGEN"
       "RUST_LIB_SRC=$RUST_LIB_SRC" "HOSTRUSTC=$RUSTC" CLIPPY_DRIVER=/usr/bin/clippy-driver)

# TIMELY's constants for a testbed: the papers' values (10 Gbit/s) scaled by
# C_paper / C, the spec's rule, so that delta/C, Seg/(C T_low) and T_high/T_low hold.
TIMELY_PARAMS_1G="t_low_us=500 t_high_us=5000 delta_kbps=1000 min_rtt_us=200 min_rate_kbps=1000 max_rate_mbps=1000"
TIMELY_PARAMS_100M="t_low_us=5000 t_high_us=50000 delta_kbps=100 min_rtt_us=2000 min_rate_kbps=100 max_rate_mbps=100"

die() { echo "error: $*" >&2; exit 1; }
step() { echo "==> $*"; }
