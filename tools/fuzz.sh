#!/usr/bin/env bash
# Coverage-guided fuzzing of the pure core (rust/core/fuzz, `make fuzz`, `make fuzz-smoke`):
# libFuzzer through cargo-fuzz on the stable toolchain with no sanitizer (the core is safe
# Rust; overflow checks and debug assertions, on in this build, are what catches bugs).
#
#   tools/fuzz.sh run SECONDS [TARGET...]    each target for SECONDS, growing the working
#                                            corpus in $CACHE_DIR/fuzz/corpus (kept)
#   tools/fuzz.sh smoke SECONDS [TARGET...]  the same from the repository's corpus only
#   tools/fuzz.sh cmin [TARGET...]           rewrite rust/core/fuzz/corpus/TARGET: the seeds
#                                            plus a minimal set of inputs covering every
#                                            edge the corpora reach
#
# Prints one line per target, "PASS fuzz TARGET: ..." with executions, speed, edges covered
# and corpus size, or "FAIL fuzz TARGET: ..." with the panic and the crashing input (in
# rust/core/fuzz/artifacts/TARGET/, replay with the command printed). Exit status 1 if
# any target failed.
set -uo pipefail
source "$(dirname "$0")/testbed/config.sh"

FUZZ_DIR=$PROJECT_ROOT/rust/core/fuzz
WORK=$CACHE_DIR/fuzz
TARGET_DIR=$WORK/target
BIN_DIR=$TARGET_DIR/x86_64-unknown-linux-gnu/release
CARGO_FUZZ=$CACHE_DIR/cargo-fuzz/bin/cargo-fuzz

usage() { die "usage: $0 run|smoke SECONDS [TARGET...] | cmin [TARGET...]"; }
mode=${1:-}; shift || usage
case "$mode" in
run | smoke) seconds=${1:-}; shift || usage; [[ "$seconds" =~ ^[0-9]+$ ]] || usage ;;
cmin) ;;
*) usage ;;
esac
all_targets=$(sed -n 's/^name = "\(.*\)"$/\1/p' "$FUZZ_DIR/Cargo.toml" | grep -v -- -fuzz)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || read -r -d '' -a targets <<<"$all_targets"

[ -x "$CARGO_FUZZ" ] || "$PROJECT_ROOT/tools/testbed/setup.sh" cargo-fuzz >&2 || die "cannot install cargo-fuzz"
mkdir -p "$WORK/logs"
# Release build with debug assertions and overflow checks (also set in the crate's
# profile), instrumented for libFuzzer by cargo-fuzz's flags: all stable rustc options.
if ! (cd "$FUZZ_DIR" && "$CARGO_FUZZ" build --sanitizer none --debug-assertions \
	--target-dir "$TARGET_DIR") > "$WORK/logs/build.log" 2>&1; then
	cat "$WORK/logs/build.log" >&2
	for t in "${targets[@]}"; do echo "FAIL fuzz $t: build failed (log: $WORK/logs/build.log)"; done
	exit 1
fi

# The kept corpus: the seeds (seed-*) and a smallest set of other inputs (greedy set cover)
# that reaches every further edge the kept and working corpora reach. libFuzzer's own
# set-cover merge also counts each input's stack depth as a feature, and so keeps a hundred
# inputs that differ only in that; here edges alone count.
cmin() {
	local t=$1 kept=$FUZZ_DIR/corpus/$1 out=$WORK/cmin/$1 ctl=$WORK/cmin/$1.control edges
	rm -rf "$out" "$ctl"; mkdir -p "$out/seeds" "$out/new" "$kept" "$WORK/corpus/$t"
	cp "$kept"/seed-* "$out/seeds/" 2>/dev/null
	"$BIN_DIR/$t" -merge=1 -set_cover_merge=1 -use_counters=0 -merge_control_file="$ctl" \
		"$out/seeds" "$kept" "$WORK/corpus/$t" > "$WORK/logs/$t.cmin.log" 2>&1 ||
		{ echo "FAIL fuzz $t: merge failed (log: $WORK/logs/$t.cmin.log)"; return 1; }
	edges=$(sed -n 's/.*(\([0-9]*\) inline 8-bit counters).*/\1/p' "$WORK/logs/$t.cmin.log" | head -1)
	# Control file: file count, count of the first directory's (the seeds), the paths, then
	# "FT index features..." per input. With -use_counters=0, feature n < edges is edge n.
	python3 - "$ctl" "$edges" "$out/new" <<-'EOF' || { echo "FAIL fuzz $t: cmin failed"; return 1; }
		import os, shutil, sys
		lines = open(sys.argv[1]).read().split("\n")
		n, first, edges = int(lines[0]), int(lines[1]), int(sys.argv[2])
		paths = lines[2:2 + n]
		cover = {}
		for line in lines[2 + n:]:
		    if line.startswith("FT "):
		        i, *fts = line.split()[1:]
		        cover[int(i)] = {int(f) for f in fts if int(f) < edges}
		covered = set().union(*(cover.get(i, set()) for i in range(first)))
		rest = [i for i in range(first, n) if i in cover]
		while True:
		    gain = lambda i: (len(cover[i] - covered), -os.path.getsize(paths[i]))
		    best = max(rest, key=gain, default=None)
		    if best is None or not cover[best] - covered:
		        break
		    covered |= cover[best]
		    shutil.copy(paths[best], sys.argv[3])
	EOF
	rm -rf "$kept" && mkdir -p "$kept" && cp "$out"/seeds/* "$out"/new/* "$kept"/ 2>/dev/null
	echo "PASS fuzz $t: corpus $(find "$kept" -type f | wc -l) files ($(find "$kept" -name 'seed-*' | wc -l) seeds), $(cat "$kept"/* | wc -c) bytes"
}

# One run: a working corpus (written) and the kept one (read only).
fuzz() {
	local t=$1 log=$WORK/logs/$1.log artifacts=$FUZZ_DIR/artifacts/$1 corpus status
	if [ "$mode" = smoke ]; then
		corpus=$WORK/smoke/$t; rm -rf "$corpus"
	else
		corpus=$WORK/corpus/$t
	fi
	mkdir -p "$corpus" "$artifacts" "$FUZZ_DIR/corpus/$t"
	# CPU time too: on a loaded machine executions per wall second understate the speed.
	local TIMEFORMAT='%R %U %S' wall cpu
	{ time "$BIN_DIR/$t" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
		-rss_limit_mb=2048 -artifact_prefix="$artifacts/" "$corpus" "$FUZZ_DIR/corpus/$t" \
		> "$log" 2>&1; } 2> "$log.time"
	status=$?
	read -r wall cpu < <(awk '{printf "%.0f %.0f\n", $1, $2 + $3}' "$log.time")
	local execs rate edges total ft corp
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(awk -v n="${execs:-0}" -v s="$wall" -v c="$cpu" \
		'BEGIN {printf "%d/s, %d per CPU s", n / (s > 0 ? s : 1), n / (c > 0 ? c : 1)}')
	total=$(sed -n 's/.*(\([0-9]*\) inline 8-bit counters).*/\1/p' "$log" | head -1)
	read -r edges ft corp < <(grep -E '^#[0-9]+.* cov: ' "$log" | tail -1 |
		sed -E 's/.* cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+).*/\1 \2 \3/')
	local figures="${execs:-0} execs in $wall s ($rate), ${edges:-?} of ${total:-?} edges, ${ft:-?} features, corpus ${corp:-?}"
	if [ "$status" = 0 ]; then
		echo "PASS fuzz $t: $figures"
		return 0
	fi
	local input why
	input=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
	why=$(grep -m1 -E "panicked at|ERROR: libFuzzer" "$log" | sed 's/^thread .* panicked at/panicked at/')
	local detail
	detail=$(grep -A1 -m1 "panicked at" "$log" | tail -1)
	echo "FAIL fuzz $t: ${why:-exit status $status}${detail:+ $detail}; after $figures; input ${input:-none} (replay: $BIN_DIR/$t ${input:-}; log $log)"
	return 1
}

failed=0
for t in "${targets[@]}"; do
	grep -qx "$t" <<<"$all_targets" || { echo "FAIL fuzz $t: no such target (have: $(echo $all_targets))"; failed=1; continue; }
	if [ "$mode" = cmin ]; then cmin "$t" || failed=1; else fuzz "$t" || failed=1; fi
done
exit $failed
