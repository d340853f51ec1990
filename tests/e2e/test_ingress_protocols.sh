#!/usr/bin/env bash
# ndd-ingress against the real broker, driven by clients that are not NDD code (curl, h2load,
# the Python HV-VES client, kcat): for each protocol valid input lands on its topic exactly
# once with the documented key, every class of bad input gets its documented reaction
# (docs/ingress.md), an HTTP/2 client that stops reading does not grow the daemon's memory, and
# the TLS listeners (ALPN h2, HTTPS/1.1, HV-VES) take clients with certificates only.
# Needs NDD_TEST_KAFKA, NDD_BUILD_DIR; kcat, curl, h2load, python3 (venv cached in ~/.cache/ndd).
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
BROKER=${NDD_TEST_KAFKA:?NDD_TEST_KAFKA must name a broker}
BROKER=${BROKER//\'/}
T=$(mktemp -d /tmp/ndd-ingress-e2e.XXXXXX)
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
for tool in kcat curl h2load; do command -v $tool >/dev/null || fail "$tool missing"; done
ingress_venv
free_ports
TAG=e2e-$$-$RANDOM
start_ingress "$T/ing.log" --ves.user u1 --ves.password p1 --ves.topic-prefix "ndd-$TAG-ves." \
    --hvves.routes "perf3gpp=ndd-$TAG-hv" --copy.topic-prefix "ndd-$TAG-" --max-body 64KiB

# expect WHAT STATUS OUTFILE CURL-ARGS...: the status must be STATUS.
expect() {
    local what=$1 want=$2 out=$3
    shift 3
    local got
    got=$(curl -s -o "$out" -w '%{http_code}' "$@") || true
    [ "$got" = "$want" ] || fail "$what: HTTP $got, want $want ($(head -c 300 "$out"))"
}
VURL=http://127.0.0.1:$VES/eventListener/v7
J=(-H 'Content-Type: application/json' -u u1:p1)

# ---- VES over HTTP/1.1 ----
echo "{\"event\":$(ves_event fault src-a)}" >"$T/one.json"
# ONAP's collector answers 202 with this text under Content-Type application/json
got=$(curl -s -o "$T/r" -w '%{http_code} %{content_type}' "${J[@]}" --data-binary @"$T/one.json" "$VURL")
[ "$got" = "202 application/json" ] && [ "$(cat "$T/r")" = "Successfully send event" ] ||
    fail "VES single: '$got', body '$(cat "$T/r")'"
wait_count "ndd-$TAG-ves.fault" 1
[ "$(kcat -b "$BROKER" -C -t "ndd-$TAG-ves.fault" -e -q -f '%k')" = src-a ] || fail "VES key is not sourceName"
echo "{\"eventList\":[$(ves_event fault src-b 1),$(ves_event fault src-b 2),$(ves_event fault src-c 3)]}" >"$T/batch.json"
expect "VES batch" 202 "$T/r" "${J[@]}" --data-binary @"$T/batch.json" "$VURL/eventBatch"
wait_count "ndd-$TAG-ves.fault" 4
# bad input: status, messageId, and a text that names what is wrong
expect "VES no auth" 401 "$T/r" -H 'Content-Type: application/json' --data-binary @"$T/one.json" "$VURL"
grep -q '"PolicyException":{"messageId":"POL2000"' "$T/r" || fail "401 body: $(cat "$T/r")"
expect "VES bad password" 401 "$T/r" -H 'Content-Type: application/json' -u u1:nope --data-binary @"$T/one.json" "$VURL"
expect "VES not JSON" 400 "$T/r" "${J[@]}" -d '{"event":' "$VURL"
grep -q '"messageId":"SVC0002","text":"Incorrect JSON payload"' "$T/r" || fail "bad JSON body: $(cat "$T/r")"
ves_event fault src-a | sed 's/"sourceName":"src-a",//' | sed 's/^/{"event":/; s/$/}/' >"$T/nosrc.json"
expect "VES missing field" 400 "$T/r" "${J[@]}" --data-binary @"$T/nosrc.json" "$VURL"
grep -q 'SVC0002.*JSON does not conform to schema.*commonEventHeader.sourceName is missing' "$T/r" || fail "missing-field body: $(cat "$T/r")"
ves_event fault src-a | sed 's/"sequence":1/"sequence":"1"/' | sed 's/^/{"event":/; s/$/}/' >"$T/type.json"
expect "VES wrong type" 400 "$T/r" "${J[@]}" --data-binary @"$T/type.json" "$VURL"
grep -q 'commonEventHeader.sequence is not a non-negative integer' "$T/r" || fail "type body: $(cat "$T/r")"
ves_event noSuchDomain src-a | sed 's/^/{"event":/; s/$/}/' >"$T/dom.json"
expect "VES bad domain" 400 "$T/r" "${J[@]}" --data-binary @"$T/dom.json" "$VURL"
grep -q 'commonEventHeader.domain is not a VES domain' "$T/r" || fail "domain body: $(cat "$T/r")"
ves_event fault src-a | sed 's/"7.2.1"/"5.4.1"/' | sed 's/^/{"event":/; s/$/}/' >"$T/ver.json"
expect "VES listener version" 400 "$T/r" "${J[@]}" --data-binary @"$T/ver.json" "$VURL"
grep -q 'vesEventListenerVersion is not 7.x' "$T/r" || fail "version body: $(cat "$T/r")"
echo "{\"eventList\":[$(ves_event fault s1),$(ves_event heartbeat s1)]}" >"$T/mixed.json"
expect "VES mixed batch" 400 "$T/r" "${J[@]}" --data-binary @"$T/mixed.json" "$VURL/eventBatch"
grep -q '"messageId":"SVC0001","text":"Different value of domain fields in Batch Event"' "$T/r" || fail "mixed body: $(cat "$T/r")"
# ONAP maps both paths with Spring's consumes = "application/json" (VesRestController.java):
# another media type, or none, is 415 before ONAP's own checks (docs/ingress.md)
expect "VES content type" 415 "$T/r" -u u1:p1 -H 'Content-Type: text/plain' --data-binary @"$T/one.json" "$VURL"
grep -qF '"messageId":"SVC0002","text":"Bad Parameter (Incorrect request Content-Type)"' "$T/r" || fail "415 body: $(cat "$T/r")"
expect "VES content type json-like" 415 "$T/r" -u u1:p1 -H 'Content-Type: application/jsonx' --data-binary @"$T/one.json" "$VURL"
expect "VES no content type" 415 "$T/r" -u u1:p1 -H 'Content-Type:' --data-binary @"$T/one.json" "$VURL"
expect "VES h2 content type" 415 "$T/r" --http2-prior-knowledge -u u1:p1 -H 'Content-Type: text/plain' --data-binary @"$T/one.json" "http://127.0.0.1:$H2/eventListener/v7"
head -c 70000 /dev/zero | tr '\0' 'a' >"$T/big"
expect "VES too large" 413 "$T/r" "${J[@]}" --data-binary @"$T/big" "$VURL"
grep -q '"messageId":"SVC2000".*"variables":\["Request Entity Too Large","413"\]' "$T/r" ||
    fail "VES 413 body is not ONAP's: $(head -c 200 "$T/r")"
ct=$(curl -s -o /dev/null -w '%{content_type}' "${J[@]}" -H 'Transfer-Encoding: chunked' --data-binary @"$T/big" "$VURL")
[ "$ct" = application/json ] || fail "VES 413 of a chunked body: content type '$ct'"
# the same answer over HTTP/2 (the h2 listener's body limit, VES's own 413)
ct=$(curl -s -o "$T/r" -w '%{http_code} %{content_type}' --http2-prior-knowledge "${J[@]}" \
    --data-binary @"$T/big" "http://127.0.0.1:$H2/eventListener/v7") || true
[ "$ct" = "413 application/json" ] || fail "VES h2 too large: '$ct' ($(head -c 200 "$T/r"))"
grep -q '"messageId":"SVC2000".*"variables":\["Request Entity Too Large","413"\]' "$T/r" ||
    fail "VES h2 413 body is not ONAP's: $(head -c 200 "$T/r")"
expect "VES wrong version path" 404 "$T/r" "${J[@]}" --data-binary @"$T/one.json" "http://127.0.0.1:$VES/eventListener/v5"
grep -qF '"messageId":"SVC2000","text":"The following service error occurred: %1. Error code is %2","variables":["Not Found","404"]' "$T/r" || fail "404 body: $(cat "$T/r")"
sleep 0.5
[ "$(count "ndd-$TAG-ves.fault")" -eq 4 ] || fail "a refused VES request reached Kafka"

# ---- VES over HTTP/2, and h2load for both HTTP versions ----
# a media type's parameters and case do not matter (Spring's MediaType.includes)
expect "VES h2" 202 "$T/r" --http2-prior-knowledge -u u1:p1 -H 'Content-Type: Application/JSON; charset=UTF-8' --data-binary @"$T/one.json" "http://127.0.0.1:$H2/eventListener/v7"
wait_count "ndd-$TAG-ves.fault" 5
AUTH="authorization: Basic $(printf u1:p1 | base64)"
h2load --h1 -n 200 -c 2 -m 1 -H 'content-type: application/json' -H "$AUTH" -d "$T/one.json" "$VURL" >"$T/h2load1" 2>&1
grep -q '200 succeeded, 0 failed' "$T/h2load1" || fail "h2load --h1: $(grep -E 'requests|status' "$T/h2load1")"
h2load -n 200 -c 2 -m 10 -H 'content-type: application/json' -H "$AUTH" -d "$T/one.json" "http://127.0.0.1:$H2/eventListener/v7" >"$T/h2load2" 2>&1
grep -q '200 succeeded, 0 failed' "$T/h2load2" || fail "h2load h2: $(grep -E 'requests|status' "$T/h2load2")"
grep -q '200 2xx' "$T/h2load2" || fail "h2load h2 statuses: $(grep status "$T/h2load2")"
wait_count "ndd-$TAG-ves.fault" 405

# ---- HTTP/2 copies ----
CURL_COPY=(--http2-prior-knowledge -H 'x-ndd-correlation-id: corr-1' -H 'x-ndd-timestamp-us: 1700000000000000'
    -H 'x-ndd-message-type: request' -H 'x-ndd-trigger-point: rx-request' -H 'x-ndd-nf-type: NRF'
    -H 'x-ndd-method: GET' -H 'x-ndd-path: /nnrf-disc/v1/nf-instances' -H 'x-ndd-h-user-agent: smf-1')
CURL_URL=http://127.0.0.1:$H2/ndd/v1/copy
expect "copy" 202 "$T/r" "${CURL_COPY[@]}" --data-binary '{"q":1}' "$CURL_URL"
wait_count "ndd-$TAG-NRF" 1
got=$(kcat -b "$BROKER" -C -t "ndd-$TAG-NRF" -e -q -f '%k|%h|%s')
[[ $got == 'corr-1|@correlation-id=corr-1,@timestamp-us=1700000000000000,@message-type=request,@trigger-point=rx-request,@nf-type=NRF,:method=GET,:path=/nnrf-disc/v1/nf-instances,user-agent=smf-1|{"q":1}' ]] ||
    fail "copy record: $got"
expect "copy missing field" 400 "$T/r" --http2-prior-knowledge -H 'x-ndd-correlation-id: c2' --data-binary x "$CURL_URL"
grep -q '"reason":"missing-field","field":"@timestamp-us"' "$T/r" || fail "missing-field: $(cat "$T/r")"
expect "copy bad value" 400 "$T/r" "${CURL_COPY[@]/NRF/XYZ}" --data-binary x "$CURL_URL"
grep -q '"reason":"bad-value","field":"@nf-type"' "$T/r" || fail "bad-value: $(cat "$T/r")"
# a metadata value past the codec's limit is a 400 "oversized" (413 is the body's)
expect "copy oversized hop-id" 400 "$T/r" "${CURL_COPY[@]}" -H "x-ndd-hop-id: $(head -c 300 /dev/zero | tr '\0' h)" --data-binary x "$CURL_URL"
grep -q '"reason":"oversized","field":"@hop-id"' "$T/r" || fail "oversized hop-id: $(cat "$T/r")"
expect "copy inconsistent" 400 "$T/r" "${CURL_COPY[@]}" -H 'x-ndd-status: 200' --data-binary x "$CURL_URL"
grep -q '"reason":"' "$T/r" || fail "inconsistent: $(cat "$T/r")"
expect "copy too large" 413 "$T/r" "${CURL_COPY[@]}" --data-binary @"$T/big" "$CURL_URL"
expect "copy GET" 405 "$T/r" --http2-prior-knowledge "$CURL_URL"
expect "copy no such path" 404 "$T/r" --http2-prior-knowledge -d x "http://127.0.0.1:$H2/nope"
H2ARGS=()
for h in "${CURL_COPY[@]}"; do [ "$h" = --http2-prior-knowledge ] || H2ARGS+=("$h"); done
echo '{"q":2}' >"$T/copy.json"
h2load -n 500 -c 2 -m 20 "${H2ARGS[@]}" -d "$T/copy.json" "$CURL_URL" >"$T/h2load3" 2>&1
grep -q '500 succeeded, 0 failed' "$T/h2load3" || fail "h2load copies: $(grep -E 'requests|status' "$T/h2load3")"
wait_count "ndd-$TAG-NRF" 501

# ---- HV-VES ----
"$PY" "$HVCLIENT" --port "$HV" --producers 3 --count 100 >"$T/hv" || fail "HV-VES client"
wait_count "ndd-$TAG-hv" 300
# the key is the serialised CommonEventHeader: it holds the domain and the sourceName
kcat -b "$BROKER" -C -t "ndd-$TAG-hv" -c 1 -e -q -f '%k' >"$T/key"
grep -aq perf3gpp "$T/key" && grep -aq source- "$T/key" && grep -aq 7.2 "$T/key" || fail "HV-VES key is not the header"
for kind in bad-magic:true oversized:true bad-version:false bad-type:false bad-protobuf:false \
    missing-header:false missing-field:false bad-listener-version:false unrouted:false; do
    out=$("$PY" "$HVCLIENT" --port "$HV" --bad "${kind%%:*}")
    grep -q "\"closed\": ${kind##*:}" <<<"$out" || fail "HV-VES ${kind%%:*}: $out"
done
wait_count "ndd-$TAG-hv" 307 # the valid frame after each of the 7 skipped ones
for r in bad-magic oversized unsupported-version unsupported-payload-type invalid-protobuf \
    missing-header missing-field bad-listener-version unrouted; do
    v=$(metric "ndd_ingress_messages_dropped_total{transport=\"hv-ves\",reason=\"$r\"}")
    [ "${v:-0}" = 1 ] || fail "dropped{reason=$r} = ${v:-none}"
done
[ "$(metric 'ndd_ingress_messages_acked_total{transport="hv-ves"}')" = 307 ] || fail "hv-ves acked"
[ "$(metric 'ndd_ingress_message_travel_seconds_count{transport="hv-ves"}')" = 307 ] || fail "travel"

# ---- a client that stops reading ----
# Two measures: the HTTP/2 server's own held bytes (ndd_ingress_h2_buffered_bytes, sampled
# while the client floods: bounded by out_max 256 KiB plus one nghttp2 frame, whatever the
# build), and the process RSS (20 MiB). Under ASan the RSS also holds ASan's quarantine of
# freed blocks (up to 256 MiB by default, +125 MB seen), which says nothing of ndd-ingress:
# that build checks the server's bytes only.
rss() { awk '/VmRSS/ {print $2}' "/proc/$ING_PID/status"; }
before=$(rss)
python3 "$SRC/tests/common/h2_slow_reader.py" --port "$H2" --seconds 4 >"$T/slow" &
SLOW=$!
held=0
for _ in $(seq 14); do
    sleep 0.25
    b=$(metric ndd_ingress_h2_buffered_bytes)
    b=${b%.*}
    [ "${b:-0}" -gt "$held" ] && held=$b
done
wait $SLOW || fail "slow reader"
after=$(rss)
echo "slow reader wrote $(cat "$T/slow") bytes; server held at most $held bytes; RSS ${before} kB -> ${after} kB"
[ "$held" -gt 0 ] || fail "the slow reader never made the server hold output (the check proves nothing)"
[ "$held" -le $((512 * 1024)) ] || fail "the server held $held bytes for a client that does not read"
if grep -q '^NDD_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
    echo "ASan build: RSS bound not checked (ASan's quarantine), server bytes checked above"
else
    [ $((after - before)) -lt 20480 ] || fail "RSS grew by $((after - before)) kB for a client that does not read"
fi
kill -0 "$ING_PID" || fail "ndd-ingress died"
expect "copy after slow reader" 202 "$T/r" "${CURL_COPY[@]}" --data-binary '{"q":3}' "$CURL_URL"
curl -s "http://127.0.0.1:$HTTP/metrics" >"$T/metrics"
python3 "$SRC/tests/common/check_metric_names.py" "$SRC/docs/observability.md" ndd-ingress="$T/metrics" ||
    fail "metric names"

# ---- a feed of these events: the adapter's pass-through encoding delivers the VES topic ----
mapfile -t sp < <("$SRC/deploy/local/stack.sh" free-ports 2)
"$BUILD/bench/sink/ndd-sink" --h2-port "${sp[0]}" --metrics-port "${sp[1]}" >"$T/sink.out" 2>"$T/sink.log" &
SINK_PID=$!
printf '{"feeds":[{"name":"pt","source_topic":"%s","dlq_topic":"ndd-%s-pt-dlq","encoding":"passthrough","transport":"http2","endpoints":[{"url":"http://127.0.0.1:%s/ingest","weight":1}]}]}\n' \
    "ndd-$TAG-ves.fault" "$TAG" "${sp[0]}" >"$T/feeds.json"
"$BUILD/adapter/ndd-adapter" --bootstrap "$BROKER" --feeds-file "$T/feeds.json" --http.port 0 \
    --kafka.auto.offset.reset earliest --config-topic= --events-topic= >"$T/adapter.log" 2>&1 &
AD_PID=$!
got=0
for _ in $(seq 100); do
    # the sink may not listen yet: curl's refusal must not end the test (pipefail)
    got=$({ curl -s "http://127.0.0.1:${sp[1]}/metrics" || true; } | awk '$1 == "ndd_sink_messages_received_total{transport=\"h2\"}" {print $2}')
    [ "${got:-0}" -ge 405 ] && break
    sleep 0.2
done
kill "$AD_PID" "$SINK_PID" 2>/dev/null || true
wait "$AD_PID" "$SINK_PID" 2>/dev/null || true
[ "${got:-0}" = 405 ] || fail "pass-through feed delivered ${got:-0} of 405 VES events"

# ---- TLS: HTTP/2 with ALPN h2, VES over HTTPS, HV-VES over TLS, all with client certificates ----
kill "$ING_PID" && wait "$ING_PID" 2>/dev/null || true
ING_PID=
(
    cd "$T"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=ndd-test-ca
    openssl req -newkey rsa:2048 -nodes -keyout s.key -out s.csr -subj /CN=127.0.0.1
    printf 'subjectAltName=IP:127.0.0.1\n' >ext
    openssl x509 -req -in s.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out s.pem -days 2 -extfile ext
    openssl req -newkey rsa:2048 -nodes -keyout c.key -out c.csr -subj /CN=client
    openssl x509 -req -in c.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out c.pem -days 2
) >/dev/null 2>&1 || fail "openssl certificates"
free_ports
start_ingress "$T/ing-tls.log" --h2.tls --ves.tls --hvves.tls --tls.cert-file "$T/s.pem" \
    --tls.key-file "$T/s.key" --tls.ca-file "$T/ca.pem" --tls.client-cert \
    --ves.topic-prefix "ndd-$TAG-tls." --hvves.routes "perf3gpp=ndd-$TAG-tlshv"
C=(--cacert "$T/ca.pem" --cert "$T/c.pem" --key "$T/c.key" -H 'Content-Type: application/json')
got=$(curl -s -o /dev/null -w '%{http_code} %{http_version}' "${C[@]}" --http2 --data-binary @"$T/one.json" "https://127.0.0.1:$H2/eventListener/v7")
[ "$got" = "202 2" ] || fail "VES over HTTP/2 TLS: $got"
got=$(curl -s -o /dev/null -w '%{http_code} %{http_version}' "${C[@]}" --data-binary @"$T/one.json" "https://127.0.0.1:$VES/eventListener/v7")
[ "$got" = "202 1.1" ] || fail "VES over HTTPS/1.1: $got"
got=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$T/ca.pem" -H 'Content-Type: application/json' --data-binary @"$T/one.json" "https://127.0.0.1:$VES/eventListener/v7" || true)
[ "$got" = 000 ] || fail "a client without a certificate got HTTP $got"
wait_count "ndd-$TAG-tls.fault" 2
"$PY" "$HVCLIENT" --port "$HV" --count 20 --ca "$T/ca.pem" --cert "$T/c.pem" --key "$T/c.key" >/dev/null || fail "HV-VES TLS client"
"$PY" "$HVCLIENT" --port "$HV" --count 20 --ca "$T/ca.pem" >/dev/null 2>&1 || true
sleep 1
wait_count "ndd-$TAG-tlshv" 20

# ---- ves.cert-basic-auth: a client certificate or basic auth, either lets a client in ----
kill "$ING_PID" && wait "$ING_PID" 2>/dev/null || true
ING_PID=
free_ports
start_ingress "$T/ing-cba.log" --ves.tls --tls.cert-file "$T/s.pem" --tls.key-file "$T/s.key" \
    --tls.ca-file "$T/ca.pem" --ves.cert-basic-auth --ves.user u1 --ves.password p1 \
    --ves.topic-prefix "ndd-$TAG-cba."
B=(--cacert "$T/ca.pem" -H 'Content-Type: application/json' --data-binary @"$T/one.json")
BURL=https://127.0.0.1:$VES/eventListener/v7
expect "cert-basic-auth: certificate alone" 202 "$T/r" "${B[@]}" --cert "$T/c.pem" --key "$T/c.key" "$BURL"
expect "cert-basic-auth: basic auth alone" 202 "$T/r" "${B[@]}" -u u1:p1 "$BURL"
expect "cert-basic-auth: neither" 401 "$T/r" "${B[@]}" "$BURL"
expect "cert-basic-auth: wrong password" 401 "$T/r" "${B[@]}" -u u1:nope "$BURL"
wait_count "ndd-$TAG-cba.fault" 2
echo "PASS: VES (HTTP/1.1, HTTP/2), HTTP/2 copies and HV-VES: exactly once, keys, every bad class, bounded memory, pass-through feed, TLS and mTLS, cert-basic-auth"
