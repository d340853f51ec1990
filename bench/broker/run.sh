#!/usr/bin/env bash
# The broker's CPU per copy by producer batching and compression (issue 12: "the broker's cost
# per copy cut as much as NDD's"). For each configuration: ndd-nf-sim produces 3,400-byte SCP
# copies (4 per transaction, 3 partitions) at RATE for DURATION seconds with the configuration's
# librdkafka producer properties, while a kcat group consumer follows the topic with the
# configuration's consumer properties; the broker's CPU is utime + stime of its JVM from
# /proc over the run. A warm-up run first (the JVM compiles its hot paths during the first
# minute of load: the first runs cost up to 3x more), then ROUNDS rounds of all
# configurations, alternating.
#
#   bench/broker/run.sh --stack-dir D [--build DIR] [--rate N] [--duration S] [--rounds R]
#                       [--warmup S (20)]
#                       [--config 'LABEL|producer k=v,...|consumer k=v,...']...
#
# D is a running deploy/local/stack.sh stack (its env and kafka/kafka.pid), used by nobody
# else during the run (another client's load is counted as this run's). Prints one line per
# run and a table of medians. Needs kcat.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${NDD_BUILD_DIR:-$ROOT/build}
STACK=""
RATE=10000
DURATION=10
ROUNDS=2
WARMUP=20
CONFIGS=()
while [[ $# -gt 0 ]]; do
    case $1 in
    --stack-dir) STACK=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --config) CONFIGS+=("$2"); shift 2 ;;
    *) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
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
    "$SIM" --bootstrap "$NDD_KAFKA" --topic-prefix "$t-" --partitions 3 --count 100 --size 3400 \
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

echo "broker CPU per copy: $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), rate $RATE/s for $DURATION s, $ROUNDS rounds; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
run warm-up "" "fetch.wait.max.ms=100" "$RATE" "$WARMUP" >/dev/null
for r in $(seq "$ROUNDS"); do
    for c in "${CONFIGS[@]}"; do
        IFS='|' read -r label pprops cprops <<<"$c"
        run "$label" "$pprops" "$cprops" "$RATE" "$DURATION" | tee -a "$W/runs"
    done
done
echo
echo "| producer, consumer | broker µs per copy (median of $ROUNDS) | runs |"
echo "|---|---|---|"
for c in "${CONFIGS[@]}"; do
    IFS='|' read -r label _ _ <<<"$c"
    vals=$(awk -F'\t' -v l="$label" '$1 == l { split($2, a, "[= ]"); print a[2] }' "$W/runs" | sort -n)
    awk -v l="$label" -v all="$(echo $vals | sed 's/ / \/ /g')" '{ v[NR] = $1 }
        END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
              printf "| %s | %.1f | %s |\n", l, m, all }' <<<"$vals"
done
