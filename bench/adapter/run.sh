#!/usr/bin/env bash
# ndd-adapter benchmark: messages per CPU-second of the ndd-adapter process and its peak RSS,
# for each transport (HTTP/2 h2c, HTTP/2 over TLS, TCP frames), delivering N copies of
# ~3,400 bytes to ndd-sink, beside h2load against the same sink (the client-side limit).
#
#   bench/adapter/run.sh [--build DIR] [--bootstrap HOST:PORT] [--count N] [--transports LIST]
#                        [--feeds F] [--delivery '"max_in_flight":128,"batch_max":16']
#                        [--broker-pid PID]
#
# --feeds F runs F identical feeds (F consumer groups on the same topic, one sink) in one
# process: delivered = F x N, and the peak RSS shows the per-feed memory. --delivery gives the
# feeds' "delivery" members (default "max_in_flight":128). wall_s is from the adapter's start
# (the backlog is produced before it) to the last acknowledgement: delivered / wall_s is the
# backlog drain rate. --broker-pid PID (the broker's java process, e.g. from
# deploy/local/stack.sh's kafka/kafka.pid) adds the broker's CPU-seconds over the same window
# (broker_cpu_s) and the copies per CPU-second of adapter and broker together: what each extra
# feed costs where the broker serves the topic again. The broker must serve nothing else then.
# Needs a Release build (cmake -DCMAKE_BUILD_TYPE=Release) with ndd-adapter, ndd-sink and
# ndd-nf-sim, a broker (deploy/local/stack.sh start), h2load and openssl. Ports: free ones.
# Prints one JSON line per transport and a summary table.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${NDD_BUILD_DIR:-$ROOT/build}
BOOT=${NDD_KAFKA:-127.0.0.1:9092}
COUNT=200000
TRANSPORTS="h2c,h2tls,tcp"
FEEDS=1
DELIVERY='"max_in_flight":128'
BROKER_PID=
while [[ $# -gt 0 ]]; do
    case $1 in
    --build) BUILD=$2; shift 2 ;;
    --bootstrap) BOOT=$2; shift 2 ;;
    --count) COUNT=$2; shift 2 ;;
    --transports) TRANSPORTS=$2; shift 2 ;;
    --feeds) FEEDS=$2; shift 2 ;;
    --delivery) DELIVERY=$2; shift 2 ;;
    --broker-pid) BROKER_PID=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
ADAPTER=$BUILD/adapter/ndd-adapter
SINK=$BUILD/bench/sink/ndd-sink
NFSIM=$BUILD/bench/nfsim/ndd-nf-sim
for b in "$ADAPTER" "$SINK" "$NFSIM"; do [[ -x $b ]] || { echo "missing $b" >&2; exit 1; }; done

WORK=$(mktemp -d /tmp/ndd-bench-adapter-XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

# Throwaway certificate for the TLS runs.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null

# Free ports (deploy/local/stack.sh free-ports), so that runs side by side (the test suite's)
# do not collide.
read -r H2 H2TLS TCP SM AM <<<"$("$ROOT/deploy/local/stack.sh" free-ports 5 | tr '\n' ' ')"
[[ -n $AM ]] || { echo "no free ports" >&2; exit 1; }
"$SINK" --h2-port $H2 --h2tls-port $H2TLS --tcp-port $TCP --metrics-port $SM \
    --cert "$WORK/cert.pem" --key "$WORK/key.pem" >"$WORK/sink.log" 2>&1 &
PIDS+=($!)
SINK_PID=$!
sleep 0.5

cpu_s() { # utime+stime of a pid, seconds
    awk -v hz="$(getconf CLK_TCK)" '{print ($14+$15)/hz}' "/proc/$1/stat"
}
hwm_kib() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }

acked() {
    curl -s "127.0.0.1:$AM/metrics" | awk '/^ndd_adapter_messages_acked_total/ {s+=$2} END {print s+0}'
}

RESULTS=()
IFS=, read -r -a TLIST <<<"$TRANSPORTS"
for t in "${TLIST[@]}"; do
    prefix="bench$RANDOM-"
    "$NFSIM" --bootstrap "$BOOT" --count "$COUNT" --size 3400 --nf-mix SCP=1 \
        --topic-prefix "$prefix" --partitions 3 --quiet >"$WORK/nfsim-$t.json" 2>"$WORK/nfsim-$t.log"
    case $t in
    h2c) tr=http2 enc=json url="http://127.0.0.1:$H2/ingest" tls='' ;;
    h2tls) tr=http2 enc=json url="https://127.0.0.1:$H2TLS/ingest" tls=",\"tls\":{\"ca_file\":\"$WORK/cert.pem\"}" ;;
    tcp) tr=tcp enc=frame url="tcp://127.0.0.1:$TCP" tls='' ;;
    *) echo "unknown transport $t" >&2; exit 2 ;;
    esac
    items=""
    for ((i = 0; i < FEEDS; i++)); do
        items+="${items:+,}{\"name\":\"bench-$t-$i\",\"source_topic\":\"${prefix}SCP\",\"transport\":\"$tr\",\"encoding\":\"$enc\",\"endpoints\":[{\"url\":\"$url\"}],\"delivery\":{$DELIVERY}$tls}"
    done
    echo "{\"feeds\":[$items]}" >"$WORK/feeds-$t.json"
    want=$((COUNT * FEEDS))
    start=$(date +%s.%N)
    bcpu0=$([[ -n $BROKER_PID ]] && cpu_s "$BROKER_PID" || echo 0)
    "$ADAPTER" --bootstrap "$BOOT" --feeds-file "$WORK/feeds-$t.json" --http.port $AM \
        --log.level warn ${ADAPTER_ARGS:-} >"$WORK/adapter-$t.log" 2>&1 &
    APID=$!
    PIDS+=($APID)
    deadline=$((SECONDS + 300))
    while [[ $(acked) -lt $want && $SECONDS -lt $deadline ]]; do sleep 0.2; done
    end=$(date +%s.%N)
    n=$(acked)
    cpu=$(cpu_s $APID)
    bcpu=$([[ -n $BROKER_PID ]] && awk -v a="$bcpu0" -v b="$(cpu_s "$BROKER_PID")" 'BEGIN {printf "%.2f", b - a}' || echo null)
    rss=$(hwm_kib $APID)
    kill $APID
    wait $APID 2>/dev/null || true
    mps=$(awk -v n="$n" -v c="$cpu" 'BEGIN {printf "%.0f", (c > 0 ? n / c : 0)}')
    wall=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.2f", b - a}')
    with=$([[ -n $BROKER_PID ]] && awk -v n="$n" -v c="$cpu" -v b="$bcpu" 'BEGIN {printf "%.0f", (c + b > 0 ? n / (c + b) : 0)}' || echo null)
    line="{\"transport\":\"$t\",\"feeds\":$FEEDS,\"delivered\":$n,\"cpu_s\":$cpu,\"wall_s\":$wall,\"msgs_per_cpu_s\":$mps,\"peak_rss_kib\":$rss,\"broker_cpu_s\":$bcpu,\"msgs_per_cpu_s_with_broker\":$with}"
    echo "$line"
    RESULTS+=("$line")
done

# The client-side limit on the same sink: h2load posting the same size of body.
head -c 3400 /dev/zero | tr '\0' 'x' | sed 's/^/{"pad":"/; s/$/"}/' >"$WORK/body.json"
for t in "${TLIST[@]}"; do
    case $t in
    h2c) u="http://127.0.0.1:$H2/ingest" ;;
    h2tls) u="https://127.0.0.1:$H2TLS/ingest" ;;
    *) continue ;;
    esac
    /usr/bin/time -f "%U %S" -o "$WORK/h2load-$t.time" \
        h2load -n "$COUNT" -c 1 -m 128 -d "$WORK/body.json" "$u" >"$WORK/h2load-$t.out" 2>&1 || true
    rps=$(awk '/^finished in/ {print $4}' "$WORK/h2load-$t.out" | tr -d ',')
    hcpu=$(awk '{print $1 + $2}' "$WORK/h2load-$t.time")
    echo "{\"client\":\"h2load\",\"transport\":\"$t\",\"req_per_s\":\"$rps\",\"cpu_s\":$hcpu,\"req_per_cpu_s\":$(awk -v n="$COUNT" -v c="$hcpu" 'BEGIN {printf "%.0f", (c > 0 ? n / c : 0)}')}"
done
echo "logs in $WORK" >&2
