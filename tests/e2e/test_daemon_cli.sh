#!/usr/bin/env bash
# The command line every daemon shares through the skeleton (services/daemon): for each of
# ndd-aggregation, ndd-correlation, ndd-adapter and ndd-admin, --help lists the common
# settings under exactly their documented names (and none of the old ones), --version prints
# NDD's version and librdkafka's and exits 0, and --check-config accepts a valid
# configuration (exit 0) and refuses a bad one with the key named and exit 2, each within a
# second and without connecting to anything: a port above 65535 (flag and NDD_HTTP_PORT), an
# unknown kafka.* property, an unknown NF type, a valid / an invalid / a missing feeds file.
# Needs NDD_BUILD_DIR; no Kafka, no PostgreSQL (the brokers given are a closed port).
set -euo pipefail

BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
VERSION=$(sed -n 's/^project(ndd VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
[ -n "$VERSION" ] || { echo "FAIL: no project(ndd VERSION x.y.z) in CMakeLists.txt"; exit 1; }
T=$(mktemp -d /tmp/ndd-cli-e2e.XXXXXX)
trap 'rm -rf "$T"' EXIT
CLOSED=127.0.0.1:1 # nothing listens there: a connection attempt would hang or fail
FAILS=0
fail() {
    echo "FAIL: $*"
    FAILS=$((FAILS + 1))
}

cat >"$T/feeds.json" <<'JSON'
{"feeds": [{"name": "f1", "source_topic": "MAIN",
            "endpoints": [{"url": "http://127.0.0.1:9/in"}]}]}
JSON
cat >"$T/bad-feeds.json" <<'JSON'
{"feeds": [{"name": "f1", "source_topic": "MAIN",
            "endpoints": [{"url": "gopher://127.0.0.1:9/in"}]}]}
JSON

bin() {
    case $1 in
    aggregation) echo "$BUILD/aggregation/ndd-aggregation" ;;
    correlation) echo "$BUILD/correlation/ndd-correlation" ;;
    adapter) echo "$BUILD/adapter/ndd-adapter" ;;
    admin) echo "$BUILD/admin/ndd-admin" ;;
    esac
}
# The settings that make a daemon's configuration valid.
base() {
    case $1 in
    aggregation) echo "--nf-type SCP --bootstrap $CLOSED" ;;
    correlation) echo "--bootstrap $CLOSED" ;;
    adapter) echo "--bootstrap $CLOSED --feeds-file $T/feeds.json" ;;
    admin) echo "--pg host=127.0.0.1 --bootstrap $CLOSED" ;;
    esac
}

# run NAME WANT_RC WANT_TEXT ENV... -- ARGS...: runs the daemon, checks exit code, that
# WANT_TEXT is in its output and that it took under a second.
run() {
    local d=$1 want=$2 text=$3
    shift 3
    local -a envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    local t0 t1 rc=0
    t0=$(date +%s%N)
    env "${envs[@]}" "$(bin "$d")" "$@" >"$T/out" 2>&1 || rc=$?
    t1=$(date +%s%N)
    local ms=$(((t1 - t0) / 1000000))
    [ "$rc" = "$want" ] || fail "$d $*: exit $rc, expected $want: $(head -c 400 "$T/out")"
    grep -qF -- "$text" "$T/out" || fail "$d $*: output lacks \"$text\": $(head -c 400 "$T/out")"
    [ "$ms" -lt 1000 ] || fail "$d $*: took $ms ms (limit 1000)"
    echo "ok: $d $* -> exit $rc in $ms ms"
}

for d in aggregation correlation adapter admin; do
    [ -x "$(bin $d)" ] || { fail "$(bin $d) not built"; continue; }
    # --help: the common keys with exactly these names, the old names gone.
    "$(bin $d)" --help >"$T/help" 2>&1 || fail "$d --help exited non-zero"
    for key in bootstrap http.listen http.port http.port-file log.level log.json; do
        grep -q -- "^  --$key=<" "$T/help" || fail "$d --help does not list --$key"
    done
    for old in http-{port,listen,port-file} log-{level,json} http.bind port listen port-file; do
        ! grep -q -- "^  --$old=<" "$T/help" || fail "$d --help still lists the old --$old"
    done
    grep -q -- "--version" "$T/help" && grep -q -- "--check-config" "$T/help" ||
        fail "$d --help does not mention --version and --check-config"
    # --version
    run $d 0 "$VERSION" -- --version
    grep -q "^librdkafka [0-9]" "$T/out" || fail "$d --version does not print librdkafka's version"
    grep -q "revision " "$T/out" || fail "$d --version does not print the git revision"
    # --check-config: valid, then each refusal with the key named.
    # shellcheck disable=SC2046
    run $d 0 "configuration valid" -- $(base $d) --check-config
    # shellcheck disable=SC2046
    run $d 2 "http.port" -- $(base $d) --check-config --http.port 99999
    # shellcheck disable=SC2046
    run $d 2 "http.port" -- $(base $d) --check-config --http.port -2
    # shellcheck disable=SC2046
    run $d 2 "NDD_HTTP_PORT" NDD_HTTP_PORT=99999 -- $(base $d) --check-config
    # shellcheck disable=SC2046
    run $d 2 "kafka.no.such.property" -- $(base $d) --check-config --kafka.no.such.property 1
    # From the environment an unknown name is ignored with a warning (NDD_KAFKA_PORT is the
    # local stack's own variable), a bad value of a known property is still refused.
    # shellcheck disable=SC2046
    run $d 0 "NDD_KAFKA_PORT: not a librdkafka property, ignored" NDD_KAFKA_PORT=9092 -- $(base $d) --check-config
    # shellcheck disable=SC2046
    run $d 2 "kafka.linger.ms" NDD_KAFKA_LINGER_MS=abc -- $(base $d) --check-config
    # Not only with --check-config: a plain start refuses the same way.
    # shellcheck disable=SC2046
    run $d 2 "http.port" -- $(base $d) --http.port 70000
done

run aggregation 2 "nf-type" -- --nf-type FOO --bootstrap $CLOSED --check-config
run aggregation 2 "nf-type" -- --nf-type FOO --bootstrap $CLOSED
run aggregation 0 "worker: NF NRF" -- --nf-type NRF --bootstrap $CLOSED --check-config
echo '{"name": "f", "default": "allow", "rules": [{"when": {"field": "nf_type", "op": "nope", "value": "x"}, "action": "deny"}]}' >"$T/bad-filter.json"
run aggregation 2 "filter-file" -- --nf-type SCP --bootstrap $CLOSED --filter-file "$T/bad-filter.json" --check-config
run adapter 0 "feed f1: topic MAIN" -- --bootstrap $CLOSED --feeds-file "$T/feeds.json" --check-config
run adapter 2 "feeds[0].endpoints[0].url" -- --bootstrap $CLOSED --feeds-file "$T/bad-feeds.json" --check-config
run adapter 2 "feeds-file" -- --bootstrap $CLOSED --feeds-file "$T/bad-feeds.json"
run adapter 2 "feeds-file" -- --bootstrap $CLOSED --feeds-file "$T/missing.json"
run correlation 2 "xdr-format" -- --bootstrap $CLOSED --xdr-format yaml --check-config
run admin 2 "pg" NDD_PG= -- --check-config
# Secrets are masked in what --check-config prints.
run admin 0 "pg = ***" -- --pg "host=127.0.0.1 password=hunter2" --check-config
! grep -q hunter2 "$T/out" || fail "admin --check-config printed the secret"

[ "$FAILS" = 0 ] || { echo "FAIL: $FAILS check(s) failed"; exit 1; }
echo "PASS: test_daemon_cli"
