#!/usr/bin/env bash
# Instructions per message of ndd-ingress, counted by callgrind (docs/benchmarks.md, "Ingress"):
# repeatable on a shared machine where CPU-seconds and rates are not. One ndd-ingress under
# valgrind --tool=callgrind --separate-threads=yes, a warm-up, the counters zeroed
# (callgrind_control -z), then N messages from an independent client (h2load, h2load --h1, the
# Python HV-VES client), then a dump. Prints, per thread kind, instructions per message, and
# the event loop's top functions (self cost, callgrind_annotate).
#
#   bench/ingress/ir.sh BUILD_DIR MODE [N]      MODE: h2-copy | ves-h1 | ves-h2 | hv-ves
#
# With NDD_KAFKA=host:port the records go to that broker; without it to librdkafka's
# in-process mock cluster (test.mock.num.brokers=1): no broker needed, but the mock broker's
# thread is then among the librdkafka threads. The event loop's figure is the same either way
# (the thread that parses, validates, produces and answers).
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:?BUILD_DIR}
MODE=${2:?MODE: h2-copy ves-h1 ves-h2 hv-ves}
N=${3:-5000}
TOP=${TOP:-18}
PY=${NDD_CACHE:-$HOME/.cache/ndd}/ingress-venv/bin/python
command -v valgrind >/dev/null && command -v h2load >/dev/null || { echo "needs valgrind, h2load" >&2; exit 2; }
W=$(mktemp -d /tmp/ndd-ingress-ir.XXXXXX)
mapfile -t p < <("$SRC/deploy/local/stack.sh" free-ports 4)
H2=${p[0]} VES=${p[1]} HV=${p[2]} HTTP=${p[3]}
TAG=ir-$$
MOCK=""
if [ -n "${NDD_KAFKA:-}" ]; then KAFKA=(--bootstrap "${NDD_KAFKA//\'/}"); else
    KAFKA=(--bootstrap 127.0.0.1:1 --kafka.test.mock.num.brokers 1)
    MOCK=" + mock broker"
fi
valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$W/cg.out" \
    "$BUILD/ingress/ndd-ingress" "${KAFKA[@]}" --h2.port "$H2" --ves.port "$VES" \
    --hvves.port "$HV" --http.port "$HTTP" --copy.topic-prefix "$TAG-" --log.level warn \
    --ves.topic-prefix "$TAG-ves." --hvves.routes "perf3gpp=$TAG-hv" >"$W/log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; [ -n "${KEEP:-}" ] && cp "$W"/cg.out.1-* "$KEEP"/ ; rm -rf "$W"'  EXIT
for _ in $(seq 300); do curl -sf "http://127.0.0.1:$HTTP/readyz" >/dev/null && break; sleep 0.2; done
HDRS=(-H 'x-ndd-correlation-id: c-1' -H 'x-ndd-timestamp-us: 1700000000000000'
    -H 'x-ndd-message-type: request' -H 'x-ndd-trigger-point: rx-request' -H 'x-ndd-nf-type: SCP'
    -H 'x-ndd-method: POST' -H 'x-ndd-path: /nnrf-disc/v1/nf-instances' -H 'x-ndd-h-content-type: application/json')
head -c 1000 /dev/zero | tr '\0' 'a' | sed 's/^/{"d":"/; s/$/"}/' >"$W/copy.json"
printf '{"event":{"commonEventHeader":{"domain":"measurement","eventId":"e1","eventName":"m","lastEpochMicrosec":1700000000000000,"priority":"Normal","reportingEntityName":"r1","sequence":1,"sourceName":"src1","startEpochMicrosec":1700000000000000,"version":"4.1","vesEventListenerVersion":"7.2.1"},"measurementFields":{"measurementInterval":60,"measurementFieldsVersion":"4.0"}}}' >"$W/ves.json"
load() { # COUNT
    case $MODE in
    h2-copy) h2load -n "$1" -c 4 -m 50 "${HDRS[@]}" -d "$W/copy.json" "http://127.0.0.1:$H2/ndd/v1/copy" ;;
    ves-h1) h2load --h1 -n "$1" -c 16 -m 1 -H 'content-type: application/json' -d "$W/ves.json" "http://127.0.0.1:$VES/eventListener/v7" ;;
    ves-h2) h2load -n "$1" -c 4 -m 50 -H 'content-type: application/json' -d "$W/ves.json" "http://127.0.0.1:$H2/eventListener/v7" ;;
    hv-ves) "$PY" "$SRC/bench/ingress/hvves_client.py" --port "$HV" --producers 4 --count $(($1 / 4)) --payload-bytes 2000 ;;
    *) echo "unknown mode $MODE" >&2; exit 2 ;;
    esac
}
inflight() { curl -s "http://127.0.0.1:$HTTP/metrics" | awk '$1 == "ndd_ingress_messages_in_flight" {print $2}'; }
settle() { for _ in $(seq 600); do [ "$(inflight)" = 0 ] && return; sleep 0.1; done; }
load 200 >"$W/warm" 2>&1
settle
sleep 1
callgrind_control -z "$PID" >/dev/null
load "$N" >"$W/out" 2>&1 || { cat "$W/out"; exit 1; }
settle
callgrind_control -d "$PID" >/dev/null
sleep 1
ok=$(awk '/succeeded/ {print $8}' "$W/out")
[ -n "$ok" ] || ok=$(grep -o '"frames": [0-9]*' "$W/out" | awk '{print $2}')
acked=$(curl -s "http://127.0.0.1:$HTTP/metrics" | awk '$1 ~ /^ndd_ingress_messages_acked_total/ {s += $2} END {print s}')
echo "mode $MODE: $ok messages answered/sent, acked total $acked (warm-up included)"
grep -h 'status codes' "$W/out" || true
# The dump after -z: the last file of each thread (cg.out.<n>-<thread>).
main_file=""
tot=0
for f in "$W"/cg.out.*-*; do
    ir=$(awk '/^summary:/ {print $2}' "$f")
    [ -n "$ir" ] || continue
    # thread 01 is the main thread, the event loop; the others by a function of theirs
    # (librdkafka's own are static, so the mock broker's thread is not told apart from them)
    if [ "${f##*-}" = 01 ]; then kind="event loop"; main_file=$f
    elif grep -q 'server_thread' "$f"; then kind="/metrics (excluded)"; continue
    elif grep -q 'daemon_probe_main' "$f"; then kind="readiness probe"
    else kind="librdkafka$MOCK"; fi
    tot=$((tot + ir))
    awk -v k="$kind" -v f="${f##*/}" -v ir="$ir" -v n="$ok" 'BEGIN { if (ir > 0) printf "  %-24s %-14s %12d Ir  %9.0f Ir/message\n", k, f, ir, ir / n }'
done
awk -v t="$tot" -v n="$ok" -v m="$MOCK" 'BEGIN { printf "all threads but /metrics (librdkafka%s): %.0f Ir/message\n", m, t / n }'
echo "event loop, top functions by self cost:"
callgrind_annotate --auto=no --inclusive=no --threshold=100 "$main_file" 2>/dev/null |
    awk '/^-+$/ {s++; next} s >= 3 && NF && !/\(100\.0%\)|\(99\.[0-9]+%\)/' | head -"$TOP"
