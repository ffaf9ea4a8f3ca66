# Sourced by CI's scripts (tools/testbed/ci-flavour.sh, tools/vm/ci-x86.sh): a kernel build
# under CI's deadline. Never executed.
#
# build_within NAME BUILD_BY COMMAND...: runs COMMAND with RFL_BUILD_DEADLINE set BUILD_BY
# seconds after CI_START (epoch seconds, set by .ci/run; default now), which
# tools/testbed/setup.sh honours by stopping the build with status 75 and keeping what was
# compiled, so that the next run resumes it. Returns when COMMAND succeeded; otherwise
# ends the script with NAME's SKIP (stopped at the deadline: neither passed nor failed)
# or FAIL line and a count line.
build_within() {
	local name=$1 build_by=$2 status
	shift 2
	RFL_BUILD_DEADLINE=$((${CI_START:-$(date +%s)} + build_by)) "$@"
	status=$?
	if [ "$status" = 75 ]; then
		echo "SKIP $name: its kernel was not built within CI's budget (RFL_BUILD_DEADLINE); the next run resumes the build"
		echo "0 passed, 0 failed"
		exit 0
	fi
	[ "$status" = 0 ] && return
	echo "FAIL $name: its kernel build failed (status $status)"
	echo "0 passed, 1 failed"
	exit 1
}
