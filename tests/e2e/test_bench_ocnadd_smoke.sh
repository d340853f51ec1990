#!/usr/bin/env bash
# bench/run.sh --profile ocnadd, briefly, on the suite's stack: ndd-nf-sim and every NDD daemon
# reach Kafka over SASL_SSL (SCRAM-SHA-512) as a user the run makes, the NF topics and MAIN are
# lz4-compressed, copies are 3,400-3,550 bytes, and both feeds (HTTP/2 over TLS, TCP frames)
# receive every copy: lost 0, no duplicates, per-CPU-second figures for NDD and the broker.
# 5 s at 500 copies/s, no baselines. Needs NDD_BUILD_DIR and NDD_TEST_STACK_DIR (tests/run.sh).
set -euo pipefail
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/e2e/bench_lib.sh
. "$SRC/tests/e2e/bench_lib.sh"
bench_test_begin bench-ocnadd-smoke NDD_TEST_STACK_DIR
for tool in jq kcat java; do
    command -v $tool >/dev/null || fail "$tool missing (deploy/local/install-deps.sh)"
done
W=$(mktemp -d /tmp/ndd-bench-ocnadd.XXXXXX)
trap 'rm -f "$OUT"; rm -rf "$W"' EXIT

rc=0
timeout -k 10 110 "$SRC/bench/run.sh" --profile ocnadd --build "$BUILD" --stack-dir "$NDD_TEST_STACK_DIR" \
    --work-dir "$W" --duration 5 --rate 500 --no-baselines --quiet >"$OUT" 2>&1 || rc=$?
# the result is the last line on stdout; with --work-dir run.sh then says where W is (stderr)
J=$(grep '^{' "$OUT" | tail -n1)
jq -e . >/dev/null 2>&1 <<<"$J" || fail "no result JSON line (run.sh exit $rc)"
((rc == 0)) || fail "bench/run.sh exited with $rc"

jq -e '.profile == "ocnadd"' >/dev/null <<<"$J" || fail "profile is not ocnadd"
jq -e '.kafka_clients.security == "sasl_ssl" and .kafka_clients.compression != "none"' >/dev/null <<<"$J" ||
    fail "Kafka clients not SASL_SSL with a codec: $(jq -c .kafka_clients <<<"$J")"
grep -q '^bench: Kafka clients: SASL_SSL on 127.0.0.1:[0-9]* as ndd-bench-' "$OUT" ||
    fail "run.sh did not say it set up the SASL_SSL user"
jq -e '.lost == 0 and .duplicates == 0 and .delivered > 0' >/dev/null <<<"$J" ||
    fail "lost / duplicates: $(jq -c '{produced,delivered,dead_lettered,lost,duplicates}' <<<"$J")"
jq -e '.produced >= 2375 and .delivered + .dead_lettered == .produced' >/dev/null <<<"$J" ||
    fail "short of 5 s at 500/s: $(jq -c '{produced,delivered,dead_lettered,mps}' <<<"$J")"
# both feeds, each with every copy
jq -e '.feeds | (keys == ["h2tls1","tcp1"]) and ([.[].delivered] | min > 0)' >/dev/null <<<"$J" ||
    fail "feeds: $(jq -c .feeds <<<"$J")"
jq -e --argjson p "$(jq .produced <<<"$J")" '[.feeds[] | .delivered + .dead_lettered] | all(. == $p)' \
    >/dev/null <<<"$J" || fail "a feed is short: $(jq -c .feeds <<<"$J")"
# copies of 3,400-3,550 bytes (the simulator's own account of what it produced)
jq -e '.avg_size >= 3400 and .avg_size <= 3550' "$W/run/nfsim.json" >/dev/null ||
    fail "copy size: $(jq -c '{avg_size,bytes,produced}' "$W/run/nfsim.json")"
# the password never reached a command line or a log
pw=$(cat "$W/kafka-client/password")
[[ $(stat -c %a "$W/kafka-client/password") == 600 ]] || fail "password file not 0600"
! grep -rqF -- "$pw" "$W"/run/*.log "$W"/run/*.out "$OUT" 2>/dev/null || fail "the SASL password is in a log"
jq -e '.per_core.ndd > 0 and .per_core.ndd_with_kafka > 0 and .per_core.ndd_with_kafka < .per_core.ndd' \
    >/dev/null <<<"$J" || fail "per-CPU-second figures: $(jq -c .per_core <<<"$J")"
jq -e '.e2e_ms.p99 > 0 and .e2e_ms.p99 >= .e2e_ms.p50' >/dev/null <<<"$J" || fail "latency: $(jq -c .e2e_ms <<<"$J")"
grep -q '^OCNADD published: ' "$OUT" || fail "no OCNADD figure beside the table"
echo "PASS: ocnadd smoke: $(jq -c '{produced,delivered,lost,per_core,e2e_ms,kafka_clients}' <<<"$J")"
