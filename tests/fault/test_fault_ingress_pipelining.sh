#!/usr/bin/env bash
# ndd-ingress against clients that send and never read their answers (docs/ingress.md,
# "Bounds"), on the real broker:
#   - VES over HTTP/1.1: one socket with a 4 KiB receive buffer pipelines `POST
#     /eventListener/v7` (Content-Length 9) for 6 s and never reads. The listener stops reading
#     the connection once 72 KiB of input wait, so the process grows by little; the connection
#     is closed idle-timeout (5 s here) after its answers stopped moving;
#   - HTTP/2: a client that sends requests and PINGs and never reads (h2_slow_reader.py);
#   - meanwhile a well-behaved client gets 202 for every event, and after the hostile clients
#     leave the RSS is back within a few MiB of where it was;
#   - a VES client that pipelines 5 events and then a request announcing a body above max-body
#     gets 202 for each event, in order (each answered from Kafka's delivery report), then
#     ONAP's 413 JSON (SVC2000), not an HTML page.
# Needs NDD_BUILD_DIR and NDD_TEST_KAFKA.
set -euo pipefail
if [[ -z ${NDD_FAULT_TIMED:-} ]]; then
    NDD_FAULT_TIMED=1 exec timeout -k 10 120 bash "$0" "$@"
fi
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
BROKER=${NDD_TEST_KAFKA:?NDD_TEST_KAFKA must name the test broker}
BROKER=${BROKER//\'/}
. "$SRC/tests/common/ingress_e2e.sh"
command -v ss >/dev/null || fail "ss (iproute2) is needed to watch the connections"
command -v jq >/dev/null || fail "jq is needed to read the clients' results"
T=$(mktemp -d /tmp/ndd-fault-ingress-pipe.XXXXXX)
ING_PID= PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}" $ING_PID; do kill "$p" 2>/dev/null || true; done
    rm -rf "$T"
}
trap cleanup EXIT
TAG=fpipe-$$-$RANDOM
free_ports
start_ingress "$T/ing.log" --idle-timeout 5s --ves.topic-prefix "$TAG." --copy.topic-prefix "$TAG-"
rss() { awk '/VmRSS/ {print $2}' "/proc/$ING_PID/status"; }
good() { # one VES event from a well-behaved client: its status
    curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H 'Content-Type: application/json' \
        -d "{\"event\":$(ves_event fault good "$1")}" "http://127.0.0.1:$VES/eventListener/v7" || true
}
# established server-side connections of a port
conns() { ss -Htn state established "( sport = :$1 )" | wc -l; }
for i in 1 2 3; do [ "$(good warm-$i)" = 202 ] || fail "warm-up request not answered 202"; done
before=$(rss)

# flood PORT CMD...: runs the hostile client, samples the RSS and serves a good client each
# 0.5 s meanwhile; sets peak (kB) and goods (statuses of the good client).
flood() {
    local name=$1
    shift
    "$@" >"$T/$name.out" 2>"$T/$name.err" &
    local fp=$!
    PIDS+=("$fp")
    peak=0 goods=""
    local i=0
    while [ ! -s "$T/$name.out" ] && kill -0 "$fp" 2>/dev/null; do
        local r
        r=$(rss)
        [ "$r" -gt "$peak" ] && peak=$r
        i=$((i + 1))
        goods+=" $(good "$name-$i")"
        sleep 0.5
    done
    FLOOD_PID=$fp
}

# ---- VES over HTTP/1.1: the issue's recipe ----
flood h1 python3 "$SRC/tests/fault/ingress_hostile.py" h1-pipeline --port "$VES" --seconds 6 --hold 30
echo "HTTP/1.1 pipelining: $(cat "$T/h1.out"); RSS before ${before} kB, peak ${peak} kB; good client:$goods"
for s in $goods; do [ "$s" = 202 ] || fail "the well-behaved client got $s while the pipelining client flooded"; done
[ $((peak - before)) -lt 16384 ] || fail "RSS grew by $((peak - before)) kB for a client that pipelines and never reads"
# The hostile client still holds its socket: the server closes it idle-timeout after the
# answers stopped moving (5 s, plus the sweep and a margin).
t0=$(date +%s.%N)
for _ in $(seq 60); do [ "$(conns "$VES")" -eq 0 ] && break; sleep 0.25; done
[ "$(conns "$VES")" -eq 0 ] || fail "the pipelining connection is still open 15 s after it stopped reading"
echo "  its connection closed by the server $(echo "$(date +%s.%N) - $t0" | bc) s after the flood"
kill "$FLOOD_PID" 2>/dev/null || true
wait "$FLOOD_PID" 2>/dev/null || true
h1_after=$(rss)

# ---- HTTP/2: requests and PINGs, never read ----
flood h2 python3 "$SRC/tests/common/h2_slow_reader.py" --port "$H2" --seconds 6
echo "HTTP/2 never reading: $(cat "$T/h2.out") bytes written; RSS peak ${peak} kB; good client:$goods"
for s in $goods; do [ "$s" = 202 ] || fail "the well-behaved client got $s while the HTTP/2 client flooded"; done
[ $((peak - before)) -lt 16384 ] || fail "RSS grew by $((peak - before)) kB for an HTTP/2 client that never reads"
wait "$FLOOD_PID" 2>/dev/null || true
for _ in $(seq 40); do [ "$(conns "$H2")" -eq 0 ] && break; sleep 0.25; done
after=$(rss)
echo "RSS: before ${before} kB, after HTTP/1.1 ${h1_after} kB, after both ${after} kB"
[ $((after - before)) -lt 8192 ] || fail "RSS did not come back: ${before} kB before, ${after} kB after the clients left"
kill -0 "$ING_PID" || fail "ndd-ingress died"
[ "$(good last)" = 202 ] || fail "not served after the floods"
r=$(python3 "$SRC/tests/fault/ingress_hostile.py" ves-pipeline-413 --port "$VES" --n 5)
echo "VES pipelining 5 events then an oversized body: $r"
[ "$(jq -c .statuses <<<"$r")" = "[202,202,202,202,202,413]" ] || fail "pipelined VES answers: $r"
[ "$(jq -r .onap_413 <<<"$r")" = true ] || fail "the 413 behind pipelined requests is not ONAP's JSON: $r"
echo "PASS: pipelining and non-reading clients bounded, others served, memory back, ONAP's 413 behind pipelined answers"
