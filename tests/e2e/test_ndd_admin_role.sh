#!/usr/bin/env bash
# ndd with the admin role (and the gui-api role when the console is built): the REST API
# answers on the admin's own listener inside ndd, a token made by `ndd-admin token create` in
# the same PostgreSQL schema is honoured (GET /api/v1/feeds 200 with it, 401 without), ndd's
# own /readyz has a line per role, the console logs in with that token and forwards
# /api/v1 to the admin role, and SIGTERM stops ndd with exit 0 within 10 s.
# 127.0.0.1 only, ports from deploy/local/stack.sh free-ports, a schema and topics of its own;
# every process started is stopped by PID at exit, every wait is bounded.
# Needs NDD_BUILD_DIR, NDD_TEST_PG, NDD_TEST_KAFKA (ndd's own readiness waits for a broker).
set -uo pipefail

BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PG=${NDD_TEST_PG:?NDD_TEST_PG is not set (deploy/local/stack.sh start)}
KAFKA=${NDD_TEST_KAFKA:?NDD_TEST_KAFKA is not set (deploy/local/stack.sh start)}
PG=${PG//\'/} KAFKA=${KAFKA//\'/}
NDD=$BUILD/ndd/ndd
ADMIN=$BUILD/admin/ndd-admin
CONSOLE=$BUILD/gui-api/console
for b in "$NDD" "$ADMIN"; do [ -x "$b" ] || { echo "FAIL: $b is not built"; exit 1; }; done
T=$(mktemp -d /tmp/ndd-admin-role-e2e.XXXXXX)
TAG=nddadm$$r$RANDOM
SCHEMA=ndd_e2e_$TAG
PID=
fail() {
    echo "FAIL: $*" >&2
    [ -f "$T/ndd.log" ] && { echo "--- ndd log (last 20 lines)"; tail -20 "$T/ndd.log"; }
    exit 1
}
cleanup() {
    if [ -n "$PID" ]; then
        kill -TERM "$PID" 2>/dev/null
        for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$PID" 2>/dev/null
        wait "$PID" 2>/dev/null
    fi
    psql "$PG" -qc "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1
    rm -rf "$T"
}
trap cleanup EXIT
status() { # URL [curl args...] -> the HTTP status (000 when nothing answered)
    local url=$1
    shift
    curl -s --max-time 5 -o "$T/body" -w '%{http_code}' "$@" "$url"
}
wait_status() { # URL WANT SECONDS [curl args...]
    local url=$1 want=$2 secs=$3 i
    shift 3
    for ((i = 0; i < secs * 5; i++)); do
        [ "$(status "$url" "$@")" = "$want" ] && return 0
        kill -0 "$PID" 2>/dev/null || fail "ndd exited"
        sleep 0.2
    done
    return 1
}

mapfile -t ports < <("$SRC/deploy/local/stack.sh" free-ports 3)
NDD_PORT=${ports[0]} ADMIN_PORT=${ports[1]} GUI_PORT=${ports[2]}
(umask 077 && "$ADMIN" token create --pg "$PG" --db-schema "$SCHEMA" --role admin --name e2e-ops \
    >"$T/token" 2>"$T/token.log") || fail "token create failed: $(cat "$T/token.log")"
TOKEN=$(cat "$T/token")

GUI=1
# The console is part of what this test proves: built here when the build has none (npm).
[ -f "$CONSOLE/index.html" ] || "$SRC/gui-api/web/build.sh" "$CONSOLE" >"$T/console-build.log" 2>&1 ||
    fail "no built console in $CONSOLE and gui-api/web/build.sh failed: $(tail -3 "$T/console-build.log")"
jq -n --arg b "$KAFKA" --arg pg "$PG" --arg schema "$SCHEMA" --arg tag "$TAG" \
    --argjson np "$NDD_PORT" --argjson ap "$ADMIN_PORT" --argjson gp "$GUI_PORT" \
    --arg web "$CONSOLE" --argjson gui "$GUI" '{
      bootstrap: $b, http: {listen: "127.0.0.1", port: $np}, log: {level: "info"},
      roles: ({admin: {pg: $pg, "db-schema": $schema, "db-wait": "20s",
                       "config-topic": ($tag + ".config"), "events-topic": ($tag + ".events"),
                       "events-group": ($tag + "-admin"), "config-replication": 1,
                       http: {listen: "127.0.0.1", port: $ap}}}
               + (if $gui == 1 then {"gui-api": {"web-root": $web,
                       "admin-url": ("http://127.0.0.1:" + ($ap | tostring)),
                       http: {listen: "127.0.0.1", port: $gp}}} else {} end))}' \
    >"$T/ndd.json" || fail "ndd.json is not JSON"
"$NDD" --config "$T/ndd.json" --check-config >"$T/check.out" 2>&1 ||
    fail "ndd --check-config refused the file: $(tail -3 "$T/check.out")"
grep -q "REST API on 127.0.0.1:$ADMIN_PORT" "$T/check.out" ||
    fail "--check-config does not show the admin on its own port: $(cat "$T/check.out")"

"$NDD" --config "$T/ndd.json" >"$T/ndd.log" 2>&1 &
PID=$!
wait_status "http://127.0.0.1:$NDD_PORT/readyz" 200 60 ||
    fail "ndd not ready in 60 s: $(curl -s --max-time 2 "http://127.0.0.1:$NDD_PORT/readyz")"
ready=$(curl -s --max-time 5 "http://127.0.0.1:$NDD_PORT/readyz")
grep -qx "admin: ready" <<<"$ready" || fail "ndd's /readyz has no ready line for the admin: $ready"
((GUI == 0)) || grep -qx "gui-api: ready" <<<"$ready" ||
    fail "ndd's /readyz has no ready line for the gui-api: $ready"

FEEDS=http://127.0.0.1:$ADMIN_PORT/api/v1/feeds
st=$(status "$FEEDS" -H "Authorization: Bearer $TOKEN")
[ "$st" = 200 ] || fail "GET /api/v1/feeds with the token: $st $(cat "$T/body")"
st=$(status "$FEEDS")
[ "$st" = 401 ] || fail "GET /api/v1/feeds without a token: $st (want 401) $(cat "$T/body")"
st=$(status "$FEEDS" -H "Authorization: Bearer ${TOKEN}x")
[ "$st" = 401 ] || fail "GET /api/v1/feeds with a wrong token: $st (want 401)"
# One registry: ndd's /metrics carries the admin role's figures beside ndd's own.
curl -s --max-time 5 "http://127.0.0.1:$NDD_PORT/metrics" >"$T/metrics"
grep -q '^ndd_admin_database_up 1' "$T/metrics" || fail "ndd's /metrics lacks ndd_admin_database_up 1"
grep -q '^ndd_director_role_up{role="admin"} 1' "$T/metrics" ||
    fail "ndd's /metrics does not show the admin role up"

if ((GUI == 1)); then
    G=http://127.0.0.1:$GUI_PORT
    st=$(status "$G/")
    [ "$st" = 200 ] || fail "the console's / answered $st"
    st=$(status "$G/console/login" -c "$T/cookies" -H 'Content-Type: application/json' \
        --data-binary "{\"token\": \"$TOKEN\"}")
    [ "$st" = 200 ] || fail "console login with the token: $st $(cat "$T/body")"
    st=$(status "$G/api/v1/feeds" -b "$T/cookies")
    [ "$st" = 200 ] || fail "GET /api/v1/feeds through the console: $st $(cat "$T/body")"
    st=$(status "$G/api/v1/feeds")
    [ "$st" = 401 ] || fail "GET /api/v1/feeds through the console without a session: $st"
fi

kill -TERM "$PID"
t0=$SECONDS
for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$PID" 2>/dev/null && fail "ndd still runs 10 s after SIGTERM"
rc=0
wait "$PID" || rc=$?
PID=
((rc == 0)) || fail "ndd exited $rc after SIGTERM"
grep -q "ndd-admin: asked by ndd: stopping" "$T/ndd.log" || fail "the admin role was not stopped by ndd's flag"
echo "PASS: ndd ran the admin role$( ((GUI == 1)) && echo " and the gui-api role"): REST API 200 with" \
    "the token, 401 without; /readyz per role; stopped on SIGTERM with exit 0 in $((SECONDS - t0)) s"
