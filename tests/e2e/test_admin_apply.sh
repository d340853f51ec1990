#!/usr/bin/env bash
# ndd-admin apply, the CLI as an operator runs it, against a real ndd-admin on the test
# PostgreSQL and Kafka: a dry run writes nothing; an apply creates (filters published to
# ndd.config before the feeds that name them); a second apply changes nothing (versions, audit
# and ndd.config untouched); a directory of files merged; --dry-run --prune prints the diff
# with changed paths; --prune deletes what the files no longer name (feeds before the filters
# they use); a bad object is refused with its path and nothing is applied; a viewer is refused;
# HTTPS with --ca-file verifies the admin. Needs NDD_BUILD_DIR, NDD_TEST_PG, NDD_TEST_KAFKA.
NAME=apply
. "$(dirname "${BASH_SOURCE[0]}")/admin_lib.sh"

token admin ops
token viewer watcher
start_admin admin --bootstrap "$KAFKA"
export NDD_ADMIN_URL=$URL
apply() { "$ADMIN" apply --token-file "$T/ops.token" "$@"; }
config_keys() { kcat -b "$KAFKA" -C -t "$CONFIG_TOPIC" -e -q -f '%k\n' 2>/dev/null; }

cat >"$T/v1.json" <<'JSON'
{"filters": [{"name": "scp-only", "default": "drop", "rules": [{"name": "scp", "action": "allow",
   "match": {"field": "@nf-type", "op": "equals", "value": "SCP"}}]}],
 "feeds": [{"name": "demo", "transport": "http2", "encoding": "json", "filter": "scp-only",
            "delivery": {"timeout_ms": 5000},
            "endpoints": [{"url": "http://127.0.0.1:28999/ingest", "weight": 1}]},
           {"name": "demo2", "transport": "http2", "encoding": "json",
            "endpoints": [{"url": "http://127.0.0.1:28998/ingest"}]}],
 "sources": [{"name": "scp", "type": "SCP", "topic": "SCP"}]}
JSON

# 1. dry run on an empty database: the plan, nothing written
AUDIT=$(audit_count) # the two token creations
apply --dry-run "$T/v1.json" >"$T/out" || fail "dry run exited $?: $(cat "$T/out")"
grep -q '^create    feed demo$' "$T/out" || fail "dry run does not plan the feed: $(cat "$T/out")"
grep -q 'dry run (nothing written): 4 to create' "$T/out" || fail "dry run summary: $(cat "$T/out")"
[ "$(audit_count)" = "$AUDIT" ] && [ -z "$(versions)" ] || fail "the dry run wrote: $(versions)"

# 2. apply: everything created, audited with the token's name, published filter first
apply "$T/v1.json" >"$T/out" || fail "apply exited $?: $(cat "$T/out")"
grep -q 'applied: 4 created, 0 updated, 0 deleted, 0 unchanged' "$T/out" || fail "apply: $(cat "$T/out")"
[ "$(versions)" = "feed/demo:1 feed/demo2:1 filter/scp-only:1 source/scp:1" ] || fail "stored: $(versions)"
[ "$(psql "$PG" -Atqc "SELECT count(*) FROM $SCHEMA.audit WHERE who = 'ops' AND action = 'create'")" = 4 ] ||
    fail "audit rows: $(psql "$PG" -Atqc "SELECT who, action, kind FROM $SCHEMA.audit")"
FILTER_ID=$(psql "$PG" -Atqc "SELECT id FROM $SCHEMA.objects WHERE name = 'scp-only'")
DEMO_ID=$(psql "$PG" -Atqc "SELECT id FROM $SCHEMA.objects WHERE name = 'demo'")
DEMO2_ID=$(psql "$PG" -Atqc "SELECT id FROM $SCHEMA.objects WHERE name = 'demo2'")
has_keys() { [ "$(config_keys | grep -c .)" -ge "$1" ]; }
wait_for 20 "4 records on $CONFIG_TOPIC" has_keys 4
config_keys >"$T/keys"
fpos=$(grep -n "^filter/$FILTER_ID$" "$T/keys" | head -1 | cut -d: -f1)
dpos=$(grep -n "^feed/$DEMO_ID$" "$T/keys" | head -1 | cut -d: -f1)
[ -n "$fpos" ] && [ -n "$dpos" ] && [ "$fpos" -lt "$dpos" ] ||
    fail "ndd.config order: the filter must come before the feed using it: $(cat "$T/keys")"
RECORDS=$(wc -l <"$T/keys")

# 3. the same file again: all unchanged; versions, audit and ndd.config untouched
AUDIT=$(audit_count)
apply "$T/v1.json" >"$T/out" || fail "second apply exited $?"
grep -q 'applied: 0 created, 0 updated, 0 deleted, 4 unchanged' "$T/out" || fail "second apply: $(cat "$T/out")"
[ "$(audit_count)" = "$AUDIT" ] || fail "a no-op apply wrote audit rows"
[ "$(versions)" = "feed/demo:1 feed/demo2:1 filter/scp-only:1 source/scp:1" ] || fail "a no-op moved versions: $(versions)"
# (ndd.config is checked after the next apply: its records follow any the no-op produced)

# 4. a directory of two files, merged: demo's timeout changes, demo2 is gone from it
mkdir "$T/v2"
jq '{filters: .filters, sources: .sources}' "$T/v1.json" >"$T/v2/10-shared.json"
jq '{feeds: [.feeds[0] | .delivery.timeout_ms = 2000]}' "$T/v1.json" >"$T/v2/20-feeds.json"
apply --dry-run --prune "$T/v2" >"$T/out" || fail "dry run --prune exited $?: $(cat "$T/out")"
grep -q '^update    feed demo$' "$T/out" && grep -q '^    delivery.timeout_ms: 5000 -> 2000$' "$T/out" &&
    grep -q '^delete    feed demo2$' "$T/out" && grep -q '^unchanged filter scp-only$' "$T/out" ||
    fail "dry run --prune diff: $(cat "$T/out")"
apply --dry-run --prune --json "$T/v2" >"$T/out.json" || fail "dry run --json exited $?"
jq -e '.dry_run == true and (.changes[] | select(.name == "demo") | .diff == [{"path": "delivery.timeout_ms", "before": 5000, "after": 2000}])' \
    "$T/out.json" >/dev/null || fail "the JSON diff: $(cat "$T/out.json")"
[ "$(audit_count)" = "$AUDIT" ] && [ "$(versions)" = "feed/demo:1 feed/demo2:1 filter/scp-only:1 source/scp:1" ] ||
    fail "the dry run wrote: $(versions)"

# 5. --prune: demo replaced (version 2), demo2 deleted, each audited
apply --prune "$T/v2" >"$T/out" || fail "apply --prune exited $?: $(cat "$T/out")"
grep -q 'applied: 0 created, 1 updated, 1 deleted, 2 unchanged' "$T/out" || fail "apply --prune: $(cat "$T/out")"
[ "$(versions)" = "feed/demo:2 filter/scp-only:1 source/scp:1" ] || fail "after prune: $(versions)"
[ "$(psql "$PG" -Atqc "SELECT string_agg(action || ':' || kind, ' ' ORDER BY id) FROM $SCHEMA.audit WHERE id > (SELECT max(id) - 2 FROM $SCHEMA.audit)")" = "replace:feed delete:feed" ] ||
    fail "audit of the prune: $(psql "$PG" -Atqc "SELECT action, kind FROM $SCHEMA.audit ORDER BY id")"
api ops GET "/api/v1/feeds/$DEMO_ID" | jq -e '.delivery.timeout_ms == 2000' >/dev/null || fail "demo not updated"
# ndd.config: one producer, one partition, in order: after the no-op nothing, then exactly
# demo's new version and demo2's tombstone
wait_for 20 "the prune's records on $CONFIG_TOPIC" has_keys $((RECORDS + 2))
config_keys >"$T/keys"
[ "$(wc -l <"$T/keys")" = $((RECORDS + 2)) ] && [ "$(sed -n "$((RECORDS + 1))p" "$T/keys")" = "feed/$DEMO_ID" ] &&
    [ "$(sed -n "$((RECORDS + 2))p" "$T/keys")" = "feed/$DEMO2_ID" ] ||
    fail "ndd.config after the no-op and the prune (first $RECORDS before): $(cat "$T/keys")"

# 6. a bad object: refused with its path, nothing applied
AUDIT=$(audit_count)
jq '.feeds += [{"name": "new-one", "transport": "http2", "encoding": "json",
                "endpoints": [{"url": "http://127.0.0.1:99999/x"}]}]' "$T/v2/20-feeds.json" >"$T/bad.json"
jq -s '.[0] * .[1]' "$T/v2/10-shared.json" "$T/bad.json" >"$T/bad-all.json"
apply "$T/bad-all.json" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 1 ] || fail "a bad object: exit $rc, not 1"
grep -q 'refused (422 .*) at feeds\[1\]\.endpoints\[0\]\.url' "$T/err" || fail "refusal: $(cat "$T/err")"
[ "$(audit_count)" = "$AUDIT" ] && [ "$(versions)" = "feed/demo:2 filter/scp-only:1 source/scp:1" ] ||
    fail "a refused apply wrote: $(versions)"
jq '.feeds[0].filter = "no-such-filter"' "$T/v2/20-feeds.json" >"$T/badref.json"
apply "$T/badref.json" 2>"$T/err" >/dev/null && fail "a missing filter was accepted"
grep -q 'at feeds\[0\]\.filter' "$T/err" || fail "missing filter refusal: $(cat "$T/err")"
[ "$(versions)" = "feed/demo:2 filter/scp-only:1 source/scp:1" ] || fail "a refused apply wrote: $(versions)"

# 7. a viewer may not apply; no token is a usage error
"$ADMIN" apply --token-file "$T/watcher.token" "$T/v1.json" 2>"$T/err" >/dev/null
[ $? = 1 ] && grep -q '403' "$T/err" || fail "viewer apply: $(cat "$T/err")"
(unset NDD_ADMIN_TOKEN; "$ADMIN" apply "$T/v1.json" 2>/dev/null)
[ $? = 2 ] || fail "apply without a token must exit 2"

# 8. prune of every feed and filter: the feed goes before the filter it uses (else a 409)
echo '{"feeds": [], "filters": []}' >"$T/empty.json"
apply --prune "$T/empty.json" >"$T/out" 2>&1 || fail "pruning everything: $(cat "$T/out")"
[ "$(versions)" = "source/scp:1" ] || fail "after pruning feeds and filters: $(versions)"
# ndd.config: demo's tombstone before the tombstone of the filter it used
wait_for 20 "the prune's tombstones on $CONFIG_TOPIC" has_keys $((RECORDS + 4))
config_keys | tail -2 | tr '\n' ' ' >"$T/last"
[ "$(cat "$T/last")" = "feed/$DEMO_ID filter/$FILTER_ID " ] ||
    fail "tombstone order on $CONFIG_TOPIC (feed, then filter): $(config_keys | tail -4)"

# 9. HTTPS: the admin's certificate verified with --ca-file; refused without it
(
    cd "$T"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=ndd-test-ca
    openssl req -newkey rsa:2048 -nodes -keyout s.key -out s.csr -subj /CN=127.0.0.1
    printf 'subjectAltName=IP:127.0.0.1\n' >ext
    openssl x509 -req -in s.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out s.pem -days 2 -extfile ext
) >/dev/null 2>&1 || fail "openssl certificates"
start_admin tls --tls-cert "$T/s.pem" --tls-key "$T/s.key"
NDD_ADMIN_TOKEN=$(cat "$T/ops.token") "$ADMIN" apply --url "https://127.0.0.1:$PORT" \
    --ca-file "$T/ca.pem" --dry-run "$T/v1.json" >"$T/out" 2>&1 || fail "HTTPS apply: $(cat "$T/out")"
grep -q '^create    feed demo$' "$T/out" || fail "HTTPS dry run: $(cat "$T/out")"
NDD_ADMIN_TOKEN=$(cat "$T/ops.token") "$ADMIN" apply --url "https://127.0.0.1:$PORT" \
    --dry-run "$T/v1.json" >"$T/out" 2>&1 && fail "HTTPS without the CA was accepted"
grep -q 'certificate verify failed' "$T/out" || fail "HTTPS refusal: $(cat "$T/out")"
grep -rq "$(cut -c1-40 "$T/ops.token")" "$T"/*.log "$T/out" && fail "the token appears in a log or output"

# 10. --wait: an apply started before its admin retries until the admin serves
WPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
NDD_ADMIN_TOKEN=$(cat "$T/ops.token") "$ADMIN" apply --url "http://127.0.0.1:$WPORT" --wait 30 \
    --dry-run "$T/v1.json" >"$T/wait.out" 2>&1 &
WAITER=$!
start_admin late --http.port "$WPORT"
wait $WAITER || fail "apply --wait: $(cat "$T/wait.out")"
grep -q '^create    feed demo$' "$T/wait.out" || fail "apply --wait output: $(cat "$T/wait.out")"
echo "PASS: ndd-admin apply: dry run, create, no-op, directory, diff, prune, refusal, roles, HTTPS, --wait"
