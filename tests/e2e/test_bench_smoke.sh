#!/usr/bin/env bash
# bench/run.sh --profile smoke end to end: a private Kafka, ndd-aggregation, ndd-adapter with one
# h2c feed, ndd-sink, ndd-nf-sim for 10 s. The last line of the output must be the benchmark's result JSON,
# and by the sink's own count (sequence numbers) nothing may be lost: lost = 0, delivered > 0,
# delivered + dead_lettered = produced, no duplicates, and figures for every component.
# Needs NDD_BUILD_DIR; tools jq, curl; the Kafka jars (deploy/local/install-deps.sh).
set -euo pipefail

BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
command -v jq >/dev/null || { echo "FAIL: jq missing (Debian package jq)"; exit 1; }
OUT=$(mktemp /tmp/ndd-bench-smoke.XXXXXX)
trap 'rm -f "$OUT"' EXIT
fail() {
    echo "FAIL: $*"
    echo "--- bench/run.sh output (tail):"
    tail -40 "$OUT"
    exit 1
}

rc=0
timeout 170 "$SRC/bench/run.sh" --profile smoke --build "$BUILD" --quiet >"$OUT" 2>&1 || rc=$?
J=$(tail -n1 "$OUT")
jq -e . >/dev/null 2>&1 <<<"$J" || fail "the last line is not JSON (run.sh exit $rc)"
((rc == 0)) || fail "bench/run.sh exited with $rc"

for k in profile produced delivered dead_lettered lost duplicates mps e2e_ms cpu_s msgs_per_cpu_s rss_mb; do
    jq -e --arg k "$k" 'has($k)' >/dev/null <<<"$J" || fail "key $k missing from the JSON line"
done
jq -e '.profile == "smoke"' >/dev/null <<<"$J" || fail "profile is not smoke"
jq -e '.lost == 0' >/dev/null <<<"$J" || fail "lost = $(jq .lost <<<"$J")"
jq -e '.delivered > 0' >/dev/null <<<"$J" || fail "nothing delivered"
jq -e '.delivered + .dead_lettered == .produced' >/dev/null <<<"$J" ||
    fail "delivered + dead_lettered != produced: $(jq -c '{produced,delivered,dead_lettered}' <<<"$J")"
jq -e '.duplicates == 0' >/dev/null <<<"$J" || fail "duplicates: $(jq .duplicates <<<"$J")"
# 10 s at 500 copies/s: the simulator must have reached its rate (within 5 %)
jq -e '.produced >= 4750 and .mps >= 475' >/dev/null <<<"$J" || fail "simulator short of its rate: $(jq -c '{produced,mps}' <<<"$J")"
jq -e '.e2e_ms.p99 > 0 and .e2e_ms.p99 >= .e2e_ms.p50 and .e2e_ms.max >= .e2e_ms.p99' >/dev/null <<<"$J" ||
    fail "latency figures inconsistent: $(jq -c .e2e_ms <<<"$J")"
for c in aggregation adapter sink nf-sim kafka; do
    jq -e --arg c "$c" '.cpu_s[$c] > 0 and .rss_mb[$c] > 0 and .msgs_per_cpu_s[$c] > 0' >/dev/null <<<"$J" ||
        fail "no CPU/RSS figures for $c: $(jq -c '{cpu_s,rss_mb}' <<<"$J")"
done
grep -q '| Success rate' "$OUT" || fail "no table printed"
echo "PASS: smoke: $(jq -c '{produced,delivered,lost,mps,e2e_ms}' <<<"$J")"
