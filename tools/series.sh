#!/usr/bin/env bash
# Edit the kernel patch series as git commits, then write it back to patches/.
#
#   tools/series.sh checkout DIR   a git repository at DIR holding the pristine kernel
#                                  versions of every file the series touches (tag
#                                  `pristine`), with patches/series applied as commits
#   tools/series.sh export DIR     git format-patch DIR's commits after `pristine` into
#                                  patches/, with tools/cover-letter.txt as the cover
#                                  letter (0000-*, not in patches/series), and rewrite
#                                  patches/series
#
# In between, edit and commit in DIR as in any kernel tree (git commit --amend, rebase -i);
# new files are fine. Then `make setup` rebuilds the test kernel with the new series.
set -euo pipefail
source "$(dirname "$0")/testbed/config.sh"
PRISTINE=$CACHE_DIR/pristine/linux-source-$KERNEL_SERIES
AUTHOR="$(git -C "$PROJECT_ROOT" config user.name || true) <$(git -C "$PROJECT_ROOT" config user.email || true)>"

series_list() { grep -v '^\s*\(#\|$\)' "$PROJECT_ROOT/patches/series"; }

checkout() {
	local dir=$1 f
	[ -d "$PRISTINE" ] || die "no pristine kernel source: run 'tools/testbed/setup.sh source'"
	[ ! -e "$dir" ] || die "$dir exists; pick a new directory"
	mkdir -p "$dir"
	git -C "$dir" init -q
	for f in $(cd "$PROJECT_ROOT/patches" && grep -h '^+++ b/' $(series_list) | cut -c7- | sort -u); do
		if [ -f "$PRISTINE/$f" ]; then
			mkdir -p "$dir/$(dirname "$f")"
			cp "$PRISTINE/$f" "$dir/$f"
		fi
	done
	git -C "$dir" add -A
	git -C "$dir" -c user.name=pristine -c user.email=pristine@localhost \
		commit -q -m "linux $KERNEL_DEB_VERSION (files the series touches)"
	git -C "$dir" tag pristine
	for f in $(series_list); do
		git -C "$dir" am -q --keep-cr "$PROJECT_ROOT/patches/$f" || die "git am $f failed"
	done
	step "$dir: $(git -C "$dir" rev-list --count pristine..HEAD) patches on top of tag pristine"
}

export_series() {
	local dir=$1 out
	out=$(mktemp -d)
	git -C "$dir" -c core.abbrev=12 format-patch -q --cover-letter --no-signature \
		--subject-prefix="PATCH" -o "$out" pristine..HEAD
	# The cover letter: subject from the first line of tools/cover-letter.txt, body after.
	python3 - "$out"/0000-cover-letter.patch "$PROJECT_ROOT/tools/cover-letter.txt" <<'EOF'
import sys
path, text = sys.argv[1], open(sys.argv[2]).read().split("\n", 1)
s = open(path).read()
s = s.replace("*** SUBJECT HERE ***", text[0].strip())
s = s.replace("*** BLURB HERE ***", text[1].strip())
open(path, "w").write(s)
EOF
	rm -f "$PROJECT_ROOT"/patches/*.patch
	cp "$out"/*.patch "$PROJECT_ROOT/patches/"
	(cd "$out" && ls 0*.patch | grep -v '^0000-') > "$PROJECT_ROOT/patches/series"
	rm -rf "$out"
	step "patches/: $(wc -l < "$PROJECT_ROOT/patches/series") patches and a cover letter"
}

case "${1:-}" in
checkout) checkout "${2:?directory}" ;;
export) export_series "${2:?directory}" ;;
*) die "usage: $0 checkout DIR | export DIR" ;;
esac
