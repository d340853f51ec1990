#!/usr/bin/env bash
# bench/compare.sh end to end on the suite's broker, with MAIN in the frame form: a backlog of
# 3,000 copies passed through ndd-aggregation (--main-format frame), then the adapter's TCP
# mode, the consume baseline and the forward baseline (the values written to a socket) on it.
# Each must account for every copy (the adapter's acknowledged count, the baselines' records) and print its figure per CPU-second (0 when the
# run took less than a clock tick); the figures themselves are the benchmark's, not asserted here (the suite shares the cores).
# Needs NDD_BUILD_DIR and NDD_TEST_KAFKA (tests/run.sh).
set -euo pipefail
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/e2e/bench_lib.sh
. "$SRC/tests/e2e/bench_lib.sh"
bench_test_begin bench-compare-smoke
timeout 240 "$SRC/bench/compare.sh" --build "$BUILD" --bootstrap "$NDD_TEST_KAFKA" --count 3000 \
    --modes tcp,baseline,forward --no-aggregation --main-format frame >"$OUT" 2>&1 ||
    fail "bench/compare.sh exited $?"
grep -q '^backlog: 3000 copies through ndd-aggregation (main-format frame)' "$OUT" ||
    fail "the backlog did not pass through ndd-aggregation in the frame form"
for mode in tcp baseline forward; do
    row=$(grep -E "^$mode +[0-9]" "$OUT") || fail "no table row for $mode"
    read -r _ copies _ _ per _ <<<"$row"
    ((copies == 3000)) || fail "$mode: $copies copies, want 3000"
    [[ $per =~ ^[0-9]+$ ]] || fail "$mode: '$per' copies per CPU-second"
done
# The forward baseline's reader got every byte of every value: the frames' 3,000 values.
fwd=$(grep '^{"mode":"forward"' "$OUT") || fail "no forward result line"
[[ $fwd == *'"records":3000,'* ]] || fail "forward: $fwd"
echo "ok: tcp, baseline and forward each read the 3,000 framed copies"
cat "$OUT"

# --rounds: each mode twice on one backlog, then a median row per mode with both figures.
timeout 240 "$SRC/bench/compare.sh" --build "$BUILD" --bootstrap "$NDD_TEST_KAFKA" --count 1000 \
    --modes tcp,baseline --no-aggregation --rounds 2 >"$OUT" 2>&1 ||
    fail "bench/compare.sh --rounds 2 exited $?"
(($(grep -c '^round [12]: adapter vs librdkafka alone' "$OUT") == 2)) || fail "not two round tables"
grep -q '^medians over 2 rounds' "$OUT" || fail "no medians"
for mode in tcp baseline; do
    row=$(sed -n '/^medians over 2 rounds/,$p' "$OUT" | grep -E "^$mode +[0-9]") ||
        fail "no median row for $mode"
    read -r _ med ratio r1 r2 <<<"$row"
    [[ $med =~ ^[0-9]+$ && $r1 =~ ^[0-9]+$ && $r2 =~ ^[0-9]+$ && $ratio =~ ^([0-9.]+|-)$ ]] ||
        fail "$mode: median row '$row'"
done
echo "ok: --rounds 2 printed both rounds and a median per mode"
