#!/usr/bin/env bash
# The broker's CPU per copy by producer batching and compression (issue 12: "the broker's cost
# per copy cut as much as NDD's"). For each configuration: ndd-nf-sim produces 3,400-byte SCP
# copies (4 per transaction) into a topic of --partitions partitions (3 by default) at RATE
# for DURATION seconds with the configuration's librdkafka producer properties (librdkafka
# 2.0.2 sends each partition's batch as a request of its own, so the partition count weighs
# like the batching), while a kcat group consumer follows the topic with the
# configuration's consumer properties; the broker's CPU is utime + stime of its JVM from
# /proc over the run. A warm-up run first (the JVM compiles its hot paths during the first
# minute of load: the first runs cost up to 3x more), then ROUNDS rounds of all
# configurations, alternating.
#
#   bench/broker/run.sh --stack-dir D [--build DIR] [--rate N] [--duration S] [--rounds R]
#                       [--warmup S (20)] [--partitions N (3)]
#                       [--config 'LABEL|producer k=v,...|consumer k=v,...']...
#   bench/broker/run.sh --table RUNS TITLE
#
# D is a running deploy/local/stack.sh stack (its env and kafka/kafka.pid), used by nobody
# else during the run (another client's load is counted as this run's). Prints one line per
# run and a table of medians. Needs kcat. --table prints only the table of medians of RUNS,
# a file of such run lines (bench/broker/settings.sh gathers them over several stacks).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${NDD_BUILD_DIR:-$ROOT/build}
STACK=""
RATE=10000
DURATION=10
ROUNDS=2
WARMUP=20
PARTS=3
CONFIGS=()
TABLE="" TABLE_TITLE=""
while [[ $# -gt 0 ]]; do
    case $1 in
    --stack-dir) STACK=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --partitions) PARTS=$2; shift 2 ;;
    --config) CONFIGS+=("$2"); shift 2 ;;
    --table) TABLE=$2; TABLE_TITLE=${3:?--table FILE TITLE}; shift 3 ;;
    *) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
# median_table RUNS TITLE: the table of medians of a file of run lines ("LABEL<TAB>
# broker_us_per_copy=N ..."), a row per label in the order they first appear.
median_table() {
    echo "| $2 | broker µs per copy, median | runs |"
    echo "|---|---|---|"
    awk -F'\t' 'NF >= 2 { split($2, a, "[= ]"); if (!(($1) in n)) order[++k] = $1; v[$1, ++n[$1]] = a[2] + 0 }
        END {
            for (i = 1; i <= k; i++) {
                l = order[i]; c = n[l]
                for (x = 2; x <= c; x++) {   # insertion sort of the few runs of one label
                    t = v[l, x]
                    for (y = x - 1; y >= 1 && v[l, y] > t; y--) v[l, y + 1] = v[l, y]
                    v[l, y + 1] = t
                }
                m = c % 2 ? v[l, (c + 1) / 2] : (v[l, c / 2] + v[l, c / 2 + 1]) / 2
                all = v[l, 1]
                for (x = 2; x <= c; x++) all = all " / " v[l, x]
                printf "| %s | %.1f | %s |\n", l, m, all
            }
        }' "$1"
}
if [[ -n $TABLE ]]; then
    median_table "$TABLE" "$TABLE_TITLE"
    exit 0
fi
[[ -n $STACK && -f $STACK/env && -f $STACK/kafka/kafka.pid ]] || { echo "--stack-dir: no running stack there" >&2; exit 2; }
set -a
. "$STACK/env"
set +a
KPID=$(cat "$STACK/kafka/kafka.pid")
[[ -r /proc/$KPID/stat ]] || { echo "the stack's broker (pid $KPID) is not running" >&2; exit 2; }
SIM=$BUILD/bench/nfsim/ndd-nf-sim
[[ -x $SIM ]] || { echo "no $SIM (build first)" >&2; exit 2; }
command -v kcat >/dev/null || { echo "kcat missing" >&2; exit 2; }
if [[ ${#CONFIGS[@]} -eq 0 ]]; then
    CONFIGS=(
        "NDD default (linger.ms 5)||fetch.wait.max.ms=100"
        "linger.ms 20|linger.ms=20|fetch.wait.max.ms=100"
        "lz4, linger.ms 5|compression.type=lz4|fetch.wait.max.ms=100"
        "lz4, linger.ms 10|compression.type=lz4,linger.ms=10|fetch.wait.max.ms=100"
        "lz4, linger.ms 20|compression.type=lz4,linger.ms=20|fetch.wait.max.ms=100"
        "lz4, linger.ms 10, fetch.min.bytes 256 KiB|compression.type=lz4,linger.ms=10|fetch.wait.max.ms=20,fetch.min.bytes=262144"
    )
fi
W=$(mktemp -d /tmp/ndd-bench-broker.XXXXXX)
KC=""
trap '[[ -n $KC ]] && kill $KC 2>/dev/null; rm -rf "$W"' EXIT
TCK=$(getconf CLK_TCK)
cpu() { awk -v t="$TCK" '{printf "%.3f", ($14 + $15) / t}' "/proc/$1/stat"; }

# run LABEL PRODUCER-PROPS CONSUMER-PROPS RATE DURATION: one line, "LABEL<TAB>µs per copy"
run() {
    local label=$1 pprops=$2 cprops=$3 rate=$4 dur=$5 t=brk$$-$RANDOM
    local sargs=() kargs=()
    IFS=, read -ra pp <<<"$pprops"
    for p in "${pp[@]}"; do [[ -n $p ]] && sargs+=(--prop "$p"); done
    IFS=, read -ra cp <<<"$cprops"
    for p in "${cp[@]}"; do [[ -n $p ]] && kargs+=(-X "$p"); done
    "$SIM" --bootstrap "$NDD_KAFKA" --topic-prefix "$t-" --partitions "$PARTS" --count 100 --size 3400 \
        --copies 4 --quiet >/dev/null 2>&1
    kcat -b "$NDD_KAFKA" -G "g$t" "$t-SCP" -q -f '' "${kargs[@]}" >/dev/null 2>&1 &
    KC=$!
    sleep 4 # joined and caught up
    local b0 k0
    b0=$(cpu "$KPID")
    k0=$(cpu "$KC")
    "$SIM" --bootstrap "$NDD_KAFKA" --topic-prefix "$t-" --rate "$rate" --duration "$dur" --size 3400 \
        --copies 4 --quiet "${sargs[@]}" >"$W/sim.json" 2>"$W/sim.err" || { cat "$W/sim.err" >&2; exit 1; }
    sleep 3 # the consumer reads the tail
    local b1 k1 n
    b1=$(cpu "$KPID")
    k1=$(cpu "$KC")
    kill "$KC"
    wait "$KC" 2>/dev/null || true
    KC=""
    n=$(sed -n 's/.*"acked":\([0-9]*\).*/\1/p' "$W/sim.json")
    awk -v l="$label" -v n="$n" -v b0="$b0" -v b1="$b1" -v k0="$k0" -v k1="$k1" \
        -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
        printf "%s\tbroker_us_per_copy=%.1f broker_cpu_s=%.2f copies=%d kcat_cpu_s=%.2f load=%s\n",
            l, (b1 - b0) * 1e6 / n, b1 - b0, n, k1 - k0, load }'
}

echo "broker CPU per copy: $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), rate $RATE/s for $DURATION s, $PARTS partitions (topics brk$$-*-SCP), $ROUNDS rounds; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
run warm-up "" "fetch.wait.max.ms=100" "$RATE" "$WARMUP" >/dev/null
for r in $(seq "$ROUNDS"); do
    for c in "${CONFIGS[@]}"; do
        IFS='|' read -r label pprops cprops <<<"$c"
        run "$label" "$pprops" "$cprops" "$RATE" "$DURATION" | tee -a "$W/runs"
    done
done
echo
median_table "$W/runs" "producer, consumer"
