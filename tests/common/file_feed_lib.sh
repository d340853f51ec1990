# shellcheck shell=bash
# Shared by the file feed scenarios (tests/e2e/test_file_feed_keeps_up.sh,
# tests/fault/test_fault_file_*.sh): ndd-nf-sim produces copies straight to a source topic
# PFX SCP, ndd-adapter runs file feeds of that topic, and the figures come from the adapter's
# /metrics and the feed's files. Source it after fault_lib.sh (fault_init done).

# file_feed NAME ENCODING DIR [FILE_MEMBER_JSON]: one feed object (defaults unless given).
file_feed() {
    local extra=""
    [[ -n ${4:-} ]] && extra=",\"file\":$4"
    printf '{"name":"%s%s","source_topic":"%sSCP","transport":"file","encoding":"%s","endpoints":[{"url":"file://%s"}]%s}' \
        "$PFX" "$1" "$PFX" "$2" "$3" "$extra"
}
# file_feeds FEED_OBJECT...: FEEDS_FILE with these feeds.
file_feeds() {
    FEEDS_FILE=$W/feeds.json
    local IFS=,
    echo "{\"feeds\":[$*]}" | jq . >"$FEEDS_FILE" || fail "feeds file is not JSON"
}
# ada_metric NAME FEED: the sum of a family's series of that feed on adapter slot 0.
ada_metric() {
    http_get "http://127.0.0.1:${ADA_HTTP[0]}/metrics" |
        awk -v n="$1" -v f="feed=\"$PFX$2\"" '$1 ~ "^"n"\\{" && index($1, f) {s += $2} END {printf "%d\n", s}'
}
# wait_acked FEED N SECONDS: until the feed acknowledged N copies; false at the deadline.
wait_acked() {
    local t0=$SECONDS
    while (($(ada_metric ndd_adapter_messages_acked_total "$1") < $2)); do
        ((SECONDS - t0 >= $3)) && return 1
        sleep 0.1
    done
}
# sim_count N [RATE]: N copies (two per transaction) to PFX SCP, in the foreground.
sim_count() {
    "$BIN_SIM" --bootstrap "$B" --rate "${2:-0}" --count "$1" --nf-mix SCP=1 --size natural \
        --copies 2 --topic-prefix "$PFX" --partitions 3 --seq-start "${SIM_SEQ:-0}" --quiet \
        >"$W/nfsim.json" 2>"$W/nfsim.log" || fail "ndd-nf-sim failed: $(tail -3 "$W/nfsim.log")"
    jq -r .acked "$W/nfsim.json"
}
# manifest_records DIR: the records the manifest lists for the files present.
manifest_records() {
    [[ -s $1/manifest.jsonl ]] || { echo 0; return; }
    jq -s 'map(.records) | add // 0' "$1/manifest.jsonl"
}
now_ms() { date +%s%3N; }
