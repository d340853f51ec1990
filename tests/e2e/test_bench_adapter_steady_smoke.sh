#!/usr/bin/env bash
# bench/adapter/steady.sh end to end on the suite's broker: 400 copies at 200/s through one h2c
# feed to ndd-sink. Every copy must be acknowledged and the figure per CPU-second printed; the
# figure itself is the benchmark's, not asserted here (the suite shares the cores).
# Needs NDD_BUILD_DIR and NDD_TEST_KAFKA (tests/run.sh).
set -euo pipefail
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/e2e/bench_lib.sh
. "$SRC/tests/e2e/bench_lib.sh"
bench_test_begin bench-adapter-steady-smoke
timeout 180 "$SRC/bench/adapter/steady.sh" --build "$BUILD" --bootstrap "$NDD_TEST_KAFKA" \
    --rate 200 --duration 2 >"$OUT" 2>&1 || fail "bench/adapter/steady.sh exited $?"
line=$(grep '^{"adapter"' "$OUT") || fail "no result line"
python3 - "$line" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
# The paced simulator may produce one more than rate x duration: every one it produced counts.
assert 400 <= r["copies"] <= 402, r
assert r["acked"] == r["copies"], f"acked {r['acked']} of {r['copies']}: {r}"
assert isinstance(r["per_cpu_s"], int) and r["per_cpu_s"] >= 0, r
print(f"ok: {r['copies']} copies at 200/s acknowledged, {r['per_cpu_s']} per CPU-second")
PY
grep -q '^thread feed-' "$OUT" || fail "no per-thread line for the feed's thread"
