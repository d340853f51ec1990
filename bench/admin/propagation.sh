#!/usr/bin/env bash
# Propagation benchmark of ndd-admin: W ndd-adapters follow the admin's
# configuration topic; N feed updates (PATCH) are written through the REST API at R per
# second; for each the admin records when the last worker applied it (docs/control-path.md,
# "Propagation"). Prints p50/p99/max of publish -> applied by every worker, the admin's
# histogram, the workers' own histograms, and CPU per change.
#
#   NDD_PG=<conninfo> NDD_KAFKA=<brokers> bench/admin/propagation.sh [--build DIR]
#        [--workers 10] [--changes 200] [--rate 20] [--feeds 5] [--port 28120]
#
# Topics ndd.config.bench.<pid> and ndd.events.bench.<pid> are created on the broker and left
# there (a private stack: deploy/local/stack.sh destroy removes them). Needs curl, python3,
# psql. NDD_BENCH_KEEP=1 keeps the logs.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/common.sh"

BUILD=${NDD_BUILD_DIR:-build}
WORKERS=10
CHANGES=200
RATE=20
FEEDS=5
PORT=28120
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --changes) CHANGES=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --feeds) FEEDS=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
: "${NDD_KAFKA:?set NDD_KAFKA to the brokers (deploy/local/stack.sh start prints it)}"
[ "$CHANGES" -le 1000 ] || { echo "--changes at most 1000 (the admin tracks the last 1,024)" >&2; exit 2; }
bench_admin_init "$BUILD"
ADAPTER=$BUILD/adapter/ndd-adapter
[ -x "$ADAPTER" ] || { echo "no $ADAPTER" >&2; exit 2; }
bench_admin_tokens
CFG=ndd.config.bench.$$
EV=ndd.events.bench.$$
echo "propagation benchmark: $WORKERS ndd-adapters, $CHANGES feed updates at $RATE/s; $(bench_machine)"
bench_admin_start "$PORT" --bootstrap "$NDD_KAFKA" --config-topic "$CFG" --events-topic "$EV" \
  --events-group "ndd-admin-bench-$$" --config-replication 1

WPIDS=()
for i in $(seq 1 "$WORKERS"); do
  bench_spawn "$WORK/adapter$i.log" "$ADAPTER" --bootstrap "$NDD_KAFKA" --config-topic "$CFG" \
    --events-topic "$EV" --instance "bench-w$i" --http.port $((PORT + i)) --drain-timeout 1s \
    --log.level warn
  WPIDS+=("$BENCH_LAST_PID")
done
for i in $(seq 1 "$WORKERS"); do
  for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$((PORT + i))/readyz" >/dev/null && break; sleep 0.1; done
done
status() { curl -sf -H "Authorization: Bearer $VIEW_TOKEN" "$URL/api/v1/status?changes=${1:-0}"; }
followers() { status | python3 -c 'import json,sys; print(json.load(sys.stdin)["config"]["followers"]["feed"])'; }
pending() { status | python3 -c 'import json,sys; print(json.load(sys.stdin)["config"]["changes_pending"])'; }
wait_for() { # cmd want seconds
  local _
  for _ in $(seq 1 $(($3 * 10))); do [ "$($1)" = "$2" ] && return 0; sleep 0.1; done
  echo "timed out waiting for $1 = $2 (now $($1)); logs in $WORK" >&2
  return 1
}
wait_for followers "$WORKERS" 30

python3 "$HERE/load.py" populate --url "$URL" --admin-token "$ADMIN_TOKEN" --count "$FEEDS" \
  --threads 1 --prefix "prop-$$" --ids-out "$WORK/ids" >/dev/null
wait_for pending 0 30

workers_cpu() { local s=0 p; for p in "${WPIDS[@]}"; do s=$(awk -v a="$s" -v b="$(bench_cpu "$p")" 'BEGIN {print a + b}'); done; echo "$s"; }
a0=$(bench_cpu "$ADMIN_PID")
w0=$(workers_cpu)
python3 "$HERE/load.py" changes --url "$URL" --admin-token "$ADMIN_TOKEN" --ids "$WORK/ids" \
  --count "$CHANGES" --rate "$RATE" >"$WORK/changes.json"
wait_for pending 0 30 || true
a1=$(bench_cpu "$ADMIN_PID")
w1=$(workers_cpu)
status 1024 >"$WORK/status.json"
curl -sf "$URL/metrics" | grep '^ndd_admin_config_propagation_seconds.*kind="feed"' >"$WORK/admin.metrics"
: >"$WORK/workers.metrics"
for i in $(seq 1 "$WORKERS"); do
  curl -sf "http://127.0.0.1:$((PORT + i))/metrics" |
    grep "^ndd_config_propagation_seconds_\(count\|sum\){topic=\"$CFG\",kind=\"feed\"}" >>"$WORK/workers.metrics" || true
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$WORK" "$WORKERS" "$a0" "$a1" "$w0" "$w1" "$RATE" "$FEEDS" <<'EOF'
import json, sys
work, workers = sys.argv[1], int(sys.argv[2])
a0, a1, w0, w1 = map(float, sys.argv[3:7])
changes = json.load(open(work + "/changes.json"))["changes"]
st = {(c["key"], c["version"]): c for c in json.load(open(work + "/status.json"))["config"]["changes"]}
ms, missing = [], 0
for c in changes:
    s = st.get((c["key"], c["version"]))
    if not s or s["propagation_ms"] is None or s["applied_by"] != workers:
        missing += 1
    else:
        ms.append(s["propagation_ms"])
ms.sort()
def pct(p):
    return ms[min(len(ms) - 1, max(0, int(round(p / 100 * len(ms) + 0.5)) - 1))] if ms else None
wc = ws = 0.0
for line in open(work + "/workers.metrics"):
    name, v = line.rsplit(" ", 1)
    if name.startswith("ndd_config_propagation_seconds_count"):
        wc += float(v)
    else:
        ws += float(v)
n = len(changes)
print("changes=%d applied-by-all=%d incomplete=%d p50=%sms p99=%sms max=%sms" %
      (n, len(ms), missing, pct(50), pct(99), ms[-1] if ms else None))
print("workers' own histograms: %d observations (want %d: the updates and the feeds' creation), mean %.1f ms" %
      (wc, (n + int(sys.argv[8])) * workers, ws / wc * 1000 if wc else 0))
print("CPU per change: admin %.0f us, all workers together %.0f us" %
      ((a1 - a0) * 1e6 / max(n, 1), (w1 - w0) * 1e6 / max(n, 1)))
print()
print("| workers | changes | rate | p50 | p99 | max | applied by all | admin CPU per change | workers' CPU per change |")
print("|---|---|---|---|---|---|---|---|---|")
print("| %d | %d | %s/s | %s ms | %s ms | %s ms | %d of %d | %.0f µs | %.0f µs |" %
      (workers, n, sys.argv[7], pct(50), pct(99), ms[-1] if ms else None, len(ms), n,
       (a1 - a0) * 1e6 / max(n, 1), (w1 - w0) * 1e6 / max(n, 1)))
sys.exit(0 if missing == 0 else 1)
EOF
echo
echo "admin histogram (ndd_admin_config_propagation_seconds, kind=feed):"
cat "$WORK/admin.metrics"
