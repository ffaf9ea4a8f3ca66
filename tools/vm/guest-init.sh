#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# init (PID 1) of the x86_64 QEMU guest (tools/vm/run.sh): a minimal system on the fresh
# Debian image, then the suite named on the kernel command line (rfl.job=NAME: one of
# tools/vm/guest-checks.sh), its output on the serial console, then power off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mkdir -p /run/netns /dev/shm
ln -sf /proc/self/fd /dev/fd
mount -t tmpfs tmpfs /dev/shm
ip link set lo up
# Only emergencies on the console, so that kernel messages do not split the KTAP lines;
# the last suite reads the kernel log for reports.
dmesg -n 1
hostname rfl-vm
job=$(sed -n 's/.*rfl\.job=\([^ ]*\).*/\1/p' /proc/cmdline)
cd /opt/rfl-tcp-cc && bash tools/vm/guest-checks.sh "${job:-install}"
echo "rfl-vm: job ended with status $?"
sync
echo o > /proc/sysrq-trigger
sleep 10
