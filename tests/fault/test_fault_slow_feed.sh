#!/usr/bin/env bash
# A slow feed beside a healthy one (its endpoint answers after 300 ms): the healthy feed gets
# every copy as soon as it is produced, the slow one gets every copy later; both account.
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
fault_init slowfeed
start_sink fast
start_sink slow --delay-ms 300
write_feeds fast slow
start_agg 0
start_adapter 0
produce 300 10
produce_wait
t0=$SECONDS
while (($(sink_field fast unique) < PRODUCED && SECONDS - t0 < 20)); do sleep 0.5; done
fast_s=$((SECONDS - t0))
slow_at=$(sink_field slow unique)
(($(sink_field fast unique) >= PRODUCED)) || fail "the healthy feed did not finish within 20 s beside the slow one"
say "healthy feed complete ${fast_s} s after the traffic; slow feed at $slow_at of $PRODUCED then"
settle_and_account 90
echo "PASS: slow feed beside a healthy one: the healthy one was not held back, nothing lost"
