#!/usr/bin/env bash
# Two aggregation replicas with exactly-once under 1,000 copies/s; one is frozen (kill -STOP)
# for 16 s, past its consumer session: the group gives its partitions to the other, which
# reads them from the last committed offsets. When the frozen one resumes, its open transaction
# (records the other has produced again) cannot commit (its group generation is gone): it is
# aborted and the replica rewinds. read_committed on MAIN and at the Kafka feed's target:
# every @seq exactly once; the HTTP/2 feed: 0 lost. Registered twice (tests/CMakeLists.txt):
# with the separate daemons, and with two `ndd` (every role, the correlation's exactly-once
# too: its xDRs are counted the same way).
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
FAULT_TIMEOUT=200
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
# shellcheck source=tests/fault/eos_lib.sh
. "$SRC/tests/fault/eos_lib.sh"
fault_init eoszombie
eos_setup
FAULT_AGG_ARGS="--exactly-once=true"
start_agg 0
start_agg 1
start_adapter 0
produce 1000 30
sleep 6
kill -STOP "${AGG_PID[0]}"
say "aggregation 0 frozen at 6 s"
sleep 16
kill -CONT "${AGG_PID[0]}"
say "aggregation 0 resumed"
produce_wait
settle_and_account 60
eos_account "${PFX}MAIN" "MAIN"
eos_account "${PFX}feed-out" "Kafka feed"
[[ -n ${NDD_FAULT_ALLINONE:-} ]] && eos_xdr_account
# The scenario happened when the frozen replica's partitions were lost (its session expired);
# it then had an open transaction to abort unless it was frozen between a commit and the next
# record (a few ms of every transaction-ms).
grep -q "kafka consumer lost" "$W/agg-0.log" ||
    fail "the frozen replica lost no partition: its session did not expire (see $W)"
echo "aborted transactions logged by the frozen replica: $(grep -c "transaction aborted" "$W/agg-0.log" || true)"
echo "PASS: a replica frozen past its session: MAIN and the Kafka feed hold every copy once"
