#!/usr/bin/env bash
# The HTTP server of services/base/httpd (docs/observability.md, "Slow clients") against
# hostile clients, on its three kinds of listener at once: ndd-admin's REST API (PostgreSQL of
# the suite's stack, its own schema), ndd-gui-api's console in front of it, and a worker's
# /metrics port (ndd-adapter with a feeds file). Each attack runs against the three together
# (tests/fault/ingress_hostile.py):
#   1. HTTP/1.1 pipelining: 8 sockets, each with a 4 KiB receive buffer, pipeline `GET
#      /metrics` for 6 s and never read. The server reads no further than the request it
#      answers (its input buffer does not grow for the requests behind), stops reading while
#      256 KiB of replies are unsent, and closes the connection request_timeout_s (30 s) after
#      the last byte moved;
#   2. 100 clients stalled in a request body (Content-Length 256 KiB, 16 bytes sent): each is
#      closed by its body deadline (header_timeout_s 10 s + 1 s per 64 KiB = 14 s) or evicted
#      earlier by the per-client cap;
#   3. HTTP/2 (h2c, prior knowledge): `GET /metrics` on new streams and PINGs for 6 s, never
#      read; closed request_timeout_s after the last byte moved.
# Asserted for each listener and attack: VmRSS stays under before + the documented bound, a
# well-behaved client (curl: the REST API with a token, the console's proxied API with a
# session, a scrape) is answered throughout, the attacking connections are closed by the
# deadlines above, and VmRSS comes back within 8 MiB of where it was before the attack.
# Afterwards a pipelining client that reads gets all of 1,000 replies sent in one write.
# Needs NDD_BUILD_DIR, NDD_TEST_KAFKA, NDD_TEST_PG, python3, curl, psql.
set -euo pipefail
if [[ -z ${NDD_FAULT_TIMED:-} ]]; then
    NDD_FAULT_TIMED=1 exec timeout -k 10 150 bash "$0" "$@"
fi
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
BROKER=${NDD_TEST_KAFKA:?NDD_TEST_KAFKA must name the test broker}
BROKER=${BROKER//\'/}
PG=${NDD_TEST_PG:?NDD_TEST_PG must name the test PostgreSQL}
for t in python3 curl psql; do command -v "$t" >/dev/null || {
    echo "FAIL: $t is needed" >&2
    exit 1
}; done
HOSTILE=$SRC/tests/fault/ingress_hostile.py
T=$(mktemp -d /tmp/ndd-fault-hostile-http.XXXXXX)
TAG=fhostile-$$-$RANDOM
SCHEMA=ndd_fault_hostile_$$_$RANDOM
# The bounds asserted (and documented in docs/observability.md): growth of VmRSS during an
# attack, and what may remain once the attackers are gone.
PEAK_KB=$((8 * 1024)) AFTER_KB=$((8 * 1024))
declare -A PID=()
ATTACKERS=()
fail() {
    echo "FAIL: $*" >&2
    for f in "$T"/*.log; do [ -f "$f" ] && { echo "--- $f (last 10 lines)"; tail -10 "$f"; }; done
    exit 1
}
cleanup() {
    local p
    for p in "${ATTACKERS[@]}" "${PID[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PID[@]}"; do wait "$p" 2>/dev/null || true; done
    psql "$PG" -qc "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1 || true
    rm -rf "$T"
}
trap cleanup EXIT
wait_port_file() { # NAME: its port, once written
    for _ in $(seq 300); do
        [ -s "$T/$1.port" ] && {
            cat "$T/$1.port"
            return 0
        }
        kill -0 "${PID[$1]}" 2>/dev/null || fail "$1 exited during start-up"
        sleep 0.1
    done
    fail "$1 did not write its port"
}

# ---- the three listeners ----
A=(--pg "$PG" --db-schema "$SCHEMA")
"$BUILD/admin/ndd-admin" "${A[@]}" --db-wait 20s --http.port 0 --http.port-file "$T/admin.port" \
    >"$T/admin.log" 2>&1 &
PID[admin]=$!
mkdir -p "$T/out" "$T/web"
echo '<!doctype html><title>ndd</title>' >"$T/web/index.html"
cat >"$T/feeds.json" <<EOF
{"feeds": [{"name": "$TAG", "source_topic": "$TAG-main", "transport": "file", "encoding": "json",
            "endpoints": [{"url": "file://$T/out"}],
            "filter": {"name": "drop-all", "default": "drop", "rules": []}}]}
EOF
"$BUILD/adapter/ndd-adapter" --bootstrap "$BROKER" --feeds-file "$T/feeds.json" \
    --events-topic "$TAG-events" --instance "$TAG" --http.port 0 --http.port-file "$T/worker.port" \
    >"$T/worker.log" 2>&1 &
PID[worker]=$!
declare -A PORT=()
PORT[admin]=$(wait_port_file admin)
TOKEN=$("$BUILD/admin/ndd-admin" token create "${A[@]}" --role viewer --name hostile 2>>"$T/admin.log") ||
    fail "token create"
"$BUILD/gui-api/ndd-gui-api" --admin-url "http://127.0.0.1:${PORT[admin]}" --web-root "$T/web" \
    --http.port 0 --http.port-file "$T/gui.port" >"$T/gui.log" 2>&1 &
PID[gui]=$!
PORT[gui]=$(wait_port_file gui)
PORT[worker]=$(wait_port_file worker)
LISTENERS=(admin gui worker)
# What the attackers ask: GET /metrics (the largest reply each listener has without a
# credential) to pipeline and to stream; a write of the REST API (the console's goes through
# to ndd-admin) to stall in, and a POST to the worker's port (which it answers 405).
declare -A APATH=()

# ---- the well-behaved clients ----
JAR=$T/cookies
curl -fsS --max-time 5 -c "$JAR" -H 'Content-Type: application/json' -d "{\"token\":\"$TOKEN\"}" \
    "http://127.0.0.1:${PORT[gui]}/console/login" >/dev/null || fail "console login"
good() { # LISTENER: the HTTP status a normal client gets (each call logged in good.log)
    local u="http://127.0.0.1:${PORT[$1]}" out rc=0
    local c=(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 5)
    case $1 in
    admin) out=$("${c[@]}" -H "Authorization: Bearer $TOKEN" "$u/api/v1/feeds") || rc=$? ;;
    gui) out=$("${c[@]}" -b "$JAR" "$u/api/v1/feeds") || rc=$? ;;
    worker) out=$("${c[@]}" "$u/metrics") || rc=$? ;;
    esac
    echo "$(date +%T.%N) $1 ${out:-000} curl=$rc" >>"$T/good.log"
    echo "${out%% *}"
}
rss() { awk '/VmRSS/ {print $2}' "/proc/${PID[$1]}/status"; }
for l in "${LISTENERS[@]}"; do
    for i in 1 2 3 4 5; do
        s=$(good "$l")
        [ "$s" = 200 ] || fail "$l: warm-up request answered $s"
    done
done
for l in "${LISTENERS[@]}"; do
    echo "$l (pid ${PID[$l]}, port ${PORT[$l]}): /metrics is $(curl -fsS --max-time 5 "http://127.0.0.1:${PORT[$l]}/metrics" | wc -c) bytes"
done
# Per attack and listener: VmRSS before, peak while the attack is followed, after.
declare -A BEFORE=() PEAK=() AFTER=() APIDS=()
ACTIVE=()

# start NAME MODE ARGS...: MODE of ingress_hostile.py against the three listeners at once,
# each with its path in APATH; its peak is followed from now on.
start() {
    local name=$1 mode=$2 l
    shift 2
    APIDS[$name]=""
    for l in "${LISTENERS[@]}"; do
        BEFORE[$name.$l]=$(rss "$l")
        PEAK[$name.$l]=${BEFORE[$name.$l]}
        python3 "$HOSTILE" "$mode" --port "${PORT[$l]}" --path "${APATH[$l]}" "$@" \
            >"$T/$name-$l.out" 2>"$T/$name-$l.err" &
        APIDS[$name]+=" $!"
        ATTACKERS+=($!)
    done
    ACTIVE+=("$name")
}
follow() { ACTIVE+=("$1"); }
unfollow() { # the attack's connections are held, frozen: its peak is not followed meanwhile
    local a keep=()
    for a in "${ACTIVE[@]}"; do [ "$a" = "$1" ] || keep+=("$a"); done
    ACTIVE=("${keep[@]}")
}
# One round: each listener alive, its VmRSS into the peaks followed, a well-behaved request
# answered 200.
sample() {
    local l a r s
    for l in "${LISTENERS[@]}"; do
        kill -0 "${PID[$l]}" 2>/dev/null || fail "$l died during ${ACTIVE[*]}"
        r=$(rss "$l")
        for a in "${ACTIVE[@]}"; do ((r > PEAK[$a.$l])) && PEAK[$a.$l]=$r; done
        s=$(good "$l")
        [ "$s" = 200 ] || fail "$l answered the well-behaved client $s during ${ACTIVE[*]}"
    done
}
running() { # NAME: an attacker of NAME is still running
    local p
    for p in ${APIDS[$1]}; do kill -0 "$p" 2>/dev/null && return 0; done
    return 1
}
flooding() { # NAME: an attacker of NAME has not printed its first line (the flood's end) yet
    local l
    for l in "${LISTENERS[@]}"; do [ -s "$T/$1-$l.out" ] || return 0; done
    return 1
}
during() { # CONDITION...: samples every 0.5 s while it holds
    while "$@"; do
        sample
        sleep 0.5
    done
}
# finish NAME: its attackers gone, VmRSS back within AFTER_KB of before (waited for up to
# 5 s), the figures printed, the peak within PEAK_KB.
finish() {
    local name=$1 l p
    unfollow "$name"
    for p in ${APIDS[$name]}; do wait "$p" || fail "$name: the attack client failed: $(cat "$T/$name"-*.err)"; done
    for l in "${LISTENERS[@]}"; do
        local b=${BEFORE[$name.$l]} k=$name.$l
        for _ in $(seq 20); do
            AFTER[$k]=$(rss "$l")
            ((AFTER[$k] - b < AFTER_KB)) && break
            sleep 0.25
        done
        echo "$name $l: RSS before $b kB, peak ${PEAK[$k]} kB (+$((PEAK[$k] - b))), after ${AFTER[$k]} kB (+$((AFTER[$k] - b))); attacker: $(tr '\n' ' ' <"$T/$name-$l.out")"
    done
    for l in "${LISTENERS[@]}"; do
        local b=${BEFORE[$name.$l]} k=$name.$l
        ((PEAK[$k] - b < PEAK_KB)) || fail "$name: $l grew by $((PEAK[$k] - b)) kB (bound $PEAK_KB kB)"
        ((AFTER[$k] - b < AFTER_KB)) ||
            fail "$name: $l did not come back: +$((AFTER[$k] - b)) kB after the attackers left"
    done
}
# closed_within NAME S: each listener closed the attacker of NAME within S s of its flood
closed_within() {
    local l c
    for l in "${LISTENERS[@]}"; do
        c=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[1])["closed_s"])' \
            "$T/$1-$l.out")
        [ "$c" != None ] || fail "$1: $l never closed the connection of a client that does not read"
        python3 -c "import sys; sys.exit(0 if $c <= $2 else 1)" ||
            fail "$1: $l closed it only $c s after the flood (deadline $2 s)"
    done
}

t0=$SECONDS
# 1. Pipelining for 6 s. Its connections are then frozen (replies unsent, nothing read) until
# the idle limit closes them, 30 s after the last byte moved (at or a little after the flood's
# end, as the server works through what the kernel buffered): the
# body-stall attack runs in that time.
APATH=([admin]=/metrics [gui]=/metrics [worker]=/metrics)
start pipelining http-pipeline --conns 8 --seconds 6 --hold 42
during flooding pipelining
unfollow pipelining
# 2. 100 stalled bodies each: every one closed by 14 s (its body deadline) + 2 s of slack
APATH=([admin]=/api/v1/feeds [gui]=/api/v1/feeds [worker]=/metrics)
start body-stall body-stall --n 100 --length 262144 --hold 20
during running body-stall
finish body-stall
for l in "${LISTENERS[@]}"; do
    python3 - "$T/body-stall-$l.out" <<'EOF' || fail "body-stall: $l left stalled connections open past their deadline"
import json, sys
r = json.loads(open(sys.argv[1]).read())
sys.exit(0 if r["closed"] == r["connections"] and (r["last_closed_s"] or 99) <= 16 else 1)
EOF
done
follow pipelining
during running pipelining
finish pipelining
closed_within pipelining 36 # the idle limit (30 s), from a last byte that may follow the flood
# 3. HTTP/2 for 6 s, never read: closed by the same idle limit
APATH=([admin]=/metrics [gui]=/metrics [worker]=/metrics)
start h2 h2-noread --seconds 6 --hold 42
during running h2
finish h2
closed_within h2 36
for l in "${LISTENERS[@]}"; do
    [ "$(good "$l")" = 200 ] || fail "$l: not served after the attacks"
    # pipelining that reads: every one of 1,000 requests sent in one write is answered (the
    # replies pass the 256 KiB pause many times over)
    r=$(python3 "$HOSTILE" http-pipeline-read --port "${PORT[$l]}" --path /metrics --n 1000)
    echo "$l, a pipelining client that reads: $r"
    python3 -c 'import json,sys; r=json.loads(sys.argv[1]); sys.exit(r["answered"] != r["sent"])' "$r" ||
        fail "$l: pipelined requests left unanswered: $r"
done
echo "PASS in $((SECONDS - t0)) s: pipelining, stalled bodies and non-reading HTTP/2 bounded on ndd-admin, ndd-gui-api and a worker's metrics port; others served; memory back"
