#!/usr/bin/env bash
# The API contract holds in practice: real responses of a running ndd-admin validate against
# docs/openapi.yaml.
# Starts ndd-admin on the test PostgreSQL (a schema of its own, no Kafka), creates an admin
# and a viewer token the documented way, then tests/common/openapi_responses.py drives every
# object kind and the error cases and validates each body against the spec's schema for its
# operation and status. jsonschema and PyYAML come from PyPI into a private virtualenv
# (${NDD_CACHE:-~/.cache/ndd}/venv-openapi), made on first use; the system Python is not touched.
# Needs NDD_BUILD_DIR, NDD_TEST_PG, python3 with venv.
set -uo pipefail

BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PG=${NDD_TEST_PG:?NDD_TEST_PG is not set (deploy/local/stack.sh start)}
VENV=${NDD_CACHE:-$HOME/.cache/ndd}/venv-openapi
T=$(mktemp -d /tmp/ndd-openapi-e2e.XXXXXX)
SCHEMA=ndd_e2e_openapi_$$_$RANDOM
PID=
fail() {
    echo "FAIL: $*" >&2
    [ -f "$T/ndd-admin.log" ] && { echo "--- ndd-admin log (last 15 lines)"; tail -15 "$T/ndd-admin.log"; }
    exit 1
}
cleanup() {
    [ -n "$PID" ] && { kill -TERM "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }
    psql "$PG" -qc "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1
    rm -rf "$T"
}
trap cleanup EXIT

if ! "$VENV/bin/python" -c 'import jsonschema, yaml' 2>/dev/null; then
    echo "making $VENV (jsonschema, PyYAML from PyPI)"
    python3 -m venv "$VENV" || fail "python3 -m venv $VENV failed (Debian: python3-venv)"
    "$VENV/bin/pip" install -q 'jsonschema>=4.17,<5' 'PyYAML>=6' || fail "pip install into $VENV failed"
fi

ADMIN=$BUILD/admin/ndd-admin
(umask 077 && "$ADMIN" token create --pg "$PG" --db-schema "$SCHEMA" --role admin --name oa-ops >"$T/admin.token" 2>>"$T/ndd-admin.log") ||
    fail "token create failed"
(umask 077 && "$ADMIN" token create --pg "$PG" --db-schema "$SCHEMA" --role viewer --name oa-view >"$T/viewer.token" 2>>"$T/ndd-admin.log") ||
    fail "token create failed"
"$ADMIN" --pg "$PG" --db-schema "$SCHEMA" --http.port 0 --http.port-file "$T/admin.port" --max-body 64KiB \
    --db-wait 20s >>"$T/ndd-admin.log" 2>&1 &
PID=$!
for _ in $(seq 300); do [ -s "$T/admin.port" ] && break; sleep 0.1; done
[ -s "$T/admin.port" ] || fail "ndd-admin did not write its port file"
PORT=$(cat "$T/admin.port")
for _ in $(seq 100); do curl -fsS --max-time 1 "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.1; done

"$VENV/bin/python" "$SRC/tests/common/openapi_responses.py" "$SRC/docs/openapi.yaml" "$PORT" \
    "$(cat "$T/admin.token")" "$(cat "$T/viewer.token")" || fail "responses do not match docs/openapi.yaml"
echo "PASS: every response matched docs/openapi.yaml"
