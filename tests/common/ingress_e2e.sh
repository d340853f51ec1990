# shellcheck shell=bash
# Shared by tests/e2e/test_ingress_*.sh: the HV-VES client's venv (cached in ~/.cache/ndd, made
# once), a ndd-ingress start on free ports, the VES events the tests send, and counting a
# topic with kcat. Needs SRC, BUILD and a `fail` function.
INGRESS=$BUILD/ingress/ndd-ingress
[ -x "$INGRESS" ] || fail "$INGRESS not built"
VENV=${NDD_CACHE:-$HOME/.cache/ndd}/ingress-venv
PY=$VENV/bin/python
HVCLIENT=$SRC/bench/ingress/hvves_client.py

ingress_venv() {
    if ! "$PY" -c 'import google.protobuf, grpc_tools' 2>/dev/null; then
        python3 -m venv "$VENV" && "$VENV/bin/pip" install -q protobuf grpcio-tools ||
            fail "cannot set up $VENV (protobuf, grpcio-tools from PyPI)"
    fi
}

# ves_event DOMAIN SOURCE [ID]: one VES 7.x event object (the value of "event").
ves_event() {
    printf '{"commonEventHeader":{"domain":"%s","eventId":"%s","eventName":"n_%s","lastEpochMicrosec":1700000000000000,"priority":"Normal","reportingEntityName":"r1","sequence":1,"sourceName":"%s","startEpochMicrosec":1700000000000000,"version":"4.1","vesEventListenerVersion":"7.2.1"},"otherFields":{"otherFieldsVersion":"3.0"}}' \
        "$1" "${3:-e1}" "$1" "$2"
}

# count TOPIC: records on TOPIC now (0 when it does not exist).
# A topic the daemon has not created yet makes kcat fail: that is 0 records, not the end of
# the test (under set -e and pipefail it ended the test without a word).
count() {
    { kcat -b "$BROKER" -C -t "$1" -e -q -f 'x\n' 2>/dev/null || true; } | wc -l
}

# wait_count TOPIC N: until TOPIC holds N records (10 s), then exactly N.
wait_count() {
    local n=0
    for _ in $(seq 50); do
        n=$(count "$1")
        [ "$n" -ge "$2" ] && break
        sleep 0.2
    done
    [ "$n" -eq "$2" ] || fail "topic $1 holds $n records, want $2"
}

# start_ingress LOG ARGS...: ndd-ingress on the ports H2 VES HV HTTP (set by free_ports).
start_ingress() {
    local log=$1
    shift
    "$INGRESS" --bootstrap "$BROKER" --h2.port "$H2" --ves.port "$VES" --hvves.port "$HV" \
        --http.port "$HTTP" "$@" >"$log" 2>&1 &
    ING_PID=$!
    for _ in $(seq 100); do
        curl -sf "http://127.0.0.1:$HTTP/readyz" >/dev/null 2>&1 && return 0
        kill -0 "$ING_PID" 2>/dev/null || { cat "$log"; fail "ndd-ingress exited"; }
        sleep 0.1
    done
    fail "ndd-ingress not ready in 10 s"
}

free_ports() {
    mapfile -t p < <("$SRC/deploy/local/stack.sh" free-ports 4)
    H2=${p[0]} VES=${p[1]} HV=${p[2]} HTTP=${p[3]}
}

metric() {
    curl -s "http://127.0.0.1:$HTTP/metrics" | awk -v m="$1" '$1 == m {print $2}'
}
