#!/usr/bin/env bash
# Read benchmark of ndd-admin (the Honeycomb-style read table): GET /api/v1/feeds/{id} with 1,
# 2, 4, 8 and 16 synchronous clients (one request in flight each), 100,000 reads per point,
# authenticated with a viewer token (every request is authorised), over HTTP/1.1 keep-alive
# (h2load --h1), HTTP/2 h2c with prior knowledge (h2load) and, with --tls, HTTP/2 over TLS
# (ALPN h2) and HTTP/1.1 over TLS.
#
#   NDD_PG=<conninfo> bench/admin/run.sh [--build DIR] [--requests N] [--clients "1 2 4 8 16"]
#                                         [--protocols "h1 h2"] [--tls] [--tool h2load|wrk]
#                                         [--api-port P] [--if-none-match] [--pin]
#
# --protocols: h1 and/or h2 (wrk: h1 only). --tls: the admin serves HTTPS with a throw-away
# self-signed certificate (openssl CLI), and the rows are h1 and h2 over TLS.
# --if-none-match sends the ETag back: every read is a 304 without a body (a polling console).
# --pin: the admin on CPU 0, the load generator on the others (taskset; needs 2 CPUs or more).
# Without it the scheduler places both, and on a 2-core machine the load generator's threads,
# woken by each response, preempt the admin mid-loop (tens of thousands of involuntary context
# switches per 100,000 reads, charged to the admin's CPU per read). With it the figure is the
# admin's own cost of a read; the default shows what a co-located client costs it as well.
# Uses its own schema (dropped at the end) and no Kafka (reads never touch it). Prints one
# line per client count and a Markdown table for docs/benchmarks.md. Needs Debian packages
# nghttp2-client (h2load) or wrk, and postgresql-client (psql) for the clean-up.
set -euo pipefail

BUILD=${NDD_BUILD_DIR:-build}
REQUESTS=100000
CLIENTS="1 2 4 8 16"
PROTOCOLS="h1 h2"
TLS=0
TOOL=""
PORT=28110
INM=0
PIN=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --requests) REQUESTS=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --tool) TOOL=$2; shift 2 ;;
    --protocols) PROTOCOLS=$2; shift 2 ;;
    --tls) TLS=1; shift ;;
    --api-port) PORT=$2; shift 2 ;;
    --if-none-match) INM=1; shift ;;
    --pin) PIN=1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
: "${NDD_PG:?set NDD_PG to a libpq conninfo (deploy/local/stack.sh start prints it)}"
ADMIN=$BUILD/admin/ndd-admin
[ -x "$ADMIN" ] || { echo "no $ADMIN (build first, ideally -DCMAKE_BUILD_TYPE=Release)" >&2; exit 2; }
if [ -z "$TOOL" ]; then
  if command -v h2load >/dev/null; then TOOL=h2load; elif command -v wrk >/dev/null; then TOOL=wrk;
  else echo "need h2load (nghttp2-client) or wrk" >&2; exit 2; fi
fi

SCHEMA="ndd_bench_$$_$RANDOM"
WORK=$(mktemp -d)
ADMIN_PID=""
cleanup() {
  [ -n "$ADMIN_PID" ] && kill "$ADMIN_PID" 2>/dev/null && wait "$ADMIN_PID" 2>/dev/null || true
  psql "$NDD_PG" -q -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

ADMIN_TOKEN=$("$ADMIN" token create --role admin --name bench-admin --db-schema "$SCHEMA" 2>/dev/null)
VIEW_TOKEN=$("$ADMIN" token create --role viewer --name bench-viewer --db-schema "$SCHEMA" 2>/dev/null)
TLSARGS=()
SCHEME=http
CURL=(curl -sf)
if [ "$TLS" = 1 ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
  TLSARGS=(--tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem")
  SCHEME=https
  CURL=(curl -sfk) # the throw-away certificate names localhost, the URL 127.0.0.1
fi
ON_ADMIN=() ON_LOAD=()
LOAD_CPUS=$(nproc)
if [ "$PIN" = 1 ]; then
  [ "$(nproc)" -ge 2 ] || { echo "--pin needs 2 CPUs or more" >&2; exit 2; }
  command -v taskset >/dev/null || { echo "--pin needs taskset (util-linux)" >&2; exit 2; }
  ON_ADMIN=(taskset -c 0)
  ON_LOAD=(taskset -c "1-$(( $(nproc) - 1 ))")
  LOAD_CPUS=$(( $(nproc) - 1 ))
fi
env -u NDD_KAFKA "${ON_ADMIN[@]}" "$ADMIN" --db-schema "$SCHEMA" --http.port "$PORT" "${TLSARGS[@]}" --log.level warn \
  >"$WORK/admin.log" 2>&1 &
ADMIN_PID=$!
URL=$SCHEME://127.0.0.1:$PORT
for _ in $(seq 1 300); do "${CURL[@]}" "$URL/healthz" >/dev/null && break; sleep 0.1; done

FEED='{"name":"bench-feed","transport":"http2","encoding":"json","endpoints":[{"url":"http://127.0.0.1:8080/ingest","weight":1},{"url":"http://127.0.0.1:8081/ingest","weight":1}],"delivery":{"max_in_flight":256,"timeout_ms":5000}}'
ID=$("${CURL[@]}" -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' \
  -d "$FEED" "$URL/api/v1/feeds" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p' || true)
[ -n "$ID" ] || { echo "creating the feed failed; see $WORK/admin.log" >&2; cat "$WORK/admin.log" >&2; exit 1; }
TARGET="$URL/api/v1/feeds/$ID"
BYTES=$("${CURL[@]}" -H "Authorization: Bearer $VIEW_TOKEN" "$TARGET" | wc -c)
HDR=()
if [ "$INM" = 1 ]; then
  ETAG=$("${CURL[@]}" -D - -o /dev/null -H "Authorization: Bearer $VIEW_TOKEN" "$TARGET" |
    tr -d '\r' | sed -n 's/^[Ee][Tt][Aa][Gg]: //p')
  HDR=(-H "If-None-Match: $ETAG")
fi

# Other work on the machine skews reads/s (not CPU per read): say how busy it was.
echo "ndd-admin read benchmark: GET /api/v1/feeds/{id} ($BYTES-byte body), $TOOL, $SCHEME,"\
  "$(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)),"\
  "load average before: $(cut -d' ' -f1-3 /proc/loadavg),"\
  "$([ "$PIN" = 1 ] && echo "admin on CPU 0, load on CPUs 1-$(( $(nproc) - 1 ))" || echo "placement left to the scheduler")"
# CPU seconds the admin used so far (utime + stime from /proc), to report CPU per read: on a
# shared 2-core machine the load generator competes with the server, so reads/s alone
# understates what one core of the admin can serve.
admin_cpu() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$ADMIN_PID/stat"; }
TABLE="| protocol | clients | threads | requests | reads/s | mean latency | admin CPU per read |\n|---|---|---|---|---|---|---|\n"
for proto in $PROTOCOLS; do
  [ "$TOOL" = wrk ] && [ "$proto" != h1 ] && continue
  label=$proto
  [ "$proto" = h1 ] && label="HTTP/1.1"
  [ "$proto" = h2 ] && label="HTTP/2"
  [ "$TLS" = 1 ] && label="$label TLS" || { [ "$proto" = h2 ] && label="HTTP/2 h2c"; }
  for c in $CLIENTS; do
    t=$(( c < LOAD_CPUS ? c : LOAD_CPUS ))
    cpu0=$(admin_cpu)
    if [ "$TOOL" = h2load ]; then
      PROTO=()
      [ "$proto" = h1 ] && PROTO=(--h1)
      # -m 1: one request in flight per client (synchronous clients, as Honeycomb's)
      out=$("${ON_LOAD[@]}" h2load "${PROTO[@]}" -m 1 -n "$REQUESTS" -c "$c" -t "$t" \
        -H "Authorization: Bearer $VIEW_TOKEN" "${HDR[@]}" "$TARGET" 2>&1)
      grep -q "$REQUESTS succeeded" <<<"$out" || { echo "$out" >&2; echo "failed requests at $c clients ($proto)" >&2; exit 1; }
      rps=$(echo "$out" | sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p')
      lat=$(echo "$out" | awk '/^time for request:/ {print $6}')
    else
      out=$("${ON_LOAD[@]}" wrk -t "$t" -c "$c" -d 10s -H "Authorization: Bearer $VIEW_TOKEN" "${HDR[@]}" "$TARGET")
      rps=$(echo "$out" | awk '/^Requests\/sec:/ {print $2}')
      lat=$(echo "$out" | awk '/Latency/ {print $2}')
    fi
    cpu1=$(admin_cpu)
    n=$REQUESTS
    [ "$TOOL" = wrk ] && n=$(echo "$out" | awk '/requests in/ {print $1}')
    us=$(awk -v a="$cpu0" -v b="$cpu1" -v n="$n" 'BEGIN {printf "%.1f", (b - a) * 1e6 / n}')
    printf 'protocol=%s clients=%-3s threads=%s reads/s=%s mean=%s admin-cpu/read=%sus load=%s\n' \
      "$label" "$c" "$t" "$rps" "$lat" "$us" "$(cut -d' ' -f1 /proc/loadavg)"
    TABLE+="| $label | $c | $t | $n | $rps | $lat | $us µs |\n"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf "%b" "$TABLE"
