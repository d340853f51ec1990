#!/usr/bin/env bash
# The console against what a user runs: deploy/local/quickstart.sh (ndd, the all-in-one, its
# configuration applied to the admin) on this test's own stack and ports, then
# tests/browser/quickstart.test.mjs drives Debian's chromium through its console: the demo
# feeds are listed, a feed created in the form delivers within 10 s and shows its rate and
# lag, an edit in the form moves its delivery, a delete stops it. Two ndd-sink processes of
# the test's own are the new feed's endpoints (before and after the edit), so what each
# receives is counted apart from the demo feed's sink. Everything started is stopped on exit:
# the quickstart's daemons and stack by `quickstart.sh --stop`, the sinks by PID.
set -uo pipefail

SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
STACK=$SRC/deploy/local/stack.sh
# shellcheck source=tests/e2e/browser_lib.sh
. "$SRC/tests/e2e/browser_lib.sh"
browser_setup

W=$(mktemp -d /tmp/ndd-e2e-qsconsole.XXXXXX)
chmod 755 "$W" # the stack runs PostgreSQL as user postgres, which must reach it
mapfile -t ports < <("$STACK" free-ports 9)
KPORT=${ports[0]} CPORT=${ports[1]} PPORT=${ports[2]} SPORT=${ports[3]} QPORT=${ports[4]}
S1=${ports[5]} S1C=${ports[6]} S2=${ports[7]} S2C=${ports[8]}
BASE=$(shuf -i 20000-28000 -n 1)
declare -A PID=()
cleanup() {
    local n
    "$SRC/deploy/local/quickstart.sh" --stop --dir "$W/.stack" >/dev/null 2>&1
    for n in "${!PID[@]}"; do kill -TERM "${PID[$n]}" 2>/dev/null; wait "${PID[$n]}" 2>/dev/null; done
    "$STACK" destroy --dir "$W/.stack" >/dev/null 2>&1
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 143' TERM INT
fail() {
    echo "FAIL: $*"
    for f in "$W"/qs.log "$W"/.stack/quickstart/ndd.log "$W"/.stack/quickstart/apply.log; do
        [ -f "$f" ] && { echo "--- $f (last 20 lines)"; tail -20 "$f"; }
    done
    exit 1
}

# The stack on this test's ports first (the quickstart reuses a running stack in its dir).
NDD_CONTROLLER_PORT=$CPORT NDD_SSL_PORT=$SPORT NDD_SASL_PORT=$QPORT \
    "$STACK" start --dir "$W/.stack" --kafka-port "$KPORT" --pg-port "$PPORT" >"$W/stack.log" 2>&1 ||
    fail "stack start ($(tail -3 "$W/stack.log"))"
timeout -k 10 600 "$SRC/deploy/local/quickstart.sh" --no-build --build "$BUILD" --dir "$W/.stack" \
    --seconds 5 --rate 100 --ports-from "$BASE" --kafka-port "$KPORT" --pg-port "$PPORT" >"$W/qs.log" 2>&1 ||
    fail "quickstart.sh exited $?"
grep -q "web console .*http://127.0.0.1:$((BASE + 8))/" "$W/qs.log" || fail "the quickstart started no console"
echo "ok - quickstart.sh ran: $(grep -E '^ +lost' "$W/qs.log" | tr -s ' ')"

SINK=$BUILD/bench/sink/ndd-sink
"$SINK" --h2-port "$S1" --metrics-port "$S1C" >"$W/sink1.log" 2>&1 &
PID[sink1]=$!
"$SINK" --h2-port "$S2" --metrics-port "$S2C" >"$W/sink2.log" 2>&1 &
PID[sink2]=$!
for c in "$S1C" "$S2C"; do
    for _ in $(seq 50); do curl -fsS "http://127.0.0.1:$c/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
done

export CONSOLE_URL=http://127.0.0.1:$((BASE + 8)) TOKEN_FILE=$W/.stack/quickstart/admin.token \
    KAFKA=127.0.0.1:$KPORT SIM_BIN=$BUILD/bench/nfsim/ndd-nf-sim SEQ0=$(($(date +%s) * 10000 + 7000000)) \
    SINK1_PORT=$S1 SINK1_CTL=$S1C SINK2_PORT=$S2 SINK2_CTL=$S2C DEMO_CTL=$((BASE + 3)) \
    SHOTS_DIR=${CONSOLE_SHOTS_DIR:-$W/shots} NODE_PATH=$BT/node_modules
timeout -k 5 300 node "$BT/quickstart.test.mjs" 2>&1 | tee "$W/browser.out"
rc=${PIPESTATUS[0]}
((rc == 0)) || fail "browser scenarios (exit $rc)"
echo "PASS: the quickstart's console lists, creates, edits and deletes feeds that the data path runs"
