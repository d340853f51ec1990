#!/usr/bin/env bash
# bench/broker/run.sh end to end on the suite's broker: one short round of two configurations
# (NDD's producer default and lz4 with linger.ms 20) at 1,000 copies/s. It must print a line per
# run with the copies the simulator had acknowledged (2,000 or more at 2 s) and a positive
# broker CPU per copy, and the table of medians. The figures themselves are the benchmark's,
# not asserted here: the suite's other tests share the broker.
# Needs NDD_BUILD_DIR and NDD_TEST_STACK_DIR (tests/run.sh), kcat.
set -euo pipefail
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
if [[ -z ${NDD_TEST_STACK_DIR:-} ]]; then
    echo "SKIP: NDD_TEST_STACK_DIR is not set (tests/run.sh starts the suite's stack)"
    exit 0
fi
OUT=$(mktemp /tmp/ndd-bench-broker-smoke.XXXXXX)
trap 'rm -f "$OUT"' EXIT
fail() {
    echo "FAIL: $*"
    cat "$OUT"
    exit 1
}
timeout 120 "$SRC/bench/broker/run.sh" --stack-dir "$NDD_TEST_STACK_DIR" --build "$BUILD" \
    --rate 1000 --duration 2 --rounds 1 --warmup 1 \
    --config "default||fetch.wait.max.ms=100" \
    --config "lz4, linger.ms 20|compression.type=lz4,linger.ms=20|fetch.wait.max.ms=100" >"$OUT" 2>&1 ||
    fail "bench/broker/run.sh exited $?"
for label in "default" "lz4, linger.ms 20"; do
    line=$(grep -F "$label"$'\t' "$OUT") || fail "no run line for '$label'"
    copies=$(sed -n 's/.* copies=\([0-9]*\).*/\1/p' <<<"$line")
    us=$(sed -n 's/.*broker_us_per_copy=\([0-9.]*\).*/\1/p' <<<"$line")
    ((copies >= 2000)) || fail "'$label': $copies copies acknowledged, want at least 2,000"
    awk -v u="$us" 'BEGIN { exit !(u > 0) }' || fail "'$label': broker CPU per copy '$us'"
    grep -qF "| $label | " "$OUT" || fail "no table row for '$label'"
done
echo "ok: $(grep -c $'\t' "$OUT") runs, table printed"
cat "$OUT"
