#!/usr/bin/env bash
# "Why does my vendor get nothing?" answered through the product's own wiring: a feed applied
# with `ndd-admin apply` reaches an ndd-adapter through ndd.config; its endpoint (ndd-sink)
# answers 400 to everything, so the adapter dead-letters the copy to the feed's dlq_topic; the
# admin's dead-letter view then shows that record with the adapter's reason, the feed as its
# source and the copy's original topic/partition/offset, and its body and the endpoint's answer
# to the admin role only.
# Needs NDD_BUILD_DIR, NDD_TEST_PG, NDD_TEST_KAFKA.
NAME=dlqflow
. "$(dirname "${BASH_SOURCE[0]}")/admin_lib.sh"

FEED=vendor-$TAG
FEED=${FEED//_/-}
SRC_TOPIC=e2e.main.$TAG
# Not ndd.dlq.*: the feed's own dlq_topic, which the view shows too; other admins sharing the
# cluster do not list it.
DLQ_TOPIC=e2e.dlq.$TAG
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

token admin ops
token viewer watcher
start_admin admin --bootstrap "$KAFKA"

SINK_PORT=$(free_port)
"$BUILD/bench/sink/ndd-sink" --h2-port "$SINK_PORT" --metrics-port -1 --fault-status 400 \
    >"$T/sink.log" 2>&1 &
ADMIN_PIDS+=($!)
"$BUILD/adapter/ndd-adapter" --bootstrap "$KAFKA" --config-topic "$CONFIG_TOPIC" \
    --events-topic "$EVENTS_TOPIC" --http.port 0 --http.port-file "$T/adapter.port" \
    --instance "e2e-$TAG" >"$T/adapter.log" 2>&1 &
ADMIN_PIDS+=($!)

# One copy on the feed's source topic (a new feed's group starts at the earliest offset).
echo 'scp-0001:{"supi": "imsi-001010000000001"}' | kcat -b "$KAFKA" -P -t "$SRC_TOPIC" -K: \
    -H '@timestamp-us=1764486000000000' -H '@message-type=request' \
    -H '@trigger-point=rx-request' -H '@nf-type=SCP' \
    -H ':method=POST' -H ':scheme=https' -H ':path=/nudm-sdm/v2/imsi-001010000000001' ||
    fail "kcat produce to $SRC_TOPIC"

cat >"$T/site.json" <<JSON
{"feeds": [{"name": "$FEED", "source_topic": "$SRC_TOPIC", "dlq_topic": "$DLQ_TOPIC",
            "transport": "http2", "encoding": "json",
            "endpoints": [{"url": "http://127.0.0.1:$SINK_PORT/in"}],
            "delivery": {"timeout_ms": 2000}}]}
JSON
"$ADMIN" apply --url "$URL" --token-file "$T/ops.token" "$T/site.json" >"$T/apply.out" 2>&1 ||
    fail "apply: $(cat "$T/apply.out")"

# The dead letter, as the view shows it.
dead_letter() {
    api ops GET "/api/v1/deadletters?topic=$DLQ_TOPIC&limit=5" >"$T/dlq.json"
    [ "$(status)" = 200 ] && jq -e '.items | length >= 1' "$T/dlq.json" >/dev/null
}
wait_for 60 "the dead letter of feed $FEED in the admin's view" dead_letter
jq -e --arg feed "$FEED" --arg src "$SRC_TOPIC" '.items[0] |
    (.reason | test("400")) and .source == $feed and .status == 400 and
    (.endpoint | test("/in$")) and .original.topic == $src and .key == "scp-0001" and
    (.body | test("imsi-001010000000001")) and .body_bytes > 0 and
    (.response | test("status 400"))' "$T/dlq.json" >/dev/null ||
    fail "the dead letter: $(cat "$T/dlq.json")"
api watcher GET "/api/v1/deadletters?topic=$DLQ_TOPIC" | jq -e '.items[0] | (has("body") or has("response")) | not' >/dev/null ||
    fail "a viewer sees the body: $(cat "$T/resp")"
# The feed's dlq_topic is listed beside the ndd.dlq.* topics.
api watcher GET /api/v1/deadletters | jq -e --arg t "$DLQ_TOPIC" '.topics[] | select(.topic == $t) | .records >= 1' >/dev/null ||
    fail "$DLQ_TOPIC missing from the listing: $(cat "$T/resp")"
echo "PASS: a feed applied through the admin dead-letters at a refusing endpoint, and the admin shows why"
