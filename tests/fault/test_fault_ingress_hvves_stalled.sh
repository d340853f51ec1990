#!/usr/bin/env bash
# ndd-ingress's HV-VES listener against 100 senders stalled inside a 1 MB frame (each sends a
# WTP header announcing 1,000,000 bytes and 999,999 of them, then waits), on the real broker
# (docs/ingress.md, "Bounds"):
#   - the listener holds at most hvves.max-buffered (64 MiB, the default) of input: past it the
#     connection stalled longest is closed; the RSS grows by at most that plus 16 MiB;
#   - every stalled connection is closed: by that bound or by hvves.frame-timeout (4 s here);
#   - a well-behaved sender (one event every 20 ms) is served meanwhile: every event it sent
#     is on the topic (kcat, by event id);
#   - after the stalled senders are gone the RSS is back within 16 MiB of where it was.
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
start_ingress "$T/ing.log" --hvves.frame-timeout 4s --hvves.routes "perf3gpp=$TOPIC"
HOSTILE=$SRC/tests/fault/ingress_hostile.py
rss() { awk '/VmRSS/ {print $2}' "/proc/$ING_PID/status"; }
conns() { ss -Htn state established "( sport = :$1 )" | wc -l; }
python3 "$HOSTILE" hv-send --port "$HV" --prefix warm --every 0 --seconds 0.5 >"$T/warm" ||
    fail "warm-up sender"
wait_count "$TOPIC" "$(cat "$T/warm")"
before=$(rss)

python3 "$HOSTILE" hv-send --port "$HV" --prefix good --every 0.02 --seconds 12 >"$T/good" &
GOOD=$!
PIDS+=("$GOOD")
python3 "$HOSTILE" hv-stall --port "$HV" --n 100 --size 1000000 --hold 30 >"$T/stall" &
STALL=$!
PIDS+=("$STALL")
peak=0 held=0
while kill -0 "$STALL" 2>/dev/null; do
    r=$(rss)
    [ "$r" -gt "$peak" ] && peak=$r
    b=$(metric ndd_ingress_hvves_buffered_bytes)
    b=${b%.*}
    [ "${b:-0}" -gt "$held" ] && held=$b
    sleep 0.2
done
wait "$STALL" || fail "the stalling client failed: $(cat "$T/stall")"
echo "stalled senders: $(cat "$T/stall")"
echo "listener held at most $held bytes; RSS before ${before} kB, peak ${peak} kB"
closed=$(jq -r '.closed + .closed_while_writing' "$T/stall")
[ "$closed" -eq 100 ] || fail "$closed of 100 stalled connections closed by the server"
[ "$held" -le $((64 * 1048576)) ] || fail "the listener held $held bytes, above hvves.max-buffered"
[ $((peak - before)) -le $((80 * 1024)) ] || fail "RSS grew by $((peak - before)) kB (bound: 64 MiB + 16 MiB)"
ev=$(metric 'ndd_ingress_hvves_closed_total{reason="max-buffered"}')
ft=$(metric 'ndd_ingress_hvves_closed_total{reason="frame-timeout"}')
echo "closed by hvves.max-buffered: ${ev:-0}, by hvves.frame-timeout: ${ft:-0}"
[ "${ft%.*}" -ge 1 ] || fail "no connection closed by the frame timeout"
wait "$GOOD" || fail "the well-behaved sender failed"
n=$(cat "$T/good")
got=0
for _ in $(seq 50); do
    got=$({ kcat -b "$BROKER" -C -t "$TOPIC" -e -q -f '%k\n' 2>/dev/null || true; } | grep -c good- || true)
    [ "$got" -ge "$n" ] && break
    sleep 0.2
done
[ "$got" -eq "$n" ] || fail "the well-behaved sender's events: $got of $n on $TOPIC"
for _ in $(seq 20); do [ "$(conns "$HV")" -eq 0 ] && break; sleep 0.25; done
after=$(rss)
echo "well-behaved sender: $n events, all on the topic; RSS after ${after} kB"
[ $((after - before)) -le 16384 ] || fail "RSS did not come back: ${before} kB before, ${after} kB after"
kill -0 "$ING_PID" || fail "ndd-ingress died"
echo "PASS: 100 stalled HV-VES senders bounded and closed, a good sender served, memory back"
