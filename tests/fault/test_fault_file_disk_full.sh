#!/usr/bin/env bash
# A file feed on a full disk pauses before a write can fail: two JSON lines feeds, one with the
# default min_free_bytes (1 MiB), one with min_free_bytes 0, each write into a 4 MiB tmpfs this
# test mounts (root; a failed mount is a FAIL) until the next batch would leave less than
# min_free_bytes (plus a 64 KiB reserve) free. Then the feed pauses:
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
[[ $(id -u) == 0 ]] || fail "this test mounts a tmpfs: it needs root"
declare -A DIR=([full]=$W/disk1 [zero]=$W/disk0) MINFREE=([full]=1048576 [zero]=0)
umount_disks() { for d in "${DIR[@]}"; do umount -l "$d" 2>/dev/null || true; done; }
trap 'umount_disks; fault_cleanup' EXIT
for f in full zero; do
    mkdir -p "${DIR[$f]}"
    mount -t tmpfs -o size=4m tmpfs "${DIR[$f]}" || fail "mount -t tmpfs on ${DIR[$f]} failed"
done
free_bytes() { df -B1 --output=avail "$1" | tail -1 | tr -d ' '; }
LOG=$W/adapter-0.log
# alarm_count FEED raised|cleared: the feed's endpoint-down lines after its first raise (the
# adapter clears its alarms once when an endpoint first comes up)
alarm_count() {
    local res="$PFX$1/file://${DIR[$1]}"
    awk -v r="alarm endpoint-down raised on $res" -v w="alarm endpoint-down $2 on $res" \
        'index($0, r) {seen = 1} seen && index($0, w) {n++} END {print n + 0}' "$LOG"
}

# ~880 bytes a line: 3,300 to 4,400 copies fill what the feeds may use, the rest fits once
# those files are gone
N=${FILE_FULL_COPIES:-5000}
produced=$(sim_count "$N")
((produced == N)) || fail "ndd-nf-sim acknowledged $produced of $N"
file_feeds "$(file_feed full json "${DIR[full]}" '{"max_bytes":131072}')" \
    "$(file_feed zero json "${DIR[zero]}" '{"max_bytes":131072,"min_free_bytes":0}')"
start_adapter 0
declare -A AVAIL
for f in full zero; do
    d=${DIR[$f]}
    for _ in $(seq 300); do grep -q "disk full: [0-9]* bytes free in $d" "$LOG" && break; sleep 0.1; done
    grep -q "disk full: [0-9]* bytes free in $d" "$LOG" || fail "feed $f did not pause on its full disk within 30 s (log $LOG)"
    acked=$(ada_metric ndd_adapter_messages_acked_total "$f")
    say "feed $f paused with $(free_bytes "$d") bytes free, $acked of $produced copies acknowledged: $(grep -m1 -o "disk full: [0-9]* bytes free in $d.*" "$LOG")"
    ((acked < produced)) || fail "the disk of feed $f never filled: make the tmpfs smaller or N larger"
done
# the reconnect attempts (backoff 100 ms .. 10 s) find no room: down, one raise, no clear
sleep 4
for f in full zero; do
    [[ $(ada_metric ndd_adapter_endpoint_up "$f") == 0 ]] || fail "the endpoint of feed $f is not down while its disk is full"
    raised=$(alarm_count "$f" raised) cleared=$(alarm_count "$f" cleared)
    ((raised == 1 && cleared == 0)) || fail "feed $f while full: endpoint-down raised $raised and cleared $cleared times (want 1 and 0; log $LOG)"
    # the alarm says why: the disk, its free space
    grep -q "alarm endpoint-down raised on $PFX$f/file://${DIR[$f]}: disk full: [0-9]* bytes free in ${DIR[$f]}" "$LOG" ||
        fail "feed $f: the endpoint-down alarm does not name the full disk and its free space (log $LOG)"
    AVAIL[$f]=$(free_bytes "${DIR[$f]}")
    ((AVAIL[$f] >= MINFREE[$f])) || fail "feed $f wrote below min_free_bytes: ${AVAIL[$f]} bytes free"
    say "feed $f after 4 s still paused: ${AVAIL[$f]} bytes free, alarm raised once"
done

# room again: the closed files go (an operator moved them away)
for f in full zero; do
    n_files=$(cd "${DIR[$f]}" && ls -- "$PFX$f"-*.jsonl | wc -l)
    rm -f "${DIR[$f]}/$PFX$f"-*.jsonl
    say "feed $f: removed its $n_files closed files: $(free_bytes "${DIR[$f]}") bytes free"
done
t0=$SECONDS
for f in full zero; do
    while (($(ada_metric ndd_adapter_messages_acked_total "$f") < produced)); do
        ((SECONDS - t0 < 40)) || fail "feed $f did not resume: $(ada_metric ndd_adapter_messages_acked_total "$f") of $produced acknowledged (log $LOG)"
        sleep 0.2
    done
done
say "resumed: all $produced copies of both feeds acknowledged $((SECONDS - t0)) s after the files went"
kill -TERM "${ADA_PID[0]}"
for _ in $(seq 100); do running "${ADA_PID[0]}" || break; sleep 0.1; done
if grep -Ei "no space left|ENOSPC|error.*(writing|fsync|rename|cannot)" "$LOG"; then
    fail "a write failed on a full disk (log $LOG)"
fi
for f in full zero; do
    raised=$(alarm_count "$f" raised) cleared=$(alarm_count "$f" cleared)
    ((raised == 1 && cleared == 1)) || fail "feed $f: endpoint-down raised $raised and cleared $cleared times (want 1 and 1; log $LOG)"
    m=$(manifest_records "${DIR[$f]}")
    ((m == produced)) || fail "feed $f: the manifest lists $m records, $produced were produced"
    echo "feed $f (min_free_bytes ${MINFREE[$f]}): paused before ENOSPC with ${AVAIL[$f]} bytes free, endpoint-down raised once and cleared once, $m copies in files"
done
echo "PASS: full disks: both feeds paused before ENOSPC without a failed write, one raise and one clear each"
