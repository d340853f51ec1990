#!/usr/bin/env bash
# kill -9 of `ndd` under 1,000 copies/s with the aggregation's and the correlation's exactly-once on: the restarted
# ndd (same HTTP port: the same transactional.id) fences what the killed one left open and
# reads from the offsets of its last committed transaction. read_committed on MAIN and at the
# Kafka feed's target: every @seq exactly once (0 duplicates, 0 lost); the HTTP/2 feed's
# sink: 0 lost.
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
FAULT_TIMEOUT=150
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
# shellcheck source=tests/fault/eos_lib.sh
. "$SRC/tests/fault/eos_lib.sh"
fault_init eoskill
eos_setup
start_ndd 0
produce 1000 20
sleep 8
kill -KILL "${NDD_PID[0]}"
say "ndd killed (-9) at 8 s"
start_ndd 0
produce_wait
settle_and_account 60
eos_account "${PFX}MAIN" "MAIN"
eos_account "${PFX}feed-out" "Kafka feed"
eos_xdr_account
echo "aborts or rebuilds logged: $(grep -c "transaction aborted\|made again" "$W/ndd-0.log" || true)"
echo "PASS: ndd killed -9 with exactly-once: MAIN, the Kafka feed and XDR hold everything once"
