#!/usr/bin/env bash
# A role of ndd that fails is restarted inside the process, with backoff and an alarm: the
# ingress role cannot bind its HTTP/2 port (a listener of this test holds it), stops with
# exit 1, and ndd starts it again (1 s, 2 s, 4 s ...) while the rest of the process serves;
# ndd_director_role_restarts_total counts it, /readyz names it, and the alarm role-restarted
# (major, resource "ingress") reaches ndd's events topic. Once the port is free the role runs
# and becomes ready; ndd stops with exit 0.
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
fault_init rrestart
[[ -x $BIN_NDD ]] || fail "$BIN_NDD is not built"
EVENTS=${PFX}events
HTTP=$(free_port)
# the port the ingress role wants, held by a listener of ours for 4 s
python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
time.sleep(4)' >"$W/held.port" &
FAULT_PIDS+=("$!")
for _ in $(seq 50); do [[ -s $W/held.port ]] && break; sleep 0.1; done
HELD=$(cat "$W/held.port")
[[ -n $HELD ]] || fail "the port holder did not start"
jq -n --arg b "$B" --argjson port "$HTTP" --arg ev "$EVENTS" --argjson held "$HELD" --arg p "$PFX" '{
    bootstrap: $b, http: {port: $port}, "events-topic": $ev,
    roles: {ingress: {"h2.port": $held, "copy.topic-prefix": $p}}}' >"$W/ndd.json"
"$BIN_NDD" --config "$W/ndd.json" >"$W/ndd.log" 2>&1 &
NDD=$!
FAULT_PIDS+=("$NDD")
wait_http "http://127.0.0.1:$HTTP/healthz" 30 || fail "ndd did not start (log $W/ndd.log)"
metric() { http_get "http://127.0.0.1:$HTTP/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
t0=$SECONDS
until [[ $(metric 'ndd_director_role_restarts_total{role="ingress"}') -ge 1 ]]; do
    ((SECONDS - t0 < 10)) || fail "no restart of the ingress role counted in 10 s (log $W/ndd.log)"
    sleep 0.2
done
ready=$(curl -s --max-time 3 "http://127.0.0.1:$HTTP/readyz" || true)
grep -q '^ingress: stopped (exit 1), restarting in' <<<"$ready" || fail "/readyz does not name the failing role: $ready"
say "ingress role failed and is being restarted: $(grep '^ingress:' <<<"$ready")"
alarm=""
for _ in $(seq 50); do
    # the topic may not exist yet (kcat fails): nothing found this time
    alarm=$({ kcat -C -b "$B" -t "$EVENTS" -o beginning -e -q 2>/dev/null || true; } |
        jq -c 'select(.type == "alarm" and .alarm == "role-restarted" and .resource == "ingress")' | head -n1 || true)
    [[ -n $alarm ]] && break
    sleep 0.2
done
[[ -n $alarm ]] || fail "no role-restarted alarm for the ingress on $EVENTS"
jq -e '.action == "raise" and .severity == "major" and .service == "ndd"' <<<"$alarm" >/dev/null ||
    fail "the alarm is not a major raise from ndd: $alarm"
say "alarm on $EVENTS: $alarm"
# the holder lets the port go at 4 s; the next restart (at most 8 s later) binds it
t0=$SECONDS
until curl -fs --max-time 2 "http://127.0.0.1:$HTTP/readyz" | grep -qx 'ingress: ready'; do
    ((SECONDS - t0 < 25)) || fail "the ingress role did not come back once its port was free: $(curl -s "http://127.0.0.1:$HTTP/readyz")"
    sleep 0.5
done
[[ $(metric 'ndd_director_role_up{role="ingress"}') == 1 ]] || fail "ndd_director_role_up does not show the ingress running"
n=$(metric 'ndd_director_role_restarts_total{role="ingress"}')
kill -TERM "$NDD"
rc=0
wait "$NDD" || rc=$?
((rc == 0)) || fail "ndd exited $rc after SIGTERM"
echo "PASS: the failing ingress role was restarted $n times with backoff, alarmed, and came back"
