#!/usr/bin/env bash
# ndd-adapter at a steady rate (whether a moderate rate costs proportionally little CPU). One
# h2c feed (JSON, one copy per request) on a fresh NF topic to a fresh ndd-sink; once the feed
# delivered its first copy, ndd-nf-sim produces --rate copies/s of 3,400 B for --duration
# seconds. The figure is copies / (utime+stime of the adapter from just before the traffic
# until the sink acknowledged the last copy), so start-up and the group join are not counted.
# Per-thread CPU and voluntary context switches (wake-ups) go to stderr. Run it with --adapter
# of two builds in turn to compare them on the same broker within minutes.
#
#   bench/adapter/steady.sh [--build DIR] [--bootstrap HOST:PORT] [--rate 1000]
#                           [--duration 10] [--partitions 3] [--in-flight 512] [--adapter PATH]
# Env ADAPTER_ARGS: more options for ndd-adapter, e.g. ADAPTER_ARGS=--kafka.fetch.wait.max.ms=100.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${NDD_BUILD_DIR:-$ROOT/build}
BOOT=${NDD_KAFKA:-127.0.0.1:9092}
RATE=1000 DURATION=10 PARTS=3 IN_FLIGHT=512 ADAPTER=""
while [[ $# -gt 0 ]]; do
    case $1 in
    --build) BUILD=$2; shift 2 ;;
    --bootstrap) BOOT=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --partitions) PARTS=$2; shift 2 ;;
    --in-flight) IN_FLIGHT=$2; shift 2 ;;
    --adapter) ADAPTER=$2; shift 2 ;;
    -h | --help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "steady: unknown option $1" >&2; exit 2 ;;
    esac
done
ADAPTER=${ADAPTER:-$BUILD/adapter/ndd-adapter}
NFSIM=$BUILD/bench/nfsim/ndd-nf-sim
SINK=$BUILD/bench/sink/ndd-sink
for b in "$ADAPTER" "$NFSIM" "$SINK"; do [[ -x $b ]] || { echo "missing $b" >&2; exit 1; }; done
WORK=$(mktemp -d /tmp/ndd-adapter-steady-XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
# shellcheck source=bench/steady-lib.sh
. "$ROOT/bench/steady-lib.sh"

read -r H2 SM AM < <("$ROOT/deploy/local/stack.sh" free-ports 3 | tr '\n' ' ') || true
p="astdy$RANDOM-"
steady_sim create --bootstrap "$BOOT" --count 1 --topic-prefix "$p" --partitions "$PARTS" >/dev/null
"$SINK" --h2-port "$H2" --metrics-port "$SM" >"$WORK/sink.log" 2>&1 &
PIDS+=($!)
sleep 0.3
printf '{"feeds":[{"name":"%s","source_topic":"%s","transport":"http2","encoding":"json",%s}]}\n' \
    "${p}feed" "${p}SCP" \
    "\"endpoints\":[{\"url\":\"http://127.0.0.1:$H2/ingest\"}],\"delivery\":{\"max_in_flight\":$IN_FLIGHT}" \
    >"$WORK/feeds.json"
"$ADAPTER" --bootstrap "$BOOT" --feeds-file "$WORK/feeds.json" --http.port "$AM" \
    --log.level warn ${ADAPTER_ARGS:-} >"$WORK/adapter.log" 2>&1 &
APID=$!
PIDS+=($APID)
acked() {
    curl -s "127.0.0.1:$AM/metrics" | awk '/^ndd_adapter_messages_acked_total/ {s+=$2} END {print s+0}'
}
deadline=$((SECONDS + 60))
while [[ $(acked) -lt 1 ]]; do
    ((SECONDS < deadline)) || { echo "steady: the feed delivered nothing (see $WORK)" >&2; exit 1; }
    sleep 0.1
done
c0=$(steady_cpu_s /proc/$APID)
n=$(steady_sim run --bootstrap "$BOOT" --rate "$RATE" --duration "$DURATION" --topic-prefix "$p" \
    --partitions "$PARTS")
# The feed's first copy (the one that created the topic) is counted too.
got=$(($(steady_wait_count $((n + 1)) 0.05 acked) - 1))
c1=$(steady_cpu_s /proc/$APID)
steady_threads $APID
echo "{\"adapter\":\"$ADAPTER\",\"rate\":$RATE,\"duration_s\":$DURATION,\"copies\":$n,\"acked\":$got,$(steady_figures "$got" "$c0" "$c1"),\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
[[ $got -ge $n ]] || { echo "steady: $got of $n acknowledged within 60 s (see $WORK)" >&2; exit 1; }
rm -rf "$WORK"
