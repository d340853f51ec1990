#!/usr/bin/env bash
# bench/aggregation/steady.sh end to end on the suite's broker: 400 copies at 200/s into a
# one-partition NF topic (--partitions 1). The result line must say that every copy the
# simulator had acknowledged reached MAIN, with a CPU figure, and the daemon's threads must be
# listed (where the wake-ups show); then the same with --baseline (librdkafka alone relays, in
# the daemon's place). The figures themselves are the benchmark's, not asserted here.
# Needs NDD_BUILD_DIR and NDD_TEST_KAFKA (tests/run.sh).
set -euo pipefail
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/e2e/bench_lib.sh
. "$SRC/tests/e2e/bench_lib.sh"
bench_test_begin bench-aggregation-steady-smoke

# steady BINARY THREAD [ARGS...]: one run; its result line must name BINARY (the process it
# measured), count every copy in MAIN, and the process's thread THREAD must be listed.
steady() {
    local binary=$1 thread=$2 line
    shift 2
    timeout 180 "$SRC/bench/aggregation/steady.sh" --build "$BUILD" --bootstrap "$NDD_TEST_KAFKA" \
        --rate 200 --duration 2 --partitions 1 "$@" >"$OUT" 2>&1 ||
        fail "bench/aggregation/steady.sh $* exited $?"
    line=$(grep '^{"daemon"' "$OUT") || fail "no result line ($*)"
    python3 - "$line" "$binary" <<'PY' || fail "result line ($*)"
import json, sys
r, binary = json.loads(sys.argv[1]), sys.argv[2]
assert r["daemon"].endswith("/" + binary), r
# The paced simulator may produce one more than rate x duration: every one it produced counts.
assert 400 <= r["copies"] <= 402, r
assert r["partitions"] == 1, r
assert r["main"] == r["copies"], f"MAIN holds {r['main']} of {r['copies']}: {r}"
assert isinstance(r["per_cpu_s"], int) and r["per_cpu_s"] >= 0, r
print(f"ok: {binary}: {r['copies']} copies at 200/s in MAIN, {r['per_cpu_s']} per CPU-second")
PY
    grep -q "^thread $thread " "$OUT" || fail "no per-thread line for $thread"
}
steady ndd-aggregation ndd-aggregation
steady ndd-kafka-baseline ndd-kafka-basel --baseline
