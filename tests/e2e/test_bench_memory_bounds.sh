#!/usr/bin/env bash
# The memory bounds docs/benchmarks.md states, checked on the suite's stack by the benchmarks
# that measure them (peak RSS, VmHWM / ru_maxrss):
#   - ndd-aggregation with MAIN in the header form, on a backlog: < 64 MiB
#     (ndd-bench-aggregation --main-format headers);
#   - one ndd-adapter with 10 h2c feeds draining a backlog: < 128 MiB
#     (bench/adapter/run.sh --feeds 10);
#   - ndd with every role at the quickstart's load (200 copies/s, the NF mix): <= 128 MiB, lost 0
#     (bench/ndd/run.sh --ndd-only).
# Shorter backlogs than the documented runs: the peaks are reached within the first few
# thousand copies (the in-flight and prefetch bounds fill first).
# Needs NDD_BUILD_DIR and NDD_TEST_KAFKA (tests/run.sh); NDD_TEST_PG for ndd's admin role.
set -euo pipefail
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/e2e/bench_lib.sh
. "$SRC/tests/e2e/bench_lib.sh"
bench_test_begin bench-memory-bounds
command -v jq >/dev/null || fail "jq missing (Debian package jq)"
KAFKA=${NDD_TEST_KAFKA#\'}
KAFKA=${KAFKA%\'}
PG=${NDD_TEST_PG:-}
PG=${PG#\'}
PG=${PG%\'}
below() { awk -v v="$1" -v l="$2" 'BEGIN { exit !(v > 0 && v < l) }'; }
FAILS=()

# 1. the aggregation, header form
timeout -k 5 60 "$BUILD/bench/aggregation/ndd-bench-aggregation" --bootstrap "$KAFKA" \
    --count 20000 --size 3400 --backlog --main-format headers >"$OUT" 2>&1 ||
    fail "ndd-bench-aggregation exited $?"
line=$(grep -E '^ndd-aggregation \(backlog\) +20000 msgs' "$OUT") || fail "no aggregation row for 20,000 copies"
agg=$(sed -E 's/.*peak RSS +([0-9.]+) MiB.*/\1/' <<<"$line")
below "$agg" 64 || FAILS+=("ndd-aggregation, header form: peak RSS $agg MiB, bound 64 MiB")
echo "ndd-aggregation, header form, 20,000 copies: peak RSS $agg MiB (bound 64)"

# 2. ten h2c feeds in one adapter
timeout -k 5 60 "$SRC/bench/adapter/run.sh" --build "$BUILD" --bootstrap "$KAFKA" --count 3000 \
    --feeds 10 --transports h2c >"$OUT" 2>&1 || fail "bench/adapter/run.sh exited $?"
j=$(grep -E '^\{"transport":"h2c"' "$OUT") || fail "no h2c line"
jq -e '.delivered == 30000' >/dev/null <<<"$j" || fail "10 feeds delivered $(jq .delivered <<<"$j") of 30,000"
ada=$(jq '.peak_rss_kib / 1024 * 10 | round / 10' <<<"$j")
below "$ada" 128 || FAILS+=("ndd-adapter, 10 h2c feeds: peak RSS $ada MiB, bound 128 MiB")
echo "ndd-adapter, 10 h2c feeds, 3,000 copies each: peak RSS $ada MiB (bound 128)"

# 3. ndd at the quickstart's load
args=(--ndd-only --rounds 1 --seconds 5 --warmup 0 --drain-timeout 30 --build "$BUILD"
    --bootstrap "$KAFKA" --quiet)
[[ -n $PG ]] && args+=(--pg "$PG")
rc=0
timeout -k 10 90 "$SRC/bench/ndd/run.sh" "${args[@]}" >"$OUT" 2>&1 || rc=$?
J=$(tail -n1 "$OUT")
jq -e . >/dev/null 2>&1 <<<"$J" || fail "bench/ndd/run.sh: the last line is not JSON (exit $rc)"
jq -e '.verdict.lost_zero and .verdict.all_ready' >/dev/null <<<"$J" ||
    fail "ndd: lost or not ready: $(jq -c .verdict <<<"$J")"
ndd=$(jq '.ndd.peak_rss_mb.max' <<<"$J")
awk -v v="$ndd" 'BEGIN { exit !(v > 0 && v <= 128) }' || FAILS+=("ndd: peak RSS $ndd MiB, bound 128 MiB")
echo "ndd with every role, 200 copies/s for 5 s: peak RSS $ndd MiB (bound 128), lost 0"

((${#FAILS[@]} == 0)) || { printf 'FAIL: %s\n' "${FAILS[@]}"; exit 1; }
echo "ok: every memory bound held"
