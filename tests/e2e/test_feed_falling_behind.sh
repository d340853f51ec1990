#!/usr/bin/env bash
# A feed falling behind, seen by the operator, through the real daemons: ndd-admin, an
# ndd-adapter following the admin's configuration topic (heartbeats every second), ndd-sink
# as the feed's HTTP/2 endpoint and ndd-nf-sim producing 200 copies/s to the source topic.
# The feed is created through the REST API; /status shows it "ok" with origin "admin" and a
# lag; a second adapter running a feeds file shows its feed with origin "file" and the
# file's path. The endpoint is then stalled (SIGSTOP): the lag grows, /status says "falling behind"
# and the feed-falling-behind alarm is active. The endpoint resumes (SIGCONT) while copies
# keep coming: the lag drains, the health and the alarm clear. The alarm was raised once and
# cleared once (one row, count 1). The admin's trend window is 10 s (--feed-lag-window).
# Needs NDD_BUILD_DIR, NDD_TEST_PG, NDD_TEST_KAFKA, curl, jq.
set -uo pipefail

BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
PG=${NDD_TEST_PG:?NDD_TEST_PG is not set (deploy/local/stack.sh start)}
KAFKA=${NDD_TEST_KAFKA:?NDD_TEST_KAFKA is not set (deploy/local/stack.sh start)}
STACK=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}/deploy/local/stack.sh
for tool in curl jq; do
    command -v "$tool" >/dev/null || {
        echo "FAIL: $tool is not installed" >&2
        exit 1
    }
done
T=$(mktemp -d /tmp/ndd-feed-behind.XXXXXX)
TAG=behind$$r$RANDOM
SCHEMA=ndd_e2e_$TAG
FEED=$TAG-f
ADMIN_PID= ADA_PID= SINK_PID= SIM_PID= FILE_PID=
fail() {
    echo "FAIL: $*" >&2
    [ -s "$T/status.json" ] && { echo "--- last /status feeds"; jq -c .feeds "$T/status.json"; }
    for f in "$T"/*.log; do [ -f "$f" ] && { echo "--- $f (last 15 lines)"; tail -15 "$f"; }; done
    exit 1
}
cleanup() {
    local p
    [ -n "$SINK_PID" ] && kill -CONT "$SINK_PID" 2>/dev/null
    for p in $SIM_PID $FILE_PID $ADA_PID $SINK_PID $ADMIN_PID; do kill -TERM "$p" 2>/dev/null; done
    for p in $SIM_PID $FILE_PID $ADA_PID $SINK_PID $ADMIN_PID; do wait "$p" 2>/dev/null; done
    psql "$PG" -qc "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1
    rm -rf "$T"
}
trap cleanup EXIT

read -r SINK_PORT SINK_MPORT ADA_PORT FILE_PORT <<<"$("$STACK" free-ports 4 | tr "\n" " ")"
ADMIN=$BUILD/admin/ndd-admin
(umask 077 && "$ADMIN" token create --pg "$PG" --db-schema "$SCHEMA" --role admin --name behind \
    >"$T/token" 2>>"$T/ndd-admin.log") || fail "token create failed"
TOKEN=$(cat "$T/token")
"$ADMIN" --pg "$PG" --db-schema "$SCHEMA" --bootstrap "$KAFKA" --config-topic "$TAG.config" \
    --events-topic "$TAG.events" --events-group "$TAG-admin" --config-replication 1 \
    --feed-lag-window 10s --http.port 0 --http.port-file "$T/admin.port" --db-wait 20s \
    >>"$T/ndd-admin.log" 2>&1 &
ADMIN_PID=$!
"$BUILD/bench/sink/ndd-sink" --h2-port "$SINK_PORT" --metrics-port "$SINK_MPORT" \
    >"$T/sink.log" 2>&1 &
SINK_PID=$!
for _ in $(seq 300); do [ -s "$T/admin.port" ] && break; sleep 0.1; done
[ -s "$T/admin.port" ] || fail "ndd-admin did not write its port file"
API="http://127.0.0.1:$(cat "$T/admin.port")/api/v1"
get() { curl -fsS --max-time 5 -H "Authorization: Bearer $TOKEN" "$API/$1"; }

# the source topic exists before the feed (its group starts at the end: only new copies count)
"$BUILD/bench/nfsim/ndd-nf-sim" --bootstrap "$KAFKA" --rate 50 --duration 1 --nf-mix SCP=1 \
    --topic-prefix "$TAG-" --partitions 2 --quiet >/dev/null 2>"$T/nfsim0.log" ||
    fail "ndd-nf-sim (source topic) failed"
"$BUILD/adapter/ndd-adapter" --bootstrap "$KAFKA" --config-topic "$TAG.config" \
    --events-topic "$TAG.events" --instance "$TAG-a" --heartbeat-interval 1s \
    --http.port "$ADA_PORT" --drain-timeout 1s >>"$T/adapter.log" 2>&1 &
ADA_PID=$!
body=$(jq -nc --arg name "$FEED" --arg src "$TAG-SCP" --arg url "http://127.0.0.1:$SINK_PORT/ingest" \
    '{name: $name, source_topic: $src, transport: "http2", encoding: "json",
      endpoints: [{url: $url}], delivery: {max_in_flight: 16, timeout_ms: 2000}}')
st=$(curl -sS --max-time 30 -o "$T/resp" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' --data-binary "$body" "$API/feeds")
[ "$st" = 201 ] || fail "create feed: $st $(cat "$T/resp")"

# feed_status JQ-FILTER: the feed's /status entry through the filter (saved for fail())
feed_status() {
    get status >"$T/status.json.new" 2>/dev/null && mv "$T/status.json.new" "$T/status.json" &&
        jq -e --arg f "$FEED" ".feeds[] | select(.name == \$f) | $1" "$T/status.json" >/dev/null
}
wait_for() { # SECONDS WHAT COMMAND...
    local secs=$1 what=$2 i
    shift 2
    for ((i = 0; i < secs * 5; i++)); do
        "$@" && return 0
        kill -0 "$ADA_PID" 2>/dev/null || fail "ndd-adapter exited"
        kill -0 "$ADMIN_PID" 2>/dev/null || fail "ndd-admin exited"
        sleep 0.2
    done
    fail "$what not within $secs s"
}
alarms() { # STATE: feed-falling-behind alarms of the feed in that state ("" = any)
    local q="type=feed-falling-behind"
    [ -n "$1" ] && q="$q&state=$1"
    get "alarms?$q" | jq --arg f "$FEED" '[.items[] | select(.resource == $f)]'
}
active_alarm() { [ "$(alarms active | jq length)" = 1 ]; }
no_active_alarm() { [ "$(alarms active | jq length)" = 0 ]; }

START=$SECONDS
"$BUILD/bench/nfsim/ndd-nf-sim" --bootstrap "$KAFKA" --rate 200 --duration 50 --nf-mix SCP=1 \
    --topic-prefix "$TAG-" --quiet >/dev/null 2>"$T/nfsim.log" &
SIM_PID=$!
wait_for 30 "feed $FEED delivering with health ok, origin admin and a lag" feed_status \
    '.health == "ok" and .origin == "admin" and (.lag | type) == "number" and .rate_per_s > 50
     and .instances == ["ndd-adapter/'"$TAG"'-a"] and (.latency_ms.p99 | type) == "number"'
echo "delivering: $(jq -c --arg f "$FEED" '.feeds[] | select(.name == $f)' "$T/status.json")"

# a feed of an adapter's own feeds file shows too, labelled with where it comes from
jq -nc --arg src "$TAG-SCP" --arg url "http://127.0.0.1:$SINK_PORT/ingest" '{feeds: [{name: "'"$TAG"'-file",
    source_topic: $src, transport: "http2", encoding: "json", endpoints: [{url: $url}]}]}' >"$T/feeds.json"
"$BUILD/adapter/ndd-adapter" --bootstrap "$KAFKA" --feeds-file "$T/feeds.json" \
    --events-topic "$TAG.events" --instance "$TAG-file" --heartbeat-interval 1s \
    --http.port "$FILE_PORT" --drain-timeout 1s >>"$T/adapter-file.log" 2>&1 &
FILE_PID=$!
file_feed() {
    get status | jq -e --arg f "$TAG-file" --arg p "$T/feeds.json" \
        '.feeds[] | select(.name == $f) | .origin == "file" and .feeds_file == $p' >/dev/null
}
wait_for 20 "feed $TAG-file with origin file in /status" file_feed
kill -TERM "$FILE_PID"
wait "$FILE_PID" 2>/dev/null
FILE_PID=
no_active_alarm || fail "feed-falling-behind active while the feed keeps up"

kill -STOP "$SINK_PID"
wait_for 30 "health \"falling behind\" with the endpoint stalled" feed_status \
    '.health == "falling behind" and .lag > 1000 and .lag_trend_per_s > 0'
echo "stalled ($((SECONDS - START)) s): $(jq -c --arg f "$FEED" '.feeds[] | select(.name == $f) | {lag, lag_trend_per_s, rate_per_s, health}' "$T/status.json")"
wait_for 10 "alarm feed-falling-behind active" active_alarm
alarms active | jq -e '.[0].severity == "major" and (.[0].text | test("lag [0-9]+ messages, growing"))' \
    >/dev/null || fail "alarm: $(alarms active)"

kill -CONT "$SINK_PID"
wait_for 40 "health back from \"falling behind\" once the endpoint resumed" feed_status \
    '.health != "falling behind"'
wait_for 10 "alarm feed-falling-behind cleared" no_active_alarm
wait_for 20 "the lag drained" feed_status '.lag < 1000 and .health == "ok"'
echo "resumed ($((SECONDS - START)) s): $(jq -c --arg f "$FEED" '.feeds[] | select(.name == $f) | {lag, lag_trend_per_s, rate_per_s, health}' "$T/status.json")"
all=$(alarms "")
[ "$(jq length <<<"$all")" = 1 ] && jq -e '.[0].state == "cleared" and .[0].count == 1' <<<"$all" >/dev/null ||
    fail "one raise and one clear wanted: $all"
kill -TERM "$SIM_PID" 2>/dev/null
wait "$SIM_PID" 2>/dev/null
SIM_PID=
echo "PASS: lag growth -> \"falling behind\" + alarm, drained -> both cleared once ($((SECONDS - START)) s)"
