#!/usr/bin/env bash
# ndd-admin backup FILE / ndd-admin restore FILE, as docs/georedundancy.md has an operator run
# them: an admin with objects (made through its API), tokens, audit entries and alarms is
# backed up; the file is restored into an empty database on the same PostgreSQL; every row of
# every table of the schema is the same there; an admin started on the restored database
# accepts the old tokens and serves the objects; a second restore into the now full schema is
# refused and changes nothing; a backup to an unwritable place fails without leaving a file.
# Needs NDD_BUILD_DIR, NDD_TEST_PG (a role that may CREATE DATABASE), NDD_TEST_KAFKA.
NAME=backup
. "$(dirname "${BASH_SOURCE[0]}")/admin_lib.sh"

RDB=ndd_e2e_restore_$TAG
# the same server and credentials, another database
RPG="$(sed -E 's/dbname=[^ ]*//' <<<"$PG") dbname=$RDB"
backup_cleanup() {
    admin_cleanup
    psql "$PG" -qc "DROP DATABASE IF EXISTS $RDB" >/dev/null 2>&1
}
trap backup_cleanup EXIT

# 1. an admin with something in every table: objects, tokens, audit, an alarm
token admin ops
token viewer watcher
start_admin admin --bootstrap "$KAFKA"
api ops POST /api/v1/filters '{"name":"scp-only","default":"drop","rules":[{"name":"scp",
  "action":"allow","match":{"field":"@nf-type","op":"equals","value":"SCP"}}]}' >/dev/null
[ "$(status)" = 201 ] || fail "filter create: $(status) $(cat "$T/resp")"
api ops POST /api/v1/feeds '{"name":"demo","transport":"http2","encoding":"json",
  "filter":"scp-only","endpoints":[{"url":"http://127.0.0.1:28999/in"}]}' >/dev/null
[ "$(status)" = 201 ] || fail "feed create: $(status) $(cat "$T/resp")"
# An alarm as the admin stores one from a worker's event (the events path has its own tests).
psql "$PG" -qc "INSERT INTO $SCHEMA.alarms (type, resource, severity, state, text)
  VALUES ('service-down', 'ndd-adapter/host-1', 'major', 'active', 'no heartbeat')" ||
    fail "alarm fixture"
kill -TERM "${ADMIN_PIDS[0]}" && wait "${ADMIN_PIDS[0]}"
ADMIN_PIDS=()

# every row of every table, in a stable order: what the restore must reproduce
rows() { # conninfo
    local t out=""
    for t in $(psql "$1" -Atqc "SELECT tablename FROM pg_tables WHERE schemaname = '$SCHEMA' ORDER BY 1"); do
        out+="$t $(psql "$1" -Atqc "SELECT count(*) || ' ' || coalesce(md5(string_agg(x::text, '|' ORDER BY x::text)), '-') FROM $SCHEMA.$t x")"$'\n'
    done
    printf '%s' "$out"
}
BEFORE=$(rows "$PG")
for t in objects api_tokens audit alarms; do
    grep -Eq "^$t [1-9]" <<<"$BEFORE" || fail "table $t is empty before the backup: $BEFORE"
done

# 2. backup: one file, the conninfo nowhere in the output
"$ADMIN" backup "$T/admin.dump" --db-schema "$SCHEMA" >"$T/backup.out" 2>&1 ||
    fail "backup exited $?: $(cat "$T/backup.out")"
[ -s "$T/admin.dump" ] && [ ! -e "$T/admin.dump.partial" ] || fail "no backup file"
grep -q "passfile\|$(sed -n 's/.*passfile=\([^ ]*\).*/\1/p' <<<"$PG")" "$T/backup.out" &&
    fail "backup printed the conninfo: $(cat "$T/backup.out")"

# 3. restore into an empty database: the same rows
psql "$PG" -qc "CREATE DATABASE $RDB" || fail "CREATE DATABASE $RDB"
NDD_PG=$RPG "$ADMIN" restore "$T/admin.dump" --db-schema "$SCHEMA" >"$T/restore.out" 2>&1 ||
    fail "restore exited $?: $(cat "$T/restore.out")"
AFTER=$(rows "$RPG")
[ "$AFTER" = "$BEFORE" ] || fail "restored rows differ: before
$BEFORE
after
$AFTER"

# 4. an admin on the restored database: the old tokens work, the objects and alarm are served
NDD_PG=$RPG start_admin restored --bootstrap "$KAFKA"
api watcher GET /api/v1/feeds >/dev/null
[ "$(status)" = 200 ] && grep -q '"scp-only"' "$T/resp" && grep -q '"demo"' "$T/resp" ||
    fail "restored admin: feed demo: $(status) $(cat "$T/resp")"
api ops GET /api/v1/alarms >/dev/null
[ "$(status)" = 200 ] && grep -q 'ndd-adapter/host-1' "$T/resp" ||
    fail "restored admin: alarms: $(status) $(cat "$T/resp")"

# 5. a second restore into the full schema is refused, nothing changed
if NDD_PG=$RPG "$ADMIN" restore "$T/admin.dump" --db-schema "$SCHEMA" >"$T/again.out" 2>&1; then
    fail "a restore into a schema with tables succeeded"
fi
grep -q "already has" "$T/again.out" || fail "refusal not explained: $(cat "$T/again.out")"
# a file that does not hold the schema is refused before anything is written
if NDD_PG=$RPG "$ADMIN" restore "$T/admin.dump" --db-schema other_schema >"$T/other.out" 2>&1; then
    fail "a restore of a file without the schema succeeded"
fi
grep -q "does not hold" "$T/other.out" || fail "wrong-schema refusal: $(cat "$T/other.out")"

# 6. a backup that cannot be written fails and leaves nothing behind
if "$ADMIN" backup "$T/missing-dir/admin.dump" --db-schema "$SCHEMA" >"$T/bad.out" 2>&1; then
    fail "a backup into a missing directory succeeded"
fi
[ ! -e "$T/missing-dir" ] || fail "a failed backup left files"
echo "backup $(stat -c %s "$T/admin.dump") bytes; restored $(grep -c . <<<"$AFTER") tables identical"
echo PASS
