# shellcheck shell=bash
# Shared by tests/fault/test_fault_ndd_eos_*.sh, on top of fault_lib.sh: `ndd` (the one binary,
# every role) with the aggregation's exactly-once on, a Kafka feed (itself exactly-once) and an
# HTTP/2 feed reading MAIN, and the count the scenarios end with, read back with kcat in
# read_committed mode: by @seq (the simulator's per-copy sequence number) the duplicates and
# the lost on MAIN and at the Kafka feed's target topic, and the identical duplicate xDRs.

# eos_start SLOT: the feeds (h2c sink s1 and the Kafka feed to PFX feed-out) and ndd.
eos_setup() {
    start_sink s1
    write_feeds s1
    jq --arg n "${PFX}kfeed" --arg src "${PFX}MAIN" --arg url "kafka://$B/${PFX}feed-out" \
        '.feeds += [{name: $n, source_topic: $src, transport: "kafka", encoding: "frame",
          endpoints: [{url: $url}], kafka: {exactly_once: true}}]' "$FEEDS_FILE" >"$W/f.json" &&
        mv "$W/f.json" "$FEEDS_FILE" || fail "feeds file"
    FAULT_NDD_ROLES='{"aggregation": {"exactly-once": true}, "correlation": {"exactly-once": true}}'
    NDD_FAULT_NO_ADMIN=1
}

# eos_seqs TOPIC: the @seq of every record read_committed, one a line, into W/TOPIC.seq.
eos_seqs() {
    timeout 60 kcat -C -b "$B" -t "$1" -o beginning -e -q -X isolation.level=read_committed \
        -f '%h\n' 2>"$W/kcat.err" | tr ',' '\n' | sed -n 's/^@seq=//p' >"$W/$1.seq" ||
        fail "kcat could not read $1: $(tail -2 "$W/kcat.err")"
}

# eos_account TOPIC WHAT: waits (bounded) until TOPIC holds every produced @seq, then prints
# records, distinct, duplicates and lost; fails unless duplicates = lost = 0.
eos_account() {
    local t0=$SECONDS n distinct dups lost
    while :; do
        eos_seqs "$1"
        distinct=$(sort -u "$W/$1.seq" | wc -l)
        ((distinct >= PRODUCED || SECONDS - t0 >= 60)) && break
        sleep 2
    done
    n=$(wc -l <"$W/$1.seq")
    dups=$((n - distinct))
    lost=$((PRODUCED - distinct))
    echo "account $2 ($1, read_committed, by @seq): produced $PRODUCED, records $n, distinct $distinct; duplicates $dups; lost $lost"
    ((dups == 0 && lost == 0)) || fail "$2: $dups duplicate(s), $lost lost (work dir $W kept)"
}

# eos_xdr_account: every transaction the simulator sent (two copies each) has its xDR on PFX XDR
# (read_committed, by correlation id, the record's key), and no xDR is there twice (identical
# records, the correlation's replay after a fault without exactly-once).
eos_xdr_account() {
    local n d keys want t0=$SECONDS
    want=$((PRODUCED / 2))
    while :; do
        timeout 60 kcat -C -b "$B" -t "${PFX}XDR" -o beginning -e -q \
            -X isolation.level=read_committed -f '%k\t%s\n' 2>/dev/null >"$W/xdr.txt" || true
        keys=$(cut -f1 "$W/xdr.txt" | sort -u | wc -l)
        ((keys >= want || SECONDS - t0 >= 60)) && break
        sleep 2
    done
    n=$(wc -l <"$W/xdr.txt")
    d=$((n - $(sort -u "$W/xdr.txt" | wc -l)))
    echo "account XDR (read_committed): $n xDRs for $want transactions ($keys correlation ids); $d identical duplicate(s)"
    ((keys >= want && d == 0)) || fail "XDR: $keys of $want transactions, $d identical duplicate(s)"
}
