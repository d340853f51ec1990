#!/usr/bin/env bash
# The broker frozen (kill -STOP) for 20 s under 1,000 copies/s with the aggregation's
# exactly-once on (its own stack: the suite's shared broker is never stopped). The consumer
# sessions expire meanwhile; what the aggregation had not committed is aborted and produced
# again, what it had committed is not replayed: read_committed on MAIN and at the Kafka feed's
# target, every @seq exactly once (0 duplicates, 0 lost); the HTTP/2 feed's sink: 0 lost.
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
FAULT_TIMEOUT=300
SIM_FLUSH_TIMEOUT=120
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
# shellcheck source=tests/fault/eos_lib.sh
. "$SRC/tests/fault/eos_lib.sh"
fault_init eosstop
fault_own_stack --no-pg
KPID=$(head -n1 "$OWN_STACK/kafka/kafka.pid")
[[ -n $KPID ]] && running "$KPID" || fail "no broker pid in $OWN_STACK/kafka/kafka.pid"
eos_setup
start_ndd 0
produce 1000 30
sleep 5
kill -STOP "$KPID"
say "broker frozen at 5 s"
sleep 20
kill -CONT "$KPID"
say "broker resumed"
produce_wait
settle_and_account 90
running "${NDD_PID[0]}" || fail "ndd did not survive the broker freeze"
eos_account "${PFX}MAIN" "MAIN"
eos_account "${PFX}feed-out" "Kafka feed"
eos_xdr_account
echo "aborts or rebuilds logged: $(grep -c "transaction aborted\|made again" "$W/ndd-0.log" || true)"
echo "PASS: broker frozen 20 s with exactly-once: MAIN, the Kafka feed and XDR hold everything once"
