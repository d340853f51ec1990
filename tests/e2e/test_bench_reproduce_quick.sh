#!/usr/bin/env bash
# bench/reproduce.sh --quick end to end on the suite's stack: every figure of the table in
# docs/benchmarks.md (between the reproduce:begin/end markers) is re-run by the command the
# doc names, in its short form, and must yield a number; the machine and the load average
# before and after must be printed. The ratios of short runs are not judged (a quiet machine's
# full run is: bench/reproduce.sh without --quick).
# Needs NDD_BUILD_DIR, NDD_TEST_KAFKA, NDD_TEST_STACK_DIR and NDD_TEST_PG (tests/run.sh).
set -euo pipefail
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/e2e/bench_lib.sh
. "$SRC/tests/e2e/bench_lib.sh"
bench_test_begin bench-reproduce-quick NDD_TEST_STACK_DIR
[[ -n ${NDD_TEST_KAFKA:-} && -n ${NDD_TEST_PG:-} ]] ||
    fail "NDD_TEST_KAFKA and NDD_TEST_PG must be set (tests/run.sh)"
PG=${NDD_TEST_PG#\'}
PG=${PG%\'}
LOGS=$(mktemp -d /tmp/ndd-reproduce-quick.XXXXXX)
trap 'rm -f "$OUT"; rm -rf "$LOGS"' EXIT

want=$("$SRC/bench/reproduce.sh" --list --build "$BUILD" | wc -l)
((want >= 20)) || fail "docs/benchmarks.md's table has $want figures, want at least 20"
rc=0
timeout -k 10 170 "$SRC/bench/reproduce.sh" --quick --build "$BUILD" --bootstrap "$NDD_TEST_KAFKA" \
    --stack-dir "$NDD_TEST_STACK_DIR" --pg "$PG" --logs "$LOGS" >"$OUT" 2>&1 || rc=$?
if ((rc != 0)); then
    for f in "$LOGS"/run-*.log; do echo "--- $f (tail)"; tail -n 15 "$f"; done
    fail "bench/reproduce.sh --quick exited $rc"
fi
grep -qE "^quick: $want of $want figures measured" "$OUT" || fail "not every figure was measured"
grep -qE '^machine: .+, [0-9]+ cores, [0-9.]+ GiB' "$OUT" || fail "no machine line"
grep -qE '^load average before: [0-9.]+ [0-9.]+ [0-9.]+, after: [0-9.]+' "$OUT" ||
    fail "no load average before and after"
n=$(grep -cE '^[a-z0-9-]+ +[0-9.,-]+ +[0-9.]+ +[0-9.]+  ran$' "$OUT" || true)
((n == want)) || fail "$n rows with documented, measured and ratio, want $want"
echo "ok: $want figures measured"
cat "$OUT"
