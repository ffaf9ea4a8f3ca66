#!/bin/bash
# init (PID 1) of the UML guest: prepare a minimal system on the host's root file system,
# run the job tools/testbed/uml-run.sh wrote, record its status for the host, power off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /dev/shm 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mkdir -p /run/netns
ip link set lo up
hostname rfl-guest 2>/dev/null

# The console is up: uml-run.sh --interactive starts feeding piped input now (input that
# arrives earlier in boot can go unread).
: > "$RFL_RUNDIR/console-ready"
bash "$RFL_RUNDIR/job.sh"
echo $? > "$RFL_RUNDIR/status"
# Debug flavour: look for the kernel checkers' reports (KASAN, lockdep, kmemleak, ...).
if [ "${RFL_DEBUG_CHECKS:-0}" = 1 ]; then
	bash "$(dirname "$0")/guest-debug-checks.sh"
	echo $? > "$RFL_RUNDIR/debug-checks"
fi
sync
echo o > /proc/sysrq-trigger 2>/dev/null
python3 -c 'import ctypes; ctypes.CDLL(None).reboot(0x4321fedc)'
