#!/usr/bin/env bash
# Two sites and a failover, following docs/georedundancy.md: site A (a stack with ndd: every
# role, the admin among them) takes ~1,000 copies/s from ndd-nf-sim and delivers them to an
# independent sink; MirrorMaker 2 (deploy/local/mirror.sh) copies A's NF topic, its admin's
# configuration topic and the consumer groups' offsets to site B, and the admin's database is
# backed up (ndd-admin backup). Then A's broker and A's ndd are killed with SIGKILL and B takes
# over as the runbook says: the admin's backup restored into B's PostgreSQL (B's admin then
# answers A's token with A's filter), ndd started on B (its aggregation resumes from the
# offsets MirrorMaker translated). A's broker comes back (the
# runbook's last step): MirrorMaker copies what A had acknowledged but not yet copied.
# Asserts lost = 0 at the sink for every copy in A's log (a superset of those A acknowledged to
# the producer: some were written as the broker died, unacknowledged); reports the
# duplicates, the time from the failure to the first delivery from B (RTO) and the copies B
# did not have when it took over (RPO, the mirror's lag at the failure).
# One broker per site keeps the test short; the procedure is the same with three.
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
FAULT_TIMEOUT=${FAULT_TIMEOUT:-360} # two stacks, MirrorMaker and a broker restart
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
fault_init sites
MIRROR=$SRC/deploy/local/mirror.sh
BIN_ADMIN=$BUILD/admin/ndd-admin
[[ -x $BIN_ADMIN && -x $BIN_NDD ]] || fail "ndd-admin and ndd must be built"
for tool in java pg_dump pg_restore jq curl; do
    command -v "$tool" >/dev/null || fail "$tool is required"
done
now_ms() { date +%s%3N; }

# ---- the two sites: A is the lib's own stack (destroyed by it), B beside it ----------------
SITE_A=$W/siteA SITE_B=$W/siteB
sites_cleanup() {
    "$MIRROR" stop --to "$SITE_B" >/dev/null 2>&1 || true
    "$STACK" destroy --dir "$SITE_B" >/dev/null 2>&1 || true
    fault_cleanup
}
trap sites_cleanup EXIT
mapfile -t P < <("$STACK" free-ports 10) # one draw: the two stacks' ports never collide
site_args() { # DIR first-port-index
    echo --dir "$1" --kafka-port "${P[$2]}" --controller-port "${P[$2 + 1]}" \
        --pg-port "${P[$2 + 2]}" --ssl-port "${P[$2 + 3]}" --sasl-port "${P[$2 + 4]}"
}
read -ra OWN_ARGS <<<"$(site_args "$SITE_A" 0)"
read -ra B_ARGS <<<"$(site_args "$SITE_B" 5)"
"$STACK" start "${OWN_ARGS[@]}" >"$W/stackA.out" 2>"$W/stackA.err" &
sa=$!
"$STACK" start "${B_ARGS[@]}" >"$W/stackB.out" 2>"$W/stackB.err" || fail "site B: $(tail -3 "$W/stackB.err")"
wait "$sa" || fail "site A: $(tail -3 "$W/stackA.err")"
OWN_STACK=$SITE_A
pg_of() { sed -n 's/^NDD_PG=//p' "$1" | sed "s/^'//; s/'\$//"; }
A_KAFKA=127.0.0.1:${P[0]} A_PG=$(pg_of "$W/stackA.out")
B_KAFKA=127.0.0.1:${P[5]} B_PG=$(pg_of "$W/stackB.out")
SCHEMA=${PFX//-/_}ndd # start_ndd's admin schema

# MirrorMaker A -> B: the NF topic and the admin's configuration topic (MAIN and XDR are made
# again on B from the NF topic), every group's offsets on them.
"$MIRROR" start --from "$SITE_A" --to "$SITE_B" --topics "${PFX}(SCP|config)" \
    >"$W/mirror.out" 2>&1 &
mm=$!

# ---- site A at work -------------------------------------------------------------------------
B=$A_KAFKA OWN_PG=$A_PG
start_sink s1
write_feeds s1
start_ndd a
wait_ready "http://127.0.0.1:${NDD_HTTP[a]}/readyz" 60 || fail "ndd on A not ready"
# An operator's token and a filter made through A's admin: in A's database (so in the backup)
# and in its configuration topic (so mirrored to B).
wait_ready "http://127.0.0.1:${NDD_ADMIN_PORT[a]}/readyz" 30 || fail "A's admin not ready"
(umask 077 && NDD_PG=$A_PG "$BIN_ADMIN" token create --db-schema "$SCHEMA" --role admin \
    --name ops >"$W/ops.token" 2>"$W/token.log") || fail "token create: $(cat "$W/token.log")"
admin_api() { # port method path [body] -> HTTP status; body in W/resp
    curl -sS -o "$W/resp" -w '%{http_code}' -X "$2" -H "Authorization: Bearer $(cat "$W/ops.token")" \
        -H 'Content-Type: application/json' ${4:+--data-binary "$4"} "http://127.0.0.1:$1$3"
}
st=$(admin_api "${NDD_ADMIN_PORT[a]}" POST /api/v1/filters '{"name":"scp-only","default":"drop",
  "rules":[{"name":"scp","action":"allow","match":{"field":"@nf-type","op":"equals","value":"SCP"}}]}')
[[ $st == 201 ]] || fail "filter on A: $st $(cat "$W/resp")"
wait "$mm" || fail "MirrorMaker did not start: $(cat "$W/mirror.out")"
SIM_FLUSH_TIMEOUT=5
produce 1000 90 # stopped right after the failure (SIGTERM: its summary still counts)
# Healthy A: deliveries flow, and B already holds the aggregation group's translated offsets.
group_on_b() { # committed offsets of the aggregation group on B's copy of the NF topic (sum)
    "$BIN_OFF" --bootstrap "$B_KAFKA" --topic "${PFX}SCP" --group "ndd-agg-${PFX}SCP" \
        --timeout-ms 3000 2>/dev/null |
        jq -r --arg g "ndd-agg-${PFX}SCP" --arg t "${PFX}SCP" '.groups[$g][$t].committed // 0' \
            2>/dev/null || echo 0
}
t0=$SECONDS
config_on_b() { B=$B_KAFKA topic_records "${PFX}config"; }
until (($(sink_field s1 unique) >= 3000)) && (($(group_on_b) > 0)) && (($(config_on_b) > 0)); do
    ((SECONDS - t0 < 60)) || fail "after 60 s: A delivered $(sink_field s1 unique) (3000 wanted), B has group offsets $(group_on_b) and $(config_on_b) configuration records (> 0 wanted)"
    sleep 0.5
done
# the runbook's periodic backup of A's admin database
NDD_PG=$A_PG "$BIN_ADMIN" backup "$W/admin.dump" --db-schema "$SCHEMA" >"$W/backup.out" 2>&1 ||
    fail "backup: $(cat "$W/backup.out")"

# ---- the failure: A's broker and A's ndd, SIGKILL ---------------------------------------------
running "$SIM_PID" || fail "ndd-nf-sim ended before the failure: $(tail -3 "$W/nfsim.log")"
A_BROKER=$(cat "$SITE_A/kafka/kafka.pid")
kill -KILL "$A_BROKER" "${NDD_PID[a]}"
T_FAIL=$(now_ms)
say "site A failed: broker $A_BROKER and ndd ${NDD_PID[a]} killed with SIGKILL"
RECEIVED_AT_FAIL=$(sink_field s1 received)
# The traffic was A's: it ends with A (the copies in flight fail in the producer, unacknowledged).
kill -TERM "$SIM_PID"

# ---- B takes over (docs/georedundancy.md, "Take-over") ----------------------------------------
B_HAD=$(B=$B_KAFKA topic_records "${PFX}SCP") # what B holds of the NF topic at the take-over
NDD_PG=$B_PG "$BIN_ADMIN" restore "$W/admin.dump" --db-schema "$SCHEMA" >"$W/restore.out" 2>&1 ||
    fail "restore on B: $(cat "$W/restore.out")"
B_RESUME=$(group_on_b) # where B's aggregation resumes: MirrorMaker's translated offsets
B=$B_KAFKA OWN_PG=$B_PG
start_ndd b
t0=$SECONDS
until (($(sink_field s1 received) > RECEIVED_AT_FAIL)); do
    ((SECONDS - t0 < 60)) || fail "no delivery from B within 60 s of its start"
    sleep 0.1
done
T_B=$(now_ms)
RTO_MS=$((T_B - T_FAIL))
say "first delivery from B $RTO_MS ms after the failure"
wait_ready "http://127.0.0.1:${NDD_ADMIN_PORT[b]}/readyz" 30 || fail "B's admin on the restored database is not ready"
# B's admin answers A's operator token with A's filter
st=$(admin_api "${NDD_ADMIN_PORT[b]}" GET /api/v1/filters)
[[ $st == 200 ]] && grep -q '"scp-only"' "$W/resp" || fail "B's admin: filters: $st $(cat "$W/resp")"
# What A acknowledged: ndd-nf-sim exits 1 as the copies in flight at the failure failed (they
# were never A's), so its summary, not its exit code, is the count (produce_wait would refuse).
wait "$SIM_PID" || true
PRODUCED=$(jq -r .acked "$W/nfsim.json" 2>/dev/null) || fail "no ndd-nf-sim summary: $(tail -3 "$W/nfsim.log")"
((PRODUCED > 0)) || fail "ndd-nf-sim acknowledged nothing"
say "A acknowledged $PRODUCED copies; $(jq -r .failed "$W/nfsim.json") failed with A"

# ---- A comes back: its broker alone; MirrorMaker copies A's last records -------------------
# start is idempotent: a second try only re-checks a broker that was slow to answer (load).
"$STACK" start "${OWN_ARGS[@]}" >/dev/null 2>"$W/stackA2.err" ||
    "$STACK" start "${OWN_ARGS[@]}" >/dev/null 2>>"$W/stackA2.err" ||
    fail "A's broker restart: $(tail -3 "$W/stackA2.err")"

# ---- the accounting: the sink against A's own log --------------------------------------------
# A's NF topic (its broker back, its log as the SIGKILL left it) holds every copy A persisted:
# all it acknowledged, and some whose acknowledgement the failure cut off (the producer counts
# those as failed, yet they are delivered). Everything the sink gets came from that log, so the
# sink holding as many distinct @seq as the log means it holds every one of them, and with them
# every copy A acknowledged. (produced = delivered would not hold: delivered > acknowledged.)
a_seqs() {
    kcat -C -b "$A_KAFKA" -t "${PFX}SCP" -o beginning -e -q -f '%h\n' 2>/dev/null |
        tr ',' '\n' | sed -n 's/^@seq=//p' | sort -u | wc -l
}
PERSISTED=$(a_seqs)
((PERSISTED >= PRODUCED)) || fail "A's log holds $PERSISTED distinct copies, fewer than the $PRODUCED it acknowledged"
dead() { echo $(($(topic_records "${PFX}dlq-aggregation") + $(topic_records "ndd.dlq.${PFX}s1"))); }
B=$B_KAFKA t0=$SECONDS
until (($(sink_field s1 unique) + $(dead) >= PERSISTED)); do
    ((SECONDS - t0 < 90)) || break
    sleep 1
done
DELIVERED=$(sink_field s1 unique) DUPS=$(sink_field s1 duplicates) DEAD=$(dead)
LOST=$((PERSISTED - DELIVERED - DEAD))
echo "account: A acknowledged $PRODUCED, persisted $PERSISTED = delivered $DELIVERED +" \
    "dead-lettered $DEAD; lost $LOST; duplicates $DUPS"
((LOST == 0)) || fail "lost $LOST copies of A's log (work dir $W kept)"
RPO_COPIES=$((PERSISTED > B_HAD ? PERSISTED - B_HAD : 0))
echo "two sites: B held $B_HAD copies at the take-over and resumed at $B_RESUME; RPO $RPO_COPIES copies (as many ms at" \
    "1,000 copies/s) until A's broker returned; RTO (failure to first delivery from B)" \
    "$RTO_MS ms; duplicates $DUPS; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "PASS: site A killed, B took over: lost 0, duplicates $DUPS, RTO $RTO_MS ms"
