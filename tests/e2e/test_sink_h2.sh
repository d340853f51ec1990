#!/usr/bin/env bash
# ndd-sink, HTTP/2 side, driven by tools that are not NDD code: curl (h2c prior knowledge and
# TLS with ALPN h2), h2load (nghttp2-client), openssl (the test CA). Checks counting by @seq
# (duplicates, gaps), batches, bad bodies, every fault mode of POST /control, /metrics, and
# the summary written on SIGTERM.
set -euo pipefail

BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SINK=$BUILD/bench/sink/ndd-sink
[ -x "$SINK" ] || { echo "FAIL: $SINK not built"; exit 1; }
for tool in curl h2load openssl jq; do
    command -v $tool >/dev/null || { echo "FAIL: $tool missing (Debian: curl nghttp2-client openssl jq)"; exit 1; }
done

T=$(mktemp -d /tmp/ndd-sink-e2e.XXXXXX)
SINK_PID=
cleanup() {
    [ -n "$SINK_PID" ] && kill "$SINK_PID" 2>/dev/null && wait "$SINK_PID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*"
    echo "--- sink log:"; cat "$T/sink.log" 2>/dev/null | tail -30
    exit 1
}

# A throwaway CA and a server certificate for localhost / 127.0.0.1.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=ndd e2e CA" -keyout "$T/ca.key" -out "$T/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
    -keyout "$T/server.key" -out "$T/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > "$T/ext"
openssl x509 -req -in "$T/server.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial \
    -days 2 -extfile "$T/ext" -out "$T/server.pem" 2>/dev/null

"$SINK" --h2-port 0 --h2tls-port 0 --metrics-port 0 --cert "$T/server.pem" --key "$T/server.key" \
    --summary-file "$T/summary.json" --expect 8 >"$T/stdout" 2>"$T/sink.log" &
SINK_PID=$!
for _ in $(seq 100); do
    grep -q "sink: listening on" "$T/sink.log" 2>/dev/null && break
    sleep 0.1
done
line=$(grep "sink: listening on" "$T/sink.log") || fail "sink did not start"
H2=$(sed -E 's/.* h2=([0-9]+).*/\1/' <<<"$line")
H2TLS=$(sed -E 's/.* h2tls=([0-9]+).*/\1/' <<<"$line")
MP=$(sed -E 's/.* metrics=([0-9]+).*/\1/' <<<"$line")
M=http://127.0.0.1:$MP

now_us() { echo $(( $(date +%s%N) / 1000 )); }
envelope() { echo "{\"metadata\":{\"correlation-id\":\"c$1\",\"timestamp-us\":$(now_us),\"seq\":$1},\"headers\":[[\":method\",\"POST\"]],\"key\":\"c$1\",\"body\":{\"n\":$1}}"; }
post() { # post URL BODY [curl options...] -> "status version"
    local url=$1 body=$2; shift 2
    curl -s -o /dev/null -w '%{http_code} %{http_version}' -X POST \
        -H 'content-type: application/json' --data-binary "$body" "$@" "$url"
}
raw() { # raw URL -> "status version" of a POST with a non-JSON body
    curl -s -o /dev/null -w '%{http_code} %{http_version}' -X POST --data-binary x \
        --http2-prior-knowledge "$1"
}
summary() { curl -sf "$M/summary" | jq -r "$1"; }
control() { curl -sf -X POST -H 'content-type: application/json' --data "$1" "$M/control" >/dev/null || fail "control $1"; }

# h2c prior knowledge: seq 1 2 3, 2 again (duplicate); 5 never comes (gap).
for s in 1 2 3 2; do
    r=$(post "http://127.0.0.1:$H2/anything/here" "$(envelope $s)" --http2-prior-knowledge)
    [ "$r" = "200 2" ] || fail "h2c POST seq $s answered '$r'"
done
# TLS with ALPN h2, verified against the test CA; PUT works too.
r=$(post "https://localhost:$H2TLS/ingest" "$(envelope 4)" --http2 --cacert "$T/ca.pem")
[ "$r" = "200 2" ] || fail "h2 TLS POST answered '$r'"
r=$(curl -s -o /dev/null -w '%{http_code} %{http_version}' -X PUT -H 'content-type: application/json' \
    --data-binary "$(envelope 6)" --http2 --cacert "$T/ca.pem" "https://127.0.0.1:$H2TLS/x")
[ "$r" = "200 2" ] || fail "h2 TLS PUT answered '$r'"
# A client that does not trust the sink's CA refuses it.
set +e
curl -s -o /dev/null --http2 "https://localhost:$H2TLS/" -X POST --data x; rc=$?
set -e
[ $rc -eq 60 ] || fail "curl without the CA should fail certificate verification (exit 60), got $rc"
# A batch: a JSON array of envelopes.
r=$(post "http://127.0.0.1:$H2/" "[$(envelope 7),$(envelope 8)]" --http2-prior-knowledge)
[ "$r" = "200 2" ] || fail "batch answered '$r'"
# Claims JSON, is not: 400 and not counted.
r=$(post "http://127.0.0.1:$H2/" '{"metadata":{"seq":99}' --http2-prior-knowledge)
[ "$r" = "400 2" ] || fail "malformed JSON answered '$r'"

[ "$(summary '.unique')" = 7 ] || fail "unique should be 7: $(curl -s $M/summary)"
[ "$(summary '.duplicates')" = 1 ] || fail "duplicates should be 1"
[ "$(summary '.gaps')" = 1 ] || fail "gaps should be 1 (seq 5)"
[ "$(summary '.missing')" = 1 ] || fail "missing should be 1 of 8 expected"
[ "$(summary '.latency_ms.count')" = 8 ] || fail "latency count should be 8"

# Fault: 503 with Retry-After for the next 2 requests, then 200 again.
control '{"status":503,"count":2,"retry_after":3}'
for i in 1 2; do
    h=$(curl -s -D - -o /dev/null --http2-prior-knowledge -X POST --data x "http://127.0.0.1:$H2/")
    grep -q '^HTTP/2 503' <<<"$h" || fail "fault 503 #$i not applied: $h"
    grep -qi '^retry-after: 3' <<<"$h" || fail "no Retry-After on 503: $h"
done
r=$(raw "http://127.0.0.1:$H2/")
[ "$r" = "200 2" ] || fail "after the 503 count: '$r'"
[ "$(summary '.rejected')" = 2 ] || fail "rejected should be 2"

# Fault: 429 for a duration.
control '{"status":429,"duration_ms":700}'
r=$(raw "http://127.0.0.1:$H2/")
[ "$r" = "429 2" ] || fail "429 by duration: '$r'"
ok=
for _ in $(seq 40); do
    sleep 0.1
    r=$(raw "http://127.0.0.1:$H2/")
    [ "$r" = "200 2" ] && { ok=1; break; }
done
[ -n "$ok" ] || fail "429 did not end after its duration"

# Fault: delay.
control '{"delay_ms":400,"count":1}'
t=$(curl -s -o /dev/null -w '%{time_total}' --http2-prior-knowledge -X POST --data x "http://127.0.0.1:$H2/")
awk -v t="$t" 'BEGIN { exit !(t >= 0.39) }' || fail "delay not applied: ${t}s"

# Fault: close the connection without an answer for the next request.
control '{"close":true,"count":1}'
set +e
curl -s -o /dev/null --http2-prior-knowledge -X POST --data x "http://127.0.0.1:$H2/"; rc=$?
set -e
[ $rc -ne 0 ] || fail "close fault: the request should fail"

# Fault: refuse connections for 1 s, then listen again.
control '{"refuse_s":1}'
set +e
curl -s -o /dev/null --http2-prior-knowledge -X POST --data x "http://127.0.0.1:$H2/"; rc=$?
set -e
[ $rc -eq 7 ] || fail "refuse fault: expected connection refused (curl exit 7), got $rc"
ok=
for _ in $(seq 50); do
    sleep 0.1
    r=$(raw "http://127.0.0.1:$H2/" 2>/dev/null || true)
    [ "$r" = "200 2" ] && { ok=1; break; }
done
[ -n "$ok" ] || fail "sink did not listen again after the refuse period"
control '{"reset":true}'

# h2load baseline against the sink: h2c and TLS, every request answered 2xx.
head -c 3400 /dev/zero | tr '\0' 'x' > "$T/body"
before=$(summary '.requests')
out=$(h2load -n 4000 -c 4 -m 32 -t 1 -d "$T/body" "http://127.0.0.1:$H2/ingest" 2>&1)
grep -q "4000 succeeded" <<<"$out" || fail "h2load h2c: $out"
grep -q "status codes: 4000 2xx" <<<"$out" || fail "h2load h2c status: $out"
echo "h2load h2c: $(grep 'finished in' <<<"$out")"
out=$(h2load -n 2000 -c 2 -m 32 -t 1 -d "$T/body" "https://127.0.0.1:$H2TLS/ingest" 2>&1)
grep -q "2000 succeeded" <<<"$out" || fail "h2load TLS: $out"
echo "h2load TLS: $(grep 'finished in' <<<"$out")"
after=$(summary '.requests')
[ $((after - before)) -eq 6000 ] || fail "sink counted $((after - before)) of 6000 h2load requests"

# /metrics in the Prometheus text format (promtool when available).
curl -sf "$M/metrics" > "$T/metrics" || fail "/metrics"
grep -q '^ndd_sink_messages_received_total{transport="h2"} ' "$T/metrics" || fail "no ndd_sink_messages_received_total"
grep -q '^ndd_sink_messages_duplicated_total 1' "$T/metrics" || fail "duplicates metric"
if command -v promtool >/dev/null; then
    promtool check metrics < "$T/metrics" || fail "promtool check metrics"
fi

# SIGTERM: the summary on stdout and in the file.
kill -TERM "$SINK_PID"
wait "$SINK_PID" || fail "sink exited non-zero"
SINK_PID=
jq -e '.unique == 7 and .duplicates == 1 and .gaps == 1 and .expected == 8 and .missing == 1
       and .complete == false and .transports.h2tls.records >= 2002' "$T/summary.json" >/dev/null \
    || fail "summary file: $(cat "$T/summary.json")"
cmp -s <(tr -d '\n' < "$T/stdout") <(tr -d '\n' < "$T/summary.json") || fail "stdout and file summaries differ"
echo "PASS test_sink_h2"
