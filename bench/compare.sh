#!/usr/bin/env bash
# Same-run comparison: on ONE backlog topic, back to back, the adapter in each
# delivery mode, librdkafka alone (the consume baseline) and h2load, all against one ndd-sink;
# then the aggregation beside its produce-only baseline. Prints per CPU-second figures, each
# adapter mode's ratio to the consume baseline, and the machine (CPU model, cores, load).
#
#   bench/compare.sh [--build DIR] [--bootstrap HOST:PORT] [--count N] [--modes LIST]
#                    [--agg-count N] [--no-aggregation] [--callgrind N]
#                    [--main-format headers|frame] [--h2c-in-flight N] [--rounds N]
#                    [--topic T]
#   bench/run.sh --profile compare [--build DIR] ...   (the same, started a stack if needed)
#
# Modes: h2c (one copy per HTTP/2 request), h2c-batch (batch_max 64), tcp (binary frames,
# up to 16 per frame, acked), tls (the same over TLS), baseline (ndd-kafka-baseline consume),
# forward (ndd-kafka-baseline forward: the consume baseline writing every value to a TCP
# socket on loopback, 64 per writev, no framing and no acks: the least a forwarder to a socket
# pays, so its ratio to the consume baseline bounds what the tcp mode's can be),
# h2load (h2load -m 128 POSTing 3,400-byte bodies to the same sink, h2c and TLS).
# Each adapter mode is a fresh consumer group reading the same topic from the beginning; its
# CPU is utime+stime of the whole ndd-adapter process (start, join, drain) until the sink side
# acknowledged every copy, read from /proc (insensitive to waiting for a CPU, unlike rates per
# wall second). The consume baseline counts from its first record (no join), so the ratio is
# slightly in the baseline's favour.
# --main-format frame: the adapter reads MAIN as ndd-aggregation writes it with main-format
# frame (docs/message-format.md): the backlog is passed through ndd-aggregation first, and
# every mode (the consume baseline too) reads that topic. Default headers: the backlog as the
# simulator wrote it, the header form every NF topic has.
# --h2c-in-flight N: requests in flight of the h2c one-per-request mode (default 128; ndd-sink
# allows 1,000 streams, a real endpoint usually 100-256, and the adapter takes the smaller).
# --rounds N: every mode N times on the same backlog, the modes alternating within a round
# (a fresh consumer group each time), then per mode the N figures, their median and the median
# of its per-round ratio to that round's consume baseline: one run on a shared VM moves by
# 10-20 % from the next, so a single figure does not reproduce. Default 1 (one table, as before).
# --topic T: drain the existing topic T (at least --count copies of 3,400 B, e.g. the backlog
# of an earlier run, named in its output) instead of producing a new backlog: repeated runs
# then neither wait for nor load the broker with the production.
# --callgrind N additionally runs each adapter mode under valgrind --tool=callgrind on the
# first N copies of the topic and prints instructions per copy (repeatable on a loaded
# machine; the figure includes start-up, divided over N).
# Needs a Release build (cmake -DCMAKE_BUILD_TYPE=Release), a broker (deploy/local/stack.sh),
# h2load and openssl. Ports come from deploy/local/stack.sh free-ports.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${NDD_BUILD_DIR:-$ROOT/build}
BOOT=${NDD_KAFKA:-127.0.0.1:9092}
COUNT=100000
AGG_COUNT=""
MODES="h2c,h2c-batch,tcp,tls,baseline,forward,h2load"
AGG=1
CALLGRIND=0
MAIN_FORMAT=headers
H2C_IN_FLIGHT=128
ROUNDS=1
REUSE_TOPIC=""
while [[ $# -gt 0 ]]; do
    case $1 in
    --build) BUILD=$2; shift 2 ;;
    --bootstrap) BOOT=$2; shift 2 ;;
    --count) COUNT=$2; shift 2 ;;
    --agg-count) AGG_COUNT=$2; shift 2 ;;
    --modes) MODES=$2; shift 2 ;;
    --no-aggregation) AGG=0; shift ;;
    --callgrind) CALLGRIND=$2; shift 2 ;;
    --main-format) MAIN_FORMAT=$2; shift 2 ;;
    --h2c-in-flight) H2C_IN_FLIGHT=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --topic) REUSE_TOPIC=$2; shift 2 ;;
    -h | --help) sed -n '2,41p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare: unknown option $1" >&2; exit 2 ;;
    esac
done
AGG_COUNT=${AGG_COUNT:-$((COUNT * 2))}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "compare: --rounds wants a positive integer" >&2; exit 2; }
ADAPTER=$BUILD/adapter/ndd-adapter
SINK=$BUILD/bench/sink/ndd-sink
NFSIM=$BUILD/bench/nfsim/ndd-nf-sim
BASE=$BUILD/bench/baseline/ndd-kafka-baseline
BAGG=$BUILD/bench/aggregation/ndd-bench-aggregation
for b in "$ADAPTER" "$SINK" "$NFSIM" "$BASE"; do [[ -x $b ]] || { echo "missing $b" >&2; exit 1; }; done

WORK=$(mktemp -d /tmp/ndd-compare-XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

cpu_model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
echo "machine: ${cpu_model:-unknown CPU}, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "build: $BUILD ($(awk -F= '/^CMAKE_BUILD_TYPE/ {print $2}' "$BUILD/CMakeCache.txt" 2>/dev/null))"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
read -r H2 H2TLS TCP TLSP SM AM < <("$ROOT/deploy/local/stack.sh" free-ports 6 | tr '\n' ' ') || true
"$SINK" --h2-port "$H2" --h2tls-port "$H2TLS" --tcp-port "$TCP" --tls-port "$TLSP" \
    --metrics-port "$SM" --cert "$WORK/cert.pem" --key "$WORK/key.pem" >"$WORK/sink.log" 2>&1 &
PIDS+=($!)
sleep 0.5

cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{print ($14+$15)/hz}' "/proc/$1/stat"; }
# user and kernel CPU seconds apart: a copy's HTTP/2 and Kafka work is user time, its socket
# writes and reads kernel time, and they call for different fixes.
cpu_us() { awk -v hz="$(getconf CLK_TCK)" '{printf "\"user_s\":%s,\"sys_s\":%s", $14/hz, $15/hz}' "/proc/$1/stat"; }
hwm_mib() { awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
acked() {
    curl -s "127.0.0.1:$AM/metrics" | awk '/^ndd_adapter_messages_acked_total/ {s+=$2} END {print s+0}'
}
per() { awk -v n="$1" -v c="$2" 'BEGIN {printf "%.0f", (c > 0 ? n / c : 0)}'; }

prefix="cmp$RANDOM-"
TOPIC="${prefix}SCP"
if [[ -n $REUSE_TOPIC ]]; then
    TOPIC=$REUSE_TOPIC
    echo "backlog: the first $COUNT copies of the existing topic $TOPIC"
else
    echo "backlog: $COUNT copies of 3,400 B on $TOPIC (3 partitions)"
    "$NFSIM" --bootstrap "$BOOT" --count "$COUNT" --size 3400 --nf-mix SCP=1 \
        --topic-prefix "$prefix" --partitions 3 --quiet >"$WORK/nfsim.json" 2>"$WORK/nfsim.log"
fi
if [[ $MAIN_FORMAT != headers && -z $REUSE_TOPIC ]]; then
    GP=$("$ROOT/deploy/local/stack.sh" free-ports 1)
    "$BUILD/aggregation/ndd-aggregation" --bootstrap "$BOOT" --nf-type SCP --topic "$TOPIC" \
        --main-topic "${prefix}MAIN" --dlq-topic "${prefix}DLQ" --group "${prefix}agg" \
        --config-topic= --events-topic= --http.port "$GP" --main-format "$MAIN_FORMAT" \
        --log.level warn >"$WORK/aggregation.log" 2>&1 &
    GPID=$!
    PIDS+=($GPID)
    produced() {
        curl -s "127.0.0.1:$GP/metrics" |
            awk '/^ndd_aggregation_messages_produced_total/ {s+=$2} END {print s+0}'
    }
    deadline=$((SECONDS + 300))
    while [[ $(produced) -lt $COUNT && $SECONDS -lt $deadline ]]; do sleep 0.2; done
    echo "backlog: $(produced) copies through ndd-aggregation (main-format $MAIN_FORMAT) on ${prefix}MAIN"
    kill $GPID
    wait $GPID 2>/dev/null || true
    TOPIC="${prefix}MAIN"
fi

feed_json() { # name transport encoding url delivery extra
    echo "{\"feeds\":[{\"name\":\"$1\",\"source_topic\":\"$TOPIC\",\"transport\":\"$2\",\"encoding\":\"$3\",\"endpoints\":[{\"url\":\"$4\"}],\"delivery\":{$5}$6}]}"
}
mode_feed() { # mode -> feeds file
    local tlsca=",\"tls\":{\"ca_file\":\"$WORK/cert.pem\"}"
    case $1 in
    h2c) feed_json "cmp-$1-$RANDOM" http2 json "http://127.0.0.1:$H2/ingest" "\"max_in_flight\":$H2C_IN_FLIGHT" '' ;;
    h2c-batch) feed_json "cmp-$1-$RANDOM" http2 json "http://127.0.0.1:$H2/ingest" '"max_in_flight":32,"batch_max":64' '' ;;
    tcp) feed_json "cmp-$1-$RANDOM" tcp frame "tcp://127.0.0.1:$TCP" '"max_in_flight":128' '' ;;
    tls) feed_json "cmp-$1-$RANDOM" tls frame "tls://127.0.0.1:$TLSP" '"max_in_flight":128' "$tlsca" ;;
    esac
}

declare -A PER
declare -A ALL   # mode -> the per-round figures, space-separated
declare -A RATIOS # mode -> the per-round ratios to that round's baseline
ROWS=()
row() { ROWS+=("$(printf '%-12s %10s %8s %8s %14s %8s' "$@")"); }
print_table() {
    printf '%-12s %10s %8s %8s %14s %8s %s\n' mode copies cpu_s wall_s per_cpu_s rss_mib "ratio to baseline"
    for r in "${ROWS[@]}"; do
        m=${r%% *}
        ratio=""
        if [[ -n ${PER[baseline]:-} && ${PER[baseline]} -gt 0 && -n ${PER[$m]:-} ]]; then
            ratio=$(awk -v a="${PER[$m]}" -v b="${PER[baseline]}" 'BEGIN {printf "%.2f", a / b}')
            RATIOS[$m]+="$ratio "
        fi
        echo "$r $ratio"
    done
}
median() { # values format
    tr ' ' '\n' <<<"$1" | awk 'NF' | sort -g | awk -v f="$2" '{v[NR] = $1}
        END {if (NR) printf f "\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
             else print "-"}'
}
for round in $(seq 1 "$ROUNDS"); do
    ((ROUNDS > 1)) && echo "round $round of $ROUNDS"
    ROWS=()
    PER=()
    for mode in ${MODES//,/ }; do
        case $mode in
        h2c | h2c-batch | tcp | tls)
            mode_feed "$mode" >"$WORK/feeds-$mode.json"
            start=$(date +%s.%N)
            "$ADAPTER" --bootstrap "$BOOT" --feeds-file "$WORK/feeds-$mode.json" --http.port "$AM" \
                --log.level warn ${ADAPTER_ARGS:-} >"$WORK/adapter-$mode.log" 2>&1 &
            APID=$!
            PIDS+=($APID)
            deadline=$((SECONDS + 300))
            while [[ $(acked) -lt $COUNT && $SECONDS -lt $deadline ]]; do sleep 0.2; done
            end=$(date +%s.%N)
            n=$(acked) cpu=$(cpu_s $APID) us=$(cpu_us $APID) rss=$(hwm_mib $APID)
            kill $APID
            wait $APID 2>/dev/null || true
            PER[$mode]=$(per "$n" "$cpu")
            wall=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.2f", b - a}')
            echo "{\"mode\":\"$mode\",\"delivered\":$n,\"cpu_s\":$cpu,$us,\"wall_s\":$wall,\"per_cpu_s\":${PER[$mode]},\"peak_rss_mib\":$rss}"
            row "$mode" "$n" "$cpu" "$wall" "${PER[$mode]}" "$rss"
            ;;
        baseline | forward)
            bmode=consume
            [[ $mode == forward ]] && bmode=forward
            "$BASE" --mode $bmode --bootstrap "$BOOT" --topic "$TOPIC" --count "$COUNT" \
                >"$WORK/$mode.json" 2>"$WORK/$mode.log" || true
            cat "$WORK/$mode.json"
            b=$(sed -n 's/.*"msgs_per_cpu_s":\([0-9.]*\).*/\1/p' "$WORK/$mode.json")
            PER[$mode]=${b%.*}
            row "$mode" "$(sed -n 's/.*"records":\([0-9]*\).*/\1/p' "$WORK/$mode.json")" \
                "$(sed -n 's/.*"cpu_s":\([0-9.]*\).*/\1/p' "$WORK/$mode.json")" \
                "$(sed -n 's/.*"seconds":\([0-9.]*\).*/\1/p' "$WORK/$mode.json")" "${PER[$mode]:-0}" \
                "$(sed -n 's/.*"rss_mb":\([0-9.]*\).*/\1/p' "$WORK/$mode.json")"
            ;;
        h2load)
            head -c 3400 /dev/zero | tr '\0' 'x' | sed 's/^/{"pad":"/; s/$/"}/' >"$WORK/body.json"
            for u in "h2c http://127.0.0.1:$H2/ingest" "h2tls https://127.0.0.1:$H2TLS/ingest"; do
                set -- $u
                /usr/bin/time -f "%U %S %e" -o "$WORK/h2load-$1.time" \
                    h2load -n "$COUNT" -c 1 -m 128 -d "$WORK/body.json" "$2" >"$WORK/h2load-$1.out" 2>&1 || true
                hcpu=$(awk '{print $1 + $2}' "$WORK/h2load-$1.time")
                PER[h2load-$1]=$(per "$COUNT" "$hcpu")
                echo "{\"mode\":\"h2load-$1\",\"requests\":$COUNT,\"cpu_s\":$hcpu,$(awk '{printf "\"user_s\":%s,\"sys_s\":%s", $1, $2}' "$WORK/h2load-$1.time"),\"per_cpu_s\":${PER[h2load-$1]}}"
                row "h2load-$1" "$COUNT" "$hcpu" "$(awk '{print $3}' "$WORK/h2load-$1.time")" "${PER[h2load-$1]}" "-"
            done
            ;;
        *) echo "compare: unknown mode $mode" >&2; exit 2 ;;
        esac
    done
    for m in "${!PER[@]}"; do ALL[$m]+="${PER[$m]} "; done
    if ((ROUNDS > 1)); then
        echo "round $round: adapter vs librdkafka alone ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))"
        print_table
    fi
done

if ((CALLGRIND > 0)); then
    for mode in ${MODES//,/ }; do
        case $mode in h2c | h2c-batch | tcp | tls) ;; *) continue ;; esac
        mode_feed "$mode" >"$WORK/cg-feeds-$mode.json"
        valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind-$mode.out" \
            "$ADAPTER" --bootstrap "$BOOT" --feeds-file "$WORK/cg-feeds-$mode.json" \
            --http.port "$AM" --log.level warn >"$WORK/cg-adapter-$mode.log" 2>&1 &
        VPID=$!
        PIDS+=($VPID)
        deadline=$((SECONDS + 600))
        while [[ $(acked) -lt $CALLGRIND && $SECONDS -lt $deadline ]]; do sleep 1; done
        n=$(acked)
        kill -INT $VPID 2>/dev/null || true
        wait $VPID 2>/dev/null || true
        ir=$(callgrind_annotate "$WORK/callgrind-$mode.out" 2>/dev/null |
            awk '/PROGRAM TOTALS/ && !done {gsub(",", "", $1); print $1; done = 1}' || true)
        callgrind_annotate "$WORK/callgrind-$mode.out" 2>/dev/null | sed -n '/file:function/,$p' |
            sed -n '3,17p' | cut -c1-140 >"$WORK/callgrind-$mode.top" || true
        echo "{\"mode\":\"$mode\",\"callgrind_copies\":$n,\"instructions\":${ir:-0},\"instructions_per_copy\":$(per "${ir:-0}" "$n")}"
        echo "top functions (self instructions), $mode:"
        cat "$WORK/callgrind-$mode.top"
    done
fi

echo
if ((ROUNDS == 1)); then
    echo "adapter vs librdkafka alone, same topic, same sink ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))"
    print_table
else
    echo "medians over $ROUNDS rounds, same topic, same sink ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))"
    printf '%-12s %14s %18s  %s\n' mode "median per_cpu_s" "median ratio" "per round"
    for mode in ${MODES//,/ } h2load-h2c h2load-h2tls; do
        [[ -n ${ALL[$mode]:-} ]] || continue
        [[ $mode == h2load ]] && continue
        printf '%-12s %14s %18s  %s\n' "$mode" "$(median "${ALL[$mode]}" %.0f)" \
            "$(median "${RATIOS[$mode]:-}" %.2f)" "${ALL[$mode]% }"
    done
fi

if ((AGG)) && [[ -x $BAGG ]]; then
    echo
    echo "aggregation vs produce-only and consume-only baselines ($AGG_COUNT copies of 3,400 B)"
    "$BAGG" --bootstrap "$BOOT" --count "$AGG_COUNT" --size 3400 \
        --daemon "$BUILD/aggregation/ndd-aggregation" 2>"$WORK/bench-aggregation.log" |
        tee "$WORK/bench-aggregation.out"
fi
echo "logs in $WORK" >&2
