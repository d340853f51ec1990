# Shared set-up of the ndd-admin e2e tests (sourced, not a test itself): a private schema and
# topics on the test stack (NDD_TEST_PG, NDD_TEST_KAFKA), tokens made the documented way, an
# ndd-admin process started and stopped by PID, and small JSON helpers over curl and jq.
# The caller sets NAME (a short word) before sourcing.
set -uo pipefail

BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PG=${NDD_TEST_PG:?NDD_TEST_PG is not set (deploy/local/stack.sh start)}
KAFKA=${NDD_TEST_KAFKA:?NDD_TEST_KAFKA is not set (deploy/local/stack.sh start)}
ADMIN=$BUILD/admin/ndd-admin
for tool in curl jq psql kcat openssl; do
    command -v "$tool" >/dev/null || { echo "FAIL: $tool is required" >&2; exit 1; }
done
T=$(mktemp -d "/tmp/ndd-admin-$NAME.XXXXXX")
TAG=${NAME}_$$_$RANDOM
SCHEMA=ndd_e2e_$TAG
CONFIG_TOPIC=ndd.config.e2e.$TAG
EVENTS_TOPIC=ndd.events.e2e.$TAG
ADMIN_PIDS=()
export NDD_PG=$PG

fail() {
    echo "FAIL: $*" >&2
    for f in "$T"/*.log; do
        [ -f "$f" ] && { echo "--- $f (last 20 lines)"; tail -20 "$f"; }
    done
    exit 1
}
admin_cleanup() {
    for p in "${ADMIN_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    psql "$PG" -qc "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1
    # The run's topics (ndd.config.e2e.*, ndd.events.e2e.*) stay, as other e2e tests' do: no
    # client here deletes topics, and their names never meet another run's.
    rm -rf "$T"
}
trap admin_cleanup EXIT

# token ROLE NAME: a new token in $T/NAME.token (0600), as docs/api.md tells an operator.
token() {
    (umask 077 && "$ADMIN" token create --db-schema "$SCHEMA" --role "$1" --name "$2" \
        >"$T/$2.token" 2>>"$T/token.log") || fail "token create $2"
}

# start_admin LOGNAME [settings...]: serves on a free port; sets PORT and URL.
start_admin() {
    local log=$1
    shift
    rm -f "$T/$log.port"
    "$ADMIN" --db-schema "$SCHEMA" --http.port 0 --http.port-file "$T/$log.port" \
        --config-topic "$CONFIG_TOPIC" --events-topic "$EVENTS_TOPIC" --events-group "g-$TAG" \
        --config-replication 1 --token-ttl 200ms --db-wait 20s "$@" >"$T/$log.log" 2>&1 &
    ADMIN_PIDS+=($!)
    local deadline=$((SECONDS + 30))
    until [ -s "$T/$log.port" ]; do
        [ $SECONDS -lt $deadline ] || fail "ndd-admin ($log) did not serve within 30 s"
        kill -0 "${ADMIN_PIDS[-1]}" 2>/dev/null || fail "ndd-admin ($log) exited at start"
        sleep 0.1
    done
    PORT=$(cat "$T/$log.port")
    URL=http://127.0.0.1:$PORT
}

# api TOKEN METHOD PATH [BODY]: the body of the answer on stdout, its status in $T/status.
api() {
    local body=()
    [ $# -ge 4 ] && body=(-H 'Content-Type: application/json' --data-binary "$4")
    curl -sS -o "$T/resp" -w '%{http_code}' -X "$2" -H "Authorization: Bearer $(cat "$T/$1.token")" \
        "${body[@]}" "${API_URL:-$URL}$3" >"$T/status" || fail "curl $2 $3"
    cat "$T/resp"
}
status() { cat "$T/status"; }

# The audit log's size, straight from PostgreSQL.
audit_count() { psql "$PG" -Atqc "SELECT count(*) FROM $SCHEMA.audit"; }
# "name:version" of every object of a kind, sorted: what must not move on a no-op.
versions() { psql "$PG" -Atqc "SELECT string_agg(kind || '/' || name || ':' || version, ' ' ORDER BY kind, name COLLATE \"C\") FROM $SCHEMA.objects"; }

# wait_for SECONDS DESCRIPTION COMMAND...: until COMMAND succeeds, or fail.
wait_for() {
    local deadline=$((SECONDS + $1)) what=$2
    shift 2
    until "$@"; do
        [ $SECONDS -lt $deadline ] || fail "timed out waiting for $what"
        sleep 0.2
    done
}
