#!/usr/bin/env bash
# kill -9 of ndd-adapter mid-stream, then a restart: every copy is delivered or dead-lettered
# (at-least-once: offsets are stored only after the endpoint's answer, so the restarted adapter
# sends again what the killed one had in flight; those repeats are counted as duplicates).
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
fault_init kadapter
start_sink s1
write_feeds s1
start_agg 0
start_adapter 0
produce 400 12
sleep 5
kill -KILL "${ADA_PID[0]}"
say "ndd-adapter ${ADA_PID[0]} killed with SIGKILL at 5 s"
sleep 1
start_adapter 0
produce_wait
settle_and_account 60
echo "PASS: adapter killed -9 mid-stream: nothing lost"
