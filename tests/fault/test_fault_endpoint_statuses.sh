#!/usr/bin/env bash
# The endpoint answers 503 (3 s), then 429 with Retry-After: 1 (3 s), then 400 for 30
# requests: 503 and 429 are retried (after the Retry-After), 400 is final and those copies go
# to the feed's DLQ with their reason; produced = delivered + dead-lettered.
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
fault_init epstatus
start_sink s1
write_feeds s1
start_agg 0
start_adapter 0
produce 300 12
sleep 2
sink_control s1 '{"status":503,"duration_ms":3000}'
sleep 3
sink_control s1 '{"status":429,"retry_after":1,"duration_ms":3000}'
sleep 3
sink_control s1 '{"status":400,"count":30}'
produce_wait
settle_and_account 60
fdlq=$(topic_records "ndd.dlq.${PFX}s1")
((fdlq > 0)) || fail "no copy answered 400 reached the feed DLQ"
((fdlq <= 30)) || fail "$fdlq copies dead-lettered for 30 answers of 400"
((DELIVERED[s1] > 0)) || fail "nothing delivered"
rej=$(sink_field s1 rejected)
((rej > fdlq)) || fail "the sink refused $rej requests, $fdlq of them with 400: 503 and 429 were not exercised"
echo "PASS: 503, 429 + Retry-After, 400 ($rej refused): retried, retried, dead-lettered ($fdlq); nothing lost"
