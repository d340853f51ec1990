#!/usr/bin/env bash
# A Kafka feed whose topic is on another cluster than its source (its own stack here;
# the copies come through the suite's shared broker), and that cluster stopped for 20 s
# mid-stream. On another cluster a transaction could not commit the source group's offsets,
# so the feed says at-least-once (gauge 0, the log line); while the target is down the feed's
# endpoint reports down with its endpoint-down alarm and the feed holds its copies; when it is back every copy reaches
# the feed topic: produced = in the feed topic (distinct @seq, read by kcat) + dead-lettered,
# lost = 0, duplicates counted.
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
FAULT_TIMEOUT=420
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
fault_init ktarget
SHARED=$B
fault_own_stack --no-pg
TARGET=$B
B=$SHARED
FEED=${PFX}k
FEED_TOPIC=${PFX}feed-topic

FEEDS_FILE=$W/feeds.json
jq -n --arg name "$FEED" --arg src "${PFX}MAIN" --arg url "kafka://$TARGET/$FEED_TOPIC" '{feeds: [{
    name: $name, source_topic: $src, transport: "kafka", encoding: "frame",
    endpoints: [{url: $url}],
    delivery: {batch_max: 16, backoff_max_ms: 1000}}]}' >"$FEEDS_FILE"
start_agg 0
start_adapter 0
M="http://127.0.0.1:${ADA_HTTP[0]}/metrics"
metric() { # name -> the feed's value ("" when absent)
    http_get "$M" | awk -v n="$1" -v f="feed=\"$FEED\"" '$1 ~ "^"n"\\{" && index($1, f) {print $2; exit}'
}
for _ in $(seq 150); do [[ $(metric ndd_adapter_endpoint_up) == 1 ]] && break; sleep 0.2; done
[[ $(metric ndd_adapter_endpoint_up) == 1 ]] || fail "the kafka endpoint did not come up (log $W/adapter-0.log)"
[[ $(metric ndd_adapter_kafka_exactly_once) == 0 ]] ||
    fail "a feed topic on another cluster must be at-least-once, gauge is '$(metric ndd_adapter_kafka_exactly_once)'"
grep -q "on another cluster" "$W/adapter-0.log" || fail "the adapter did not say why it is at-least-once"

produce 300 10
sleep 3
"$STACK" stop "${OWN_ARGS[@]}" >>"$W/stack.out" 2>>"$W/stack.err" || fail "stopping the target Kafka failed"
say "target cluster stopped at 3 s"
down=0
for _ in $(seq 100); do
    [[ $(metric ndd_adapter_endpoint_up) == 0 ]] && { down=1; break; }
    sleep 0.2
done
((down)) || fail "the feed's endpoint still reports up 20 s into the target's outage"
grep -q "alarm endpoint-down raised on $FEED/kafka://$TARGET/$FEED_TOPIC" "$W/adapter-0.log" ||
    fail "no endpoint-down alarm for the feed's kafka endpoint (log $W/adapter-0.log)"
say "the feed reports its endpoint down, alarm raised"
sleep 17
"$STACK" start "${OWN_ARGS[@]}" >>"$W/stack.out" 2>>"$W/stack.err" ||
    fail "the target Kafka did not start again: $(tail -3 "$W/stack.err")"
say "target cluster started again"
produce_wait

seqs() { # distinct @seq in the feed topic, then the total records, one per line
    kcat -C -b "$TARGET" -t "$FEED_TOPIC" -o beginning -e -q -f '%h\n' 2>/dev/null |
        tr ',' '\n' | sed -n 's/^@seq=//p' | sort | uniq -c |
        awk '{u++; t += $1} END {print u + 0; print t + 0}'
}
t0=$SECONDS
while :; do
    mapfile -t got < <(seqs)
    dead=$(($(topic_records "${PFX}dlq-aggregation") + $(topic_records "ndd.dlq.$FEED")))
    ((got[0] + dead >= PRODUCED || SECONDS - t0 >= 120)) && break
    sleep 2
done
lost=$((PRODUCED - got[0] - dead))
echo "account feed $FEED: produced $PRODUCED = in the feed topic ${got[0]} + dead-lettered $dead; lost $lost; duplicates $((got[1] - got[0]))"
((lost == 0)) || fail "copies lost across the target cluster's outage (work dir $W)"
kill -0 "${ADA_PID[0]}" 2>/dev/null || fail "ndd-adapter did not survive the target's outage"
echo "PASS: kafka feed on another cluster, target stopped 20 s: at-least-once, nothing lost"
