# SPDX-License-Identifier: GPL-2.0
#
#   make setup    install dependencies, fetch + patch + build the UML test kernel (cached)
#   make          build the Rust congestion control modules against it
#   make demo     setup, build, boot, and compare our controllers with cubic and dctcp
#   make test     every test: host cargo tests, KUnit in UML, netns selftests in UML
#   make bench    the scenario matrix on simulated time, then results/BENCH.md
#   make check    rustfmt, clippy (CLIPPY=1) and checkpatch on the patch series

SHELL := /bin/bash
CACHE_DIR ?= $(or $(RFL_CC_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/rfl-tcp-cc)
KDIR ?= $(CACHE_DIR)/linux-7.3
BINDGEN ?= $(CACHE_DIR)/bindgen/bin/bindgen
KMAKE = $(MAKE) -C $(KDIR) ARCH=um RUSTC=/usr/bin/rustc HOSTRUSTC=/usr/bin/rustc \
	BINDGEN=$(BINDGEN) RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library \
	LIBCLANG_PATH=/usr/lib/llvm-19/lib CLIPPY_DRIVER=/usr/bin/clippy-driver
# UML builds C with -mcmodel=large but Rust as PIE; a module with GOTPCREL relocations
# fails to load ("Unknown rela relocation: 9"). Build module Rust code non-PIC, large model.
MODULE_RUSTFLAGS = -Ccode-model=large -Crelocation-model=static

.PHONY: all modules setup demo test check bench clean
all: modules

modules:
	@test -x $(KDIR)/linux || { echo "error: no kernel build at $(KDIR): run 'make setup'" >&2; exit 1; }
	$(KMAKE) M=$(CURDIR) RUSTFLAGS_MODULE="$(MODULE_RUSTFLAGS)" modules

setup:
	tools/setup.sh all

demo: setup modules
	tools/demo.sh

test: setup modules
	tools/run-tests.sh

bench: setup modules
	tools/bench.py run $(SCENARIOS)
	tools/bench.py report

# checkpatch runs outside any git work tree: inside one it reads the series as plain files.
# The cover letter (0000-*) is not a patch; patches/series lists the ones that are.
check:
	cd rust/core && cargo fmt --check && cargo clippy -q --all-targets -- -D warnings
	rustfmt --check --edition 2021 --config-path $(KDIR)/.rustfmt.toml rust/*.rs
	touch rust/*.rs && $(KMAKE) M=$(CURDIR) RUSTFLAGS_MODULE="$(MODULE_RUSTFLAGS)" CLIPPY=1 modules
	cd /tmp && $(KDIR)/scripts/checkpatch.pl --no-tree --quiet --ignore FILE_PATH_CHANGES \
		$(addprefix $(CURDIR)/patches/,$(shell grep -v '^#' $(CURDIR)/patches/series))

clean:
	$(KMAKE) M=$(CURDIR) clean
	rm -rf rust/core/target
