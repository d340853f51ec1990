#!/usr/bin/env bash
# ndd-ingress benchmark (docs/benchmarks.md, "Ingress"): h2load for the HTTP/2 copy
# ingest and for VES over HTTP/1.1 (--h1) and HTTP/2, tests/common/frame_sender.py for copies
# in binary frames over TCP, the Python HV-VES client for WTP (4 and 12 producers, the seed's
# peak); every figure from the daemon's own CPU-seconds (/proc/<pid>/stat) and its ack-latency
# histogram (this run's buckets only: the difference of two scrapes). First a same-run
# baseline: librdkafka alone (ndd-kafka-baseline --mode produce) with records like the copies.
#   NDD_KAFKA=host:port [NDD_INGRESS_BIN=path] bench/ingress/run.sh [BUILD_DIR] [N]
# N: requests per run (default 20000). One JSON line per run on stdout. NDD_INGRESS_BIN: the
# daemon of another build (a before/after in one session; the clients stay BUILD_DIR's).
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$SRC/build}
N=${2:-20000}
BROKER=${NDD_KAFKA:?NDD_KAFKA=host:port of a broker}
PY=${NDD_CACHE:-$HOME/.cache/ndd}/ingress-venv/bin/python
T=$(mktemp -d /tmp/ndd-ingress-bench.XXXXXX)
mapfile -t p < <("$SRC/deploy/local/stack.sh" free-ports 5)
H2=${p[0]} VES=${p[1]} HV=${p[2]} HTTP=${p[3]} TCP=${p[4]}
TAG=bench-$$
"${NDD_INGRESS_BIN:-$BUILD/ingress/ndd-ingress}" --bootstrap "$BROKER" --h2.port "$H2" --ves.port "$VES" \
    --hvves.port "$HV" --http.port "$HTTP" --tcp.port "$TCP" --copy.topic-prefix "$TAG-" \
    --ves.topic-prefix "$TAG-ves." --hvves.routes "perf3gpp=$TAG-hv" >"$T/log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$HTTP/readyz" >/dev/null && break; sleep 0.1; done
TCK=$(getconf CLK_TCK)
cpu() { awk -v t="$TCK" '{printf "%.3f", ($14 + $15) / t}' "/proc/$PID/stat"; }
# p50/p99 from the ack histogram's buckets (upper bounds), for one transport, over this run:
# the bucket counts of the scrape after it less those of the scrape before (file $T/m0)
quant() {
    curl -s "http://127.0.0.1:$HTTP/metrics" | awk -v tr="$1" -v q="$2" -v f0="$T/m0" '
        BEGIN { while ((getline l < f0) > 0) { split(l, a, " "); z[a[1]] = a[2] } }
        $1 ~ "^ndd_ingress_message_ack_seconds_bucket\\{transport=\"" tr "\"" {
            match($1, /le="[^"]+"/); le = substr($1, RSTART + 4, RLENGTH - 5); n++; b[n] = le; c[n] = $2 - z[$1] }
        END { tot = c[n]; for (i = 1; i <= n; i++) if (c[i] >= q * tot) { print b[i]; exit } }'
}
run() { # NAME TRANSPORT COMMAND...
    local name=$1 tr=$2
    shift 2
    local c0 t0 c1 t1
    curl -s "http://127.0.0.1:$HTTP/metrics" >"$T/m0"
    c0=$(cpu)
    t0=$(date +%s.%N)
    "$@" >"$T/out" 2>&1 || { cat "$T/out"; exit 1; }
    # until Kafka acknowledged everything (HV-VES clients end before that)
    for _ in $(seq 300); do
        [ "$(curl -s "http://127.0.0.1:$HTTP/metrics" | awk '$1 == "ndd_ingress_messages_in_flight" {print $2}')" = 0 ] && break
        sleep 0.1
    done
    t1=$(date +%s.%N)
    c1=$(cpu)
    local ok
    ok=$(awk '/succeeded/ {print $8}' "$T/out")
    [ -n "$ok" ] || ok=$(grep -o '"frames": [0-9]*' "$T/out" | awk '{print $2}' || true)
    [ -n "$ok" ] || ok=$(awk '/^acked/ {print $2 * R}' R="${RECS_PER_FRAME:-1}" "$T/out")
    local mb
    mb=$(grep -o '"payload_bytes": [0-9]*' "$T/out" | awk '{print $2}' || true)
    awk -v n="$name" -v ok="$ok" -v c="$(echo "$c1 - $c0" | bc)" -v w="$(echo "$t1 - $t0" | bc)" \
        -v p50="$(quant "$tr" 0.5)" -v p99="$(quant "$tr" 0.99)" -v mb="${mb:-0}" 'BEGIN {
        if (c <= 0) c = 0.001
        printf "{\"run\":\"%s\",\"ok\":%d,\"wall_s\":%.2f,\"ingress_cpu_s\":%.2f,\"per_cpu_s\":%d,\"per_s\":%d,\"mb_per_cpu_s\":%.1f,\"p50_le_s\":%s,\"p99_le_s\":%s}\n",
            n, ok, w, c, ok / c, ok / w, mb / 1e6 / c, p50, p99 }'
}
HDRS=(-H 'x-ndd-correlation-id: c-1' -H 'x-ndd-timestamp-us: 1700000000000000'
    -H 'x-ndd-message-type: request' -H 'x-ndd-trigger-point: rx-request' -H 'x-ndd-nf-type: SCP'
    -H 'x-ndd-method: POST' -H 'x-ndd-path: /nnrf-disc/v1/nf-instances' -H 'x-ndd-h-content-type: application/json')
head -c 1000 /dev/zero | tr '\0' 'a' | sed 's/^/{"d":"/; s/$/"}/' >"$T/copy.json"
printf '{"event":{"commonEventHeader":{"domain":"measurement","eventId":"e1","eventName":"m","lastEpochMicrosec":1700000000000000,"priority":"Normal","reportingEntityName":"r1","sequence":1,"sourceName":"src1","startEpochMicrosec":1700000000000000,"version":"4.1","vesEventListenerVersion":"7.2.1"},"measurementFields":{"measurementInterval":60,"measurementFieldsVersion":"4.0"}}}' >"$T/ves.json"
SENDER=(python3 "$SRC/tests/common/frame_sender.py" --port "$TCP")
# warm-up: the idempotent producer's id and the topics' metadata, outside the measured runs
h2load -n 100 -c 1 -m 10 "${HDRS[@]}" -d "$T/copy.json" "http://127.0.0.1:$H2/ndd/v1/copy" >/dev/null 2>&1
h2load --h1 -n 100 -c 1 -H 'content-type: application/json' -d "$T/ves.json" "http://127.0.0.1:$VES/eventListener/v7" >/dev/null 2>&1
"$PY" "$SRC/bench/ingress/hvves_client.py" --port "$HV" --count 10 >/dev/null
"${SENDER[@]}" --frames 2 --per-frame 10 >/dev/null
sleep 1
# same-run baseline: librdkafka alone, records like the copies (1 KB, 8 headers)
"$BUILD/bench/baseline/ndd-kafka-baseline" --mode produce --bootstrap "$BROKER" --topic "$TAG-baseline" \
    --count "$N" --size 1000 --headers 8 | sed 's/^{/{"run":"kafka-baseline",/'
RECS_PER_FRAME=100 run tcp-copy tcp-copy "${SENDER[@]}" --frames $((N / 100)) --per-frame 100 --body-bytes 1000 --window 8
run h2-copy h2-copy h2load -n "$N" -c 4 -m 50 "${HDRS[@]}" -d "$T/copy.json" "http://127.0.0.1:$H2/ndd/v1/copy"
run ves-h1 ves h2load --h1 -n "$N" -c 16 -m 1 -H 'content-type: application/json' -d "$T/ves.json" "http://127.0.0.1:$VES/eventListener/v7"
run ves-h2 ves h2load -n "$N" -c 4 -m 50 -H 'content-type: application/json' -d "$T/ves.json" "http://127.0.0.1:$H2/eventListener/v7"
run hv-ves-4 hv-ves "$PY" "$SRC/bench/ingress/hvves_client.py" --port "$HV" --producers 4 --count $((N / 4)) --payload-bytes 2000
run hv-ves-12 hv-ves "$PY" "$SRC/bench/ingress/hvves_client.py" --port "$HV" --producers 12 --count $((N / 12)) --payload-bytes 2000
