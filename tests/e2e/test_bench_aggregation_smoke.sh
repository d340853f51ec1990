#!/usr/bin/env bash
# ndd-bench-aggregation end to end on the suite's broker: 2,000 copies on a backlog of one
# partition, in the frame form. Every row (the produce-only baseline, the daemon, the
# consume-only baseline and the relay baseline, librdkafka alone doing the aggregation's Kafka
# work) must account for the 2,000 copies without failing, and the ratio to the relay must be
# printed. The figures themselves are the benchmark's, not asserted here.
# Needs NDD_BUILD_DIR and NDD_TEST_KAFKA (tests/run.sh).
set -euo pipefail
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/e2e/bench_lib.sh
. "$SRC/tests/e2e/bench_lib.sh"
bench_test_begin bench-aggregation-smoke
timeout 240 "$BUILD/bench/aggregation/ndd-bench-aggregation" --bootstrap "$NDD_TEST_KAFKA" \
    --count 2000 --size 3400 --partitions 1 --backlog --main-format frame >"$OUT" 2>&1 ||
    fail "ndd-bench-aggregation exited $?"
for row in "librdkafka produce-only" "ndd-aggregation (backlog)" "librdkafka consume-only" \
    "librdkafka relay"; do
    line=$(grep -F "$row " "$OUT") || fail "no row '$row'"
    [[ $line != *FAILED* ]] || fail "'$row' failed"
    [[ $line =~ ${row//[()]/.}\ +2000\ msgs ]] || fail "'$row' did not count 2,000 copies: $line"
done
grep -qE '^ratio ndd-aggregation / librdkafka relay CPU per message: [0-9]+\.[0-9]+$' "$OUT" ||
    fail "no ratio to the relay"
echo "ok: every row counted the 2,000 copies"
cat "$OUT"
