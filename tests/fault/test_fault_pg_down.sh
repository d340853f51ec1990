#!/usr/bin/env bash
# PostgreSQL stopped under ndd-admin (its own stack): a write answers 503 "database
# unavailable" at once, reads are still served, and once PostgreSQL is back a write succeeds
# again; the data path, which reads ndd.config and not the database, goes on meanwhile:
# produced = delivered + dead-lettered.
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
FAULT_TIMEOUT=420
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
BIN_ADMIN=$BUILD/admin/ndd-admin
[[ -x $BIN_ADMIN ]] || fail "$BIN_ADMIN is not built"
fault_init pgdown
fault_own_stack
APORT=$(free_port)
NDD_PG=$OWN_PG "$BIN_ADMIN" token create --role admin --name fault >"$W/admin.token" 2>"$W/token.log" ||
    fail "token create: $(cat "$W/token.log")"
NDD_PG=$OWN_PG "$BIN_ADMIN" --bootstrap "$B" --http.port "$APORT" >"$W/admin.log" 2>&1 &
FAULT_PIDS+=("$!")
wait_http "http://127.0.0.1:$APORT/healthz" 30 || fail "ndd-admin did not start (log $W/admin.log)"
api() { # method path [body] -> "status body"
    curl -s --max-time 10 -o "$W/resp" -w '%{http_code}' -X "$1" \
        -H "Authorization: Bearer $(cat "$W/admin.token")" -H 'Content-Type: application/json' \
        ${3:+-d "$3"} "http://127.0.0.1:$APORT$2"
}
filter() { echo "{\"name\":\"$1\",\"default\":\"allow\",\"rules\":[]}"; }
[[ $(api POST /api/v1/filters "$(filter before)") == 201 ]] || fail "write before the outage: $(cat "$W/resp")"
[[ $(api GET /api/v1/filters) == 200 ]] || fail "read before the outage"

start_sink s1
write_feeds s1
start_agg 0
start_adapter 0
produce 300 10
sleep 2
"$STACK" stop "${OWN_ARGS[@]}" --no-kafka >>"$W/stack.out" 2>>"$W/stack.err" || fail "stopping PostgreSQL failed"
say "PostgreSQL stopped"
code=$(api POST /api/v1/filters "$(filter during)")
[[ $code == 503 ]] || fail "write during the outage answered $code, want 503: $(cat "$W/resp")"
jq -e '.error == "database unavailable"' "$W/resp" >/dev/null || fail "503 body: $(cat "$W/resp")"
code=$(api GET /api/v1/filters)
[[ $code == 200 || $code == 503 ]] || fail "read during the outage answered $code: $(cat "$W/resp")"
say "during the outage: write 503 database unavailable, read $code"
sleep 5
"$STACK" start "${OWN_ARGS[@]}" --no-kafka >>"$W/stack.out" 2>>"$W/stack.err" ||
    fail "PostgreSQL did not start again: $(tail -3 "$W/stack.err")"
say "PostgreSQL started again"
t0=$SECONDS
until [[ $(api POST /api/v1/filters "$(filter after)") == 201 ]]; do
    ((SECONDS - t0 < 30)) || fail "no successful write 30 s after PostgreSQL came back: $(cat "$W/resp")"
    sleep 1
done
say "write succeeded $((SECONDS - t0)) s after PostgreSQL came back"
produce_wait
settle_and_account 60
echo "PASS: PostgreSQL down under the admin: 503, recovered, data path lost nothing"
