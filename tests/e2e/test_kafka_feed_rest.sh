#!/usr/bin/env bash
# A Kafka feed, end to end: a Kafka feed created through ndd-admin's REST API (an inline filter
# that drops responses, a SCRAM principal) reaches the ndd-adapters through ndd.config; they
# deliver the filtered copies of an NF topic (ndd-nf-sim, 4 copies per transaction) into the
# feed topic in transactions while one adapter is killed with -9 mid-stream and restarted and
# a second one joins and leaves (rebalances 1 -> 2 -> 1). kcat, authenticated as the feed's
# principal over SASL_SSL with isolation.level=read_committed and a group under its prefix,
# then reads every request copy exactly once and no response (counted by @seq against the
# source topic read back by the super user).
# Needs NDD_BUILD_DIR, NDD_TEST_PG, NDD_TEST_KAFKA, NDD_TEST_KAFKA_SASL, NDD_TEST_KAFKA_CLIENTS.
set -uo pipefail

BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
PG=${NDD_TEST_PG:?NDD_TEST_PG is not set (deploy/local/stack.sh start)}
KAFKA=${NDD_TEST_KAFKA:?NDD_TEST_KAFKA is not set (deploy/local/stack.sh start)}
SASL=${NDD_TEST_KAFKA_SASL:?NDD_TEST_KAFKA_SASL is not set (NDD_KAFKA_SASL of the stack env file)}
CLIENTS=${NDD_TEST_KAFKA_CLIENTS:?NDD_TEST_KAFKA_CLIENTS is not set (NDD_KAFKA_CLIENTS of the stack env file)}
STACK=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}/deploy/local/stack.sh
SCRAM_USER=User:ndd-test-scram
T=$(mktemp -d /tmp/ndd-kafka-feed-rest-e2e.XXXXXX)
TAG=kfrest$$r$RANDOM
SCHEMA=ndd_e2e_$TAG
FEED=$TAG-f
TOPIC=ndd.feed.$TAG
SRC=${TAG}-SCP
ADMIN_PID= SIM_PID=
declare -A ADA_PID ADA_PORT
fail() {
    echo "FAIL: $*" >&2
    for f in "$T"/*.log; do [ -f "$f" ] && { echo "--- $f (last 15 lines)"; tail -15 "$f"; }; done
    exit 1
}
cleanup() {
    local p
    for p in "${ADA_PID[@]}" $SIM_PID $ADMIN_PID; do kill -TERM "$p" 2>/dev/null; done
    for p in "${ADA_PID[@]}" $SIM_PID $ADMIN_PID; do wait "$p" 2>/dev/null; done
    psql "$PG" -qc "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1
    rm -rf "$T"
}
trap cleanup EXIT
[ -s "$CLIENTS/scram.properties" ] || fail "$CLIENTS/scram.properties missing"

ADMIN=$BUILD/admin/ndd-admin
(umask 077 && "$ADMIN" token create --pg "$PG" --db-schema "$SCHEMA" --role admin --name kf-ops >"$T/token" 2>>"$T/ndd-admin.log") ||
    fail "token create failed"
TOKEN=$(cat "$T/token")
"$ADMIN" --pg "$PG" --db-schema "$SCHEMA" --bootstrap "$KAFKA" --config-topic "$TAG.config" \
    --events-topic "$TAG.events" --events-group "$TAG-admin" --config-replication 1 \
    --http.port 0 --http.port-file "$T/admin.port" --db-wait 20s >>"$T/ndd-admin.log" 2>&1 &
ADMIN_PID=$!
for _ in $(seq 300); do [ -s "$T/admin.port" ] && break; sleep 0.1; done
[ -s "$T/admin.port" ] || fail "ndd-admin did not write its port file"
PORT=$(cat "$T/admin.port")

start_adapter() { # SLOT
    ADA_PORT[$1]=${ADA_PORT[$1]:-$("$STACK" free-ports 1)}
    "$BUILD/adapter/ndd-adapter" --bootstrap "$KAFKA" --config-topic "$TAG.config" \
        --events-topic "$TAG.events" --instance "$TAG-$1" --http.port "${ADA_PORT[$1]}" \
        --drain-timeout 2s --log.level info >>"$T/adapter-$1.log" 2>&1 &
    ADA_PID[$1]=$!
}
feed_up() { # SLOT: the feed's kafka endpoint reports up on that adapter
    curl -fsS --max-time 2 "http://127.0.0.1:${ADA_PORT[$1]}/metrics" 2>/dev/null |
        grep -E "^ndd_adapter_endpoint_up\{[^}]*feed=\"$FEED\"[^}]*\} 1$" >/dev/null
}
wait_feed_up() { # SLOT SECONDS
    local i
    for ((i = 0; i < $2 * 5; i++)); do
        feed_up "$1" && return 0
        kill -0 "${ADA_PID[$1]}" 2>/dev/null || fail "ndd-adapter $1 exited"
        sleep 0.2
    done
    fail "feed $FEED not up on ndd-adapter $1 within $2 s"
}

# the NF topic first (the feed's group then starts at its beginning: nothing is missed)
"$BUILD/bench/nfsim/ndd-nf-sim" --bootstrap "$KAFKA" --rate 100 --duration 1 --nf-mix SCP=1 \
    --size natural --copies 4 --topic-prefix "$TAG-" --partitions 3 --seq-start 0 --quiet \
    >"$T/nfsim0.json" 2>"$T/nfsim0.log" || fail "ndd-nf-sim (first second) failed"
start_adapter 1
body=$(jq -nc --arg name "$FEED" --arg src "$SRC" --arg url "kafka://$KAFKA/$TOPIC" \
    --arg p "$SCRAM_USER" --arg g "$TAG." '{name: $name, source_topic: $src, transport: "kafka",
      encoding: "frame", endpoints: [{url: $url}], delivery: {batch_max: 16},
      filter: {name: "requests-only", default: "allow", rules: [{name: "no-responses",
        action: "drop", match: {field: "@message-type", op: "equals", value: "response"}}]},
      kafka: {topic: {partitions: 3}, consumer: {principal: $p, group_prefix: $g}}}')
st=$(curl -sS --max-time 30 -o "$T/resp" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' --data-binary "$body" "http://127.0.0.1:$PORT/api/v1/feeds")
[ "$st" = 201 ] || fail "create feed: $st $(cat "$T/resp")"
wait_feed_up 1 60
grep -q "exactly once" "$T/adapter-1.log" || fail "the feed does not produce exactly once"
# the delivery mode in effect, from the adapter's heartbeats, in the admin's /status
for _ in $(seq 75); do
    curl -fsS --max-time 5 -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/api/v1/status" \
        >"$T/status.json" 2>/dev/null &&
        jq -e --arg f "$FEED" '.feeds[] | select(.name == $f) |
            .kafka_mode == "exactly-once" and .origin == "admin"' "$T/status.json" >/dev/null && break
    sleep 0.2
done
jq -e --arg f "$FEED" '.feeds[] | select(.name == $f) | .kafka_mode == "exactly-once"' \
    "$T/status.json" >/dev/null || fail "/status: no kafka_mode exactly-once for $FEED: $(jq -c .feeds "$T/status.json")"

# 10 s of copies while: kill -9 of adapter 1 at 2 s (restarted at once, same instance: its
# transactional.id fences the dead one's), adapter 2 joining at 5 s and leaving at 8 s
"$BUILD/bench/nfsim/ndd-nf-sim" --bootstrap "$KAFKA" --rate 200 --duration 10 --nf-mix SCP=1 \
    --size natural --copies 4 --topic-prefix "$TAG-" --partitions 3 --seq-start 1000000 --quiet \
    >"$T/nfsim.json" 2>"$T/nfsim.log" &
SIM_PID=$!
sleep 2
kill -KILL "${ADA_PID[1]}"
wait "${ADA_PID[1]}" 2>/dev/null
start_adapter 1
sleep 3
start_adapter 2
sleep 3
kill -TERM "${ADA_PID[2]}"
wait "${ADA_PID[2]}" 2>/dev/null || fail "ndd-adapter 2 did not stop cleanly"
unset 'ADA_PID[2]'
wait "$SIM_PID" || fail "ndd-nf-sim failed: $(tail -3 "$T/nfsim.log")"
SIM_PID=

# what the feed must carry: every request copy of the NF topic, by @seq
seqs() { # file of kcat '%h' lines -> sorted @seq of the request copies (all copies in the topic)
    awk -F, '{ s = ""; req = 0
               for (i = 1; i <= NF; i++) { if ($i ~ /^@seq=/) s = substr($i, 6)
                                           if ($i == "@message-type=request") req = 1 }
               if (s != "" && req) print s }' "$1" | sort
}
kcat -C -b "$KAFKA" -t "$SRC" -o beginning -e -q -f '%h\n' >"$T/src.h" 2>"$T/kcat-src.log" || fail "reading $SRC"
seqs "$T/src.h" >"$T/want"
WANT=$(wc -l <"$T/want")
((WANT > 1000)) || fail "only $WANT request copies in $SRC"
grep -q "@message-type=response" "$T/src.h" || fail "no response copies in $SRC: the filter is not tested"

read_feed() {
    timeout 60 kcat -q -F "$CLIENTS/scram.properties" -b "$SASL" -C -t "$TOPIC" -o beginning -e \
        -X isolation.level=read_committed -f '%h\n' >"$T/feed.h" 2>"$T/kcat-feed.log"
}
for _ in $(seq 60); do
    read_feed || fail "kcat as $SCRAM_USER on $TOPIC: $(head -c 400 "$T/kcat-feed.log")"
    [ "$(wc -l <"$T/feed.h")" -ge "$WANT" ] && break
    sleep 1
done
seqs "$T/feed.h" >"$T/got"
! grep -q "@message-type=response" "$T/feed.h" || fail "response copies in the feed topic"
DUPS=$(uniq -d "$T/got" | wc -l)
MISSING=$(comm -23 "$T/want" <(sort -u "$T/got") | wc -l)
EXTRA=$(comm -13 "$T/want" <(sort -u "$T/got") | wc -l)
echo "feed $FEED: want $WANT request copies; read_committed got $(wc -l <"$T/got"), missing $MISSING, duplicated $DUPS, unknown $EXTRA"
((MISSING == 0 && DUPS == 0 && EXTRA == 0)) || fail "not exactly once across kill -9 and 1 -> 2 -> 1"
# the group the principal may use: under its prefix, read_committed
timeout 30 kcat -q -F "$CLIENTS/scram.properties" -b "$SASL" -G "$TAG.g1" -X auto.offset.reset=earliest \
    -X isolation.level=read_committed -c 5 -f '%h\n' "$TOPIC" >"$T/group.h" 2>"$T/kcat-group.log" ||
    fail "kcat as $SCRAM_USER in group $TAG.g1: $(head -c 400 "$T/kcat-group.log")"
[ "$(wc -l <"$T/group.h")" = 5 ] || fail "group read: $(cat "$T/group.h")"
echo "PASS: a REST-created Kafka feed delivered each filtered copy once to its principal across kill -9 and 1 -> 2 -> 1"
