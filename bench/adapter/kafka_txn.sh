#!/usr/bin/env bash
# The cost of exactly once on a kafka feed (docs/kafka-feed.md, "Guarantees"): the same backlog
# of N copies (~1,000 bytes) drained by one kafka feed (MAIN-like source -> feed topic, frame
# encoding, batch_max 32) with kafka.exactly_once false (at-least-once, idempotent producer)
# and true (transactions with the offsets), one after the other in the same run.
#
#   bench/adapter/kafka_txn.sh [--build DIR] [--bootstrap HOST:PORT] [--count N]
#
# Per mode, one JSON line: delivered (records acknowledged by the target cluster), cpu_s
# (utime+stime of ndd-adapter, from /proc), msgs_per_cpu_s, wall_s (adapter start to the last
# record; the machine's load counts here, cpu_s is the figure to compare), transactions
# committed, and the mean commit wait (ndd_adapter_kafka_transactions_commit_seconds). Needs
# ndd-adapter and ndd-nf-sim in the build and a broker (deploy/local/stack.sh start). Port 27890.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${NDD_BUILD_DIR:-$ROOT/build}
BOOT=${NDD_KAFKA:-127.0.0.1:9092}
COUNT=20000
while [[ $# -gt 0 ]]; do
    case $1 in
    --build) BUILD=$2; shift 2 ;;
    --bootstrap) BOOT=$2; shift 2 ;;
    --count) COUNT=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
ADAPTER=$BUILD/adapter/ndd-adapter
NFSIM=$BUILD/bench/nfsim/ndd-nf-sim
for b in "$ADAPTER" "$NFSIM"; do [[ -x $b ]] || { echo "missing $b" >&2; exit 1; }; done

WORK=$(mktemp -d /tmp/ndd-bench-kafka-txn-XXXXXX)
APID=
cleanup() { [[ -n $APID ]] && kill "$APID" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT
AM=27890

cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{print ($14+$15)/hz}' "/proc/$1/stat"; }
metric() { # sum of a family's series on the adapter's /metrics
    curl -s "127.0.0.1:$AM/metrics" | awk -v n="$1" '$1 ~ "^"n"({|$)" {s+=$2} END {print s+0}'
}

for mode in false true; do
    prefix="bkt$RANDOM-"
    "$NFSIM" --bootstrap "$BOOT" --count "$COUNT" --size 1000 --nf-mix SCP=1 \
        --topic-prefix "$prefix" --partitions 3 --quiet >"$WORK/src-$mode.json" 2>"$WORK/src-$mode.log"
    # the feed topic (made by the simulator: one record in it before the feed starts)
    "$NFSIM" --bootstrap "$BOOT" --count 1 --size 100 --nf-mix SCP=1 \
        --topic-prefix "${prefix}out-" --partitions 3 --quiet >/dev/null 2>&1
    echo "{\"feeds\":[{\"name\":\"bench-kafka-$mode\",\"source_topic\":\"${prefix}SCP\",\"transport\":\"kafka\",\"encoding\":\"frame\",\"endpoints\":[{\"url\":\"kafka://$BOOT/${prefix}out-SCP\"}],\"delivery\":{\"batch_max\":32,\"max_in_flight\":64},\"kafka\":{\"exactly_once\":$mode}}]}" >"$WORK/feeds-$mode.json"
    start=$(date +%s.%N)
    "$ADAPTER" --bootstrap "$BOOT" --feeds-file "$WORK/feeds-$mode.json" --http.port $AM \
        --log.level warn >"$WORK/adapter-$mode.log" 2>&1 &
    APID=$!
    deadline=$((SECONDS + 300))
    while [[ $(metric ndd_adapter_kafka_messages_produced_total) -lt $COUNT && $SECONDS -lt $deadline ]]; do
        sleep 0.1
    done
    end=$(date +%s.%N)
    sleep 0.3 # the last commit
    n=$(metric ndd_adapter_kafka_messages_produced_total)
    cpu=$(cpu_s $APID)
    txns=$(metric ndd_adapter_kafka_transactions_committed_total)
    csum=$(metric ndd_adapter_kafka_transactions_commit_seconds_sum)
    ccnt=$(metric ndd_adapter_kafka_transactions_commit_seconds_count)
    kill $APID
    wait $APID 2>/dev/null || true
    APID=
    awk -v m="$mode" -v n="$n" -v c="$cpu" -v a="$start" -v b="$end" -v t="$txns" -v s="$csum" -v k="$ccnt" \
        'BEGIN {printf "{\"exactly_once\":%s,\"delivered\":%d,\"cpu_s\":%.2f,\"msgs_per_cpu_s\":%.0f,\"wall_s\":%.2f,\"transactions\":%d,\"records_per_txn\":%.0f,\"commit_ms_mean\":%.1f}\n",
                m, n, c, (c > 0 ? n / c : 0), b - a, t, (t > 0 ? n / t : 0), (k > 0 ? 1000 * s / k : 0)}'
done
echo "logs in $WORK" >&2
