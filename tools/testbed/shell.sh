#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make shell`, inside the UML guest (tools/testbed/uml-run.sh --interactive): set up the
# selftests' dumbbell (selftests/lib.sh's setup_dumbbell, as make demo's: 100 Mbit/s,
# 500 us, a 100-packet drop-tail FIFO), start an iperf3 server in srv, say what is where
# and what to try, then run an interactive root shell in the repository. The guest powers
# off when the shell exits.
#
#   tools/testbed/shell.sh [RATE_MBIT DELAY_US QUEUE_PKTS [ECN_K_PKTS]]
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/config.sh"
source "$PROJECT_ROOT/selftests/lib.sh"
cd "$PROJECT_ROOT"

rate=${1:-100} delay_us=${2:-500} queue=${3:-100} ecn_k=${4:-}
if ! setup_dumbbell "$rate" "$delay_us" "$queue" "$ecn_k" || ! start_iperf_server; then
	echo "shell: the test network's setup failed; the shell runs without it" >&2
fi

rc=$(mktemp /run/shellrc.XXXXXX)
cat > "$rc" <<EOF
PS1='rfl-guest:\w# '
bind 'set enable-bracketed-paste off' 2>/dev/null
# Shortcuts: run a command in one of the dumbbell's namespaces.
cli() { ip netns exec cli "\$@"; }
rtr() { ip netns exec rtr "\$@"; }
srv() { ip netns exec srv "\$@"; }
TIMELY_PARAMS_DEMO="$TIMELY_PARAMS_DEMO"
DX_PARAMS_100M="$DX_PARAMS_100M"
EOF

cat <<EOF
== rfl-tcp-cc guest shell ($(uname -r), ${RFL_KERNEL_FLAVOR:-normal} kernel)
The test network (selftests/lib.sh's dumbbell; the bottleneck is rtr's r1: ${rate} Mbit/s,
${queue}-packet queue${ecn_k:+, ECN mark above $ecn_k}, ${delay_us} us on the way back), an iperf3 server listening in srv:

  cli c0 10.10.1.1 --- 10.10.1.2 r0  rtr  r1 10.10.2.1 --- 10.10.2.2 s0 srv

$(for ns in cli rtr srv; do ip -n "$ns" -o -4 addr show | awk -v ns="$ns" '$2 != "lo" { print "  " ns ": " $2 " " $4 }'; done)

Modules (built, not loaded): $(cd rust && ls *.ko 2>/dev/null | tr '\n' ' ')
Try:
  insmod rust/tcp_rust_reno.ko
  ip netns exec cli iperf3 -c 10.10.2.2 -C rust_reno -t 5
  insmod rust/tcp_timely.ko \$TIMELY_PARAMS_DEMO    # make demo's parameters
  ip netns exec cli iperf3 -c 10.10.2.2 -C timely_patched -t 20 &
  sleep 5; ip netns exec cli ss -ti dst 10.10.2.2
  tc -n rtr -s qdisc show dev r1                   # the bottleneck's queue
(cli/rtr/srv CMD is short for ip netns exec NS CMD; more in docs/usage.md.) The guest runs as root with the
host's / mounted read-write. exit (or Ctrl-D) powers the guest off.
EOF
exec setsid -w -c bash --rcfile "$rc" -i
