#!/usr/bin/env bash
# Instructions per read of ndd-admin, counted by callgrind: independent of other work on a
# shared machine (reads/s and CPU-seconds are not). Same read as run.sh (GET /api/v1/feeds/{id},
# viewer token, HTTP/1.1 keep-alive); the counters are zeroed after start-up and the feed's
# creation, so the figure is the read path alone (HTTP server, token check, routing, reply).
#
#   NDD_PG=<conninfo> bench/admin/ir.sh [--build DIR | --admin BINARY] [--requests N]
#                                       [--clients C] [--if-none-match] [--api-port P]
#                                       [--protocol h1|h2]
#
# --protocol h2: HTTP/2 h2c with prior knowledge (default h1: HTTP/1.1 keep-alive).
# --if-none-match sends the ETag back, so every read is a 304 without a body.
set -euo pipefail

BUILD=${NDD_BUILD_DIR:-build}
ADMIN=""
REQUESTS=20000
CLIENTS=16
INM=0
PORT=28111
PROTO=h1
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --admin) ADMIN=$2; shift 2 ;;
    --requests) REQUESTS=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --if-none-match) INM=1; shift ;;
    --api-port) PORT=$2; shift 2 ;;
    --protocol) PROTO=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
: "${NDD_PG:?set NDD_PG to a libpq conninfo (deploy/local/stack.sh start prints it)}"
[ -n "$ADMIN" ] || ADMIN=$BUILD/admin/ndd-admin
[ -x "$ADMIN" ] || { echo "no $ADMIN" >&2; exit 2; }
command -v valgrind >/dev/null && command -v h2load >/dev/null ||
  { echo "needs valgrind and h2load (nghttp2-client)" >&2; exit 2; }

SCHEMA="ndd_bench_ir_$$_$RANDOM"
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
env -u NDD_KAFKA valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" \
  "$ADMIN" --db-schema "$SCHEMA" --http.port "$PORT" --log.level warn >"$WORK/admin.log" 2>&1 &
ADMIN_PID=$!
URL=http://127.0.0.1:$PORT
for _ in $(seq 1 300); do curl -sf "$URL/healthz" >/dev/null && break; sleep 0.1; done
FEED='{"name":"bench-feed","transport":"http2","encoding":"json","endpoints":[{"url":"http://127.0.0.1:8080/ingest","weight":1},{"url":"http://127.0.0.1:8081/ingest","weight":1}],"delivery":{"max_in_flight":256,"timeout_ms":5000}}'
ID=$(curl -sf -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' \
  -d "$FEED" "$URL/api/v1/feeds" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
[ -n "$ID" ] || { echo "creating the feed failed" >&2; cat "$WORK/admin.log" >&2; exit 1; }
TARGET="$URL/api/v1/feeds/$ID"
ETAG=$(curl -sf -D - -o /dev/null -H "Authorization: Bearer $VIEW_TOKEN" "$TARGET" |
  tr -d '\r' | sed -n 's/^[Ee][Tt][Aa][Gg]: //p')
HDR=()
[ "$INM" = 1 ] && HDR=(-H "If-None-Match: $ETAG")
# Warm the token cache, then count only the measured reads.
curl -sf -o /dev/null -H "Authorization: Bearer $VIEW_TOKEN" "$TARGET"
callgrind_control -z "$ADMIN_PID" >/dev/null 2>&1
H1=(--h1)
[ "$PROTO" = h2 ] && H1=()
out=$(h2load "${H1[@]}" -n "$REQUESTS" -c "$CLIENTS" -t 1 -H "Authorization: Bearer $VIEW_TOKEN" \
  "${HDR[@]}" "$TARGET" 2>&1)
grep -q "$REQUESTS succeeded" <<<"$out" || { echo "$out" >&2; exit 1; }
callgrind_control -d "$ADMIN_PID" >/dev/null 2>&1
[ -n "${NDD_IR_KEEP:-}" ] && sleep 1 && cp "$WORK"/cg.out.* "$NDD_IR_KEEP"/
sleep 1
IR=$(cat "$WORK"/cg.out.* 2>/dev/null | awk '/^summary:/ {s += $2} END {print s}')
codes=$(echo "$out" | sed -n 's/^status codes: //p')
echo "ndd-admin $(basename "$ADMIN"): $REQUESTS reads ($PROTO), $CLIENTS clients, status codes: $codes"
awk -v ir="$IR" -v n="$REQUESTS" 'BEGIN {printf "instructions per read: %.0f\n", ir / n}'
