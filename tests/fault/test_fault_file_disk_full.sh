#!/usr/bin/env bash
# A file feed on a full disk pauses before a write can fail: a JSON lines feed (default
# min_free_bytes, 1 MiB) writes into a 4 MiB tmpfs this test mounts (root; a failed mount is a
# FAIL) until the next batch would leave less than min_free_bytes free. Then the feed pauses:
# no write fails (no ENOSPC, no error line of the transport), the tmpfs keeps about
# min_free_bytes free, the endpoint is down with a reason that names the directory and its
# free space, and the endpoint-down alarm is raised once, and stays raised (no flapping) while
# the reconnect attempts find no room. Files are then deleted (an operator, or retention
# elsewhere): the feed resumes, the alarm is cleared once, and every copy produced is in the
# files the manifest lists, exactly once (no crash: no repeat).
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
FAULT_TIMEOUT=120
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
# shellcheck source=tests/common/file_feed_lib.sh
. "$SRC/tests/common/file_feed_lib.sh"
fault_init filefull
D=$W/disk
mkdir -p "$D"
[[ $(id -u) == 0 ]] || fail "this test mounts a tmpfs: it needs root"
mount -t tmpfs -o size=4m tmpfs "$D" || fail "mount -t tmpfs on $D failed"
umount_disk() { umount -l "$D" 2>/dev/null || true; }
trap 'umount_disk; fault_cleanup' EXIT
free_bytes() { df -B1 --output=avail "$D" | tail -1 | tr -d ' '; }
# alarm_count raised|cleared: the feed's endpoint-down lines after its first raise (the
# adapter clears its alarms once when an endpoint first comes up)
alarm_count() {
    awk -v r="alarm endpoint-down raised on $RES" -v w="alarm endpoint-down $1 on $RES" \
        'index($0, r) {seen = 1} seen && index($0, w) {n++} END {print n + 0}' "$LOG"
}

# ~880 bytes a line: about 3,300 copies fill the 3 MiB above min_free_bytes, the rest fits
# once those files are gone
N=${FILE_FULL_COPIES:-5000}
produced=$(sim_count "$N")
((produced == N)) || fail "ndd-nf-sim acknowledged $produced of $N"
FEED=full
file_feeds "$(file_feed "$FEED" json "$D" '{"max_bytes":131072}')"
start_adapter 0
LOG=$W/adapter-0.log
RES="$PFX$FEED/file://$D"
for _ in $(seq 300); do grep -q "disk full: [0-9]* bytes free in $D" "$LOG" && break; sleep 0.1; done
grep -q "disk full: [0-9]* bytes free in $D" "$LOG" || fail "the feed did not pause on the full disk within 30 s (log $LOG)"
acked_at_pause=$(ada_metric ndd_adapter_messages_acked_total "$FEED")
say "paused with $(free_bytes) bytes free, $acked_at_pause of $produced copies acknowledged: $(grep -m1 -o 'disk full: .*' "$LOG")"
((acked_at_pause < produced)) || fail "the disk never filled: make the tmpfs smaller or N larger"
# the reconnect attempts (backoff 100 ms .. 10 s) find no room: down, one raise, no clear
sleep 4
[[ $(ada_metric ndd_adapter_endpoint_up "$FEED") == 0 ]] || fail "the endpoint is not down while the disk is full"
raised=$(alarm_count raised)
cleared=$(alarm_count cleared)
((raised == 1 && cleared == 0)) || fail "while full: endpoint-down raised $raised and cleared $cleared times (want 1 and 0; log $LOG)"
avail=$(free_bytes)
((avail >= 1048576)) || fail "the feed wrote below min_free_bytes: $avail bytes free"
say "after 4 s still paused: $avail bytes free, alarm raised once"

# room again: the closed files go (an operator moved them away)
n_files=$(cd "$D" && ls -- "$PFX$FEED"-*.jsonl | wc -l)
rm -f "$D/$PFX$FEED"-*.jsonl
say "removed the $n_files closed files: $(free_bytes) bytes free"
t0=$SECONDS
while (($(ada_metric ndd_adapter_messages_acked_total "$FEED") < produced)); do
    ((SECONDS - t0 < 40)) || fail "the feed did not resume: $(ada_metric ndd_adapter_messages_acked_total "$FEED") of $produced acknowledged (log $LOG)"
    sleep 0.2
done
say "resumed: all $produced copies acknowledged $((SECONDS - t0)) s after the files went"
kill -TERM "${ADA_PID[0]}"
for _ in $(seq 100); do running "${ADA_PID[0]}" || break; sleep 0.1; done
raised=$(alarm_count raised)
cleared=$(alarm_count cleared)
say "resumed: endpoint-down raised $raised, cleared $cleared"
((raised == 1 && cleared == 1)) || fail "endpoint-down raised $raised and cleared $cleared times (want 1 and 1; log $LOG)"
if grep -Ei "no space left|ENOSPC|error.*(writing|fsync|rename|cannot)" "$LOG"; then
    fail "a write failed on the full disk (log $LOG)"
fi
m=$(manifest_records "$D")
((m == produced)) || fail "the manifest lists $m records, $produced were produced"
echo "PASS: full disk: paused before ENOSPC with $avail bytes free, alarm raised once and cleared once, $m copies in files"
