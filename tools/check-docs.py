#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check that what the documentation names exists (`make docs-check`, part of `make check`).

Scans README.md and docs/*.md (or the files given) and fails naming each
- repository path that does not exist: a word in a `code span`, a fenced code block or a
  link target whose first component is one of the repository's top-level directories
  (tools/, rust/, selftests/, patches/, results/, docs/, .ci/) or a top-level file
  (Makefile, Kbuild, README.md, LICENSE); paths are relative to the repository root,
  link targets relative to the file that holds them; globs (`tools/bench/scenarios/*.json`)
  must match at least one file;
- link to a Markdown file's #section that has no such heading (GitHub's anchors);
- `make TARGET` whose TARGET the Makefile does not define (in code spans and blocks only:
  in prose "make" is an English word).

Build products are accepted where their source exists (rust/NAME.ko from rust/NAME.rs),
and so are the few outputs listed in GENERATED. Paths of other trees (the kernel's
include/net/tcp.h, a guest's /sys/...) do not start with a top-level name and are not
checked.

    tools/check-docs.py [--root DIR] [FILE.md ...]

Prints one line per problem, "FILE:LINE: what", then a summary; exit status 1 if any.
"""

import argparse
import fnmatch
import glob
import os
import re
import sys

TOP_DIRS = ("tools", "rust", "selftests", "patches", "results", "docs", ".ci")
TOP_FILES = ("Makefile", "Kbuild", "README.md", "LICENSE")
# Outputs of running things, not in a fresh clone (fnmatch patterns, root-relative).
GENERATED = (
    "results/raw", "results/raw/*", "results/demo.json", "rust/core/target", "rust/core/target/*",
    "rust/core/fuzz/target", "rust/core/fuzz/target/*", "rust/core/fuzz/artifacts",
    "rust/core/fuzz/artifacts/*",
)

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
REF_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)")
PATH_CHARS = re.compile(r"[A-Za-z0-9_.*?/\[\]{},+-]+")


def makefile_targets(makefile):
    """The targets a Makefile defines (rules and .PHONY names), as a set."""
    targets = set()
    try:
        with open(makefile, encoding="utf-8") as f:
            lines = f.read().replace("\\\n", " ").splitlines()
    except OSError:
        return targets
    for line in lines:
        if line.startswith(("\t", "#")) or not line.strip():
            continue
        m = re.match(r"^([A-Za-z0-9_.%/ -]+?)\s*::?(?![=])(.*)$", line)
        if not m or re.match(r"^\s*[A-Za-z0-9_]+\s*[:+?]?=", line):
            continue
        names, rest = m.group(1).split(), m.group(2)
        if names == [".PHONY"]:
            targets.update(rest.split())
        else:
            targets.update(n for n in names if not n.startswith("."))
    return targets


def github_anchor(heading):
    """The anchor GitHub gives a Markdown heading's text."""
    text = re.sub(r"`|\*\*|__|\[|\]\([^)]*\)", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(path):
    """Every heading anchor of a Markdown file (duplicates numbered as GitHub does)."""
    seen, out = {}, set()
    in_fence = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            m = None if in_fence else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                a = github_anchor(m.group(1))
                n = seen.get(a, 0)
                seen[a] = n + 1
                out.add(a if n == 0 else f"{a}-{n}")
    return out


def candidate(word):
    """The repository path a word of code names, or None if it names none."""
    word = word.strip("\"'()<>,;:.")
    if word.endswith("'s"):
        word = word[:-2]
    m = PATH_CHARS.match(word)
    if not m or m.group(0) != word:
        return None
    first = word.split("/", 1)[0]
    if word in TOP_FILES or (first in TOP_DIRS and "/" in word):
        return word
    return None


def path_exists(root, rel):
    """Whether root-relative path rel (perhaps a glob) names something that exists or is a
    known build product."""
    rel = rel.rstrip("/") or rel
    if any(fnmatch.fnmatch(rel, g) for g in GENERATED):
        return True
    full = os.path.join(root, rel)
    if any(c in rel for c in "*?["):
        return bool(glob.glob(full)) or bool(glob.glob(full.replace(".ko", ".rs")))
    if os.path.exists(full):
        return True
    if rel.endswith(".ko"):
        return os.path.exists(full[:-3] + ".rs")
    return False


def make_targets_named(code):
    """The targets of each `make ...` command in a piece of code."""
    out = []
    for m in re.finditer(r"(?:^|[\s;&|(`$])make((?:\s+\S+)*)", code):
        for word in m.group(1).split():
            if word.startswith("-") or "=" in word:
                continue
            if word in ("&&", "||", ";", "|", "#") or word.startswith("#"):
                break
            if re.fullmatch(r"[a-z][a-z0-9_-]*", word):
                out.append(word)
            break
    return out


def code_pieces(text):
    """(line number, code text, is_block) for every code span and fenced-block line."""
    in_fence = False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            yield n, line, True
            continue
        for m in CODE_SPAN.finditer(line):
            yield n, m.group(2), False


def links(text):
    """(line number, target) of every Markdown link outside code."""
    in_fence = False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        stripped = CODE_SPAN.sub("", line)
        for m in LINK.finditer(stripped):
            yield n, m.group(1)
        m = REF_LINK.match(stripped)
        if m:
            yield n, m.group(1)


def check_file(root, path, targets):
    """Problems of one Markdown file, as "FILE:LINE: what" strings."""
    problems = []
    rel_file = os.path.relpath(path, root)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for n, code, is_block in code_pieces(text):
        if is_block:
            # A shell comment in a block is prose.
            code = re.sub(r"(^|\s)#.*$", "", code)
        for word in code.split():
            p = candidate(word)
            if p and not path_exists(root, p):
                problems.append(f"{rel_file}:{n}: no such path: {p}")
        if targets is not None:
            for t in make_targets_named(code):
                if t not in targets:
                    problems.append(f"{rel_file}:{n}: no such make target: make {t}")
    for n, target in links(text):
        if re.match(r"^[a-z]+:", target):
            continue
        target, _, frag = target.partition("#")
        if target:
            full = os.path.normpath(os.path.join(os.path.dirname(path), target))
            rel = os.path.relpath(full, root)
            if rel.startswith(".."):
                problems.append(f"{rel_file}:{n}: link outside the repository: {target}")
                continue
            if not path_exists(root, rel):
                problems.append(f"{rel_file}:{n}: no such path: {target} ({rel})")
                continue
        else:
            full = path
        if frag and full.endswith(".md") and os.path.isfile(full):
            if frag not in anchors_of(full):
                problems.append(f"{rel_file}:{n}: no section #{frag} in {os.path.relpath(full, root)}")
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("files", nargs="*", help="Markdown files (default: README.md docs/*.md)")
    args = ap.parse_args(argv)
    root = os.path.abspath(args.root)
    files = args.files or [os.path.join(root, "README.md")] + sorted(
        glob.glob(os.path.join(root, "docs", "*.md")))
    targets = makefile_targets(os.path.join(root, "Makefile"))
    problems = []
    for path in files:
        problems += check_file(root, os.path.abspath(path), targets)
    for p in problems:
        print(p)
    names = ", ".join(os.path.relpath(os.path.abspath(f), root) for f in files)
    if problems:
        print(f"docs-check: {len(problems)} problem(s) in {names}")
        return 1
    print(f"docs-check: ok ({len(files)} files: every path, section and make target named exists)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
