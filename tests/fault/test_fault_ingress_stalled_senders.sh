#!/usr/bin/env bash
# ndd-ingress's byte-stream listeners, HV-VES and the TCP copy listener, each against 100
# senders stalled inside a 1 MB frame (each sends a WTP header, or an NDD frame header,
# announcing 1,000,000 bytes and 999,999 of them, then waits), on the real broker
# (docs/ingress.md, "Bounds"):
#   - the listener holds at most max-buffered (64 MiB, the default) of input: past it the
#     connection stalled longest is closed; the RSS grows by at most that plus 16 MiB;
#   - every stalled connection is closed: by that bound or by frame-timeout (4 s here);
#   - a well-behaved sender is served meanwhile (HV-VES: one event every 20 ms; TCP: 2,000
#     acknowledged copies): every record it sent is on the topic (kcat, by id);
#   - after the stalled senders are gone the RSS is back within 16 MiB of where it was.
# And VES over HTTP/1.1 against 300 connections from one address, each sending a request header
# with Content-Length 300,000, 250,000 bytes of the body, then one byte a second (so no idle
# timeout ends them): at most 256 are open at once (the per-client cap: a new connection evicts
# the one part-way through a request longest), every one is closed by its body's deadline
# (frame-timeout plus 1 s per 64 KiB: 8.6 s here) however often its bytes come, a
# well-behaved client gets 202 for every event meanwhile (each on the topic), and the RSS grows
# by at most the cap's input (256 x 256 KiB) plus 16 MiB and comes back within 16 MiB.
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
command -v kcat >/dev/null || fail "kcat is needed to count the events"
command -v ss >/dev/null || fail "ss (iproute2) is needed to watch the connections"
T=$(mktemp -d /tmp/ndd-fault-ingress-hv.XXXXXX)
ING_PID= PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}" $ING_PID; do kill "$p" 2>/dev/null || true; done
    rm -rf "$T"
}
trap cleanup EXIT
TAG=fhv-$$-$RANDOM
TOPIC=$TAG-perf3gpp
free_ports
TCP=$("$SRC/deploy/local/stack.sh" free-ports 1)
start_ingress "$T/ing.log" --frame-timeout 4s --hvves.routes "perf3gpp=$TOPIC" --tcp.port "$TCP" \
    --copy.topic-prefix "$TAG-" --ves.topic-prefix "$TAG-ves."
HOSTILE=$SRC/tests/fault/ingress_hostile.py
rss() { awk '/VmRSS/ {print $2}' "/proc/$ING_PID/status"; }
conns() { ss -Htn state established "( sport = :$1 )" | wc -l; }
# The warm-up events span 10 s each (startEpochMicrosec 10 s before lastEpochMicrosec): the
# travel time is measured from lastEpochMicrosec, as ONAP's HV-VES measures it, so it stays
# far under 10 s.
python3 "$HOSTILE" hv-send --port "$HV" --prefix warm --every 0 --seconds 0.5 --span 10 >"$T/warm" ||
    fail "warm-up sender"
wait_count "$TOPIC" "$(cat "$T/warm")"
tsum=$(metric 'ndd_ingress_message_travel_seconds_sum{transport="hv-ves"}')
tcount=$(metric 'ndd_ingress_message_travel_seconds_count{transport="hv-ves"}')
echo "travel of $tcount events spanning 10 s: $tsum s in all"
awk -v s="$tsum" -v c="$tcount" 'BEGIN { exit !(c > 0 && s / c < 2) }' ||
    fail "travel time measured from startEpochMicrosec: $tsum s over $tcount events"

# stall NAME PORT TRANSPORT [--frame]: 100 stalled senders on PORT while a good sender runs
# (good_NAME starts it in the background, GOOD its pid; count_NAME N waits for its N records
# and prints how many it found), then the bounds, the closes and the RSS.
stall() {
    local name=$1 port=$2 tr=$3
    shift 3
    local before peak=0 held=0 r b
    before=$(rss)
    "good_$name"
    python3 "$HOSTILE" hv-stall --port "$port" --n 100 --size 1000000 --hold 30 "$@" >"$T/stall-$name" &
    local stall_pid=$!
    PIDS+=("$stall_pid")
    while kill -0 "$stall_pid" 2>/dev/null; do
        r=$(rss)
        [ "$r" -gt "$peak" ] && peak=$r
        b=$(metric "ndd_ingress_buffered_input_bytes{transport=\"$tr\"}")
        b=${b%.*}
        [ "${b:-0}" -gt "$held" ] && held=$b
        sleep 0.2
    done
    wait "$stall_pid" || fail "$name: the stalling client failed: $(cat "$T/stall-$name")"
    echo "$name: stalled senders: $(cat "$T/stall-$name")"
    echo "$name: listener held at most $held bytes; RSS before ${before} kB, peak ${peak} kB"
    local closed ev ft
    closed=$(jq -r '.closed + .closed_while_writing' "$T/stall-$name")
    [ "$closed" -eq 100 ] || fail "$name: $closed of 100 stalled connections closed by the server"
    # max-buffered, plus the one read that passed it
    [ "$held" -le $((64 * 1048576 + 65536)) ] || fail "$name: the listener held $held bytes, above max-buffered"
    [ $((peak - before)) -le $((80 * 1024)) ] || fail "$name: RSS grew by $((peak - before)) kB (bound: 64 MiB + 16 MiB)"
    ev=$(metric "ndd_ingress_connections_closed_total{transport=\"$tr\",reason=\"max-buffered\"}")
    ft=$(metric "ndd_ingress_connections_closed_total{transport=\"$tr\",reason=\"frame-timeout\"}")
    echo "$name: closed by max-buffered: ${ev:-0}, by frame-timeout: ${ft:-0}"
    [ "${ft%.*}" -ge 1 ] || fail "$name: no connection closed by the frame timeout"
    wait "$GOOD" || fail "$name: the well-behaved sender failed"
    local n got
    n=$("sent_$name")
    got=$("count_$name" "$n")
    [ "$got" -eq "$n" ] || fail "$name: the well-behaved sender's records: $got of $n on the topic"
    for _ in $(seq 20); do [ "$(conns "$port")" -eq 0 ] && break; sleep 0.25; done
    r=$(rss)
    echo "$name: well-behaved sender: $n records, all on the topic; RSS after ${r} kB"
    [ $((r - before)) -le 16384 ] || fail "$name: RSS did not come back: ${before} kB before, ${r} kB after"
    kill -0 "$ING_PID" || fail "ndd-ingress died"
}

good_hvves() {
    python3 "$HOSTILE" hv-send --port "$HV" --prefix good --every 0.02 --seconds 8 >"$T/good" &
    GOOD=$!
    PIDS+=("$GOOD")
}
sent_hvves() { cat "$T/good"; }
count_hvves() {
    local got=0
    for _ in $(seq 50); do
        got=$({ kcat -b "$BROKER" -C -t "$TOPIC" -e -q -f '%k\n' 2>/dev/null || true; } | grep -ac good- || true)
        [ "$got" -ge "$1" ] && break
        sleep 0.2
    done
    echo "$got"
}
good_tcp() {
    python3 "$SRC/tests/common/frame_sender.py" --port "$TCP" --frames 2000 --per-frame 1 \
        --window 4 --prefix good >"$T/good-tcp" &
    GOOD=$!
    PIDS+=("$GOOD")
}
sent_tcp() { awk '{print $2}' "$T/good-tcp"; }
count_tcp() {
    local got=0
    for _ in $(seq 50); do
        got=$({ kcat -b "$BROKER" -C -t "$TAG-NRF" -e -q -f '%k\n' 2>/dev/null || true; } | grep -c '^good-' || true)
        [ "$got" -ge "$1" ] && break
        sleep 0.2
    done
    echo "$got"
}

# ves_trickle: 300 VES HTTP/1.1 connections trickling their bodies while a good client posts.
ves_trickle() {
    local before peak=0 most=0 r c goods="" n=0 s
    before=$(rss)
    python3 "$HOSTILE" body-trickle --port "$VES" --path /eventListener/v7 --n 300 \
        --length 300000 --first 250000 --every 1 --hold 40 >"$T/trickle" &
    local tp=$!
    PIDS+=("$tp")
    while kill -0 "$tp" 2>/dev/null; do
        r=$(rss)
        [ "$r" -gt "$peak" ] && peak=$r
        c=$(conns "$VES")
        [ "$c" -gt "$most" ] && most=$c
        n=$((n + 1))
        goods+=" $(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H 'Content-Type: application/json' \
            -d "{\"event\":$(ves_event fault good "good-$n")}" "http://127.0.0.1:$VES/eventListener/v7" || true)"
        sleep 0.3
    done
    wait "$tp" || fail "ves: the trickling client failed: $(cat "$T/trickle")"
    echo "ves: trickling connections: $(cat "$T/trickle")"
    echo "ves: at most $most open at once; RSS before ${before} kB, peak ${peak} kB; good client:$goods"
    [ "$(jq -r .closed "$T/trickle")" -eq 300 ] || fail "ves: not every trickling connection was closed"
    [ "$most" -le 257 ] || fail "ves: $most connections open at once, over the per-client cap of 256"
    # the last opened at about 2 s, its deadline 8.6 s later; a margin for a loaded machine
    awk -v l="$(jq -r .last_closed_s "$T/trickle")" 'BEGIN { exit !(l < 20) }' ||
        fail "ves: a trickling connection lived past its body's deadline"
    for s in $goods; do [ "$s" = 202 ] || fail "ves: the well-behaved client got $s among trickling connections"; done
    wait_count "$TAG-ves.fault" "$n"
    [ $((peak - before)) -le $((80 * 1024)) ] || fail "ves: RSS grew by $((peak - before)) kB (bound: 256 x 256 KiB + 16 MiB)"
    for _ in $(seq 20); do [ "$(conns "$VES")" -eq 0 ] && break; sleep 0.25; done
    # The server gives freed input back 1 s after a release (httpd.c, HTTPD_TRIM_DELAY_MS):
    # wait up to 5 s for it rather than read RSS the moment the last connection went.
    for _ in $(seq 20); do
        r=$(rss)
        [ $((r - before)) -le 16384 ] && break
        sleep 0.25
    done
    echo "ves: $n good events, all on the topic; RSS after ${r} kB"
    [ $((r - before)) -le 16384 ] || fail "ves: RSS did not come back: ${before} kB before, ${r} kB after"
    kill -0 "$ING_PID" || fail "ndd-ingress died"
}

stall hvves "$HV" hv-ves
stall tcp "$TCP" tcp-copy --frame
ves_trickle
echo "PASS: 100 stalled HV-VES and TCP copy senders and 300 trickling VES clients bounded and closed, good clients served, memory back"
