#!/usr/bin/env bash
# The web console in a real browser against a real stack. Starts, on
# ephemeral ports and private topics/schema of the test stack (NDD_TEST_KAFKA, NDD_TEST_PG):
#   ndd-nf-sim (SCP traffic) -> ndd-aggregation -> MAIN -> ndd-adapter (--config-topic) -> ndd-sink,
#   a second ndd-adapter with one feed from a feeds file (the console lists it read-only),
#   ndd-admin (its own schema, config and events topics), ndd-gui-api (metrics of the adapter
#   and the aggregation), then tests/browser/console.test.mjs drives Debian's chromium with
#   playwright-core through every scenario of the issue, runs axe-core on every page, checks
#   the CSP header and that no CSP violation or console error happened, and saves a
#   screenshot of every page to a scratch folder (CONSOLE_SHOTS_DIR=docs/console refreshes the
#   documentation's screenshots; a test run never writes into the source tree).
# Installs: chromium (apt, once) when /usr/bin/chromium is missing; the console build and the
# browser test's npm packages come from their lock files with the npm cache ~/.cache/ndd/npm
# (a second run downloads nothing). Everything started is stopped by PID on exit.
set -uo pipefail

BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BROKER=${NDD_TEST_KAFKA:?NDD_TEST_KAFKA is not set (deploy/local/stack.sh start)}
PG=${NDD_TEST_PG:?NDD_TEST_PG is not set (deploy/local/stack.sh start)}
BROKER=${BROKER//\'/} PG=${PG//\'/}
# shellcheck source=tests/e2e/browser_lib.sh
. "$SRC/tests/e2e/browser_lib.sh"
browser_setup

T=$(mktemp -d /tmp/ndd-console-e2e.XXXXXX)
TAG=e2e-console-$$-$RANDOM
SCHEMA=ndd_e2e_console_$$_$RANDOM
MAIN=ndd-$TAG-main
PREFIX=ndd-$TAG-
declare -A PID=()
stop_all() {
    local n
    for n in "${!PID[@]}"; do kill -TERM "${PID[$n]}" 2>/dev/null; done
    for _ in $(seq 50); do
        local alive=0
        for n in "${!PID[@]}"; do kill -0 "${PID[$n]}" 2>/dev/null && alive=1; done
        ((alive)) || break
        sleep 0.1
    done
    for n in "${!PID[@]}"; do kill -KILL "${PID[$n]}" 2>/dev/null; wait "${PID[$n]}" 2>/dev/null; done
    PID=()
}
cleanup() {
    stop_all
    psql "$PG" -q -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1
    rm -rf "$T"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*"
    for f in "$T"/*.log; do echo "--- $f (last 15 lines)"; tail -15 "$f"; done
    echo "--- server errors (5xx answers, errors) in every log"
    grep -h " answered 5\| error " "$T"/*.log | tail -20
    exit 1
}
wait_port_file() { # FILE NAME
    for _ in $(seq 300); do
        [ -s "$1" ] && return 0
        kill -0 "${PID[$2]}" 2>/dev/null || fail "$2 exited during start-up"
        sleep 0.1
    done
    fail "$2 did not write its port"
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

ADMIN_BIN=$BUILD/admin/ndd-admin
A=(--pg "$PG" --db-schema "$SCHEMA")
"$ADMIN_BIN" "${A[@]}" --bootstrap "$BROKER" --config-topic "${PREFIX}config" \
    --events-topic "${PREFIX}events" --events-group "${PREFIX}admin" --http.port 0 \
    --http.port-file "$T/admin.port" --token-ttl 1s >"$T/admin.log" 2>&1 &
PID[admin]=$!
wait_port_file "$T/admin.port" admin
ADMIN=http://127.0.0.1:$(cat "$T/admin.port")
ADMIN_TOKEN=$("$ADMIN_BIN" token create "${A[@]}" --role admin --name console-admin 2>>"$T/admin.log") ||
    fail "token create (admin)"
VIEWER_TOKEN=$("$ADMIN_BIN" token create "${A[@]}" --role viewer --name console-viewer 2>>"$T/admin.log") ||
    fail "token create (viewer)"

"$BUILD/aggregation/ndd-aggregation" --nf-type SCP --bootstrap "$BROKER" --topic "${PREFIX}SCP" \
    --main-topic "$MAIN" --dlq-topic "${PREFIX}dlq-agg" --group "${PREFIX}agg" --main-partitions 1 \
    --events-topic "${PREFIX}events" --config-topic "${PREFIX}config" --http.port 0 --http.port-file "$T/agg.port" \
    --kafka.consumer.session.timeout.ms 6000 >"$T/aggregation.log" 2>&1 &
PID[aggregation]=$!
"$BUILD/adapter/ndd-adapter" --bootstrap "$BROKER" --config-topic "${PREFIX}config" \
    --events-topic "${PREFIX}events" --http.port 0 --http.port-file "$T/adapter.port" \
    --instance console-adapter >"$T/adapter.log" 2>&1 &
PID[adapter]=$!
# A second adapter runs one feed from a feeds file (no admin behind it): the console lists
# it read-only. Its file endpoint and its drop-all filter keep it off the network and quiet.
mkdir -p "$T/export/fromfile"
cat >"$T/feeds.json" <<EOF
{"feeds": [{"name": "$TAG-fromfile", "source_topic": "$MAIN", "transport": "file",
            "encoding": "json", "endpoints": [{"url": "file://$T/export/fromfile"}],
            "filter": {"name": "drop-all", "default": "drop", "rules": []}}]}
EOF
"$BUILD/adapter/ndd-adapter" --bootstrap "$BROKER" --feeds-file "$T/feeds.json" \
    --events-topic "${PREFIX}events" --http.port 0 --http.port-file "$T/adapter-file.port" \
    --instance console-file-adapter >"$T/adapter-file.log" 2>&1 &
PID[adapter_file]=$!
wait_port_file "$T/agg.port" aggregation
wait_port_file "$T/adapter.port" adapter
wait_port_file "$T/adapter-file.port" adapter_file
AGG_M=http://127.0.0.1:$(cat "$T/agg.port")/metrics
ADA_M=http://127.0.0.1:$(cat "$T/adapter.port")/metrics

"$BUILD/gui-api/ndd-gui-api" --admin-url "$ADMIN" --web-root "$DIST" --http.port 0 \
    --http.port-file "$T/gui.port" --metrics-urls "$ADA_M,$AGG_M" >"$T/gui-api.log" 2>&1 &
PID[gui]=$!
wait_port_file "$T/gui.port" gui
GUI=http://127.0.0.1:$(cat "$T/gui.port")

"$BUILD/bench/nfsim/ndd-nf-sim" --bootstrap "$BROKER" --topic-prefix "$PREFIX" --partitions 1 \
    --rate 200 --duration 320 --quiet >"$T/nfsim.out" 2>"$T/nfsim.log" &
PID[nfsim]=$!

for u in "$ADMIN/readyz" "$GUI/readyz"; do
    for _ in $(seq 100); do curl -fs -o /dev/null --max-time 1 "$u" && break; sleep 0.2; done
    curl -fs -o /dev/null --max-time 1 "$u" || fail "$u not ready"
done
echo "stack up after ${SECONDS}s: admin $ADMIN, console $GUI"

SINK_PORT=$(free_port)
SINK_CTL_PORT=$(free_port)
mkdir -p "$T/export"
# TAG names the test's own feeds and topics (the DLQ topic is on the shared cluster: ndd.dlq.*)
export CONSOLE_URL=$GUI ADMIN_TOKEN VIEWER_TOKEN SINK_PORT SINK_CTL_PORT MAIN_TOPIC=$MAIN TAG \
    DLQ_TOPIC=ndd.dlq.$TAG KAFKA_BOOTSTRAP=$BROKER EXPORT_DIR=$T/export \
    SINK_BIN=$BUILD/bench/sink/ndd-sink SHOTS_DIR=${CONSOLE_SHOTS_DIR:-$T/shots} \
    NODE_PATH=$BT/node_modules
timeout -k 5 300 node "$BT/console.test.mjs" 2>&1 | tee "$T/browser.out"
rc=${PIPESTATUS[0]}
((rc == 0)) || fail "browser scenarios (above)"
echo "PASS: console browser test in ${SECONDS}s"
