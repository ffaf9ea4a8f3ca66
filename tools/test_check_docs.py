#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host tests of tools/check-docs.py: python3 -m unittest discover -s tools -p 'test_*.py'."""

import contextlib
import importlib.util
import io
import os
import tempfile
import unittest

_spec = importlib.util.spec_from_file_location(
    "check_docs", os.path.join(os.path.dirname(os.path.abspath(__file__)), "check-docs.py"))
check_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_docs)

MAKEFILE = """\
# comment: make nothing
FOO ?= 1
X := a:b
.PHONY: all demo test-debug \\
\tshell
all: modules

modules:
\t$(MAKE) -C x
demo test: setup modules
\techo demo
fuzz-smoke:
\ttrue
"""


class Repo:
    """A throwaway repository tree."""

    def __init__(self, files):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        for path, text in files.items():
            full = os.path.join(self.root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)

    def check(self, *docs):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = check_docs.main(["--root", self.root] + [os.path.join(self.root, d) for d in docs])
        return status, out.getvalue()


class MakefileTargets(unittest.TestCase):
    def test_rules_and_phony(self):
        r = Repo({"Makefile": MAKEFILE})
        self.addCleanup(r.tmp.cleanup)
        t = check_docs.makefile_targets(os.path.join(r.root, "Makefile"))
        self.assertEqual(t, {"all", "demo", "test", "test-debug", "shell", "modules", "fuzz-smoke"})


class Anchors(unittest.TestCase):
    def test_github_anchor(self):
        self.assertEqual(check_docs.github_anchor("The Rust abstraction: `kernel::net::tcp::cong`"),
                         "the-rust-abstraction-kernelnettcpcong")
        self.assertEqual(check_docs.github_anchor("`make demo`"), "make-demo")
        self.assertEqual(check_docs.github_anchor("TIMELY and patched TIMELY"), "timely-and-patched-timely")


class CheckFiles(unittest.TestCase):
    def setUp(self):
        self.repo = Repo({
            "Makefile": MAKEFILE,
            "tools/bench/scenarios/a.json": "{}",
            "tools/x.py": "",
            "rust/tcp_timely.rs": "",
            "docs/timely.md": "# TIMELY\n\n## Which RTT\n\ntext\n",
        })
        self.addCleanup(self.repo.tmp.cleanup)

    def write(self, path, text):
        with open(os.path.join(self.repo.root, path), "w", encoding="utf-8") as f:
            f.write(text)

    def test_all_present(self):
        self.write("README.md", "\n".join([
            "Run `make demo`, then `KERNEL_FLAVOR=debug make -s test-debug`.",
            "See [TIMELY](docs/timely.md#which-rtt) and `tools/bench/scenarios/*.json`,",
            "`tools/x.py run a b`, `rust/tcp_timely.ko` (built from its .rs), `results/raw/`.",
            "Kernel files are not ours: `include/net/tcp.h`, `/sys/module/x/parameters/`.",
            "In prose, make sure nothing else is taken for a target.",
            "```sh",
            "make fuzz-smoke      # make nonsense in a comment is prose",
            "insmod rust/tcp_timely.ko",
            "```",
            "[ext](https://example.com/tools/nothing.py)",
        ]) + "\n")
        status, out = self.repo.check("README.md")
        self.assertEqual(status, 0, out)
        self.assertIn("docs-check: ok", out)

    def test_each_problem_named(self):
        self.write("docs/dx.md", "\n".join([
            "# DX",
            "`tools/missing.py` and `make nosuch` and [up](../tools/gone.sh)",
            "[sec](timely.md#no-such-section) [self](#dx) [self2](#nope)",
            "`tools/bench/scenarios/*.yaml`, `rust/tcp_dx.ko`",
            "```",
            "make clean-all",
            "```",
        ]) + "\n")
        status, out = self.repo.check("docs/dx.md")
        self.assertEqual(status, 1)
        for expected in ("docs/dx.md:2: no such path: tools/missing.py",
                         "docs/dx.md:2: no such make target: make nosuch",
                         "docs/dx.md:2: no such path: ../tools/gone.sh (tools/gone.sh)",
                         "docs/dx.md:3: no section #no-such-section in docs/timely.md",
                         "docs/dx.md:3: no section #nope in docs/dx.md",
                         "docs/dx.md:4: no such path: tools/bench/scenarios/*.yaml",
                         "docs/dx.md:4: no such path: rust/tcp_dx.ko",
                         "docs/dx.md:6: no such make target: make clean-all"):
            self.assertIn(expected, out)
        self.assertNotIn("#dx ", out)
        self.assertIn("docs-check: 8 problem(s)", out)

    def test_default_files(self):
        self.write("README.md", "[t](docs/timely.md)\n")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = check_docs.main(["--root", self.repo.root])
        self.assertEqual(status, 0, out.getvalue())
        self.assertIn("2 files", out.getvalue())


if __name__ == "__main__":
    unittest.main()
