#!/usr/bin/env bash
# Console polling beside the data path: the data path of a bench/run.sh profile at a
# steady rate, once alone and once while 50 operators poll ndd-admin the way the console's
# overview does (gui-api/web/src/overview.tsx: the status every second, the active alarms
# every 2 s; each operator polling the admin itself, an upper bound: ndd-gui-api shares one
# status poll between its sessions). Prints the data path's p99 and throughput both times,
# the admin's CPU while polled and the polls' latencies.
#
#   NDD_PG=<conninfo> bench/admin/console.sh --stack-dir D [--build DIR] [--profile smoke]
#        [--rate 500] [--duration 10] [--operators 50] [--port 28150]
#
# D: a running deploy/local/stack.sh stack (bench/run.sh reuses it; its Kafka carries the
# data path and the admin's topics). Needs curl, python3, psql. NDD_BENCH_KEEP=1 keeps logs.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/common.sh"

BUILD=${NDD_BUILD_DIR:-build}
PROFILE=smoke
RATE=500
DURATION=10
OPERATORS=50
PORT=28150
STACK=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --profile) PROFILE=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --operators) OPERATORS=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --stack-dir) STACK=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$STACK" ] && [ -f "$STACK/env" ] || { echo "--stack-dir D: a running stack (deploy/local/stack.sh start --dir D)" >&2; exit 2; }
BOOTSTRAP=$(. "$STACK/env" && printf %s "$NDD_KAFKA")
bench_admin_init "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
bench_admin_tokens
bench_admin_start "$PORT" --bootstrap "$BOOTSTRAP" --config-topic "ndd.config.console.$$" \
  --events-group "ndd-admin-console-$$" --config-replication 1
echo "console polling benchmark: profile $PROFILE at $RATE copies/s for $DURATION s, $OPERATORS operators; $(bench_machine)"

datapath() { # label
  bench/run.sh --profile "$PROFILE" --build "$BUILD" --stack-dir "$STACK" --rate "$RATE" \
    --duration "$DURATION" --no-baselines --quiet --work-dir "$WORK/run-$1" >"$WORK/run-$1.out" 2>"$WORK/run-$1.err" ||
    { echo "bench/run.sh ($1) failed: see $WORK/run-$1.err" >&2; tail -5 "$WORK/run-$1.err" >&2; return 1; }
  tail -1 "$WORK/run-$1.out" >"$WORK/run-$1.json"
}
cd "$ROOT"
c0=$(bench_cpu "$ADMIN_PID"); t0=$(date +%s.%N)
datapath alone
c1=$(bench_cpu "$ADMIN_PID"); t1=$(date +%s.%N)
rm -f "$WORK/stop"
python3 "$HERE/load.py" poll --url "$URL" --token "$VIEW_TOKEN" --operators "$OPERATORS" \
  --duration 600 --stop-file "$WORK/stop" >"$WORK/poll.json" &
POLL=$!
BENCH_PIDS+=("$POLL")
sleep 2
c2=$(bench_cpu "$ADMIN_PID"); t2=$(date +%s.%N)
datapath polled
c3=$(bench_cpu "$ADMIN_PID"); t3=$(date +%s.%N)
touch "$WORK/stop"
wait "$POLL" || true
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$WORK" "$c0" "$c1" "$c2" "$c3" "$t0" "$t1" "$t2" "$t3" <<'PY'
import json, sys
w = sys.argv[1]
c0, c1, c2, c3, t0, t1, t2, t3 = map(float, sys.argv[2:10])
alone = json.load(open(w + "/run-alone.json"))
polled = json.load(open(w + "/run-polled.json"))
poll = json.load(open(w + "/poll.json"))
def row(label, r, cpu, secs):
    return "| %s | %s | %s | %s ms | %s ms | %s | %.1f %% of a core |" % (
        label, r["produced"], r["lost"], r["e2e_ms"]["p50"], r["e2e_ms"]["p99"], r["mps"],
        cpu * 100 / secs)
print("polls: %s" % json.dumps(poll))
reqs = poll["status"]["count"] + poll["alarms"]["count"]
print("admin CPU per poll request: %.0f us" % ((c3 - c2) * 1e6 / max(reqs, 1)))
print()
print("| data path | produced | lost | e2e p50 | e2e p99 | copies/s | ndd-admin CPU |")
print("|---|---|---|---|---|---|---|")
print(row("alone", alone, c1 - c0, t1 - t0))
print(row("with %d operators polling" % poll["operators"], polled, c3 - c2, t3 - t2))
PY
