# SPDX-License-Identifier: GPL-2.0
# A guest console's suites (tools/vm/guest-checks.sh: KTAP between "rfl-suite: NAME" and
# "rfl-suite-end: NAME STATUS") as PASS/FAIL/SKIP lines, as run-tests.sh prints UML's.
/^rfl-suite: / { suite = substr($0, 12); next }
/^rfl-suite-end: / {
	if (!plan[suite]) print "FAIL vm " suite ": no TAP plan"
	else if ($NF != 0 && !bad[suite]) print "FAIL vm " suite ": exit status " $NF
	suite = ""; next
}
suite == "" { next }
/^1\.\.[0-9]+/ { plan[suite] = 1; next }
/^#/ { print "  " $0; next }
/^ok [0-9]+ .*# SKIP/ { sub(/^ok [0-9]+ /, ""); print "SKIP vm " suite ": " $0; next }
/^ok [0-9]+ / { sub(/^ok [0-9]+ /, ""); print "PASS vm " suite ": " $0; next }
/^not ok [0-9]+ / { sub(/^not ok [0-9]+ /, ""); print "FAIL vm " suite ": " $0; bad[suite] = 1; next }
END { if (suite != "") print "FAIL vm " suite ": the guest stopped inside it" }
