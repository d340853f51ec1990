#!/usr/bin/env bash
# bench/broker/run.sh end to end on the suite's broker: one short round of two configurations
# (NDD's producer default and lz4 with linger.ms 20) at 1,000 copies/s into a one-partition
# topic (--partitions 1). It must print a line per run with the copies the simulator had
# acknowledged (2,000 or more at 2 s) and a positive broker CPU per copy, and the table of
# medians; the topics it made must have one partition. The figures themselves are the
# benchmark's, not asserted here: the suite's other tests share the broker.
# Needs NDD_BUILD_DIR and NDD_TEST_STACK_DIR (tests/run.sh), kcat.
set -euo pipefail
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/e2e/bench_lib.sh
. "$SRC/tests/e2e/bench_lib.sh"
bench_test_begin bench-broker-smoke NDD_TEST_STACK_DIR
timeout 120 "$SRC/bench/broker/run.sh" --stack-dir "$NDD_TEST_STACK_DIR" --build "$BUILD" \
    --rate 1000 --duration 2 --rounds 1 --warmup 1 --partitions 1 \
    --config "default||fetch.wait.max.ms=100" \
    --config "lz4, linger.ms 20|compression.type=lz4,linger.ms=20|fetch.wait.max.ms=100" >"$OUT" 2>&1 ||
    fail "bench/broker/run.sh exited $?"
for label in "default" "lz4, linger.ms 20"; do
    broker_check_run "$OUT" "$label"
done
grep -q ', 1 partitions (' "$OUT" || fail "the header does not say 1 partition"
# The run's topics are brk<pid>-<n>-SCP: the warm-up's and one per configuration.
pid=$(sed -n 's/.*(topics brk\([0-9]*\)-\*-SCP).*/\1/p' "$OUT")
[[ -n $pid ]] || fail "the header does not name the run's topics"
boot=$(sed -n 's/^NDD_KAFKA=//p' "$NDD_TEST_STACK_DIR/env")
meta=$(kcat -b "$boot" -L -J) || fail "kcat -L failed"
python3 - "$pid" "$meta" <<'PY' || fail "the run's topics do not all have one partition"
import json, sys
pid, meta = sys.argv[1], json.loads(sys.argv[2])
mine = [t for t in meta["topics"] if t["topic"].startswith(f"brk{pid}-") and t["topic"].endswith("-SCP")]
assert len(mine) >= 3, [t["topic"] for t in mine]
bad = [(t["topic"], len(t["partitions"])) for t in mine if len(t["partitions"]) != 1]
assert not bad, bad
print(f"ok: {len(mine)} topics of one partition")
PY
echo "ok: $(grep -c $'\t' "$OUT") runs, table printed"
cat "$OUT"
