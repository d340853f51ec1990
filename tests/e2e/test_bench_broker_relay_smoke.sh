#!/usr/bin/env bash
# bench/broker/run.sh --latency end to end on the suite's broker: one short run at 1,000
# copies/s into a one-partition NF topic, relayed by librdkafka alone (ndd-kafka-baseline
# --mode relay) to a second topic that ndd-travel follows. The run line must give the relay's
# and the follower's CPU, the whole system's copies per CPU-second and the travel figures
# (ndd-travel read at least every copy the simulator had acknowledged), and all three tables
# must be printed; the run's second topic must hold every copy and the 4 that made the NF
# topic (the script itself fails a run whose relay fell short; counted here again). The figures themselves are the benchmark's.
# Needs NDD_BUILD_DIR and NDD_TEST_STACK_DIR (tests/run.sh), kcat.
set -euo pipefail
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/e2e/bench_lib.sh
. "$SRC/tests/e2e/bench_lib.sh"
bench_test_begin bench-broker-relay-smoke NDD_TEST_STACK_DIR
timeout 150 "$SRC/bench/broker/run.sh" --stack-dir "$NDD_TEST_STACK_DIR" --build "$BUILD" \
    --rate 1000 --duration 2 --rounds 1 --warmup 1 --partitions 1 --latency \
    --config "relayed||fetch.wait.max.ms=100" >"$OUT" 2>&1 || fail "bench/broker/run.sh exited $?"
broker_check_run "$OUT" relayed
line=$(grep -F $'relayed\t' "$OUT")
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$line"; }
copies=$(field copies)
for f in relay_cpu_s follower_cpu_s whole_per_cpu_s travel_avg_ms travel_p99_ms; do
    v=$(field "$f")
    [[ -n $v ]] || fail "no $f in the run line"
done
awk -v r="$(field relay_cpu_s)" -v w="$(field whole_per_cpu_s)" 'BEGIN { exit !(r > 0 && w > 0) }' ||
    fail "relay CPU or whole-system figure not positive"
(($(field travel_records) >= copies)) || fail "ndd-travel read $(field travel_records) of $copies copies"
for t in "broker µs per copy" "whole system (broker + relay + ndd-travel)" "NF -> MAIN p99 ms"; do
    grep -qF "| producer, consumer | $t" "$OUT" || fail "no table of $t"
done
topic=$(sed -n 's/.* topic=\([^ ]*\).*/\1/p' <<<"$line")
[[ -n $topic ]] || fail "the run line does not name its topic"
boot=$(sed -n 's/^NDD_KAFKA=//p' "$NDD_TEST_STACK_DIR/env")
held=$("$BUILD/bench/probes/ndd-offsets" --bootstrap "$boot" --topic "$topic-MAIN" |
    grep -o '"records":[0-9]*' | head -1 | cut -d: -f2)
((held == copies + 4)) || fail "$topic-MAIN holds ${held:-no} records, want $copies + 4"
echo "ok: $copies copies relayed and followed; $(field whole_per_cpu_s) per CPU-second, p99 $(field travel_p99_ms) ms"
cat "$OUT"
