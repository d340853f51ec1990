#!/usr/bin/env bash
# bench/aggregation/steady.sh end to end on the suite's broker: 400 copies at 200/s into a
# one-partition NF topic (--partitions 1). The result line must say that every copy the
# simulator had acknowledged reached MAIN, with a CPU figure, and the daemon's threads must be
# listed (where the wake-ups show). The figure itself is the benchmark's, not asserted here.
# Needs NDD_BUILD_DIR and NDD_TEST_KAFKA (tests/run.sh).
set -euo pipefail
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
if [[ -z ${NDD_TEST_KAFKA:-} ]]; then
    echo "SKIP: NDD_TEST_KAFKA is not set (tests/run.sh starts the suite's stack)"
    exit 0
fi
OUT=$(mktemp /tmp/ndd-bench-aggregation-steady-smoke.XXXXXX)
trap 'rm -f "$OUT"' EXIT
timeout 180 "$SRC/bench/aggregation/steady.sh" --build "$BUILD" --bootstrap "$NDD_TEST_KAFKA" \
    --rate 200 --duration 2 --partitions 1 >"$OUT" 2>&1 || {
    echo "FAIL: bench/aggregation/steady.sh exited $?"
    cat "$OUT"
    exit 1
}
line=$(grep '^{"daemon"' "$OUT") || {
    echo "FAIL: no result line"
    cat "$OUT"
    exit 1
}
python3 - "$line" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
# The paced simulator may produce one more than rate x duration: every one it produced counts.
assert 400 <= r["copies"] <= 402, r
assert r["partitions"] == 1, r
assert r["main"] == r["copies"], f"MAIN holds {r['main']} of {r['copies']}: {r}"
assert isinstance(r["per_cpu_s"], int) and r["per_cpu_s"] >= 0, r
print(f"ok: {r['copies']} copies at 200/s in MAIN, {r['per_cpu_s']} per CPU-second")
PY
grep -q '^thread ndd-aggregation ' "$OUT" || {
    echo "FAIL: no per-thread line for the worker's thread"
    cat "$OUT"
    exit 1
}
