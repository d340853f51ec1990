#!/usr/bin/env bash
# Mixed benchmark of ndd-admin: 95 % reads (GET /api/v1/feeds/{id}), 5 % writes
# (PATCH of a feed: PostgreSQL transaction + audit row) over N feeds, C keep-alive clients of
# bench/admin/load.py for S seconds. Prints reads/s, writes/s, p50/p99 per operation and the
# admin's CPU per operation (utime + stime from /proc).
#
#   NDD_PG=<conninfo> bench/admin/mixed.sh [--build DIR] [--objects 10000] [--clients 8]
#        [--duration 10] [--write-pct 5] [--port 28140]
#
# Own schema (dropped at the end), no Kafka (the admin publishes nothing). Needs curl, python3,
# psql. NDD_BENCH_KEEP=1 keeps the logs.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/common.sh"

BUILD=${NDD_BUILD_DIR:-build}
OBJECTS=10000
CLIENTS=8
DURATION=10
WRITE_PCT=5
PORT=28140
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --objects) OBJECTS=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --write-pct) WRITE_PCT=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
bench_admin_init "$BUILD"
bench_admin_tokens
bench_admin_start "$PORT" --max-objects "$OBJECTS"
echo "populating $OBJECTS feeds..."
python3 "$HERE/load.py" populate --url "$URL" --admin-token "$ADMIN_TOKEN" --count "$OBJECTS" \
  --threads 4 --prefix "mixed-$$" --ids-out "$WORK/ids"
echo "mixed benchmark: $WRITE_PCT % writes, $CLIENTS clients, $DURATION s, $OBJECTS feeds; $(bench_machine)"
c0=$(bench_cpu "$ADMIN_PID")
python3 "$HERE/load.py" mixed --url "$URL" --token "$VIEW_TOKEN" --admin-token "$ADMIN_TOKEN" \
  --ids "$WORK/ids" --clients "$CLIENTS" --duration "$DURATION" --write-pct "$WRITE_PCT" >"$WORK/mixed.json"
c1=$(bench_cpu "$ADMIN_PID")
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$WORK/mixed.json" "$c0" "$c1" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
cpu = float(sys.argv[3]) - float(sys.argv[2])
ops = m["read"]["count"] + m["write"]["count"]
print(json.dumps(m))
print("admin CPU: %.2f s for %d operations = %.1f us per operation (%.0f%% of one core)" %
      (cpu, ops, cpu * 1e6 / max(ops, 1), cpu * 100 / m["seconds"]))
print()
print("| objects | clients | reads/s | writes/s | read p50 / p99 | write p50 / p99 | admin CPU per operation | admin CPU |")
print("|---|---|---|---|---|---|---|---|")
print("| %d | %d | %s | %s | %s / %s ms | %s / %s ms | %.1f µs | %.0f %% of a core |" %
      (m["objects"], m["clients"], m["reads_per_s"], m["writes_per_s"], m["read"]["p50_ms"],
       m["read"]["p99_ms"], m["write"]["p50_ms"], m["write"]["p99_ms"], cpu * 1e6 / max(ops, 1),
       cpu * 100 / m["seconds"]))
sys.exit(0 if m["errors"] == 0 else 1)
PY
