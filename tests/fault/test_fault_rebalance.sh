#!/usr/bin/env bash
# A rebalance 2 -> 1 -> 2 mid-stream: a second ndd-adapter joins the feed's group, leaves
# (SIGTERM: it drains and commits), and joins again. Partitions move; nothing is lost; the
# copies sent twice around a move are counted as duplicates.
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
fault_init rebal
start_sink s1
write_feeds s1
start_agg 0
start_adapter 0
produce 300 15
sleep 3
start_adapter 1
say "second adapter joined (2 members)"
sleep 4
kill -TERM "${ADA_PID[1]}"
wait "${ADA_PID[1]}" || true
say "second adapter left (1 member)"
sleep 3
start_adapter 1
say "second adapter joined again (2 members)"
produce_wait
settle_and_account 60
# "kafka consumer assigned N partition(s)" with N >= 1: an assignment of nothing does not count
n1=$(grep -cE 'kafka consumer assigned [1-9][0-9]* partition' "$W/adapter-1.log" || true)
((n1 > 0)) || fail "the second adapter never got partitions (log $W/adapter-1.log)"
echo "PASS: rebalance 2 -> 1 -> 2: nothing lost"
