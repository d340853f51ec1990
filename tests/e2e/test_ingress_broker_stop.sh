#!/usr/bin/env bash
# ndd-ingress while its broker is away (a private stack: this test stops Kafka): with Kafka
# stopped for 20 s the HTTP listeners answer 503 with Retry-After (once Kafka was silent for
# produce-timeout, 3 s here) instead of hanging or answering 202; a request produced before
# that waits for Kafka (records are never timed out) and gets its 202 after. After Kafka is
# back every request that got a 202 is on its topic (counted with kcat): nothing acknowledged
# is lost, and none that got a 503 is.
# Needs NDD_BUILD_DIR; the local stack's dependencies (deploy/local/install-deps.sh).
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
. "$SRC/tests/common/stack_e2e.sh"
e2e_stack_prepare ingress
. "$SRC/tests/common/ingress_e2e.sh"
ING_PID=
cleanup_all() {
    [ -n "$ING_PID" ] && kill "$ING_PID" 2>/dev/null && wait "$ING_PID" 2>/dev/null
    e2e_stack_cleanup
}
trap cleanup_all EXIT
"$STACK" start "${args[@]}" --no-pg >/dev/null || fail "stack start"
BROKER=127.0.0.1:$kport
free_ports
start_ingress "$dir/ing.log" --produce-timeout 3s --copy.topic-prefix stop- --ves.topic-prefix stop-ves.

URL=http://127.0.0.1:$H2/ndd/v1/copy
# post ID PROTO: one copy (h2) or one VES event (h1); prints the HTTP status.
post() {
    if [ "$2" = h2 ]; then
        curl -s -o /dev/null -w '%{http_code}' --max-time 120 --http2-prior-knowledge \
            -H "x-ndd-correlation-id: $1" -H 'x-ndd-timestamp-us: 1700000000000000' \
            -H 'x-ndd-message-type: request' -H 'x-ndd-trigger-point: rx-request' \
            -H 'x-ndd-nf-type: SCP' -H 'x-ndd-method: GET' -H 'x-ndd-path: /x' -d "$1" "$URL" || true
    else
        curl -s -o /dev/null -w '%{http_code}' --max-time 120 -H 'Content-Type: application/json' \
            -d "{\"event\":$(ves_event fault "$1")}" "http://127.0.0.1:$VES/eventListener/v7" || true
    fi
}
: >"$dir/acked-h2"
: >"$dir/acked-h1"
# client PROTO: a request every 0.2 s, each on its own (a request produced just before Kafka
# went away waits for it; the next ones must get their 503 meanwhile) until $dir/stop exists;
# the 202'd and 503'd ids and every status recorded.
client() {
    local i=0
    while [ ! -e "$dir/stop" ]; do
        i=$((i + 1))
        (
            st=$(post "$1-$i" "$1")
            echo "$st" >>"$dir/status-$1"
            case $st in
            202) echo "$1-$i" >>"$dir/acked-$1" ;;
            503) echo "$1-$i" >>"$dir/refused-$1" ;;
            esac
        ) &
        sleep 0.2
    done
    wait
}
: >"$dir/refused-h2"
: >"$dir/refused-h1"
client h2 &
C1=$!
client h1 &
C2=$!
sleep 5
pid=$(cat "$dir/kafka/kafka.pid")
kill -TERM "$pid"
for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
echo "Kafka stopped"
sleep 20
"$STACK" start "${args[@]}" --no-pg >/dev/null || fail "stack restart"
echo "Kafka back"
# until both listeners answer 202 again (the producer reconnects), at most 30 s
for _ in $(seq 60); do
    sleep 0.5
    [ "$(tail -1 "$dir/status-h2")" = 202 ] && [ "$(tail -1 "$dir/status-h1")" = 202 ] && break
done
sleep 2
touch "$dir/stop"
wait $C1 $C2
grep -q 503 "$dir/status-h2" || fail "no 503 on HTTP/2 while Kafka was stopped: $(sort "$dir/status-h2" | uniq -c)"
grep -q 503 "$dir/status-h1" || fail "no 503 on HTTP/1.1 while Kafka was stopped: $(sort "$dir/status-h1" | uniq -c)"
grep -qv '^\(202\|503\)$' "$dir/status-h2" "$dir/status-h1" &&
    fail "statuses other than 202/503: $(sort "$dir"/status-* | uniq -c)"
tail -1 "$dir/status-h2" | grep -q 202 || fail "HTTP/2 ingest did not recover: $(uniq -c "$dir/status-h2" | tr '\n' ' '); $(tail -5 "$dir/ing.log")"
tail -1 "$dir/status-h1" | grep -q 202 || fail "VES did not recover: $(uniq -c "$dir/status-h1" | tr '\n' ' ')"
kill -0 "$ING_PID" || fail "ndd-ingress died"
n2=$(wc -l <"$dir/acked-h2")
n1=$(wc -l <"$dir/acked-h1")
kcat -b "$BROKER" -C -t stop-SCP -e -q -f '%k\n' 2>/dev/null | sort -u >"$dir/got-h2"
kcat -b "$BROKER" -C -t stop-ves.fault -e -q -f '%k\n' 2>/dev/null | sort -u >"$dir/got-h1"
lost2=$(sort -u "$dir/acked-h2" | comm -23 - "$dir/got-h2" | wc -l)
lost1=$(sort -u "$dir/acked-h1" | comm -23 - "$dir/got-h1" | wc -l)
echo "HTTP/2: $n2 acknowledged, $lost2 lost; HTTP/1.1: $n1 acknowledged, $lost1 lost;" \
    "statuses: $(sort "$dir"/status-* | uniq -c | tr '\n' ' ')"
[ "$lost2" -eq 0 ] && [ "$lost1" -eq 0 ] || fail "records that got a 202 are missing"
# a 503 means "not written": the client's retry must not duplicate it
dup2=$(sort -u "$dir/refused-h2" | comm -12 - "$dir/got-h2" | wc -l)
dup1=$(sort -u "$dir/refused-h1" | comm -12 - "$dir/got-h1" | wc -l)
echo "answered 503 yet written: HTTP/2 $dup2, HTTP/1.1 $dup1"
[ "$dup2" -eq 0 ] && [ "$dup1" -eq 0 ] || fail "requests answered 503 were written"
echo "PASS: 503 with Kafka stopped 20 s, nothing that got a 202 lost"
