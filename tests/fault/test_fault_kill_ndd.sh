#!/usr/bin/env bash
# kill -9 of ndd (the all-in-one: aggregation, adapter and correlation in one process)
# mid-stream, then a restart: every copy reaches the sink or a DLQ, as with the separate
# daemons (test_fault_kill_aggregation, test_fault_kill_adapter), and /readyz names each role.
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
fault_init kndd
start_sink s1
write_feeds s1
start_ndd 0
url="http://127.0.0.1:${NDD_HTTP[0]}/readyz"
wait_ready "$url" 60 || fail "ndd not ready in 60 s: $(curl -s "$url")"
body=$(curl -s "$url")
for role in aggregation-SCP adapter correlation; do
    grep -qx "$role: ready" <<<"$body" || fail "/readyz does not say $role is ready: $body"
done
produce 400 12
sleep 5
kill -KILL "${NDD_PID[0]}"
say "ndd ${NDD_PID[0]} killed with SIGKILL at 5 s"
sleep 1
start_ndd 0
produce_wait
settle_and_account 60
# Every transaction (two copies) becomes an xDR, complete or timed out, also across the kill.
want=$((PRODUCED / 2)) t0=$SECONDS
while xdrs=$(topic_records "${PFX}XDR") && ((xdrs < want && SECONDS - t0 < 60)); do sleep 1; done
((xdrs >= want)) || fail "the correlation role wrote $xdrs xDRs for $want transactions"
# The page is read whole before it is searched: `curl | grep -q` under pipefail fails when
# grep stops at the match while curl still writes (curl exits 23 on the closed pipe).
metrics=$(curl -s "http://127.0.0.1:${NDD_HTTP[0]}/metrics")
grep -q '^ndd_director_role_up{role="correlation"} 1' <<<"$metrics" ||
    fail "ndd_director_role_up does not show the correlation running: $(grep '^ndd_director_role_up' <<<"$metrics")"
kill -TERM "${NDD_PID[0]}"
rc=0
wait "${NDD_PID[0]}" || rc=$?
((rc == 0)) || fail "ndd exited $rc after SIGTERM"
echo "PASS: ndd killed -9 mid-stream: nothing lost; $xdrs xDRs for $want transactions"
