#!/usr/bin/env bash
# ndd-ingress's copy listener over TCP and TLS (docs/ingress.md, "Copies over TCP and TLS")
# against the real broker, driven by a sender that is not NDD code (tests/common/frame_sender.py,
# Python's socket and ssl written from the frame's description) and read back with kcat: every
# valid copy reaches its NF topic exactly once with its key and headers, every frame is ACKed
# only after Kafka acknowledged it, refused records land on the dead-letter topic with the
# reason and field, a bad frame closes the connection, and the TLS listener takes clients
# with certificates only. Needs NDD_TEST_KAFKA, NDD_BUILD_DIR; kcat, curl, python3, openssl.
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
BROKER=${NDD_TEST_KAFKA:?NDD_TEST_KAFKA must name a broker}
BROKER=${BROKER//\'/}
T=$(mktemp -d /tmp/ndd-ingress-tcp.XXXXXX)
ING_PID=
cleanup() {
    [ -n "$ING_PID" ] && kill "$ING_PID" 2>/dev/null && wait "$ING_PID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*"
    echo "--- ndd-ingress log:"
    tail -20 "$T/ing.log" 2>/dev/null
    exit 1
}
. "$SRC/tests/common/ingress_e2e.sh"
for tool in kcat curl python3 openssl; do command -v $tool >/dev/null || fail "$tool missing"; done
SEND=(python3 "$SRC/tests/common/frame_sender.py")
mapfile -t p < <("$SRC/deploy/local/stack.sh" free-ports 5)
H2=${p[0]} VES=${p[1]} HV=${p[2]} HTTP=${p[3]} TCP=${p[4]}
TAG=tcp-$$-$RANDOM
DLQ=ndd-$TAG-dlq

# ---- plain TCP: 10 frames x 5 records, the last record of each refused (no @nf-type) ----
start_ingress "$T/ing.log" --tcp.port "$TCP" --copy.topic-prefix "ndd-$TAG-" --copy.dlq-topic "$DLQ"
got=$("${SEND[@]}" --port "$TCP" --frames 10 --per-frame 5 --bad 1 --prefix t) || fail "TCP sender: $got"
[ "$got" = "acked 10 nacked 0" ] || fail "TCP sender got: $got"
# ACK came after Kafka's acknowledgement: the records are there already, no waiting.
[ "$(count "ndd-$TAG-NRF")" -eq 40 ] || fail "NRF topic holds $(count "ndd-$TAG-NRF") records after the ACKs, want 40"
[ "$(count "$DLQ")" -eq 10 ] || fail "dead-letter topic holds $(count "$DLQ"), want 10"
kcat -b "$BROKER" -C -t "ndd-$TAG-NRF" -e -q -f '%k|%h|%s\n' >"$T/nrf"
[ "$(cut -d'|' -f1 "$T/nrf" | sort -u | wc -l)" -eq 40 ] || fail "keys not unique: $(head -3 "$T/nrf")"
grep -q '^t-0|' "$T/nrf" || fail "key t-0 missing: $(head -2 "$T/nrf")"
grep -q '^t-4|' "$T/nrf" && fail "refused record t-4 reached the NF topic"
grep '^t-0|' "$T/nrf" | grep -q '@nf-type=NRF' || fail "headers not kept: $(grep '^t-0|' "$T/nrf")"
grep '^t-0|' "$T/nrf" | grep -q ':path=/nnrf-disc/v1/nf-instances' || fail ":path not kept"
grep '^t-0|' "$T/nrf" | grep -q 'user-agent=smf-1' || fail "HTTP field not kept"
grep -q '^t-0|.*|{"n":0}$' "$T/nrf" || fail "body not kept: $(grep '^t-0|' "$T/nrf")"
kcat -b "$BROKER" -C -t "$DLQ" -e -q -f '%k|%h\n' >"$T/dlq"
grep '^t-4|' "$T/dlq" | grep -q '@dlq-reason=missing-field' || fail "DLQ reason: $(head -1 "$T/dlq")"
grep '^t-4|' "$T/dlq" | grep -q '@dlq-field=@nf-type' || fail "DLQ field: $(head -1 "$T/dlq")"
grep '^t-4|' "$T/dlq" | grep -q '@dlq-origin=tcp:#1 127.0.0.1:[0-9]*/frame 1/record 4' ||
    fail "DLQ origin: $(grep '^t-4|' "$T/dlq")"
grep -q 'frame 1, record 4: missing-field (field @nf-type' "$T/ing.log" || fail "no log line names the bad record"
[ "$(metric 'ndd_ingress_messages_dropped_total{transport="tcp-copy",reason="missing-field"}')" = 10 ] ||
    fail "dropped metric: $(curl -s "http://127.0.0.1:$HTTP/metrics" | grep tcp-copy)"
# a bad frame: the connection is closed, named in the log
got=$("${SEND[@]}" --port "$TCP" --raw-bad-magic) || true
[ "$got" = closed ] || fail "bad magic: $got"
grep -q 'copy connection #2 .*: frame 1 refused: ' "$T/ing.log" || fail "bad frame not logged"
kill "$ING_PID" && wait "$ING_PID" 2>/dev/null || true
ING_PID=

# ---- Kafka's queue full (max-in-flight 2): the rest of a frame waits for room, nothing lost ----
start_ingress "$T/ing.log" --tcp.port "$TCP" --copy.topic-prefix "ndd-$TAG-full-" \
    --copy.dlq-topic "$DLQ" --max-in-flight 2 --tcp.max-pending 4
got=$("${SEND[@]}" --port "$TCP" --frames 20 --per-frame 10 --prefix f) || fail "full-queue sender: $got"
[ "$got" = "acked 20 nacked 0" ] || fail "full-queue sender got: $got"
[ "$(count "ndd-$TAG-full-NRF")" -eq 200 ] || fail "full-queue NRF topic holds $(count "ndd-$TAG-full-NRF"), want 200"
[ "$(kcat -b "$BROKER" -C -t "ndd-$TAG-full-NRF" -e -q -f '%k\n' | sort -u | wc -l)" -eq 200 ] ||
    fail "full-queue keys not each once"
full=$(metric 'ndd_ingress_produce_errors_total{transport="tcp-copy",reason="queue-full"}')
[ "${full:-0}" != 0 ] || fail "the queue never filled: the waiting path was not exercised"
kill "$ING_PID" && wait "$ING_PID" 2>/dev/null || true
ING_PID=

# ---- TLS with client certificates ----
(
    cd "$T"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=ndd-test-ca
    openssl req -newkey rsa:2048 -nodes -keyout s.key -out s.csr -subj /CN=127.0.0.1
    printf 'subjectAltName=IP:127.0.0.1\n' >ext
    openssl x509 -req -in s.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out s.pem -days 2 -extfile ext
    openssl req -newkey rsa:2048 -nodes -keyout c.key -out c.csr -subj /CN=client
    openssl x509 -req -in c.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out c.pem -days 2
) >/dev/null 2>&1 || fail "openssl certificates"
start_ingress "$T/ing.log" --tcp.port "$TCP" --tcp.tls --tls.cert-file "$T/s.pem" \
    --tls.key-file "$T/s.key" --tls.ca-file "$T/ca.pem" --tls.client-cert \
    --copy.topic-prefix "ndd-$TAG-tls-" --copy.dlq-topic "$DLQ"
got=$("${SEND[@]}" --port "$TCP" --tls --ca "$T/ca.pem" --cert "$T/c.pem" --key "$T/c.key" \
    --frames 4 --per-frame 5 --prefix s) || fail "TLS sender: $got"
[ "$got" = "acked 4 nacked 0" ] || fail "TLS sender got: $got"
[ "$(count "ndd-$TAG-tls-NRF")" -eq 20 ] || fail "TLS NRF topic holds $(count "ndd-$TAG-tls-NRF"), want 20"
tls_records=$(kcat -b "$BROKER" -C -t "ndd-$TAG-tls-NRF" -e -q -f '%k|%h\n')
grep '^s-7|' <<<"$tls_records" | grep -q '@message-type=request' ||
    fail "TLS record s-7 without its key or headers"
# without a client certificate: no copy gets in
"${SEND[@]}" --port "$TCP" --tls --ca "$T/ca.pem" --frames 1 --per-frame 1 --prefix x >"$T/nocert" 2>&1 &&
    fail "a client without a certificate was served: $(cat "$T/nocert")"
sleep 0.5
[ "$(count "ndd-$TAG-tls-NRF")" -eq 20 ] || fail "a client without a certificate reached Kafka"
# openssl s_client as a second independent peer: a bad frame over TLS closes the connection
printf 'not a frame at all, twenty+ bytes' | timeout 20 openssl s_client -quiet -connect "127.0.0.1:$TCP" \
    -CAfile "$T/ca.pem" -cert "$T/c.pem" -key "$T/c.key" >/dev/null 2>&1 || true
for _ in $(seq 50); do grep -q 'frame 1 refused: ' "$T/ing.log" && break; sleep 0.2; done
grep -q 'frame 1 refused: ' "$T/ing.log" || fail "bad frame over TLS not refused"
echo "PASS: copies over TCP and TLS"
