#!/usr/bin/env bash
# Edit the kernel patch series as git commits, then write them back to patches/.
#
# patches/ holds several series, each of which can be posted on its own; each one is based
# on the series before it:
#
#   patches/series                       the series' directories, in the order they apply
#   patches/NAME/series                  NAME's patches, in order (0001-*, ...)
#   patches/NAME/cover-letter.txt        NAME's cover letter: its subject, a blank line, the body
#   patches/NAME/0000-cover-letter.patch generated from it (not in NAME/series)
#
#   tools/series.sh list [ROOT]    every patch in the order they apply, as NAME/FILE paths
#                                  relative to ROOT (default patches/); also reads a flat
#                                  ROOT/series of patch files (the layout before the split)
#   tools/series.sh checkout DIR   a git repository at DIR holding the pristine kernel
#                                  versions of every file the series touch (tag `pristine`),
#                                  with the series applied as commits and a branch
#                                  series/NAME at the last commit of each; HEAD is on the
#                                  last one's branch
#   tools/series.sh export DIR     for each series/NAME branch of DIR, git format-patch its
#                                  commits after the previous series' branch (the first:
#                                  after `pristine`) into patches/NAME/, numbered from 0001,
#                                  with a cover letter from patches/NAME/cover-letter.txt,
#                                  and rewrite patches/NAME/series and patches/series
#
# In between, edit and commit in DIR as in any kernel tree (git commit --amend, rebase -i).
# DIR has rebase.updateRefs set, so a rebase carries the series/* branches along with their
# commits: in `git rebase -i pristine` each series ends at its `update-ref
# refs/heads/series/NAME` line, and moving a commit across that line moves it into the
# next series. New commits on HEAD join the last series. A new series is a new branch
# series/NAME at its last commit plus patches/NAME/cover-letter.txt. Then `make setup`
# rebuilds the test kernel with the new series.
set -euo pipefail
source "$(dirname "$0")/testbed/config.sh"
PRISTINE=$CACHE_DIR/pristine/linux-source-$KERNEL_SERIES

entries() { grep -v '^\s*\(#\|$\)' "$1" || true; }

list() {
	local root=${1:-$PROJECT_ROOT/patches} e p
	[ -f "$root/series" ] || die "$root/series: no such file"
	for e in $(entries "$root/series"); do
		if [ -d "$root/$e" ]; then
			[ -f "$root/$e/series" ] || die "$root/$e/series: no such file"
			for p in $(entries "$root/$e/series"); do
				[ -f "$root/$e/$p" ] || die "$root/$e/series names $p, which is missing"
				echo "$e/$p"
			done
		else
			[ -f "$root/$e" ] || die "$root/series names $e, which is missing"
			echo "$e"
		fi
	done
}

checkout() {
	local dir=$1 patches f v name first base=pristine
	[ -d "$PRISTINE" ] || die "no pristine kernel source: run 'tools/testbed/setup.sh source'"
	[ ! -e "$dir" ] || die "$dir exists; pick a new directory"
	patches=$(list)
	mkdir -p "$dir"
	git -C "$dir" init -q
	for f in $(cd "$PROJECT_ROOT/patches" && grep -h '^+++ b/' $patches | cut -c7- | sort -u); do
		if [ -f "$PRISTINE/$f" ]; then
			mkdir -p "$dir/$(dirname "$f")"
			cp "$PRISTINE/$f" "$dir/$f"
		fi
	done
	git -C "$dir" add -A
	git -C "$dir" -c user.name=pristine -c user.email=pristine@localhost \
		commit -q -m "linux $KERNEL_DEB_VERSION (files the series touch)"
	git -C "$dir" tag pristine
	git -C "$dir" config rebase.updateRefs true
	for f in user.name user.email; do  # the cover letters' From: (format-patch), and commits
		v=$(git -C "$PROJECT_ROOT" config "$f" || true)
		[ -z "$v" ] || git -C "$dir" config "$f" "$v"
	done
	first=$(git -C "$dir" symbolic-ref --short HEAD)
	for name in $(entries "$PROJECT_ROOT/patches/series"); do
		[ -d "$PROJECT_ROOT/patches/$name" ] || die "patches/series: $name is not a directory"
		git -C "$dir" checkout -q -b "series/$name"
		for f in $(entries "$PROJECT_ROOT/patches/$name/series"); do
			git -C "$dir" am -q --keep-cr "$PROJECT_ROOT/patches/$name/$f" || die "git am $name/$f failed"
		done
		[ -z "$first" ] || { git -C "$dir" branch -q -D "$first"; first=; }
		step "$dir: series/$name, $(git -C "$dir" rev-list --count "$base..HEAD") patches on $base"
		base=series/$name
	done
	step "$dir: $(git -C "$dir" rev-list --count pristine..HEAD) patches on top of tag pristine, HEAD on $(git -C "$dir" symbolic-ref --short HEAD)"
}

# The series/* branches of DIR, from the one nearest `pristine` to HEAD's, checked to form
# one line of history that HEAD ends.
series_branches() {
	local dir=$1 b prev=pristine
	git -C "$dir" for-each-ref --format='%(refname:strip=3)' 'refs/heads/series/*' | while read -r b; do
		echo "$(git -C "$dir" rev-list --count "pristine..series/$b") $b"
	done | sort -n -s | while read -r n b; do
		git -C "$dir" merge-base --is-ancestor "$prev" "series/$b" \
			|| die "series/$b does not contain $prev: the series/* branches must follow each other"
		[ "$n" -gt 0 ] && [ "$(git -C "$dir" rev-parse "$prev")" != "$(git -C "$dir" rev-parse "series/$b")" ] \
			|| die "series/$b has no commits after $prev"
		echo "$b"
		prev=series/$b
	done
}

export_series() {
	local dir=$1 out names name prev=pristine last f
	[ ! -d "$(git -C "$dir" rev-parse --git-path rebase-merge)" ] || die "$dir: a rebase is in progress"
	names=$(series_branches "$dir") || exit 1
	[ -n "$names" ] || die "$dir has no series/* branches"
	last=$(echo "$names" | tail -n 1)
	[ "$(git -C "$dir" rev-parse HEAD)" = "$(git -C "$dir" rev-parse "series/$last")" ] \
		|| die "HEAD is not series/$last: move that branch to HEAD (git branch -f series/$last HEAD) or check it out"
	for name in $names; do
		[ -f "$PROJECT_ROOT/patches/$name/cover-letter.txt" ] \
			|| die "patches/$name/cover-letter.txt missing: write series $name's cover letter (subject line, blank line, body)"
	done
	out=$(mktemp -d)
	for name in $names; do
		git -C "$dir" -c core.abbrev=12 format-patch -q --cover-letter --no-signature \
			--subject-prefix="PATCH" -o "$out/$name" "$prev..series/$name"
		# The cover letter: subject from the first line of cover-letter.txt, body after.
		python3 - "$out/$name/0000-cover-letter.patch" "$PROJECT_ROOT/patches/$name/cover-letter.txt" <<'EOF'
import sys
path, text = sys.argv[1], open(sys.argv[2]).read().split("\n", 1)
s = open(path).read()
s = s.replace("*** SUBJECT HERE ***", text[0].strip())
s = s.replace("*** BLURB HERE ***", text[1].strip())
open(path, "w").write(s)
EOF
		prev=series/$name
	done
	for name in $names; do
		rm -f "$PROJECT_ROOT/patches/$name"/*.patch
		cp "$out/$name"/*.patch "$PROJECT_ROOT/patches/$name/"
		(cd "$out/$name" && ls 0*.patch | grep -v '^0000-') > "$PROJECT_ROOT/patches/$name/series"
		step "patches/$name: $(wc -l < "$PROJECT_ROOT/patches/$name/series") patches and a cover letter"
	done
	{ echo "# The series, in the order they apply; each is based on the one before it."
	  echo "# patches/NAME/series lists NAME's patches (see tools/series.sh)."
	  echo "$names"; } > "$PROJECT_ROOT/patches/series"
	rm -rf "$out"
	for f in "$PROJECT_ROOT"/patches/*/; do
		f=$(basename "$f")
		echo "$names" | grep -qx -- "$f" || echo "warning: patches/$f is not a series of $dir any more: remove it" >&2
	done
}

case "${1:-}" in
list) list "${2:-}" ;;
checkout) checkout "${2:?directory}" ;;
export) export_series "${2:?directory}" ;;
*) die "usage: $0 list [ROOT] | checkout DIR | export DIR" ;;
esac
