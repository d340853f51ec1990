#!/usr/bin/env bash
# bench/ndd/run.sh --quick end to end on the suite's Kafka (NDD_TEST_KAFKA): one round of the
# separate daemons (ndd-aggregation x5, ndd-correlation, ndd-adapter with one h2c feed) and of
# `ndd` with the same roles, 10 s of the quickstart's traffic each. From the JSON line: both arms
# ran, every role became ready, nothing was lost in either arm (produced = delivered +
# dead-lettered, by sequence number at ndd-sink), xDRs were written, and ndd's peak RSS is at
# most 128 MiB (the all-in-one's memory budget). CPU is reported by the benchmark, not asserted: timing does not
# belong in a test.
# Needs NDD_BUILD_DIR and NDD_TEST_KAFKA (tests/run.sh); NDD_TEST_PG is passed on for the admin
# role when ndd has one.
set -euo pipefail

BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
KAFKA=${NDD_TEST_KAFKA:-}
KAFKA=${KAFKA#\'}
KAFKA=${KAFKA%\'}
if [[ -z $KAFKA ]]; then
    echo "FAIL: NDD_TEST_KAFKA is not set (tests/run.sh starts the suite's stack and sets it)"
    exit 1
fi
command -v jq >/dev/null || { echo "FAIL: jq missing (Debian package jq)"; exit 1; }
OUT=$(mktemp /tmp/ndd-bench-ndd-smoke.XXXXXX)
trap 'rm -f "$OUT"' EXIT
fail() {
    echo "FAIL: $*"
    echo "--- bench/ndd/run.sh output (tail):"
    tail -40 "$OUT"
    exit 1
}

PG=${NDD_TEST_PG:-}
PG=${PG#\'}
PG=${PG%\'}
args=(--quick --build "$BUILD" --bootstrap "$KAFKA" --quiet)
[[ -n $PG ]] && args+=(--pg "$PG")
rc=0
timeout -k 10 170 "$SRC/bench/ndd/run.sh" "${args[@]}" >"$OUT" 2>&1 || rc=$?
J=$(tail -n1 "$OUT")
jq -e . >/dev/null 2>&1 <<<"$J" || fail "the last line is not JSON (run.sh exit $rc)"
((rc == 0)) || fail "bench/ndd/run.sh exited with $rc"

jq -e '[.runs[].arm] | sort == ["ndd", "separate"]' >/dev/null <<<"$J" ||
    fail "expected one run of each arm: $(jq -c '[.runs[].arm]' <<<"$J")"
jq -e '[.runs[] | .ready] | all' >/dev/null <<<"$J" ||
    fail "a role did not become ready: $(jq -c '[.runs[] | {arm, ready_note}]' <<<"$J")"
jq -e '[.runs[] | .produced > 0 and .delivered > 0] | all' >/dev/null <<<"$J" ||
    fail "nothing produced or delivered: $(jq -c '[.runs[] | {arm, produced, delivered}]' <<<"$J")"
jq -e '[.runs[] | .lost == 0 and .delivered + .dead_lettered == .produced] | all' >/dev/null <<<"$J" ||
    fail "loss: $(jq -c '[.runs[] | {arm, produced, delivered, dead_lettered, lost}]' <<<"$J")"
jq -e '[.runs[] | .xdrs > 0] | all' >/dev/null <<<"$J" ||
    fail "no xDRs: $(jq -c '[.runs[] | {arm, xdrs}]' <<<"$J")"
jq -e '[.runs[] | select(.arm == "ndd") | .peak_rss_mb > 0 and .peak_rss_mb <= 128] | all' >/dev/null <<<"$J" ||
    fail "ndd peak RSS above 128 MiB: $(jq -c '[.runs[] | select(.arm == "ndd") | .peak_rss_mb]' <<<"$J")"
jq -e '[.runs[] | .cpu_s > 0] | all' >/dev/null <<<"$J" || fail "no CPU figures"
echo "PASS: ndd beside the separate daemons: $(jq -c '[.runs[] | {arm, produced, delivered, lost, xdrs, cpu_s, peak_rss_mb}]' <<<"$J"); admin: $(jq -r .settings.admin_note <<<"$J")"
