#!/usr/bin/env bash
# File feeds keep up with their defaults: a synthetic (pcapng) and a JSON lines file feed,
# with no delivery or file settings, each drain a backlog of copies at 2,000 copies/s or more
# and follow a steady 2,000 copies/s for 10 s: every copy acknowledged at 1,800/s or more over
# the run (the simulator's 10 s of producing plus the wait for the last ack after it: a feed
# that falls behind ends the run with a backlog to drain). The figures (copies/s on the
# backlog, the rate at 2,000/s and the highest ndd_adapter_consumer_lag_messages seen, a gauge
# refreshed about every 2 s) are printed. Copies are acknowledged by group commit (fdatasync of
# the open file and its commit record, at most file.sync_ms after the write), so the feed's
# memory budget never waits for a file to close. After a stop every acknowledged copy is in a
# file the manifest lists (the open files are sealed).
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
FAULT_TIMEOUT=150
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
# shellcheck source=tests/common/file_feed_lib.sh
. "$SRC/tests/common/file_feed_lib.sh"
fault_init filekeep
mkdir -p "$W/pcap" "$W/jsonl"
BACKLOG=${FILE_BACKLOG:-20000}
RATE=2000
STEADY_S=10

produced=$(sim_count "$BACKLOG")
((produced == BACKLOG)) || fail "ndd-nf-sim acknowledged $produced of $BACKLOG"
file_feeds "$(file_feed syn synthetic "$W/pcap")" "$(file_feed js json "$W/jsonl")"
t0=$(now_ms)
start_adapter 0
declare -A RATE_BACKLOG
for f in syn js; do
    wait_acked "$f" "$produced" 60 ||
        fail "feed $f acknowledged $(ada_metric ndd_adapter_messages_acked_total "$f") of $produced in 60 s (log $W/adapter-0.log)"
    ms=$(($(now_ms) - t0))
    RATE_BACKLOG[$f]=$((produced * 1000 / (ms > 0 ? ms : 1)))
    say "feed $f: backlog of $produced copies acknowledged in $ms ms (adapter start included): ${RATE_BACKLOG[$f]} copies/s"
done

# steady: 2,000 copies/s for STEADY_S s; the lag is sampled every 0.5 s
SIM_SEQ=$produced
"$BIN_SIM" --bootstrap "$B" --rate "$RATE" --duration "$STEADY_S" --nf-mix SCP=1 --size natural \
    --copies 2 --topic-prefix "$PFX" --seq-start "$SIM_SEQ" --quiet >"$W/steady.json" 2>"$W/steady.log" &
SIM_PID=$!
FAULT_PIDS+=("$SIM_PID")
declare -A MAXLAG=([syn]=0 [js]=0)
while running "$SIM_PID"; do
    for f in syn js; do
        l=$(ada_metric ndd_adapter_consumer_lag_messages "$f")
        ((l > MAXLAG[$f])) && MAXLAG[$f]=$l
    done
    sleep 0.5
done
wait "$SIM_PID" || fail "ndd-nf-sim (steady) failed: $(tail -3 "$W/steady.log")"
steady=$(jq -r .acked "$W/steady.json")
prod_ms=$(jq -r '.produce_seconds * 1000 | floor' "$W/steady.json")
total=$((produced + steady))
t1=$(now_ms)
declare -A RATE_STEADY
for f in syn js; do
    wait_acked "$f" "$total" 10 ||
        fail "feed $f: $(ada_metric ndd_adapter_messages_acked_total "$f") of $total acknowledged 10 s after a steady $RATE/s (log $W/adapter-0.log)"
    t2=$(now_ms)
    RATE_STEADY[$f]=$((steady * 1000 / (prod_ms + t2 - t1)))
    say "feed $f: steady $RATE/s for $STEADY_S s ($steady copies): all acknowledged $((t2 - t1)) ms after the last was produced, ${RATE_STEADY[$f]} copies/s over the run, highest lag ${MAXLAG[$f]} copies"
    ((RATE_STEADY[$f] >= RATE * 9 / 10)) || fail "feed $f did not keep up with $RATE/s: ${RATE_STEADY[$f]} copies/s over the run"
    ((RATE_BACKLOG[$f] >= RATE)) || fail "feed $f drained its backlog at ${RATE_BACKLOG[$f]} copies/s, below $RATE"
done

kill -TERM "${ADA_PID[0]}"
for _ in $(seq 100); do running "${ADA_PID[0]}" || break; sleep 0.1; done
running "${ADA_PID[0]}" && fail "ndd-adapter did not stop on SIGTERM"
for d in pcap jsonl; do
    ls "$W/$d"/*.part >/dev/null 2>&1 && fail "a .part file is left in $W/$d after a stop"
    m=$(manifest_records "$W/$d")
    ((m == total)) || fail "$d: the manifest lists $m records, $total were acknowledged"
    say "$d: $(ls "$W/$d" | grep -vc manifest) files, $m records in the manifest"
done
echo "FIGURES (defaults): synthetic file feed: backlog ${RATE_BACKLOG[syn]} copies/s; at $RATE/s ${RATE_STEADY[syn]} copies/s over the run, max lag ${MAXLAG[syn]}. JSON lines file feed: backlog ${RATE_BACKLOG[js]} copies/s; at $RATE/s ${RATE_STEADY[js]} copies/s over the run, max lag ${MAXLAG[js]}"
echo "PASS: file feeds with default settings keep up"
