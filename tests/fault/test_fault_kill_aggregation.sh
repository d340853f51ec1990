#!/usr/bin/env bash
# kill -9 of ndd-aggregation mid-stream, then a restart: every copy reaches the sink or a DLQ
# (at-least-once: NF-topic offsets are stored only after MAIN acknowledged, so the restarted
# worker re-produces what the killed one had in flight; those repeats are counted as duplicates).
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
fault_init kagg
start_sink s1
write_feeds s1
start_agg 0
start_adapter 0
produce 400 12
sleep 5
kill -KILL "${AGG_PID[0]}"
say "ndd-aggregation ${AGG_PID[0]} killed with SIGKILL at 5 s"
sleep 1
start_agg 0
produce_wait
settle_and_account 60
echo "PASS: aggregation killed -9 mid-stream: nothing lost"
