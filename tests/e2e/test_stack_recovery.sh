#!/usr/bin/env bash
# stack.sh in bad situations: a port already taken makes start fail with a message naming the
# port and leaves nothing running; a broker killed with SIGKILL is seen as stopped (its stale
# pid file is ignored), and start brings it back on the same data, records intact.
set -euo pipefail

SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/common/stack_e2e.sh
. "$SRC/tests/common/stack_e2e.sh"

squatter=
e2e_stack_prepare recovery
trap '[[ -n $squatter ]] && kill "$squatter" 2>/dev/null; e2e_stack_cleanup' EXIT

# 1. Someone else listens on the Kafka port.
socat TCP-LISTEN:"$kport",bind=127.0.0.1,reuseaddr,fork /dev/null &
squatter=$!
for _ in $(seq 50); do port_open "$kport" && break; sleep 0.1; done
port_open "$kport" || fail "socat did not listen on $kport"
if err=$("$STACK" start "${args[@]}" 2>&1 >/dev/null); then
    fail "start succeeded although port $kport was taken"
fi
echo "start refused as expected: $(tail -n1 <<<"$err")"
grep -q "port $kport is in use" <<<"$err" || fail "error does not name port $kport: $err"
pgrep -f -- "$dir/" >/dev/null && fail "something of the stack runs after a failed start"
kill "$squatter"
wait "$squatter" 2>/dev/null || true
squatter=
for _ in $(seq 50); do port_open "$kport" || break; sleep 0.1; done

# 2. A real start, one record, then the broker dies hard.
"$STACK" start "${args[@]}" >/dev/null || fail "start failed on free ports"
topic=e2e-recovery-$$-$RANDOM
echo "survivor" | kcat -P -b "127.0.0.1:$kport" -t "$topic" -k k -p 0 -m 10 || fail "produce"
pid=$(cat "$dir/kafka/kafka.pid")
kill -KILL "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if out=$("$STACK" status "${args[@]}"); then fail "status says all runs after SIGKILL: $out"; fi
grep -q '^kafka: stopped' <<<"$out" || fail "status does not report Kafka stopped: $out"
grep -q '^postgres: running' <<<"$out" || fail "status lost PostgreSQL: $out"

# 3. start again: only Kafka is restarted, on the same storage.
"$STACK" start "${args[@]}" >/dev/null || fail "restart after SIGKILL failed"
newpid=$(cat "$dir/kafka/kafka.pid")
[[ $newpid != "$pid" ]] || fail "pid file not renewed"
got=$(kcat -C -b "127.0.0.1:$kport" -t "$topic" -p 0 -o beginning -c 1 -e -q -m 20 -f '%s') ||
    fail "consume after restart"
[[ $got == survivor ]] || fail "record lost across broker restart (got '$got')"

"$STACK" stop "${args[@]}" || fail "stop failed"
kill -0 "$newpid" 2>/dev/null && fail "Kafka $newpid still runs after stop"
e2e_stack_ports_closed
echo "PASS: busy port refused cleanly; killed broker restarted with its data"
