#!/usr/bin/env bash
# ndd-aggregation at a steady rate (how its copies per CPU-second at, say, 1,000 copies/s
# compare with its figure on a backlog). Starts the daemon on a fresh NF topic, lets it
# join, then ndd-nf-sim produces --rate copies/s of 3,400 B for --duration seconds; the figure
# is copies / (utime+stime of the daemon during the traffic and 2 s after it), so start-up and
# the group join are not counted. Per-thread CPU and voluntary context switches (wake-ups)
# of the daemon go to stderr. Every copy the simulator had acknowledged must then be in MAIN
# within 60 s ("main" in the result line), else the run fails: it measured nothing.
#
#   bench/aggregation/steady.sh [--build DIR] [--bootstrap HOST:PORT] [--rate 1000]
#                               [--duration 20] [--partitions 3] [--daemon PATH] [--baseline]
# Env AGG_ARGS: more options for the daemon, e.g. AGG_ARGS=--main-format=frame.
# --baseline: the same run with librdkafka alone in the daemon's place (`ndd-kafka-baseline
# --mode relay`: the aggregation's consumer and producer settings, every header parsed,
# the value relayed to MAIN without headers, as the frame form), so that the daemon's figure
# has the client library's own beside it; env BASE_ARGS: more options for it (--prop ...).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${NDD_BUILD_DIR:-$ROOT/build}
BOOT=${NDD_KAFKA:-127.0.0.1:9092}
RATE=1000 DURATION=20 PARTS=3 DAEMON="" BASELINE=0
while [[ $# -gt 0 ]]; do
    case $1 in
    --build) BUILD=$2; shift 2 ;;
    --bootstrap) BOOT=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --partitions) PARTS=$2; shift 2 ;;
    --daemon) DAEMON=$2; shift 2 ;;
    --baseline) BASELINE=1; shift ;;
    *) echo "steady: unknown option $1" >&2; exit 2 ;;
    esac
done
DAEMON=${DAEMON:-$BUILD/aggregation/ndd-aggregation}
NFSIM=$BUILD/bench/nfsim/ndd-nf-sim
OFFSETS=$BUILD/bench/probes/ndd-offsets
WORK=$(mktemp -d /tmp/ndd-agg-steady-XXXXXX)
APID=""
trap '[[ -n $APID ]] && kill $APID 2>/dev/null || true; wait 2>/dev/null || true' EXIT
# shellcheck source=bench/steady-lib.sh
. "$ROOT/bench/steady-lib.sh"

p="stdy$RANDOM-"
steady_sim create --bootstrap "$BOOT" --count 1 --topic-prefix "$p" --partitions "$PARTS" >/dev/null
if ((BASELINE)); then
    DAEMON=$BUILD/bench/baseline/ndd-kafka-baseline
    # The count is never reached: the run ends it (SIGTERM) once MAIN holds every copy.
    "$DAEMON" --mode relay --bootstrap "$BOOT" --topic "${p}SCP" --to "${p}MAIN" \
        --count 1000000000 --timeout 3600 ${BASE_ARGS:-} >"$WORK/agg.log" 2>&1 &
else
    "$DAEMON" --bootstrap="$BOOT" --nf-type=SCP --topic="${p}SCP" --main-topic="${p}MAIN" \
        --dlq-topic="${p}DLQ" --group="${p}agg" --http.port=-1 --config-topic= --events-topic= \
        --log.level=warn ${AGG_ARGS:-} >"$WORK/agg.log" 2>&1 &
fi
APID=$!
sleep 8 # join and the first record
c0=$(steady_cpu_s /proc/$APID)
n=$(steady_sim run --bootstrap "$BOOT" --rate "$RATE" --duration "$DURATION" --topic-prefix "$p" \
    --partitions "$PARTS")
sleep 2
c1=$(steady_cpu_s /proc/$APID)
steady_threads $APID
main_records() {
    "$OFFSETS" --bootstrap "$BOOT" --topic "${p}MAIN" 2>/dev/null | grep -o '"records":[0-9]*' | head -1 | cut -d: -f2
}
# MAIN holds the copy that created the NF topic too.
main=$(steady_wait_count $((n + 1)) 0.5 main_records)
main=$((main > 0 ? main - 1 : 0))
echo "{\"daemon\":\"$DAEMON\",\"rate\":$RATE,\"duration_s\":$DURATION,\"partitions\":$PARTS,\"copies\":$n,\"main\":$main,$(steady_figures "$n" "$c0" "$c1"),\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
[[ $main -ge $n ]] || { echo "steady: $main of $n copies reached MAIN within 60 s (see $WORK)" >&2; exit 1; }
rm -rf "$WORK"
