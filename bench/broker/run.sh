#!/usr/bin/env bash
# The broker's CPU per copy by producer batching and compression (the broker is most of the
# whole system's CPU per copy). For each configuration: ndd-nf-sim produces 3,400-byte SCP
# copies (4 per transaction) into a topic of --partitions partitions (3 by default) at RATE
# for DURATION seconds with the configuration's librdkafka producer properties (librdkafka
# 2.0.2 sends each partition's batch as a request of its own, so the partition count weighs
# like the batching), while a kcat group consumer follows the topic with the
# configuration's consumer properties; the broker's CPU is utime + stime of its JVM from
# /proc over the run. With --relay the copies cross the broker twice, as in NDD: librdkafka
# alone in the aggregation's place (`ndd-kafka-baseline --mode relay`, the
# configuration's producer properties on its producer and consumer properties on its
# consumer) relays the NF topic to a second topic, which kcat follows instead; each line then
# also gives the whole system's copies per CPU-second with librdkafka alone in NDD's place
# (broker + relay + the follower, "follower_cpu_s"): the ceiling for the same figure of NDD
# (broker + NDD's daemons). --latency (implies --relay): the relay keeps the headers (MAIN in the header
# form) and ndd-travel follows MAIN in kcat's place, so each line also gives the copies' travel
# from the NF's timestamp to MAIN (avg, p99): what the broker and librdkafka alone take for the
# first of NDD's two hops. A warm-up run first (the JVM compiles its hot paths during the first
# minute of load: the first runs cost up to 3x more), then ROUNDS rounds of all
# configurations, alternating.
#
#   bench/broker/run.sh --stack-dir D [--build DIR] [--rate N] [--duration S] [--rounds R]
#                       [--warmup S (20)] [--partitions N (3)] [--relay] [--latency]
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
RELAY=0 LATENCY=0
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
    --relay) RELAY=1; shift ;;
    --latency) RELAY=1; LATENCY=1; shift ;;
    --table) TABLE=$2; TABLE_TITLE=${3:?--table FILE TITLE}; shift 3 ;;
    *) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
# median_table RUNS TITLE [FIELD [WHAT]]: the table of medians of FIELD (broker_us_per_copy by
# default; WHAT names it in the header) in a file of run lines ("LABEL<TAB>FIELD=N ..."), a row
# per label in the order they first appear.
median_table() {
    local field=${3:-broker_us_per_copy} what=${4:-broker µs per copy}
    echo "| $2 | $what, median | runs |"
    echo "|---|---|---|"
    awk -F'\t' -v f="$field" 'NF >= 2 && match($2, "(^| )" f "=[0-9.]+") {
            x = substr($2, RSTART, RLENGTH); sub(/.*=/, "", x)
            if (!(($1) in n)) order[++k] = $1; v[$1, ++n[$1]] = x + 0 }
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
RELAYBIN=$BUILD/bench/baseline/ndd-kafka-baseline
OFFSETS=$BUILD/bench/probes/ndd-offsets
TRAVEL=$BUILD/bench/probes/ndd-travel
for b in "$SIM" "$RELAYBIN" "$OFFSETS" "$TRAVEL"; do
    [[ -x $b ]] || { echo "no $b (build first)" >&2; exit 2; }
done
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
KC="" RP=""
# Each kill may find its process gone: '|| true', or errexit would end the trap before the rest.
trap '[[ -n $KC ]] && kill $KC 2>/dev/null || true; [[ -n $RP ]] && kill $RP 2>/dev/null || true; rm -rf "$W"' EXIT
# shellcheck source=bench/steady-lib.sh
. "$ROOT/bench/steady-lib.sh" # steady_wait_count
# main_records TOPIC: the records TOPIC holds (nothing when the broker did not answer).
main_records() {
    "$OFFSETS" --bootstrap "$NDD_KAFKA" --topic "$1" 2>/dev/null | grep -o '"records":[0-9]*' | head -1 | cut -d: -f2
}
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
    "$SIM" --bootstrap "$NDD_KAFKA" --topic-prefix "$t-" --partitions "$PARTS" --count 4 --size 3400 \
        --copies 4 --quiet >/dev/null 2>&1
    local follow=$t-SCP rargs=()
    if ((RELAY)); then
        follow=$t-MAIN
        for p in "${pp[@]}"; do [[ -n $p ]] && rargs+=(--prop "producer.$p"); done
        for p in "${cp[@]}"; do [[ -n $p ]] && rargs+=(--prop "consumer.$p"); done
        # Makes MAIN like the NF topic; never reaches its count: stopped (SIGTERM) once measured.
        ((LATENCY)) && rargs+=(--keep-headers)
        "$RELAYBIN" --mode relay --bootstrap "$NDD_KAFKA" --topic "$t-SCP" --to "$t-MAIN" \
            --count 1000000000 --timeout 3600 "${rargs[@]}" >"$W/relay.json" 2>"$W/relay.err" &
        RP=$!
        local i
        for i in $(seq 100); do # kcat's group consumer leaves when its topic is missing
            kcat -b "$NDD_KAFKA" -L -t "$follow" 2>/dev/null | grep -q 'with [1-9][0-9]* partitions:$' && break
            kill -0 "$RP" 2>/dev/null || break
            sleep 0.1
        done
    fi
    if ((LATENCY)); then
        "$TRAVEL" --bootstrap "$NDD_KAFKA" --topic "$follow" --group "g$t" --duration 3600 --quiet \
            >"$W/travel.json" 2>"$W/travel.err" &
    else
        kcat -b "$NDD_KAFKA" -G "g$t" "$follow" -q -f '' "${kargs[@]}" >/dev/null 2>&1 &
    fi
    KC=$!
    sleep 4 # joined and caught up
    if [[ -n $RP ]] && ! kill -0 "$RP" 2>/dev/null; then
        echo "the relay stopped:" >&2
        cat "$W/relay.err" >&2
        exit 1
    fi
    local b0 k0 r0=0
    b0=$(cpu "$KPID")
    k0=$(cpu "$KC")
    [[ -n $RP ]] && r0=$(cpu "$RP")
    "$SIM" --bootstrap "$NDD_KAFKA" --topic-prefix "$t-" --rate "$rate" --duration "$dur" --size 3400 \
        --copies 4 --quiet "${sargs[@]}" >"$W/sim.json" 2>"$W/sim.err" || { cat "$W/sim.err" >&2; exit 1; }
    local n b1 k1 r1=0
    n=$(sed -n 's/.*"acked":\([0-9]*\).*/\1/p' "$W/sim.json")
    if ((RELAY)); then
        # Every copy relayed (with the 4 that made the topic) before the CPU is read.
        local got
        got=$(steady_wait_count $((n + 4)) 0.5 main_records "$t-MAIN")
        ((got >= n + 4)) || { echo "the relay left $t-MAIN at $got of $((n + 4)) copies" >&2; exit 1; }
    fi
    sleep 3 # the consumer reads the tail
    b1=$(cpu "$KPID")
    k1=$(cpu "$KC")
    [[ -n $RP ]] && r1=$(cpu "$RP")
    kill "$KC"
    wait "$KC" 2>/dev/null || true
    KC=""
    if [[ -n $RP ]]; then
        kill "$RP"
        wait "$RP" 2>/dev/null || true
        RP=""
    fi
    local travel=""
    if ((LATENCY)); then
        travel=$(python3 - "$W/travel.json" "$follow" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["topics"][sys.argv[2]]
print("travel_avg_ms=%.1f travel_p99_ms=%.1f travel_records=%d" % (t["avg_ms"], t["p99_ms"], t["records"]))
PY
        ) || { echo "ndd-travel gave no figure:" >&2; cat "$W/travel.err" >&2; exit 1; }
    fi
    awk -v l="$label" -v n="$n" -v b0="$b0" -v b1="$b1" -v k0="$k0" -v k1="$k1" -v r0="$r0" \
        -v r1="$r1" -v relay="$RELAY" -v travel="$travel" -v topic="$t" -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
        printf "%s\tbroker_us_per_copy=%.1f broker_cpu_s=%.2f copies=%d follower_cpu_s=%.2f", l,
            (b1 - b0) * 1e6 / n, b1 - b0, n, k1 - k0
        if (relay)
            printf " relay_cpu_s=%.2f whole_per_cpu_s=%.0f", r1 - r0, n / (b1 - b0 + r1 - r0 + k1 - k0)
        if (travel != "")
            printf " %s", travel
        printf " load=%s topic=%s\n", load, topic }'
}

echo "broker CPU per copy: $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), rate $RATE/s for $DURATION s, $PARTS partitions (topics brk$$-*-SCP$( ((RELAY)) && echo ", relayed to brk$$-*-MAIN")), $ROUNDS rounds; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
run warm-up "" "fetch.wait.max.ms=100" "$RATE" "$WARMUP" >/dev/null
for r in $(seq "$ROUNDS"); do
    for c in "${CONFIGS[@]}"; do
        IFS='|' read -r label pprops cprops <<<"$c"
        run "$label" "$pprops" "$cprops" "$RATE" "$DURATION" | tee -a "$W/runs"
    done
done
echo
median_table "$W/runs" "producer, consumer"
if ((RELAY)); then
    echo
    median_table "$W/runs" "producer, consumer" whole_per_cpu_s \
        "whole system (broker + relay + $( ((LATENCY)) && echo ndd-travel || echo kcat)) copies per CPU-s"
fi
if ((LATENCY)); then
    echo
    median_table "$W/runs" "producer, consumer" travel_p99_ms "NF -> MAIN p99 ms"
fi
