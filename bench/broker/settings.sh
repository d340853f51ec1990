#!/usr/bin/env bash
# The broker's own settings by measurement (so that the local stack's and the chart's are
# chosen by a figure): for each variant (JVM garbage collector, network and
# I/O thread counts) a fresh private local stack (Kafka only) starts with it, and
# bench/broker/run.sh measures the broker's CPU per copy there with NDD's producer default and
# with lz4 + linger.ms 20, after a warm-up for the JIT (even after 150 s of load the first
# round cost up to 1.6x the second: compare rounds, not single runs). With --passes above 1
# the variants alternate, so that a slow minute of the machine does not land on one only.
#
#   bench/broker/settings.sh [--build DIR] [--passes 1] [--rounds 2] [--warmup S (150)]
#                            [--partitions N (3)] [--rate N (10000)] [--duration S (10)]
#                            [--variant 'LABEL|GC flags|k=v,...']...
#
# Without --variant: the local stack's settings (G1, 2 network and 4 I/O threads), G1 with one
# thread of each, Parallel GC, and Serial GC with 1 network and 2 I/O threads. Each variant is
# checked in effect before it is measured (its GC flags on the broker's command line, its
# properties the last of their keys in server.properties); one that is not fails the run.
# Prints every run's line and a table of medians per variant and producer configuration
# (bench/broker/run.sh --table).
# Needs kcat.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${NDD_BUILD_DIR:-$ROOT/build}
PASSES=1 ROUNDS=2 WARMUP=150 PARTS=3 RATE=10000 DURATION=10
VARIANTS=()
while [[ $# -gt 0 ]]; do
    case $1 in
    --build) BUILD=$2; shift 2 ;;
    --passes) PASSES=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --partitions) PARTS=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --variant) VARIANTS+=("$2"); shift 2 ;;
    *) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
if [[ ${#VARIANTS[@]} -eq 0 ]]; then
    VARIANTS=(
        "local stack: G1, 2 network / 4 I/O threads||"
        "G1, 1 / 1 threads||num.network.threads=1,num.io.threads=1"
        "Parallel GC, 2 / 4 threads|-XX:+UseParallelGC|"
        "Serial GC, 1 / 2 threads|-XX:+UseSerialGC|num.network.threads=1,num.io.threads=2"
    )
fi
STACK=""
W=$(mktemp -d /tmp/ndd-bench-broker-settings.XXXXXX)
stack_down() {
    [[ -n $STACK ]] && "$ROOT/deploy/local/stack.sh" destroy --dir "$STACK" >/dev/null 2>&1
    STACK=""
}
trap 'stack_down; rm -rf "$W"' EXIT

# verify_variant LABEL GC-FLAGS: the running broker has the variant's GC flags and properties.
verify_variant() {
    local kpid args f kv k v got
    kpid=$(cat "$STACK/kafka/kafka.pid")
    args=" $(tr '\0' ' ' <"/proc/$kpid/cmdline") "
    for f in $2; do
        [[ $args == *" $f "* ]] || { echo "variant '$1': the broker runs without $f" >&2; exit 1; }
    done
    while IFS= read -r kv; do
        [[ -n $kv ]] || continue
        k=${kv%%=*} v=${kv#*=}
        got=$(awk -v k="$k" 'index($0, k "=") == 1 { v = substr($0, length(k) + 2) } END { print v }' \
            "$STACK/kafka/server.properties")
        [[ $got == "$v" ]] || { echo "variant '$1': $k is '$got' in server.properties, not '$v'" >&2; exit 1; }
    done <"$W/extra.properties"
    echo "variant '$1': broker pid $kpid, GC flags '${2:-the stack default}', properties '$(paste -sd' ' "$W/extra.properties")'"
}

echo "broker settings: $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), $PASSES passes x $ROUNDS rounds, $PARTS partitions; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for pass in $(seq "$PASSES"); do
    for v in "${VARIANTS[@]}"; do
        IFS='|' read -r label gc props <<<"$v"
        tr ',' '\n' <<<"$props" >"$W/extra.properties"
        read -r kp cp sp ap < <("$ROOT/deploy/local/stack.sh" free-ports 4 | xargs)
        STACK=$W/stack
        NDD_KAFKA_JVM_GC=$gc NDD_KAFKA_EXTRA_PROPERTIES=$W/extra.properties \
            "$ROOT/deploy/local/stack.sh" start --dir "$STACK" --kafka-port "$kp" --controller-port "$cp" \
            --ssl-port "$sp" --sasl-port "$ap" --no-pg >/dev/null 2>"$W/stack.err" ||
            { cat "$W/stack.err" >&2; exit 1; }
        verify_variant "$label" "$gc"
        "$ROOT/bench/broker/run.sh" --stack-dir "$STACK" --build "$BUILD" --rounds "$ROUNDS" \
            --warmup "$WARMUP" --partitions "$PARTS" --rate "$RATE" --duration "$DURATION" \
            --config "NDD default (linger.ms 5)||fetch.wait.max.ms=100" \
            --config "lz4, linger.ms 20|compression.type=lz4,linger.ms=20|fetch.wait.max.ms=100" |
            awk -F'\t' -v v="$label" 'NF == 2 { print v " · " $1 "\t" $2; fflush() }' | tee -a "$W/runs"
        stack_down
    done
done
echo
"$ROOT/bench/broker/run.sh" --table "$W/runs" "broker (JVM, threads) · producer"
