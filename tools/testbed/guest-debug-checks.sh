#!/bin/bash
# Guest side of the debug flavour's report detection (KERNEL_FLAVOR=debug): run by
# tools/testbed/guest-init.sh after every job, inside the guest. Makes kmemleak scan, then reads
# the whole kernel log for the reports of the kernel's checkers (KASAN, lockdep, UBSAN,
# DEBUG_OBJECTS, DEBUG_LIST, refcount_t, ref_tracker, WARN/BUG/Oops, Rust panics,
# kmemleak). Every line it prints starts with "debug-checks: ", so it is never read as
# TAP: each report with its context, then the verdict, "debug-checks: ok ..." or
# "debug-checks: FAIL ...". Exit status 0 if no report, 1 otherwise.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
say() { sed 's/^/debug-checks: /'; }

# Titles of the checkers' reports (one report may match several: it counts once). kmemleak's
# own "N new suspected memory leaks" line is not one: its objects are counted below.
REPORT_RE='BUG:|WARNING:|Oops|UBSAN:|refcount_t:|list_(add|del) corruption|ODEBUG|'
REPORT_RE+='inconsistent lock state|circular locking|possible recursive locking|'
REPORT_RE+='INFO: trying to register non-static key|kernel BUG at|Kernel panic|panicked at|'
REPORT_RE+='ref_tracker: |unregister_netdevice: waiting|detected stall'

# kmemleak: an object is reported only if it is older than 5 s (MSECS_MIN_AGE,
# mm/kmemleak.c) and was found unreferenced, with contents unchanged, by two scans in a
# row (a scan records each object's checksum; one that changed since the last scan is not
# a suspect yet). So: one scan now, then another once everything the job allocated is
# 5 s old, and the leaks found are what the second scan reports.
kml=/sys/kernel/debug/kmemleak
leaks=0 kml_off=0
if [ -e "$kml" ]; then
	t0=$(cut -d' ' -f1 /proc/uptime)
	echo scan > "$kml"
	wait_s=$(awk -v t0="$t0" '{w = t0 + 5.5 - $1; print (w > 0 ? w : 0)}' /proc/uptime)
	sleep "$wait_s"
	echo scan > "$kml"
	cat "$kml" > /run/kmemleak.txt
	leaks=$(grep -c '^unreferenced object' /run/kmemleak.txt)
	if [ "$leaks" -gt 0 ]; then
		echo "kmemleak: $leaks unreferenced object(s):" | say
		head -n 400 /run/kmemleak.txt | say
	fi
else
	echo "kmemleak: $kml missing (debugfs not mounted, or kmemleak disabled itself: see dmesg)" | say
	kml_off=1
fi

# The kernel log: each report from its title line, up to its end marker or 150 lines.
# KASAN's reports are framed by "====" lines; WARN/BUG end with "---[ end trace".
dmesg > /run/dmesg.txt 2>&1
reports=$(awk -v re="$REPORT_RE" '
	!on && $0 ~ re { on = 1; n = 0; count++; if (count <= 10) print "report " count ":" }
	on { if (count <= 10) print; n++
	     if ($0 ~ /---\[ end trace/ || ($0 ~ /\] =====+$/ && n > 2) || n >= 150) on = 0 }
	END { print "reports: " count + 0 }' /run/dmesg.txt | tee /run/reports.txt | tail -n 1)
reports=${reports#reports: }
[ "$reports" -eq 0 ] || head -n -1 /run/reports.txt | say

if [ "$reports" -eq 0 ] && [ "$leaks" -eq 0 ] && [ "$kml_off" -eq 0 ]; then
	echo "ok (dmesg: no reports; kmemleak: no unreferenced objects)" | say
	exit 0
fi
echo "FAIL (dmesg: $reports report(s); kmemleak: $leaks unreferenced object(s)$([ "$kml_off" = 0 ] || echo ", unavailable"))" | say
exit 1
