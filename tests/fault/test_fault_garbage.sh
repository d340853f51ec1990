#!/usr/bin/env bash
# Garbage records mixed into valid traffic on the NF topic (no headers, a bad @timestamp-us,
# a key that differs from @correlation-id): each reaches the aggregation DLQ with its reason,
# the valid copies reach the endpoint; produced (valid + garbage) = delivered + dead-lettered.
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
fault_init garbage
start_sink s1
write_feeds s1
start_agg 0
start_adapter 0
produce 300 8
sleep 2
G=0
for i in $(seq 1 20); do
    echo "not a copy $i" | kcat -P -b "$B" -t "${PFX}SCP" -k "g$i"
    echo "{\"junk\":$i}" | kcat -P -b "$B" -t "${PFX}SCP" -k "t$i" \
        -H "@correlation-id=t$i" -H "@timestamp-us=yesterday" -H "@message-type=request" \
        -H "@trigger-point=rx-request" -H "@nf-type=SCP" -H ":method=GET" -H ":path=/x"
    echo "{\"junk\":$i}" | kcat -P -b "$B" -t "${PFX}SCP" -k "k$i" \
        -H "@correlation-id=other$i" -H "@timestamp-us=1764486000000000" -H "@message-type=request" \
        -H "@trigger-point=rx-request" -H "@nf-type=SCP" -H ":method=GET" -H ":path=/x"
    G=$((G + 3))
done
produce_wait
PRODUCED=$((PRODUCED + G))
settle_and_account 60
agg_dlq=$(topic_records "${PFX}dlq-aggregation")
((agg_dlq == G)) || fail "aggregation DLQ holds $agg_dlq records, $G garbage records were sent"
reasons=$(dlq_reasons "${PFX}dlq-aggregation" | sort | uniq -c)
say "DLQ reasons: $(tr '\n' ' ' <<<"$reasons")"
grep -q 'missing-field' <<<"$reasons" || fail "no missing-field reason: $reasons"
grep -q 'bad-value' <<<"$reasons" || fail "no bad-value reason: $reasons"
grep -q 'key-mismatch' <<<"$reasons" || fail "no key-mismatch reason: $reasons"
(($(dlq_reasons "${PFX}dlq-aggregation" | wc -l) == G)) || fail "a DLQ record has no @dlq-reason"
echo "PASS: $G garbage records dead-lettered with their reason; valid traffic delivered; nothing lost"
