#!/usr/bin/env bash
# The endpoint down for 30 s mid-stream (its connections closed, connects refused): the feed
# holds its copies and sends them when it is back; nothing is lost.
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
fault_init epdown
start_sink s1
write_feeds s1
start_agg 0
start_adapter 0
produce 300 8
sleep 3
sink_control s1 '{"close":true,"refuse_s":30}'
say "endpoint down for 30 s at 3 s"
produce_wait
sleep 20
before=$(sink_field s1 unique)
settle_and_account 60
((DELIVERED[s1] > before)) || fail "nothing was delivered after the endpoint came back"
echo "PASS: endpoint down 30 s: nothing lost"
