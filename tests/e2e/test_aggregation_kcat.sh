#!/usr/bin/env bash
# ndd-aggregation driven by a tool that is not NDD code: kcat produces NF copies (and one bad
# one) to a fresh NF topic, reads MAIN and the dead-letter topic back; curl reads /metrics,
# which Prometheus' promtool must accept and which must count what happened; SIGHUP reloads
# the filter file; SIGTERM stops the daemon cleanly.
# Needs NDD_TEST_KAFKA (host:port of a broker), NDD_BUILD_DIR; tools kcat, curl, promtool.
set -euo pipefail

BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
BROKER=${NDD_TEST_KAFKA:-}
[ -n "$BROKER" ] || { echo "FAIL: NDD_TEST_KAFKA is not set (run deploy/local/stack.sh start)"; exit 1; }
AGG=$BUILD/aggregation/ndd-aggregation
[ -x "$AGG" ] || { echo "FAIL: $AGG not built"; exit 1; }
for tool in kcat curl promtool; do
    command -v $tool >/dev/null || { echo "FAIL: $tool missing (Debian: kcat curl prometheus)"; exit 1; }
done

T=$(mktemp -d /tmp/ndd-agg-e2e.XXXXXX)
TAG=e2e-$$-$RANDOM
IN=ndd-$TAG-scp
MAIN=ndd-$TAG-main
DLQ=ndd-$TAG-dlq
AGG_PID=
cleanup() {
    [ -n "$AGG_PID" ] && kill -9 "$AGG_PID" 2>/dev/null && wait "$AGG_PID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*"
    echo "--- ndd-aggregation log:"; tail -30 "$T/agg.log" 2>/dev/null
    exit 1
}

echo '{"name": "allow-all", "default": "allow", "rules": []}' >"$T/filter.json"
"$AGG" --nf-type SCP --bootstrap "$BROKER" --topic "$IN" --main-topic "$MAIN" --dlq-topic "$DLQ" \
    --group "ndd-$TAG" --main-partitions 2 --http.port 0 --http.port-file "$T/port" \
    --filter-file "$T/filter.json" --filter-check-interval 1h --config-topic= --events-topic= \
    --kafka.consumer.session.timeout.ms 6000 >"$T/agg.log" 2>&1 &
AGG_PID=$!
for _ in $(seq 200); do
    [ -s "$T/port" ] && grep -q "assigned" "$T/agg.log" && break
    kill -0 $AGG_PID 2>/dev/null || fail "ndd-aggregation exited"
    sleep 0.1
done
[ -s "$T/port" ] || fail "no HTTP port file"
M=http://127.0.0.1:$(cat "$T/port")
[ "$(curl -s -o /dev/null -w '%{http_code}' "$M/healthz")" = 200 ] || fail "/healthz"
# Ready once Kafka answered, the configuration is loaded and the group assigned partitions.
for _ in $(seq 1 60); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$M/readyz")" = 200 ] && break
    sleep 0.5
done
[ "$(curl -s -o /dev/null -w '%{http_code}' "$M/readyz")" = 200 ] || fail "/readyz: $(curl -s "$M/readyz")"

copy() { # copy N [extra kcat -H args...]: one valid request copy with key c-N
    local n=$1; shift
    printf '{"n":%s}' "$n" | kcat -b "$BROKER" -P -t "$IN" -k "c-$n" \
        -H "@correlation-id=c-$n" -H "@timestamp-us=1764486000000000" -H "@message-type=request" \
        -H "@trigger-point=rx-request" -H "@nf-type=SCP" -H "@seq=$n" -H ":method=POST" \
        -H ":path=/npcf-smpolicycontrol/v1/sm-policies" -H "content-type=application/json" "$@"
}
copy 1
copy 2
copy 3
# No @nf-type: refused by the codec, must land in the DLQ with reason missing-field.
printf '{}' | kcat -b "$BROKER" -P -t "$IN" -k c-9 -H "@correlation-id=c-9" \
    -H "@timestamp-us=1764486000000000" -H "@message-type=request" -H "@trigger-point=rx-request" \
    -H ":method=GET" -H ":path=/x"

timeout 30 kcat -b "$BROKER" -C -t "$MAIN" -o beginning -c 3 -e -q -f '%k|%h|%s\n' >"$T/main.txt" ||
    fail "MAIN did not get 3 records: $(cat "$T/main.txt")"
[ "$(wc -l <"$T/main.txt")" = 3 ] || fail "MAIN: $(cat "$T/main.txt")"
for n in 1 2 3; do
    grep -q "^c-$n|.*@seq=$n.*@agg-seq=.*@origin=$IN/" "$T/main.txt" || fail "copy $n not enriched on MAIN"
    grep -q "^c-$n|.*|{\"n\":$n}$" "$T/main.txt" || fail "copy $n body changed"
done
timeout 30 kcat -b "$BROKER" -C -t "$DLQ" -o beginning -c 1 -e -q -f '%k|%h\n' >"$T/dlq.txt" ||
    fail "no dead letter"
grep -q "^c-9|.*@dlq-reason=missing-field,@dlq-field=@nf-type" "$T/dlq.txt" || fail "DLQ: $(cat "$T/dlq.txt")"

# A filter that drops POST requests, installed by SIGHUP: copy 4 is dropped, not lost.
cat >"$T/filter.json" <<'J'
{"name": "no-post", "default": "allow",
 "rules": [{"name": "drop-post", "action": "drop", "match": {"field": ":method", "op": "equals", "value": "POST"}}]}
J
kill -HUP $AGG_PID
for _ in $(seq 100); do grep -q 'filter "no-post" loaded' "$T/agg.log" && break; sleep 0.1; done
grep -q 'filter "no-post" loaded' "$T/agg.log" || fail "filter not reloaded"
copy 4

metric() { # metric NAME_WITH_LABELS -> value
    grep -F "$1 " "$T/metrics" | awk '{print $2}'
}
ok=0
for _ in $(seq 100); do
    curl -s "$M/metrics" >"$T/metrics"
    [ "$(metric 'ndd_aggregation_messages_filtered_total{nf_type="SCP"}')" = 1 ] && ok=1 && break
    sleep 0.1
done
((ok)) || fail "filtered counter did not reach 1: $(grep ndd_aggregation "$T/metrics")"
promtool check metrics <"$T/metrics" || fail "promtool rejects /metrics"
[ "$(metric 'ndd_aggregation_messages_consumed_total{nf_type="SCP"}')" = 5 ] || fail "ingress count"
[ "$(metric 'ndd_aggregation_messages_produced_total{nf_type="SCP"}')" = 3 ] || fail "egress count"
[ "$(metric 'ndd_aggregation_messages_dead_lettered_total{nf_type="SCP",reason="missing-field"}')" = 1 ] ||
    fail "dead-letter count"
[ "$(metric 'ndd_aggregation_filter_reloads_total{nf_type="SCP",result="ok"}')" = 1 ] || fail "reload count"
grep -q '^ndd_aggregation_produce_latency_seconds_count{nf_type="SCP"} 3$' "$T/metrics" ||
    fail "latency histogram count"

kill -TERM $AGG_PID
rc=0
wait $AGG_PID || rc=$?
AGG_PID=
[ $rc = 0 ] || fail "exit status $rc after SIGTERM"
grep -q "stopped: consumed 5, produced 3, filtered 1, dead-lettered 1" "$T/agg.log" || fail "final counts"
echo "PASS: kcat copies through ndd-aggregation: MAIN, DLQ, filter reload, /metrics, clean stop"
