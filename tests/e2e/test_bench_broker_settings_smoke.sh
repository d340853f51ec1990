#!/usr/bin/env bash
# bench/broker/settings.sh end to end: one variant of the broker's own settings (Serial GC, 2
# I/O threads) on a fresh private stack, one short round of both producer configurations at
# 1,000 copies/s. The script must say the variant was in effect (it checks the broker's
# command line and server.properties itself and fails otherwise), print a line per run with
# the copies acknowledged (2,000 or more at 2 s) and a positive broker CPU per copy, print the
# table rows of the variant, and leave no stack behind. The figures are the benchmark's.
# Needs NDD_BUILD_DIR, Java and the Kafka jars (tests/run.sh installs them), kcat.
set -euo pipefail
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/e2e/bench_lib.sh
. "$SRC/tests/e2e/bench_lib.sh"
bench_test_begin bench-broker-settings-smoke NDD_TEST_STACK_DIR
label="Serial GC, 2 I/O threads"
timeout 240 "$SRC/bench/broker/settings.sh" --build "$BUILD" --rounds 1 --warmup 1 --rate 1000 \
    --duration 2 --partitions 1 --variant "$label|-XX:+UseSerialGC|num.io.threads=2" >"$OUT" 2>&1 ||
    fail "bench/broker/settings.sh exited $?"
grep -qF "variant '$label': broker pid " "$OUT" || fail "no line saying the variant was in effect"
grep -qF "GC flags '-XX:+UseSerialGC', properties 'num.io.threads=2'" "$OUT" ||
    fail "the variant's flags and properties are not reported"
for conf in "NDD default (linger.ms 5)" "lz4, linger.ms 20"; do
    broker_check_run "$OUT" "$label · $conf"
done
# The private stack is gone: no broker runs from the script's scratch directory.
if pgrep -f 'ndd-bench-broker-settings\.' >/dev/null; then
    fail "a process of the script's stack is still running: $(pgrep -af 'ndd-bench-broker-settings\.')"
fi
echo "ok: the variant measured on its own stack, which is gone"
cat "$OUT"
