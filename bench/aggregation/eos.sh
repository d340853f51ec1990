#!/usr/bin/env bash
# The cost of the aggregation's exactly-once (docs/benchmarks.md, "Exactly-once through MAIN"):
# one ndd-aggregation per run, at-least-once or exactly-once (AGG_ARGS), under
# `perf stat -e instructions` (the machine is shared: instructions are the figure that does
# not move with the load), on a backlog or at a steady rate. Prints one JSON line per run:
# copies, CPU-seconds and instructions of the daemon (from the first copy to the last one
# visible on MAIN), and the visible latency: for each copy, when a read_committed reader
# tailing MAIN got it minus its @timestamp-us (set by ndd-nf-sim when it produced the copy),
# p50/p99/max in ms (steady rates only; on a backlog it is the backlog's age).
#
# perf stat gives no instruction count where the CPU has no hardware counters (a VM): then
# "instructions" is null and only CPU-seconds, beside the load average, compare.
#
#   bench/aggregation/eos.sh [--build DIR] [--bootstrap HOST:PORT] --mode alo|eos
#                            (--backlog N | --rate R --duration S) [--transaction-ms MS]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${NDD_BUILD_DIR:-$ROOT/build}
BOOT=${NDD_KAFKA:-127.0.0.1:9092}
MODE="" BACKLOG=0 RATE=0 DURATION=20 TXN_MS=100
while [[ $# -gt 0 ]]; do
    case $1 in
    --build) BUILD=$2; shift 2 ;;
    --bootstrap) BOOT=$2; shift 2 ;;
    --mode) MODE=$2; shift 2 ;;
    --backlog) BACKLOG=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --transaction-ms) TXN_MS=$2; shift 2 ;;
    *) echo "eos: unknown option $1" >&2; exit 2 ;;
    esac
done
[[ $MODE == alo || $MODE == eos ]] || { echo "eos: --mode alo|eos" >&2; exit 2; }
((BACKLOG > 0 || RATE > 0)) || { echo "eos: --backlog N or --rate R" >&2; exit 2; }
command -v perf >/dev/null && command -v kcat >/dev/null && command -v bc >/dev/null ||
    { echo "eos: needs perf, kcat and bc" >&2; exit 1; }
NFSIM=$BUILD/bench/nfsim/ndd-nf-sim
WORK=$(mktemp -d /tmp/ndd-agg-eos-XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
# shellcheck source=bench/steady-lib.sh
. "$ROOT/bench/steady-lib.sh"

p="eos$RANDOM-"
steady_sim create --bootstrap "$BOOT" --count 1 --topic-prefix "$p" --partitions 3 >/dev/null
n=0
((BACKLOG > 0)) && n=$(steady_sim backlog --bootstrap "$BOOT" --count "$BACKLOG" --rate 20000 \
    --topic-prefix "$p" --partitions 3)
eos=false
[[ $MODE == eos ]] && eos=true
perf stat -e instructions -x, -o "$WORK/perf" -- "$BUILD/aggregation/ndd-aggregation" \
    --bootstrap="$BOOT" --nf-type=SCP --topic="${p}SCP" --main-topic="${p}MAIN" \
    --dlq-topic="${p}DLQ" --group="${p}agg" --http.port=-1 --config-topic= --events-topic= \
    --exactly-once=$eos --transaction-ms="$TXN_MS" --log.level=warn >"$WORK/agg.log" 2>&1 &
PERF=$!
PIDS+=("$PERF")
APID=""
for _ in $(seq 50); do
    APID=$(pgrep -P "$PERF" | head -1 || true)
    [[ -n $APID ]] && break
    sleep 0.1
done
[[ -n $APID ]] || { echo "eos: the daemon did not start (see $WORK)" >&2; exit 1; }
for _ in $(seq 100); do
    kcat -L -b "$BOOT" -t "${p}MAIN" 2>/dev/null | grep -q "partition 0," && break
    sleep 0.2
done
# the reader (once the daemon made MAIN): one line per copy, "<arrival us> <@timestamp-us>", read_committed
python3 -u -c '
import signal, subprocess, sys, time
k = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
signal.signal(signal.SIGTERM, lambda *a: (k.kill(), sys.exit(0)))
for line in k.stdout:
    t = time.time_ns() // 1000
    for h in line.decode(errors="replace").strip().split(","):
        if h.startswith("@timestamp-us="):
            print(t, h[14:])
' kcat -C -u -b "$BOOT" -t "${p}MAIN" -o beginning -q -X isolation.level=read_committed \
    -f '%h\n' >"$WORK/arrivals" &
PIDS+=($!)
seen() { wc -l <"$WORK/arrivals"; }
if ((BACKLOG > 0)); then
    c0=0 # the backlog: from the start (the group join is part of it)
    t0=$(date +%s.%N)
    got=$(steady_wait_count $((n + 1)) 0.2 seen)
else
    sleep 8 # join and the first record
    c0=$(steady_cpu_s /proc/$APID)
    t0=$(date +%s.%N)
    n=$(steady_sim run --bootstrap "$BOOT" --rate "$RATE" --duration "$DURATION" \
        --topic-prefix "$p" --partitions 3)
    got=$(steady_wait_count $((n + 1)) 0.2 seen)
fi
t1=$(date +%s.%N)
c1=$(steady_cpu_s /proc/$APID)
kill -TERM "$APID"
wait "$PERF" 2>/dev/null || true
ins=$(awk -F, '/instructions/ && $1 ~ /^[0-9]+$/ {print $1}' "$WORK/perf")
lat=$(awk 'NR > 1 {print ($1 - $2) / 1000}' "$WORK/arrivals" | sort -n |
    awk '{a[NR] = $1} END {if (NR) printf "{\"p50\":%.1f,\"p99\":%.1f,\"max\":%.1f}", a[int(NR*0.5)+1], a[int(NR*0.99)+1], a[NR]; else printf "null"}')
echo "{\"mode\":\"$MODE\",\"transaction_ms\":$TXN_MS,\"backlog\":$BACKLOG,\"rate\":$RATE,\"copies\":$n,\"main\":$((got > 0 ? got - 1 : 0)),$(steady_figures "$n" "$c0" "$c1"),\"instructions\":${ins:-null},\"wall_s\":$(echo "$t1 - $t0" | bc),\"latency_ms\":$lat,\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
((got > n)) || { echo "eos: $((got - 1)) of $n copies visible on MAIN within 60 s (see $WORK)" >&2; exit 1; }
rm -rf "$WORK"
