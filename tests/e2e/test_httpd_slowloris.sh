#!/usr/bin/env bash
# The HTTP servers stay responsive under a slowloris: a slowloris (1,100 connections from 127.0.0.1, each a partial request header
# and then a byte every 1-2 s, reopened when closed; 25 s) against ndd-admin and, at the same
# time, against a daemon's metrics port (ndd-correlation); /healthz on each must answer 200
# within 1 s throughout (tests/common/slowloris.py probes it every 0.5 s). Loopback only; the
# daemons are stopped by PID on exit. Needs NDD_BUILD_DIR, NDD_TEST_KAFKA, NDD_TEST_PG, python3.
set -uo pipefail

BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BROKER=${NDD_TEST_KAFKA:?NDD_TEST_KAFKA is not set (deploy/local/stack.sh start)}
PG=${NDD_TEST_PG:?NDD_TEST_PG is not set (deploy/local/stack.sh start)}
T=$(mktemp -d /tmp/ndd-slowloris-e2e.XXXXXX)
TAG=e2e-slow-$$-$RANDOM
SCHEMA=ndd_e2e_slow_$$_$RANDOM
PIDS=()
fail() {
    echo "FAIL: $*" >&2
    for f in "$T"/*.log; do [ -f "$f" ] && { echo "--- $f (last 10 lines)"; tail -10 "$f"; }; done
    exit 1
}
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    psql "$PG" -qc "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1
    rm -rf "$T"
}
trap cleanup EXIT

"$BUILD/admin/ndd-admin" --pg "$PG" --db-schema "$SCHEMA" --http.port 0 --http.port-file "$T/admin.port" \
    --db-wait 20s >"$T/ndd-admin.log" 2>&1 &
PIDS+=($!)
"$BUILD/correlation/ndd-correlation" --bootstrap "$BROKER" --main-topic "ndd-$TAG-main" \
    --xdr-topic "ndd-$TAG-xdr" --dlq-topic "ndd-$TAG-dlq" --group "ndd-$TAG-corr" \
    --main-partitions 1 --http.port 0 --http.port-file "$T/corr.port" >"$T/ndd-correlation.log" 2>&1 &
PIDS+=($!)
for f in admin corr; do
    for _ in $(seq 300); do [ -s "$T/$f.port" ] && break; sleep 0.1; done
    [ -s "$T/$f.port" ] || fail "$f did not write its port file"
done
ADMIN_PORT=$(cat "$T/admin.port") CORR_PORT=$(cat "$T/corr.port")
for p in "$ADMIN_PORT" "$CORR_PORT"; do
    curl -fsS --max-time 2 "http://127.0.0.1:$p/healthz" >/dev/null || fail "port $p: no /healthz before the attack"
done

python3 "$SRC/tests/common/slowloris.py" "$ADMIN_PORT" --label ndd-admin >"$T/admin.json" &
a=$!
python3 "$SRC/tests/common/slowloris.py" "$CORR_PORT" --label ndd-correlation >"$T/corr.json" &
c=$!
wait $a; ra=$?
wait $c; rc=$?
cat "$T/admin.json" "$T/corr.json"
((ra == 0)) || fail "ndd-admin: /healthz was slow or failed under the slowloris"
((rc == 0)) || fail "ndd-correlation: /healthz was slow or failed under the slowloris"
# still serving normally afterwards
for p in "$ADMIN_PORT" "$CORR_PORT"; do
    curl -fsS --max-time 2 "http://127.0.0.1:$p/healthz" >/dev/null || fail "port $p: no /healthz after the attack"
done
echo "PASS: /healthz answered within 1 s throughout on ndd-admin and ndd-correlation"
