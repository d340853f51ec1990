#!/usr/bin/env bash
# ndd-ingress while its broker is frozen (kill -STOP for 20 s; a private stack, since the broker
# is stopped): back-pressure instead of loss (docs/ingress.md, "When Kafka cannot take
# events").
#   - HV-VES: one event every 20 ms from an independent sender (tests/fault/ingress_hostile.py)
#     before, during and after the freeze: every event it wrote is on the topic (kcat, by event
#     id): 0 lost. Once max-in-flight (300 here) records wait, the listener stops reading (TCP
#     pushes back on the sender) instead of timing records out;
#   - copies over TCP: frames sent during the freeze are ACKed after it, every one on the topic;
#   - VES (HTTP/1.1) and copies (HTTP/2): 503 with Retry-After while Kafka is silent, and no
#     request answered 503 is on its topic; every one answered 202 is.
# Needs NDD_BUILD_DIR; the local stack's dependencies (deploy/local/install-deps.sh), kcat.
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
. "$SRC/tests/common/stack_e2e.sh"
e2e_stack_prepare ingfreeze
. "$SRC/tests/common/ingress_e2e.sh"
command -v kcat >/dev/null || fail "kcat is needed to count the events"
ING_PID= PIDS=() KPID=
cleanup_all() {
    local p
    [ -n "$KPID" ] && kill -CONT "$KPID" 2>/dev/null
    for p in "${PIDS[@]}" $ING_PID; do kill "$p" 2>/dev/null || true; done
    e2e_stack_cleanup
}
trap cleanup_all EXIT
"$STACK" start "${args[@]}" --no-pg >/dev/null || fail "stack start"
BROKER=127.0.0.1:$kport
free_ports
TCP=$("$STACK" free-ports 1)
HVT=frz-perf3gpp
# max-in-flight 300: the queue fills during the freeze (HV-VES alone sends 1,000 events in it),
# so the listeners' "no room" paths are the ones exercised, not only librdkafka's queue.
start_ingress "$dir/ing.log" --produce-timeout 3s --max-in-flight 300 --tcp.port "$TCP" \
    --copy.topic-prefix frz- --ves.topic-prefix frz-ves. --hvves.routes "perf3gpp=$HVT"

# HTTP clients until $dir/stop exists; each id with its status.
post() { # ID PROTO -> status
    if [ "$2" = h2 ]; then
        curl -s -o /dev/null -w '%{http_code}' --max-time 50 --http2-prior-knowledge \
            -H "x-ndd-correlation-id: $1" -H 'x-ndd-timestamp-us: 1700000000000000' \
            -H 'x-ndd-message-type: request' -H 'x-ndd-trigger-point: rx-request' \
            -H 'x-ndd-nf-type: SCP' -H 'x-ndd-method: GET' -H 'x-ndd-path: /x' -d "$1" \
            "http://127.0.0.1:$H2/ndd/v1/copy" || true
    else
        curl -s -o /dev/null -w '%{http_code}' --max-time 50 -H 'Content-Type: application/json' \
            -d "{\"event\":$(ves_event fault "$1")}" "http://127.0.0.1:$VES/eventListener/v7" || true
    fi
}
# Each request on its own, one every 0.2 s: one produced just before the freeze waits for the
# broker (records are never timed out) while the next ones get their 503.
client() {
    local i=0
    while [ ! -e "$dir/stop" ]; do
        i=$((i + 1))
        (echo "$1-$i $(post "$1-$i" "$1")" >>"$dir/status-$1") &
        sleep 0.2
    done
    wait
}
client h2 &
PIDS+=("$!")
client h1 &
PIDS+=("$!")
python3 "$SRC/tests/fault/ingress_hostile.py" hv-send --port "$HV" --prefix hv --every 0.02 \
    --seconds 26 >"$dir/hv-sent" &
HVS=$!
PIDS+=("$HVS")
sleep 2
python3 "$SRC/tests/common/frame_sender.py" --port "$TCP" --frames 4000 --per-frame 1 \
    --window 8 --prefix tc >"$dir/tcp-sent" 2>"$dir/tcp.err" &
TCS=$!
PIDS+=("$TCS")
sleep 0.5
KPID=$(cat "$dir/kafka/kafka.pid")
kill -STOP "$KPID"
echo "broker frozen"
sleep 20
kill -CONT "$KPID"
KPID=
echo "broker thawed"
wait "$HVS" || fail "the HV-VES sender failed"
wait "$TCS" || fail "the TCP copy sender failed: $(cat "$dir/tcp.err")"
# until both HTTP listeners answer 202 again
for _ in $(seq 60); do
    [ "$(tail -1 "$dir/status-h2" | cut -d' ' -f2)" = 202 ] &&
        [ "$(tail -1 "$dir/status-h1" | cut -d' ' -f2)" = 202 ] && break
    sleep 0.5
done
touch "$dir/stop"
wait "${PIDS[0]}" "${PIDS[1]}" || true
kill -0 "$ING_PID" || fail "ndd-ingress died"

# keys TOPIC: the distinct keys (or, for HV-VES, event ids) on TOPIC, sorted
keys() { { kcat -b "$BROKER" -C -t "$1" -e -q -f "${2:-%k}\n" 2>/dev/null || true; } | sort -u; }
n_hv=$(cat "$dir/hv-sent")
got_hv=0
for _ in $(seq 50); do
    # the value is the VesEvent: its eventId "hv-N" is printable inside it
    got_hv=$({ kcat -b "$BROKER" -C -t "$HVT" -e -q -f '%s\n' 2>/dev/null || true; } |
        grep -ao 'hv-[0-9]*' | sort -u | wc -l)
    [ "$got_hv" -ge "$n_hv" ] && break
    sleep 0.2
done
full=$(metric 'ndd_ingress_produce_errors_total{transport="hv-ves",reason="queue-full"}')
echo "HV-VES: $n_hv events sent, $got_hv distinct on $HVT; paused on a full queue ${full:-0} times"
[ "${full:-0}" != 0 ] || fail "the HV-VES listener never met a full queue: its pause was not exercised"
[ "$got_hv" -eq "$n_hv" ] || fail "HV-VES lost $((n_hv - got_hv)) of $n_hv events across a 20 s broker freeze"
tcp_acked=$(awk '{print $2}' "$dir/tcp-sent")
got_tcp=$(keys frz-NRF | grep -c '^tc-' || true)
echo "TCP copies: $(cat "$dir/tcp-sent"), $got_tcp distinct on frz-NRF"
[ "$tcp_acked" = 4000 ] && [ "$got_tcp" -eq 4000 ] || fail "TCP copies: $tcp_acked ACKed, $got_tcp on the topic, of 4000"
keys frz-SCP >"$dir/got-h2"
keys frz-ves.fault >"$dir/got-h1"
for p in h2 h1; do
    awk '$2 == 202 {print $1}' "$dir/status-$p" | sort -u >"$dir/202-$p"
    awk '$2 == 503 {print $1}' "$dir/status-$p" | sort -u >"$dir/503-$p"
    lost=$(comm -23 "$dir/202-$p" "$dir/got-$p" | wc -l)
    written=$(comm -12 "$dir/503-$p" "$dir/got-$p" | wc -l)
    echo "$p: $(wc -l <"$dir/202-$p") answered 202 ($lost missing), $(wc -l <"$dir/503-$p") answered 503 ($written written anyway); statuses: $(awk '{print $2}' "$dir/status-$p" | sort | uniq -c | tr '\n' ' ')"
    [ -s "$dir/503-$p" ] || fail "$p: no 503 while the broker was frozen"
    [ "$lost" -eq 0 ] || fail "$p: $lost requests answered 202 are not on the topic"
    [ "$written" -eq 0 ] || fail "$p: $written requests answered 503 were written: a retry duplicates them"
done
echo "PASS: 20 s broker freeze: 0 HV-VES and TCP events lost, no request answered 503 written"
