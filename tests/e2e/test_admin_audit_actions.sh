#!/usr/bin/env bash
# Every action of ndd-admin leaves an audit row, not only configuration writes: a token created
# and revoked over REST (who = the acting token's name) and with the `ndd-admin token` CLI
# (who = "cli:<user>"), and an alarm raised by a worker's event on the events topic and then
# acknowledged (kind "alarm", action "ack"). No audit row holds a secret: neither a token, its
# salt nor its hash. Needs NDD_BUILD_DIR, NDD_TEST_PG, NDD_TEST_KAFKA.
NAME=audit
. "$(dirname "${BASH_SOURCE[0]}")/admin_lib.sh"

token admin ops
start_admin admin --bootstrap "$KAFKA"
audit_json() { api ops GET "/api/v1/audit?kind=$1&limit=100"; }

# 1. REST: create and revoke a token
api ops POST /api/v1/tokens '{"name": "ci-bot", "role": "viewer"}' >"$T/ci.json"
[ "$(status)" = 201 ] || fail "token create: $(status) $(cat "$T/ci.json")"
CI_ID=$(jq -r .id "$T/ci.json")
CI_SECRET=$(jq -r .token "$T/ci.json")
api ops DELETE /api/v1/tokens/ci-bot >/dev/null
[ "$(status)" = 204 ] || fail "token revoke: $(status)"
audit_json token >"$T/a.json"
jq -e --arg id "$CI_ID" '[.items[] | select(.object_id == $id)] | map(.who + ":" + .action) == ["ops:revoke", "ops:create"]' \
    "$T/a.json" >/dev/null || fail "REST token audit: $(cat "$T/a.json")"
jq -e --arg id "$CI_ID" '.items[] | select(.object_id == $id and .action == "revoke") |
    .before.revoked_at == null and .after.revoked_at != null and .after.name == "ci-bot" and .after.role == "viewer"' \
    "$T/a.json" >/dev/null || fail "revoke's before/after: $(cat "$T/a.json")"

# 2. the CLI: create and revoke, audited as cli:<user>
"$ADMIN" token create --db-schema "$SCHEMA" --role viewer --name cli-made >"$T/cli.token" 2>>"$T/token.log" ||
    fail "token create (CLI)"
"$ADMIN" token revoke --db-schema "$SCHEMA" --name cli-made 2>>"$T/token.log" || fail "token revoke (CLI)"
ME=$(id -un)
audit_json token >"$T/a.json"
jq -e --arg who "cli:$ME" '[.items[] | select(.after.name == "cli-made")] | map(.who + ":" + .action) == [$who + ":revoke", $who + ":create"]' \
    "$T/a.json" >/dev/null || fail "CLI token audit: $(cat "$T/a.json")"

# 3. an alarm raised through the events topic, acknowledged over REST
echo '{"type": "alarm", "action": "raise", "alarm": "endpoint-down", "resource": "audit-feed/http://h:1/in", "severity": "major", "text": "connect refused"}' |
    kcat -b "$KAFKA" -P -t "$EVENTS_TOPIC" -k audit-test || fail "kcat produce to $EVENTS_TOPIC"
alarm_id() { api ops GET "/api/v1/alarms?type=endpoint-down" | jq -r '.items[0].id // empty'; }
has_alarm() { [ -n "$(alarm_id)" ]; }
wait_for 30 "the endpoint-down alarm" has_alarm
AID=$(alarm_id)
api ops POST "/api/v1/alarms/$AID/ack" >/dev/null
[ "$(status)" = 200 ] || fail "ack: $(status) $(cat "$T/resp")"
audit_json alarm >"$T/a.json"
jq -e --arg id "$AID" '[.items[] | select(.object_id == $id)] | length == 1 and
    (.[0] | .who == "ops" and .action == "ack" and .before.acked_by == null and .after.acked_by == "ops"
     and .after.type == "endpoint-down")' "$T/a.json" >/dev/null || fail "alarm audit: $(cat "$T/a.json")"
api ops POST /api/v1/alarms/999999/ack >/dev/null
[ "$(status)" = 404 ] || fail "ack of no alarm: $(status)"
[ "$(psql "$PG" -Atqc "SELECT count(*) FROM $SCHEMA.audit WHERE kind = 'alarm'")" = 1 ] ||
    fail "a refused ack left an audit row"

# 4. no secret in any audit row: no token, no salt, no hash
psql "$PG" -Atqc "SELECT coalesce(before::text, '') || coalesce(after::text, '') FROM $SCHEMA.audit" >"$T/all"
psql "$PG" -Atqc "SELECT salt || ' ' || hash FROM $SCHEMA.api_tokens" | tr ' ' '\n' >"$T/secrets"
printf '%s\n%s\n%s\n' "$CI_SECRET" "$(cat "$T/ops.token")" "$(cat "$T/cli.token")" >>"$T/secrets"
while read -r s; do
    [ -n "$s" ] && grep -qF "${s#ndd_*_}" "$T/all" && fail "an audit row holds a secret"
done <"$T/secrets"
grep -q '"salt"\|"hash"' "$T/all" && fail "an audit row names a salt or hash"
echo "PASS: token create/revoke (REST and CLI) and alarm acknowledgement are audited, without secrets"
