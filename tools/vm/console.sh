# SPDX-License-Identifier: GPL-2.0
# Sourced by tools/vm/run.sh and pair.sh: the guests' CPU model and one guest's console
# counted. Sourced, never run.

# la57=off: with 5-level paging, an interrupt during the boot CPU's identify_cpu(), which
# clears boot_cpu_data's capabilities and so, until it reads them again, makes
# pgtable_l5_enabled() false, finds KASAN's shadow bounds wrong and reports a
# wild-memory-access in do_raw_spin_lock() from handle_edge_irq(), 0.004-0.01 s into the
# boot (a false report of the stock kernel; seen in pair's guests and in run.sh's install).
VM_CPU=max,la57=off

# vm_count RAW SUITE [LOG]: RAW (a serial console, CRs and all) as SUITE's PASS/FAIL/SKIP
# lines (tools/vm/ktap.awk), added to the caller's passed and failed; a console that never
# reached SUITE's kernel_reports is one more failure, shown by its last lines. The
# console, CRs removed, is left in RAW.txt and appended to LOG if given.
vm_count() {
	local raw=$1 suite=$2 log=${3:-}
	tr -d '\r' < "$raw" > "$raw.txt"
	[ -z "$log" ] || cat "$raw.txt" >> "$log"
	awk -f "$PROJECT_ROOT/tools/vm/ktap.awk" "$raw.txt" > "$raw.results"
	cat "$raw.results"
	passed=$((passed + $(grep -c '^PASS ' "$raw.results")))
	failed=$((failed + $(grep -c '^FAIL ' "$raw.results")))
	if ! grep -q "^rfl-suite-end: kernel_reports($suite)" "$raw.txt"; then
		failed=$((failed + 1))
		echo "FAIL vm $suite: the guest did not finish; its console's last lines:"
		tail -n 30 "$raw.txt" | sed 's/^/  | /'
	fi
}
