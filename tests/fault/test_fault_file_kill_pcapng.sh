#!/usr/bin/env bash
# The pcapng files of a synthetic file feed read in order across a kill -9 of ndd-adapter:
# copies flow at 400/s into a synthetic file feed, the adapter is killed with SIGKILL
# mid-stream and started again. The open file is sealed at its last commit when the feed
# comes back; the restarted adapter opens its synthetic connections again with new initial
# sequence numbers (RFC 6528: a hash of the 4-tuple plus a 4 us clock), so the files of the
# feed, concatenated in name order (mergecap -a), are one capture that tshark reads without a
# TCP analysis flag: no out-of-order segment, no overlap with old data, no retransmission,
# no lost segment (tshark is the peer that judges). Every copy produced is in the files (at
# least once).
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
FAULT_TIMEOUT=150
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
# shellcheck source=tests/common/file_feed_lib.sh
. "$SRC/tests/common/file_feed_lib.sh"
fault_init filekill
for tool in tshark mergecap; do
    command -v "$tool" >/dev/null || fail "$tool is not installed (the test reads the files with it)"
done
D=$W/pcap
mkdir -p "$D"
FEED=pk
# files of about 2 s, so that the kill falls after some closed files and inside an open one
file_feeds "$(file_feed "$FEED" synthetic "$D" '{"max_seconds":2}')"
start_adapter 0
"$BIN_SIM" --bootstrap "$B" --rate 400 --duration 12 --nf-mix SCP=1 --size natural --copies 2 \
    --topic-prefix "$PFX" --partitions 3 --seq-start 0 --quiet >"$W/nfsim.json" 2>"$W/nfsim.log" &
SIM_PID=$!
FAULT_PIDS+=("$SIM_PID")
sleep 5
# the kill falls inside an open file that holds committed copies (its commit record exists)
for _ in $(seq 60); do ls "$D"/*.part.sync >/dev/null 2>&1 && break; sleep 0.05; done
ls "$D"/*.part.sync >/dev/null 2>&1 || fail "no open file with a commit when the adapter is killed"
kill -KILL "${ADA_PID[0]}"
say "ndd-adapter killed with SIGKILL at 5 s ($(ls "$D" | grep -c 'pcapng$') closed files, $(ls "$D" | grep -c 'part$') open)"
sleep 0.5
start_adapter 0
produce_wait
t0=$SECONDS
while (($(manifest_records "$D") < PRODUCED)) || ls "$D"/*.part >/dev/null 2>&1; do
    ((SECONDS - t0 < 40)) || fail "$(manifest_records "$D") of $PRODUCED copies in closed files 40 s after the last was produced (log $W/adapter-0.log)"
    sleep 0.5
done
grep -q "sealed .* left open" "$W/adapter-0.log" || fail "the file open at the kill was not sealed (log $W/adapter-0.log)"
recs=$(manifest_records "$D")
say "$recs records in $(ls "$D" | grep -c 'pcapng$') files for $PRODUCED copies produced ($((recs - PRODUCED)) written twice)"

mapfile -t files < <(cd "$D" && ls -- "$PFX$FEED"-*.pcapng | sort)
(cd "$D" && mergecap -a -F pcapng -w "$W/all.pcapng" "${files[@]}") || fail "mergecap failed"
tshark -r "$W/all.pcapng" -q -z io,stat,0 >/dev/null 2>"$W/tshark.err" || fail "tshark cannot read the merged files: $(head -3 "$W/tshark.err")"
packets=$(tshark -r "$W/all.pcapng" -T fields -e frame.number 2>/dev/null | wc -l)
syns=$(tshark -r "$W/all.pcapng" -Y 'tcp.flags.syn == 1 && tcp.flags.ack == 0' -T fields -e frame.number 2>/dev/null | wc -l)
# A new session on a 4-tuple seen before (the restarted adapter's SYN) is Wireshark's note
# "port numbers reused", what a capture of a restarted client shows too; every other TCP
# analysis flag (out-of-order, overlap, retransmission, lost segment, ...) fails the test.
flagged=$(tshark -r "$W/all.pcapng" -Y 'tcp.analysis.flags && !tcp.analysis.window_update && !tcp.analysis.reused_ports' \
    -T fields -e frame.number -e _ws.expert.message 2>/dev/null)
if [[ -n $flagged ]]; then
    echo "$flagged" | head -10 >&2
    fail "$(wc -l <<<"$flagged") packets with a TCP analysis flag in the files read in order ($W/all.pcapng)"
fi
# (Not checked here: what tshark makes of the payloads. The simulator's client ports are
# random, and one that Wireshark registers for another protocol is dissected as that one.)
reused=$(tshark -r "$W/all.pcapng" -Y 'tcp.analysis.reused_ports' -T fields -e frame.number 2>/dev/null | wc -l)
((reused > 0)) || fail "no connection was opened again after the restart: the kill did not fall mid-stream"
echo "FIGURES: $packets packets, $syns connections opened ($reused again after the restart, new sequence numbers), 0 TCP analysis errors across the kill -9"
echo "PASS: the pcapng files of a synthetic file feed read cleanly in order across a kill -9"
