#!/usr/bin/env bash
# The broker stopped for 20 s mid-stream (its own stack: the suite's shared broker is never
# stopped): the simulator, the aggregation and the adapter wait and resume; nothing is lost.
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
FAULT_TIMEOUT=420
# the broker may take a minute to come back on a loaded host: the simulator waits for it
SIM_FLUSH_TIMEOUT=240
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
fault_init broker
fault_own_stack --no-pg
start_sink s1
write_feeds s1
start_agg 0
start_adapter 0
produce 300 10
sleep 3
"$STACK" stop "${OWN_ARGS[@]}" >>"$W/stack.out" 2>>"$W/stack.err" || fail "stopping Kafka failed"
say "broker stopped at 3 s"
sleep 20
"$STACK" start "${OWN_ARGS[@]}" >>"$W/stack.out" 2>>"$W/stack.err" ||
    fail "Kafka did not start again: $(tail -3 "$W/stack.err")"
say "broker started again"
produce_wait
settle_and_account 90
for s in ADA_PID AGG_PID; do
    declare -n p=$s
    kill -0 "${p[0]}" 2>/dev/null || fail "$s ${p[0]} did not survive the broker outage"
done
echo "PASS: broker stopped 20 s: nothing lost"
