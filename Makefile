# SPDX-License-Identifier: GPL-2.0
#
# rfl-tcp-cc: TCP congestion control modules in Rust-for-Linux, built and tested in a User-mode
# Linux kernel this project builds (README.md; docs/ for the rest).
#
#   make demo     setup, build, boot, and compare our controllers with cubic, dctcp and bbr
#   make test     every test: host tests, KUnit in UML, netns selftests in UML (docs/testing.md)
#   make shell    a root shell in the UML guest with the modules built and the test network up
#   make setup    install dependencies, fetch + patch + build the UML test kernel (cached)
#   make          build the Rust congestion control modules against it
#   make test-debug   the same on the debug kernel (KASAN, lockdep, UBSAN, kmemleak, ...);
#                 any target takes KERNEL_FLAVOR=debug (default normal);
#                 make test-debug-short: its shortened form, which CI runs
#   make x86-packages  the patched kernel for x86_64 (kCFI, lockdep, KASAN; clang) and the
#                 modules as Debian packages, in $(CACHE_DIR)/x86_64-debs (docs/x86_64.md)
#   make x86-test      those installed by dpkg on a fresh Debian 12, booted under QEMU with
#                 2 vCPUs: install checks and the selftests CI runs; x86-test-all: every one;
#                 x86-pair: two such guests over virtio-net, every control end to end
#   make bench    the scenario matrix on simulated time, then results/BENCH.md (docs/bench.md)
#   make check    docs-check, rustfmt, clippy (CLIPPY=1) and checkpatch on the patch series
#   make docs-check   every path, section and make target README.md and docs/ name exists
#   make fuzz     fuzz every target of the pure core FUZZ_SECONDS each (rust/core/fuzz);
#                 make fuzz-smoke: FUZZ_SMOKE_SECONDS each; make fuzz-cmin: refresh the
#                 kept corpus; FUZZ_TARGETS="timely reno" for some targets only

SHELL := /bin/bash
CACHE_DIR ?= $(or $(RFL_CC_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/rfl-tcp-cc)
# The kernel flavour: normal, nonetns (CONFIG_NET_NS=n: make test-nonetns), or debug
# (tools/testbed/kernel-debug.config, built with clang 19 and the flags of
# tools/testbed/config.sh's KERNEL_MAKE_ARGS, which must match these).
KERNEL_FLAVOR ?= normal
export KERNEL_FLAVOR
ifeq ($(KERNEL_FLAVOR),normal)
KERNEL_SUFFIX :=
KERNEL_MAKE_ARGS :=
else ifeq ($(KERNEL_FLAVOR),nonetns)
KERNEL_SUFFIX := -nonetns
KERNEL_MAKE_ARGS :=
else ifeq ($(KERNEL_FLAVOR),debug)
KERNEL_SUFFIX := -debug
KERNEL_MAKE_ARGS := LLVM=-19 KCFLAGS=-Xclang=-mlarge-data-threshold=2147483647
else
$(error KERNEL_FLAVOR=$(KERNEL_FLAVOR): expected normal, nonetns or debug)
endif
KDIR ?= $(CACHE_DIR)/linux-7.3$(KERNEL_SUFFIX)
BINDGEN ?= $(CACHE_DIR)/bindgen/bin/bindgen
KMAKE = $(MAKE) -C $(KDIR) ARCH=um RUSTC=/usr/bin/rustc HOSTRUSTC=/usr/bin/rustc \
	BINDGEN=$(BINDGEN) RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library \
	LIBCLANG_PATH=/usr/lib/llvm-19/lib CLIPPY_DRIVER=/usr/bin/clippy-driver $(KERNEL_MAKE_ARGS)
# UML builds C with -mcmodel=large but Rust as PIE; a module with GOTPCREL relocations
# fails to load ("Unknown rela relocation: 9"). Build module Rust code non-PIC, large model.
MODULE_RUSTFLAGS = -Ccode-model=large -Crelocation-model=static

# Both flavours build the same rust/*.ko. The tree they were last built against is recorded
# in .kernel-tree.cmd (ignored by git like kbuild's .*.cmd); building against another tree
# first deletes the module build's outputs (not rust/core/target), so rust/*.ko always
# match $(KDIR) (no record: built before flavours existed, against the normal tree). One
# flavour at a time per checkout. So does a change of the tree's configuration (seen as a
# .module-common.o older than its auto.conf): kbuild rebuilt neither that nor the modules'
# .mod.o, which hold __this_module, and a module whose struct module has the old size fails
# insmod ("Invalid module format").
KDIR_STAMP := $(CURDIR)/.kernel-tree.cmd
KDIR_SWITCH = if [ "$$(cat $(KDIR_STAMP) 2>/dev/null || echo $(CACHE_DIR)/linux-7.3)" != "$(KDIR)" ] || \
		[ .module-common.o -ot $(KDIR)/include/config/auto.conf ]; then \
	rm -f rust/*.o rust/*.ko rust/*.mod rust/*.mod.c rust/.*.cmd rust/modules.order \
		.module-common.o ..module-common.o.cmd Module.symvers .Module.symvers.cmd \
		modules.order .modules.order.cmd; \
	echo "$(KDIR)" > $(KDIR_STAMP); fi

FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 5
FUZZ_TARGETS ?=

.PHONY: all modules setup demo test check bench clean fuzz fuzz-smoke fuzz-cmin setup-debug test-debug \
	test-debug-short shell docs-check
all: modules

modules:
	@test -x $(KDIR)/linux || { echo "error: no kernel build at $(KDIR): run 'make setup'" >&2; exit 1; }
	@$(KDIR_SWITCH)
	$(KMAKE) M=$(CURDIR) RUSTFLAGS_MODULE="$(MODULE_RUSTFLAGS)" modules

setup:
	tools/testbed/setup.sh all

demo: setup modules
	tools/testbed/demo.sh

test: setup modules
	tools/testbed/run-tests.sh

# An interactive root shell in the guest (normal clock), the selftests' dumbbell up
# (tools/testbed/shell.sh; SHELL_NET="RATE_MBIT DELAY_US QUEUE_PKTS [ECN_K_PKTS]", default
# make demo's 100 Mbit/s, 500 us, 100 packets); the guest powers off when the shell exits.
SHELL_TIMEOUT ?= 86400
SHELL_NET ?=
shell: setup modules
	tools/testbed/uml-run.sh --interactive --timeout $(SHELL_TIMEOUT) -- bash tools/testbed/shell.sh $(SHELL_NET)

docs-check:
	tools/check-docs.py

# The debug flavour: its own cached tree ($(CACHE_DIR)/linux-7.3-debug), same tests, and
# every guest's dmesg and kmemleak checked for kernel reports (tools/testbed/guest-debug-checks.sh).
setup-debug:
	$(MAKE) setup KERNEL_FLAVOR=debug

test-debug:
	$(MAKE) test KERNEL_FLAVOR=debug

# Its shortened form, which CI runs (tools/testbed/ci-flavour.sh): KUnit and the selftests of the
# paths the newest patches change (RC3; the delay-stamp option's hardware stamps and veth's
# emulated NIC clock in tstamp; malformed SACK, ACK and option input from a scripted peer in
# cc_packets; the per-namespace timestamp reference in wire_defaults), without the host
# part, which does not depend on the kernel. tcp_dx, tcp_timely and cc_autoload run in CI on
# the x86_64 kernel instead (KASAN, lockdep, kCFI, 2 vCPUs, autoload from the installed
# package: tools/vm/ci-x86.sh), cc_trace on the normal kernel (make bare-debian-check):
# with them CI's warm run had grown to about 65 minutes (2026-11-28: this run 20 minutes,
# cc_autoload 104 s and cc_trace 81 s of it). make test-debug runs them here too, with
# UBSAN and kmemleak.
DEBUG_SHORT_SELFTESTS := rc3 tstamp cc_packets wire_defaults
test-debug-short:
	$(MAKE) test KERNEL_FLAVOR=debug SELFTESTS="$(DEBUG_SHORT_SELFTESTS)" RFL_HOST_TESTS=0

# Without network namespaces (CONFIG_NET_NS=n, tools/testbed/kernel-nonetns.config): the series
# and the modules build, and every KUnit suite passes; the selftests need namespaces.
test-nonetns:
	$(MAKE) test KERNEL_FLAVOR=nonetns SELFTESTS=none RFL_HOST_TESTS=0

# The README's two commands, make demo then make test, run verbatim by a normal user in a
# chroot of a bare Debian 12 (mmdebstrap minbase + sudo, git, ca-certificates, make; no Rust),
# which installs everything else through tools/testbed/setup.sh; the kernel that make setup
# built here is shared read-only. As root (or through sudo). CI runs it (.ci/run).
.PHONY: bare-debian-check
bare-debian-check:
	tools/testbed/bare-debian.sh

# x86_64 under QEMU (tools/vm/): packages, a fresh Debian image with them, the checks.
.PHONY: x86-packages x86-test x86-test-all x86-pair x86-kcsan
# X86_FLAVOR: x86_64 (the checkers: kCFI, lockdep, KASAN), x86_64-kcsan, or x86_64-release (no
# checkers, for a host of your own). X86_BASE_CONFIG=host (or a config file): start from the
# running host's /boot/config-$(uname -r) instead of defconfig (docs/x86_64.md).
X86_FLAVOR ?= x86_64
X86_BASE_CONFIG ?=
export X86_FLAVOR
x86-packages:
	KERNEL_FLAVOR=$(X86_FLAVOR) tools/testbed/setup.sh deps
	RFL_BASE_CONFIG="$(if $(filter host,$(X86_BASE_CONFIG)),/boot/config-$(shell uname -r),$(X86_BASE_CONFIG))" tools/vm/packages.sh
x86-test: x86-packages
	tools/vm/run.sh
# The KCSAN kernel (tools/testbed/kernel-x86_64-kcsan.config): the concurrency suites on 2 vCPUs.
x86-kcsan:
	$(MAKE) x86-packages X86_FLAVOR=x86_64-kcsan
	X86_FLAVOR=x86_64-kcsan tools/vm/run.sh --job install,cc_stress,rc3,tcp_timely
x86-test-all: x86-packages
	tools/vm/run.sh --job all
# Two kernels over a virtio-net link: every control end to end, the option, RC3's DSCPs.
x86-pair: x86-packages
	tools/vm/pair.sh

bench: setup modules
	tools/bench/bench.py run $(SCENARIOS)
	tools/bench/bench.py report

# checkpatch runs outside any git work tree: inside one it reads the series as plain files.
# The cover letters (patches/*/0000-*) are not patches; tools/series.sh list names the ones
# that are, every series' in the order they apply.
check:
	tools/check-docs.py
	cd rust/core && cargo fmt --check && cargo clippy -q --all-targets -- -D warnings
	rustfmt --check --edition 2021 --config-path $(KDIR)/.rustfmt.toml rust/*.rs
	@# In the kernel a panic ends the machine; #[kunit_tests] maps only assert! and assert_eq!.
	@if grep -nE '\bassert_ne!|\.unwrap\(\)|\.expect\(' rust/*.rs; then \
		echo "error: panics above: use assert!(a != b) in KUnit tests, return errors"; exit 1; fi
	@$(KDIR_SWITCH)
	touch rust/*.rs && $(KMAKE) M=$(CURDIR) RUSTFLAGS_MODULE="$(MODULE_RUSTFLAGS)" CLIPPY=1 modules
	list=$$(tools/series.sh list) && cd /tmp && $(KDIR)/scripts/checkpatch.pl --no-tree --quiet \
		--ignore FILE_PATH_CHANGES $$(printf '$(CURDIR)/patches/%s\n' $$list)

# No kernel needed: tools/fuzz.sh installs cargo-fuzz (tools/testbed/setup.sh cargo-fuzz) if missing.
fuzz:
	tools/fuzz.sh run $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke:
	tools/fuzz.sh smoke $(FUZZ_SMOKE_SECONDS) $(FUZZ_TARGETS)

fuzz-cmin:
	tools/fuzz.sh cmin $(FUZZ_TARGETS)

# The module build's outputs (kbuild's patterns, in the two directories it writes), the
# record of the tree they were built against and the core's cargo target: no kernel tree
# needed (kbuild's own clean needs one, which a fresh clone may not have yet).
clean:
	find . rust -maxdepth 1 -type f \( -name '*.[aios]' -o -name '*.ko' -o -name '*.mod' \
		-o -name '*.mod.c' -o -name '.*.cmd' -o -name '*.d' -o -name '*.rmeta' \
		-o -name '*.symtypes' -o -name modules.order -o -name Module.symvers \) -delete
	rm -rf rust/core/target
