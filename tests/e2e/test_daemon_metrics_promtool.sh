#!/usr/bin/env bash
# Every daemon's /metrics is valid Prometheus text: `curl` on each returns what `promtool check
# metrics` accepts. Starts each NDD daemon of the build against the test stack on ephemeral
# ports, wired into one small pipeline so that labelled series and histograms carry samples:
#   kcat -> IN -> ndd-aggregation -> MAIN -> ndd-correlation -> XDR
#                                      MAIN -> ndd-adapter (one feed, HTTP/2) -> ndd-sink
#   ndd-admin (PostgreSQL schema of its own, private config/events topics)
# waits for each one's /readyz (the sink: /healthz), then runs deploy/prometheus/check-metrics.sh
# on every /metrics and checks that each body holds the daemon's own metric family, so an empty
# or foreign answer cannot pass. Then tests/common/check_metric_names.py holds every family of
# every body to the naming rules and the catalog of docs/observability.md (one
# vocabulary, every family documented). Everything started is stopped by PID on exit.
# A daemon whose binary is missing fails the test when its directory has a CMakeLists.txt (it is
# part of the build); otherwise it is reported as not part of this tree.
# Needs NDD_BUILD_DIR, NDD_TEST_KAFKA, NDD_TEST_PG; tools curl, promtool, kcat, psql, python3.
# METRICS_KEEP_DIR (optional): where to copy the scraped bodies (NAME.metrics) for a look.
set -uo pipefail

BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BROKER=${NDD_TEST_KAFKA:-}
PG=${NDD_TEST_PG:-}
[ -n "$BROKER" ] || { echo "FAIL: NDD_TEST_KAFKA is not set (run deploy/local/stack.sh start)"; exit 1; }
[ -n "$PG" ] || { echo "FAIL: NDD_TEST_PG is not set (run deploy/local/stack.sh start)"; exit 1; }
for tool in curl promtool kcat psql python3; do
    command -v $tool >/dev/null ||
        { echo "FAIL: $tool missing (Debian: curl prometheus kcat postgresql-client)"; exit 1; }
done
CHECK=$SRC/deploy/prometheus/check-metrics.sh
[ -x "$CHECK" ] || { echo "FAIL: $CHECK missing or not executable"; exit 1; }

# The whole test, start-up included, stays under a minute even on a loaded 2-core runner.
DEADLINE=$((SECONDS + 55))
T=$(mktemp -d /tmp/ndd-metrics-e2e.XXXXXX)
TAG=e2e-metrics-$$-$RANDOM
SCHEMA=ndd_e2e_metrics_$$_$RANDOM
IN=ndd-$TAG-scp
MAIN=ndd-$TAG-main
XDR=ndd-$TAG-xdr
declare -A PID=()  # daemon name -> pid
declare -A URL=()  # daemon name -> base URL
declare -A FAMILY=() # daemon name -> a metric name its /metrics must contain
ORDER=()
FAILED=0

stop_all() {
    local n p
    for n in "${!PID[@]}"; do kill -TERM "${PID[$n]}" 2>/dev/null; done
    for _ in $(seq 50); do
        p=0
        for n in "${!PID[@]}"; do kill -0 "${PID[$n]}" 2>/dev/null && p=1; done
        ((p)) || break
        sleep 0.1
    done
    for n in "${!PID[@]}"; do
        kill -KILL "${PID[$n]}" 2>/dev/null
        wait "${PID[$n]}" 2>/dev/null
    done
    PID=()
}
cleanup() {
    stop_all
    if [ -n "${ADMIN_STARTED:-}" ]; then
        psql "$PG" -q -v ON_ERROR_STOP=1 -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1 ||
            echo "note: could not drop schema $SCHEMA"
    fi
    rm -rf "$T"
}
trap cleanup EXIT

fail() {
    local n
    echo "FAIL: $*"
    for n in "${ORDER[@]}"; do
        echo "--- $n log (last 15 lines):"
        tail -15 "$T/$n.log" 2>/dev/null
    done
    exit 1
}
left() { echo $((DEADLINE - SECONDS)); }

# want NAME DIR: 0 when DIR/NAME is built; fails when DIR is in the build but NAME is not
# built; 1 when DIR is not part of this tree.
want() {
    local name=$1 dir=$2
    if [ -x "$BUILD/$dir/$name" ]; then
        ORDER+=("$name")
        return 0
    fi
    if [ -f "$SRC/$dir/CMakeLists.txt" ]; then
        echo "FAIL: $dir/CMakeLists.txt exists but $BUILD/$dir/$name was not built"
        FAILED=1
        return 1
    fi
    echo "note: $dir/ is not part of this tree; $name not checked"
    return 1
}

# wait_file FILE NAME: until FILE is non-empty or NAME exits or time runs out.
wait_file() {
    while [ ! -s "$1" ]; do
        kill -0 "${PID[$2]}" 2>/dev/null || fail "$2 exited during start-up"
        (($(left) > 0)) || fail "$2 did not report its port in time"
        sleep 0.1
    done
}
# from_log NAME SED_EXPR: sets LOGGED to what SED_EXPR prints from NAME's log, once it does
# (not a $(...) function: fail must end the test, not a subshell).
from_log() {
    LOGGED=
    while :; do
        LOGGED=$(sed -nE "$2" "$T/$1.log" 2>/dev/null | head -n1)
        [ -n "$LOGGED" ] && return 0
        kill -0 "${PID[$1]}" 2>/dev/null || fail "$1 exited during start-up"
        (($(left) > 0)) || fail "$1 did not log its port in time"
        sleep 0.1
    done
}

# ---- start -------------------------------------------------------------------------------
SINK_H2=
if want ndd-sink bench/sink; then
    "$BUILD/bench/sink/ndd-sink" --h2-port 0 --metrics-port 0 >"$T/ndd-sink.out" 2>"$T/ndd-sink.log" &
    PID[ndd-sink]=$!
    from_log ndd-sink 's/.*sink: listening on (.*)/\1/p'
    line=$LOGGED
    SINK_H2=$(sed -nE 's/.*h2=([0-9]+).*/\1/p' <<<"$line")
    mp=$(sed -nE 's/.*metrics=([0-9]+).*/\1/p' <<<"$line")
    { [ -n "$SINK_H2" ] && [ -n "$mp" ]; } || fail "ndd-sink: cannot read ports from '$line'"
    URL[ndd-sink]=http://127.0.0.1:$mp
    FAMILY[ndd-sink]=ndd_sink_
fi

if want ndd-aggregation aggregation; then
    "$BUILD/aggregation/ndd-aggregation" --nf-type SCP --bootstrap "$BROKER" --topic "$IN" \
        --main-topic "$MAIN" --dlq-topic "ndd-$TAG-dlq-agg" --group "ndd-$TAG-agg" \
        --main-partitions 2 --http.port 0 --http.port-file "$T/agg.port" \
        --kafka.consumer.session.timeout.ms 6000 >"$T/ndd-aggregation.log" 2>&1 &
    PID[ndd-aggregation]=$!
    FAMILY[ndd-aggregation]=ndd_aggregation_
fi

if want ndd-correlation correlation; then
    "$BUILD/correlation/ndd-correlation" --bootstrap "$BROKER" --main-topic "$MAIN" \
        --xdr-topic "$XDR" --dlq-topic "ndd-$TAG-dlq-corr" --group "ndd-$TAG-corr" \
        --main-partitions 2 --timeout 1s --http.port 0 --http.port-file "$T/corr.port" \
        --kafka.consumer.session.timeout.ms 6000 >"$T/ndd-correlation.log" 2>&1 &
    PID[ndd-correlation]=$!
    FAMILY[ndd-correlation]=ndd_correlation_
fi

if want ndd-adapter adapter; then
    # One feed on MAIN to the sink (or to a closed port when there is no sink: the feed then
    # counts failures, which must render just as well), and a synthetic file feed (the
    # synthetic encoding's and the file transport's families).
    ep=${SINK_H2:-1}
    mkdir -p "$T/files"
    printf '{"feeds":[{"name":"%s","source_topic":"%s","dlq_topic":"ndd-%s-dlq-feed","encoding":"json","transport":"http2","endpoints":[{"url":"http://127.0.0.1:%s/ingest","weight":1}]},{"name":"%s","source_topic":"%s","dlq_topic":"ndd-%s-dlq-file","encoding":"synthetic","transport":"file","endpoints":[{"url":"file://%s"}],"file":{"max_seconds":1}}]}\n' \
        "m-$TAG" "$MAIN" "$TAG" "$ep" "f-$TAG" "$MAIN" "$TAG" "$T/files" >"$T/feeds.json"
    "$BUILD/adapter/ndd-adapter" --bootstrap "$BROKER" --feeds-file "$T/feeds.json" \
        --http.port 0 --http.port-file "$T/adapter.port" --kafka.auto.offset.reset earliest \
        >"$T/ndd-adapter.log" 2>&1 &
    PID[ndd-adapter]=$!
    FAMILY[ndd-adapter]=ndd_adapter_
fi

if want ndd-admin admin; then
    ADMIN_STARTED=1
    "$BUILD/admin/ndd-admin" --pg "$PG" --db-schema "$SCHEMA" --bootstrap "$BROKER" \
        --config-topic "ndd-$TAG-config" --events-topic "ndd-$TAG-events" \
        --events-group "ndd-$TAG-admin" --http.port 0 --http.port-file "$T/admin.port" \
        --db-wait 20s >"$T/ndd-admin.log" 2>&1 &
    PID[ndd-admin]=$!
    FAMILY[ndd-admin]=ndd_admin_
fi

if want ndd-gui-api gui-api; then
    # The console's server, in front of the admin (its live poller idles without a session).
    wait_file "$T/admin.port" ndd-admin
    "$BUILD/gui-api/ndd-gui-api" --admin-url "http://127.0.0.1:$(cat "$T/admin.port")" \
        --web-root "$T" --http.port 0 --http.port-file "$T/gui.port" >"$T/ndd-gui-api.log" 2>&1 &
    PID[ndd-gui-api]=$!
    FAMILY[ndd-gui-api]=ndd_gui_
fi

((${#ORDER[@]} > 0)) || fail "no NDD daemon is built in $BUILD"

# ---- ports and readiness -----------------------------------------------------------------
if [ -n "${PID[ndd-aggregation]:-}" ]; then
    wait_file "$T/agg.port" ndd-aggregation
    URL[ndd-aggregation]=http://127.0.0.1:$(cat "$T/agg.port")
fi
if [ -n "${PID[ndd-correlation]:-}" ]; then
    wait_file "$T/corr.port" ndd-correlation
    URL[ndd-correlation]=http://127.0.0.1:$(cat "$T/corr.port")
fi
if [ -n "${PID[ndd-adapter]:-}" ]; then
    wait_file "$T/adapter.port" ndd-adapter
    URL[ndd-adapter]=http://127.0.0.1:$(cat "$T/adapter.port")
fi
if [ -n "${PID[ndd-admin]:-}" ]; then
    wait_file "$T/admin.port" ndd-admin
    URL[ndd-admin]=http://127.0.0.1:$(cat "$T/admin.port")
fi
if [ -n "${PID[ndd-gui-api]:-}" ]; then
    wait_file "$T/gui.port" ndd-gui-api
    URL[ndd-gui-api]=http://127.0.0.1:$(cat "$T/gui.port")
fi

for n in "${ORDER[@]}"; do
    probe=/readyz
    [ "$n" = ndd-sink ] && probe=/healthz
    while :; do
        code=$(curl -s -o "$T/$n.ready" -w '%{http_code}' --max-time 2 "${URL[$n]}$probe")
        [ "$code" = 200 ] && break
        kill -0 "${PID[$n]}" 2>/dev/null || fail "$n exited before it was ready"
        (($(left) > 0)) || fail "$n: $probe still answers '$code' ($(head -c 200 "$T/$n.ready" 2>/dev/null))"
        sleep 0.2
    done
    echo "ready $n at ${URL[$n]} ($probe after ${SECONDS}s)"
done

# ---- a little traffic, so that labelled series and histograms have samples -----------------
if [ -n "${PID[ndd-aggregation]:-}" ]; then
    copy() { # copy MESSAGE-TYPE TRIGGER-POINT [extra kcat args]
        printf '{"n":1}' | kcat -b "$BROKER" -P -t "$IN" -k "c-$TAG" -H "@correlation-id=c-$TAG" \
            -H "@timestamp-us=$(($(date +%s%N) / 1000))" -H "@message-type=$1" \
            -H "@trigger-point=$2" -H "@nf-type=PCF" -H ":path=/npcf-smpolicycontrol/v1/sm-policies" \
            -H "content-type=application/json" "${@:3}" || fail "kcat could not produce to $IN"
    }
    copy request rx-request -H ":method=POST"
    copy response tx-response -H ":status=201"
    # Refused by the codec (no @nf-type): the dead-letter series gets a sample.
    printf '{}' | kcat -b "$BROKER" -P -t "$IN" -k "d-$TAG" -H "@correlation-id=d-$TAG" \
        -H "@timestamp-us=1764486000000000" -H "@message-type=request" \
        -H "@trigger-point=rx-request" -H ":method=GET" -H ":path=/x" || fail "kcat (bad copy)"
    # Best effort within the time left: the check below is about the text, not the pipeline
    # (other e2e tests prove delivery), so slow delivery only costs samples, not the verdict.
    wait_sample() { # wait_sample NAME REGEX SECONDS
        local until=$((SECONDS + $3))
        while ((SECONDS < until && $(left) > 15)); do
            curl -s --max-time 2 "${URL[$1]}/metrics" | grep -Eq "$2" && return 0
            sleep 0.2
        done
        echo "note: $1 has no sample matching '$2' yet; checking its metrics as they are"
    }
    wait_sample ndd-aggregation '^ndd_aggregation_messages_produced_total\{[^}]*\} [1-9]' 15
    [ -n "${PID[ndd-sink]:-}" ] && [ -n "${PID[ndd-adapter]:-}" ] &&
        wait_sample ndd-adapter '^ndd_adapter_messages_acked_total(\{[^}]*\})? [1-9]' 10
fi
if [ -n "${PID[ndd-admin]:-}" ]; then
    # An unauthenticated API call (401) and a probe: the request counter gets labelled samples.
    curl -s -o /dev/null --max-time 2 "${URL[ndd-admin]}/api/v1/feeds"
fi
[ -n "${PID[ndd-gui-api]:-}" ] && curl -s -o /dev/null --max-time 2 "${URL[ndd-gui-api]}/api/v1/feeds"

# ---- the check ---------------------------------------------------------------------------
urls=()
bodies=()
for n in "${ORDER[@]}"; do
    urls+=("${URL[$n]}/metrics")
    curl -sS --max-time 5 -o "$T/$n.metrics" "${URL[$n]}/metrics" || { echo "FAIL: $n: GET /metrics"; FAILED=1; continue; }
    bodies+=("$n=$T/$n.metrics")
    if ! grep -q "^${FAMILY[$n]}" "$T/$n.metrics"; then
        echo "FAIL: $n: /metrics has no ${FAMILY[$n]}* series (first lines: $(head -3 "$T/$n.metrics"))"
        FAILED=1
    fi
done
"$CHECK" "${urls[@]}" || { echo "FAIL: promtool check metrics rejected a daemon's /metrics (above)"; FAILED=1; }
# The naming rules and the catalog of docs/observability.md (one vocabulary, every family
# documented with its type and labels).
if ((${#bodies[@]} > 0)); then
    python3 "$SRC/tests/common/check_metric_names.py" "$SRC/docs/observability.md" "${bodies[@]}" ||
        { echo "FAIL: a family breaks the naming rules or is not in docs/observability.md (above)"; FAILED=1; }
fi
[ -z "${METRICS_KEEP_DIR:-}" ] || cp "$T"/*.metrics "$METRICS_KEEP_DIR"/ 2>/dev/null

for n in "${ORDER[@]}"; do
    kill -0 "${PID[$n]}" 2>/dev/null || { echo "FAIL: $n died during the check"; FAILED=1; }
done
((FAILED == 0)) || fail "see above"
echo "PASS: /metrics of ${ORDER[*]} accepted by promtool check metrics, named by the rules and documented (${SECONDS}s)"
