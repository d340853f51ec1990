#!/usr/bin/env bash
# A Kafka feed created through ndd-admin's REST API gets its topic and the
# ACLs of its consumer principal, and nothing else (docs/kafka-feed.md, "Credentials and
# ACLs"). kcat, authenticated over the stack's secure listeners as the feed's principal (a
# SCRAM user over SASL_SSL, and a TLS client-certificate subject over SSL), reads its own feed
# topic with a group under its prefix, and is refused (authorization failed) on the other
# feed's topic, on MAIN, on an NF topic and with a group outside its prefix. Kafka's own
# AclCommand (an independent reader of DescribeAcls) lists exactly the feed's three ACLs.
# A Kafka refusal is a 422 naming the field and leaves no feed; ACLs removed behind the
# admin's back come back at its next start (reconcile); deleting the feed removes its ACLs.
# Needs NDD_BUILD_DIR, NDD_TEST_PG, NDD_TEST_KAFKA, NDD_TEST_KAFKA_SASL, NDD_TEST_KAFKA_SSL and
# NDD_TEST_KAFKA_CLIENTS (tests/run.sh passes them from the stack's env file).
set -uo pipefail

BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
PG=${NDD_TEST_PG:?NDD_TEST_PG is not set (deploy/local/stack.sh start)}
KAFKA=${NDD_TEST_KAFKA:?NDD_TEST_KAFKA is not set (deploy/local/stack.sh start)}
SASL=${NDD_TEST_KAFKA_SASL:?NDD_TEST_KAFKA_SASL is not set (NDD_KAFKA_SASL of the stack env file)}
SSL=${NDD_TEST_KAFKA_SSL:?NDD_TEST_KAFKA_SSL is not set (NDD_KAFKA_SSL of the stack env file)}
CLIENTS=${NDD_TEST_KAFKA_CLIENTS:?NDD_TEST_KAFKA_CLIENTS is not set (NDD_KAFKA_CLIENTS of the stack env file)}
KAFKA_LIBS=${NDD_KAFKA_LIBS:-${NDD_CACHE:-$HOME/.cache/ndd}/kafka-3.9.1/libs}
SCRAM_USER=User:ndd-test-scram
SSL_USER=User:CN=ndd-test-ssl
T=$(mktemp -d /tmp/ndd-kafka-acl-e2e.XXXXXX)
TAG=kacl$$r$RANDOM
SCHEMA=ndd_e2e_$TAG
TOPIC_A=ndd.feed.$TAG.a
TOPIC_B=ndd.feed.$TAG.b
PID=
fail() {
    echo "FAIL: $*" >&2
    [ -f "$T/ndd-admin.log" ] && { echo "--- ndd-admin log (last 20 lines)"; tail -20 "$T/ndd-admin.log"; }
    exit 1
}
stop_admin() { # a clean stop is exit status 0 (under ASan: no leak either)
    local rc=0
    [ -n "$PID" ] && { kill -TERM "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || rc=$?; }
    PID=
    return $rc
}
cleanup() {
    stop_admin || true
    psql "$PG" -qc "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1
    rm -rf "$T"
}
trap cleanup EXIT
for f in scram ssl; do
    [ -s "$CLIENTS/$f.properties" ] || fail "$CLIENTS/$f.properties missing (a stack formatted by an older stack.sh: destroy it)"
done

ADMIN=$BUILD/admin/ndd-admin
(umask 077 && "$ADMIN" token create --pg "$PG" --db-schema "$SCHEMA" --role admin --name acl-ops >"$T/token" 2>>"$T/ndd-admin.log") ||
    fail "token create failed"
TOKEN=$(cat "$T/token")
start_admin() {
    rm -f "$T/admin.port"
    "$ADMIN" --pg "$PG" --db-schema "$SCHEMA" --bootstrap "$KAFKA" --config-topic "$TAG.config" \
        --events-topic "$TAG.events" --events-group "$TAG-admin" --http.port 0 \
        --http.port-file "$T/admin.port" --db-wait 20s --kafka-status-interval 500ms \
        >>"$T/ndd-admin.log" 2>&1 &
    PID=$!
    for _ in $(seq 300); do [ -s "$T/admin.port" ] && break; sleep 0.1; done
    [ -s "$T/admin.port" ] || fail "ndd-admin did not write its port file"
    PORT=$(cat "$T/admin.port")
}
# api METHOD PATH [BODY]: prints the status; the body goes to $T/resp.
api() {
    curl -sS --max-time 30 -o "$T/resp" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $TOKEN" \
        -H 'Content-Type: application/json' ${3:+--data-binary "$3"} "http://127.0.0.1:$PORT/api/v1$2"
}
feed() { # feed NAME TOPIC KAFKA-OBJECT
    printf '{"name":"%s","source_topic":"MAIN","transport":"kafka","encoding":"frame","endpoints":[{"url":"kafka://%s/%s"}],"kafka":%s}' \
        "$1" "$KAFKA" "$2" "$3"
}
# consume AS BROKER ARGS...: kcat as a principal (client file), bounded; output in $T/out.
consume() {
    local as=$1 broker=$2
    shift 2
    timeout 20 kcat -q -F "$CLIENTS/$as.properties" -b "$broker" -m 10 "$@" >"$T/out" 2>&1
}
refused() { # refused WHAT: the last consume printed an authorization failure and no record
    grep -qi 'authorization failed' "$T/out" || fail "$1: not refused as unauthorized: $(head -c 400 "$T/out")"
    ! grep -q "^rec-" "$T/out" || fail "$1: records were read: $(head -c 400 "$T/out")"
}
# The ACLs Kafka holds for a principal on this run's resources (names with $TAG), as its own
# AclCommand lists them (DescribeAcls): one line per ACL, "<resource pattern> <operation>".
acls_of() {
    java -Xmx128m -cp "$KAFKA_LIBS/*" -Dlog4j.configuration=file:/dev/null kafka.admin.AclCommand \
        --bootstrap-server "$KAFKA" --list --principal "$1" 2>"$T/aclcmd.err" |
        awk '/ResourcePattern/ { r = $0; sub(/.*ResourcePattern\(/, "", r); sub(/\).*/, "", r) }
             /principal=/ { o = $0; sub(/.*operation=/, "", o); sub(/,.*/, "", o); print r " " o }' |
        grep -F "$TAG" | sort
}

start_admin

# 1. A Kafka refusal is the request's fault: 422 naming the field, and no feed is left.
st=$(api POST /feeds "$(feed "$TAG-bad" "ndd.feed.$TAG.bad" '{"topic":{"replication_factor":3},"consumer":{"principal":"User:nobody"}}')")
[ "$st" = 422 ] || fail "replication factor 3 on a one-broker cluster: got $st $(cat "$T/resp")"
grep -q '"field": *"kafka.topic.replication_factor"' "$T/resp" || fail "422 does not name the field: $(cat "$T/resp")"
[ "$(api GET "/feeds?name=$TAG-bad")" = 200 ] || fail "list feeds"
! grep -q "\"$TAG-bad\"" "$T/resp" || fail "the refused feed exists: $(cat "$T/resp")"

# 2. Two feeds: A for the SCRAM user (own group prefix), B for the certificate subject (the
#    default prefix "<feed name>-").
st=$(api POST /feeds "$(feed "$TAG-a" "$TOPIC_A" "{\"topic\":{\"partitions\":2,\"retention_ms\":3600000},\"consumer\":{\"principal\":\"$SCRAM_USER\",\"group_prefix\":\"$TAG-a.\"}}")")
[ "$st" = 201 ] || fail "create feed A: $st $(cat "$T/resp")"
ID_A=$(sed -nE 's/.*"id": *"([^"]+)".*/\1/p' "$T/resp" | head -1)
st=$(api POST /feeds "$(feed "$TAG-b" "$TOPIC_B" "{\"consumer\":{\"principal\":\"$SSL_USER\"}}")")
[ "$st" = 201 ] || fail "create feed B: $st $(cat "$T/resp")"
ID_B=$(sed -nE 's/.*"id": *"([^"]+)".*/\1/p' "$T/resp" | head -1)
[ -n "$ID_A" ] && [ -n "$ID_B" ] || fail "no ids in the create responses"

# The topics exist with the requested partitions (plaintext: the stack's super user).
kcat -L -b "$KAFKA" -t "$TOPIC_A" -m 10 | grep -q "topic \"$TOPIC_A\" with 2 partitions" || fail "topic $TOPIC_A with 2 partitions"
kcat -L -b "$KAFKA" -t "$TOPIC_B" -m 10 | grep -q "topic \"$TOPIC_B\" with 3 partitions" || fail "topic $TOPIC_B with the default 3 partitions"
for t in "$TOPIC_A" "$TOPIC_B"; do
    for i in 1 2 3; do echo "rec-$t-$i"; done | kcat -P -b "$KAFKA" -t "$t" -k k -m 10 || fail "produce to $t"
done

# 3. Exactly the three ACLs of feed A (Kafka's own listing).
acls_of "$SCRAM_USER" >"$T/acls"
printf '%s\n' "resourceType=GROUP, name=$TAG-a., patternType=PREFIXED READ" \
    "resourceType=TOPIC, name=$TOPIC_A, patternType=LITERAL DESCRIBE" \
    "resourceType=TOPIC, name=$TOPIC_A, patternType=LITERAL READ" | sort >"$T/acls.want"
diff "$T/acls.want" "$T/acls" >/dev/null ||
    fail "ACLs of $SCRAM_USER (want, got): $(cat "$T/acls.want") / $(cat "$T/acls") $(head -c 300 "$T/aclcmd.err")"

# 4. SCRAM user over SASL_SSL: its topic with a group under its prefix, nothing else.
consume scram "$SASL" -G "$TAG-a.g1" -X auto.offset.reset=earliest -c 3 -f '%s\n' "$TOPIC_A" ||
    fail "SCRAM user reading $TOPIC_A as group $TAG-a.g1: $(head -c 400 "$T/out")"
[ "$(grep -c "^rec-$TOPIC_A-" "$T/out")" = 3 ] || fail "SCRAM user read: $(cat "$T/out")"
consume scram "$SASL" -C -t "$TOPIC_B" -o beginning -e -f '%s\n'
refused "SCRAM user on feed B's topic"
consume scram "$SASL" -C -t MAIN -o beginning -e -f '%s\n'
refused "SCRAM user on MAIN"
consume scram "$SASL" -C -t SCP -o beginning -e -f '%s\n'
refused "SCRAM user on the NF topic SCP"
consume scram "$SASL" -G "$TAG-other" -X auto.offset.reset=earliest -c 1 -f '%s\n' "$TOPIC_A"
refused "SCRAM user with group $TAG-other (outside its prefix)"

# 4b. Console status: the group committed 3 of 5 records: lag 2, with the principal and a
#     produce rate, in /status and in /metrics (sampled every 500 ms here).
for i in 4 5; do echo "rec-$TOPIC_A-$i"; done | kcat -P -b "$KAFKA" -t "$TOPIC_A" -k k -m 10 || fail "produce to $TOPIC_A"
ok=
for _ in $(seq 50); do
    [ "$(api GET /status)" = 200 ] || fail "GET /status: $(cat "$T/resp")"
    if python3 -c '
import json, sys
st = json.load(open(sys.argv[1]))
f = [x for x in st.get("kafka_feeds", []) if x["name"] == sys.argv[2]]
sys.exit(0 if f and f[0].get("consumer_lag") == 2 and f[0].get("end_offset") == 5
         and f[0]["principal"] == sys.argv[3] and f[0]["group_prefix"] == sys.argv[4]
         and f[0]["state"] == "ok" and "produce_rate_per_s" in f[0] else 1)' \
        "$T/resp" "$TAG-a" "$SCRAM_USER" "$TAG-a."; then ok=1; break; fi
    sleep 0.2
done
[ -n "$ok" ] || fail "/status kafka_feeds for $TAG-a: $(cat "$T/resp")"
curl -sS --max-time 5 "http://127.0.0.1:$PORT/metrics" >"$T/metrics" || fail "GET /metrics"
grep -q "^ndd_admin_kafka_feed_consumer_lag{feed=\"$TAG-a\"} 2\$" "$T/metrics" ||
    fail "lag metric: $(grep kafka_feed "$T/metrics" | head -5)"
grep -q "^ndd_admin_kafka_feed_records_per_second{feed=\"$TAG-a\"}" "$T/metrics" ||
    fail "rate metric: $(grep kafka_feed "$T/metrics" | head -5)"

# 5. Certificate subject over SSL: its topic (default group prefix), not feed A's.
consume ssl "$SSL" -G "$TAG-b-g1" -X auto.offset.reset=earliest -c 3 -f '%s\n' "$TOPIC_B" ||
    fail "certificate subject reading $TOPIC_B: $(head -c 400 "$T/out")"
[ "$(grep -c "^rec-$TOPIC_B-" "$T/out")" = 3 ] || fail "certificate subject read: $(cat "$T/out")"
consume ssl "$SSL" -C -t "$TOPIC_A" -o beginning -e -f '%s\n'
refused "certificate subject on feed A's topic"

# 6. ACLs removed behind the admin's back come back at its next start (the reconcile that
#    also repairs a crash between a commit and its grant).
stop_admin || fail "ndd-admin did not stop cleanly"
java -Xmx128m -cp "$KAFKA_LIBS/*" -Dlog4j.configuration=file:/dev/null kafka.admin.AclCommand \
    --bootstrap-server "$KAFKA" --remove --force --allow-principal "$SCRAM_USER" --topic "$TOPIC_A" \
    --operation Read >/dev/null 2>&1 || fail "AclCommand --remove"
consume scram "$SASL" -C -t "$TOPIC_A" -o beginning -e -f '%s\n'
refused "SCRAM user on $TOPIC_A once its READ ACL is gone"
start_admin # the reconcile runs before the API listens (its port file)
consume scram "$SASL" -C -t "$TOPIC_A" -o beginning -e -f '%s\n' ||
    fail "SCRAM user after the admin's restart: $(head -c 400 "$T/out")"
[ "$(grep -c "^rec-$TOPIC_A-" "$T/out")" = 5 ] || fail "after the restart: $(cat "$T/out")"

# 7. Deleting feed A removes its ACLs (not feed B's); its topic is kept (docs say why).
[ "$(api DELETE "/feeds/$ID_A")" = 204 ] || fail "delete feed A: $(cat "$T/resp")"
consume scram "$SASL" -C -t "$TOPIC_A" -o beginning -e -f '%s\n'
refused "SCRAM user on $TOPIC_A after the feed was deleted"
[ -z "$(acls_of "$SCRAM_USER")" ] || fail "ACLs left for $SCRAM_USER: $(acls_of "$SCRAM_USER")"
consume ssl "$SSL" -C -t "$TOPIC_B" -o beginning -e -f '%s\n' ||
    fail "feed B's consumer after feed A was deleted: $(head -c 400 "$T/out")"
kcat -L -b "$KAFKA" -t "$TOPIC_A" -m 10 | grep -q "topic \"$TOPIC_A\" with 2 partitions" || fail "topic $TOPIC_A was deleted"
[ "$(api DELETE "/feeds/$ID_B")" = 204 ] || fail "delete feed B: $(cat "$T/resp")"
[ -z "$(acls_of "$SSL_USER")" ] || fail "ACLs left for $SSL_USER"
stop_admin || fail "ndd-admin did not stop cleanly"
echo "PASS: feed topics and ACLs follow the REST API; principals read only their own feed"
