#!/usr/bin/env bash
# A second local stack (own temp dir, own free ports) runs beside whatever stack the suite
# uses: both its servers answer (kcat -L, psql), a second `start` is a no-op, and after `stop`
# nothing of it runs (its PIDs are gone, its ports are closed). Bounded in time.
set -euo pipefail

SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/common/stack_e2e.sh
. "$SRC/tests/common/stack_e2e.sh"

e2e_stack_prepare stack

echo "second stack in $dir: kafka $kport, controller $cport, ssl $sport, sasl $qport, pg $pport"
out=$("$STACK" start "${args[@]}") || fail "stack.sh start failed"
echo "$out"
[[ $(echo "$out" | wc -l) == 2 ]] || fail "start must print exactly two lines, got: $out"
[[ $(echo "$out" | sed -n 1p) == "NDD_KAFKA=127.0.0.1:$kport" ]] || fail "bad NDD_KAFKA line: $out"
pg_line=$(echo "$out" | sed -n 2p)
[[ $pg_line == "NDD_PG='host=127.0.0.1 port=$pport dbname=ndd user=ndd passfile=$dir/pgpass'" ]] ||
    fail "bad NDD_PG line: $pg_line"
# the file is for a shell: sourcing it must give the whole conninfo (docs/local-stack.md)
conninfo=$(set -a && . "$dir/env" && printf %s "$NDD_PG")
[[ $conninfo == "host=127.0.0.1 port=$pport dbname=ndd user=ndd passfile=$dir/pgpass" ]] ||
    fail "sourcing $dir/env gives NDD_PG=$conninfo"
[[ $(eval "$out" && printf %s "$NDD_PG") == "$conninfo" ]] || fail "eval of the start output differs"
[[ $(grep -E '^NDD_(KAFKA|PG)=' "$dir/env") == "$out" ]] || fail "DIR/env differs from what start printed"
# ... and the secure listeners (docs/local-stack.md), which answer as the test principals.
senv=$(set -a && . "$dir/env" && printf '%s|%s|%s|%s' "$NDD_KAFKA_SSL" "$NDD_KAFKA_SASL" "$NDD_KAFKA_CA" "$NDD_KAFKA_CLIENTS")
[[ $senv == "127.0.0.1:$sport|127.0.0.1:$qport|$dir/kafka/tls/ca.pem|$dir/kafka/clients" ]] ||
    fail "DIR/env secure listeners: $senv"
kcat -L -b "127.0.0.1:$sport" -F "$dir/kafka/clients/ssl.properties" -m 10 | grep -q '1 brokers:' ||
    fail "kcat -L over SSL with the test client certificate on $sport"
kcat -L -b "127.0.0.1:$qport" -F "$dir/kafka/clients/scram.properties" -m 10 | grep -q '1 brokers:' ||
    fail "kcat -L over SASL_SSL as the SCRAM test user on $qport"
if kcat -L -b "127.0.0.1:$sport" -X security.protocol=SSL -X "ssl.ca.location=$dir/kafka/tls/ca.pem" -m 5 >/dev/null 2>&1; then
    fail "the SSL listener accepted a client without a certificate"
fi
[[ $(stat -c %a "$dir/pgpass") == 600 ]] || fail "pgpass is not mode 0600"

kafka_pid=$(cat "$dir/kafka/kafka.pid")
pg_pid=$(head -n1 "$dir/pg/data/postmaster.pid")
kill -0 "$kafka_pid" || fail "Kafka pid $kafka_pid not running"
kill -0 "$pg_pid" || fail "PostgreSQL pid $pg_pid not running"

# Both servers really answer, and a record goes through this broker.
kcat -L -b "127.0.0.1:$kport" -m 10 | grep -q '1 brokers:' || fail "kcat -L on $kport"
topic=e2e-second-$$-$RANDOM
echo "v-$topic" | kcat -P -b "127.0.0.1:$kport" -t "$topic" -k k1 -m 10 || fail "kcat produce"
got=$(kcat -C -b "127.0.0.1:$kport" -t "$topic" -o beginning -c 1 -e -q -m 10 -f '%k=%s') ||
    fail "kcat consume"
[[ $got == "k1=v-$topic" ]] || fail "consumed '$got'"
[[ $(psql -X -tA "$conninfo" -c "SELECT current_user || '@' || current_database()") == ndd@ndd ]] ||
    fail "psql as ndd"

# A second start of the same stack is a no-op that prints the same two lines.
again=$("$STACK" start "${args[@]}") || fail "second start failed"
[[ $again == "$out" ]] || fail "second start printed: $again"
[[ $(cat "$dir/kafka/kafka.pid") == "$kafka_pid" ]] || fail "second start restarted Kafka"
"$STACK" status "${args[@]}" >/dev/null || fail "status says not running"

"$STACK" stop "${args[@]}" || fail "stack.sh stop failed"
for pid in "$kafka_pid" "$pg_pid"; do
    ! kill -0 "$pid" 2>/dev/null || fail "pid $pid still runs after stop"
done
pgrep -f -- "$dir" >/dev/null && fail "processes mentioning $dir still run: $(pgrep -af -- "$dir")"
e2e_stack_ports_closed
if "$STACK" status "${args[@]}" >/dev/null; then fail "status says running after stop"; fi
echo "PASS: second stack started, answered and stopped cleanly"
