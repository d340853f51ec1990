#!/usr/bin/env bash
# Kafka as operators run it: a three-broker cluster (deploy/local/stack.sh start --brokers 3,
# its own), the topics NDD creates with replication factor 3 and min.insync.replicas 2, one
# ndd-aggregation and one ndd-adapter delivering to an independent ndd-sink, and three broker
# failures one after the other, each under NDD_CLUSTER_RATE copies/s (default 2,000):
#   a. kill -9 of the broker leading partitions of MAIN and of the NF topic; it comes back 10 s
#      later;
#   b. a rolling restart of the three brokers (each stopped, started, and the cluster back to
#      every replica in sync before the next, as an operator does it);
#   c. one broker stopped, then a second: the last one refuses every write with
#      NOT_ENOUGH_REPLICAS (min.insync.replicas 2), until both are back;
#   d. the aggregation's and the adapter's static group members fenced (FENCED_INSTANCE_ID, a
#      fatal consumer error) by an intruder under their group.instance.id: each is rebuilt.
# After each: lost = 0 by @seq at the sink (fault_lib.sh's accounting, cumulative over the
# phases); duplicates and the longest delivery gap (the longest time between two increases of
# the sink's distinct @seq count while the phase's copies arrive) are printed. One cluster and
# one NDD for the three: a cluster start costs tens of seconds on a loaded 2-core host.
# The daemons run with NDD's default consumer session (session.timeout.ms 10,000): the crash of
# the broker coordinating a group can outlast it, and librdkafka 2.0.2 then fences the static
# member (FENCED_INSTANCE_ID, a fatal error); NDD rebuilds the consumer (services/kafka/kafka.c)
# and delivery goes on. Each fence and rebuild is counted from the daemons' logs and reported.
# NDD_CLUSTER_SESSION_MS sets another session timeout.
set -euo pipefail
SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
FAULT_TIMEOUT=${NDD_CLUSTER_TIMEOUT:-700}
# the simulator waits this long for its last acknowledgements (brokers coming back)
SIM_FLUSH_TIMEOUT=120
# shellcheck source=tests/fault/fault_lib.sh
. "$SRC/tests/fault/fault_lib.sh"
fault_init cluster
# a failed run keeps the brokers' logs in W (fault_cleanup destroys the cluster)
trap '[[ -n ${NDD_FAULT_KEEP:-} && -n $OWN_STACK ]] && cp "$OWN_STACK"/kafka-*.log "$W/" 2>/dev/null; fault_cleanup' EXIT
RATE=${NDD_CLUSTER_RATE:-2000}
T_START=$SECONDS
command -v kcat >/dev/null || fail "kcat is not installed"

# ---- the cluster ------------------------------------------------------------------------
cluster_start() {
    OWN_STACK=$W/stack
    local -a p
    mapfile -t p < <("$STACK" free-ports 4)
    local t0=$SECONDS
    "$STACK" start --dir "$OWN_STACK" --no-pg --brokers 3 --controller-port "${p[0]}" \
        --kafka-ports "${p[1]},${p[2]},${p[3]}" >"$W/stack.out" 2>"$W/stack.err" ||
        fail "the 3-broker cluster did not start: $(tail -3 "$W/stack.err")"
    B=$(sed -n 's/^NDD_KAFKA=//p' "$W/stack.out")
    [[ $B == *,*,* ]] || fail "NDD_KAFKA does not list three brokers: '$B'"
    say "3-broker cluster $B started in $((SECONDS - t0)) s"
}
broker_pid() { head -n1 "$OWN_STACK/kafka-$1/kafka.pid"; }
# restarts whatever node of the cluster is not running; returns once all 3 brokers are listed
cluster_restart_missing() {
    "$STACK" start --dir "$OWN_STACK" --no-pg >>"$W/stack.out" 2>>"$W/stack.err" ||
        fail "the cluster did not come back: $(tail -3 "$W/stack.err")"
}
broker_stop() {
    "$STACK" stop --dir "$OWN_STACK" --node "$1" >>"$W/stack.out" 2>>"$W/stack.err" ||
        fail "stopping broker $1 failed: $(tail -3 "$W/stack.err")"
}
# metadata of every topic as JSON (kcat asks any listed broker)
metadata() { kcat -L -b "$B" -J -m 5 2>/dev/null; }
# every partition of every topic (the consumer offsets too) has all 3 replicas in sync
all_in_sync() {
    metadata | jq -e '[.topics[].partitions[] | (.isrs | length)] | length > 0 and min == 3' \
        >/dev/null 2>&1
}
# leader of each partition of topic: "partition leader" lines
leaders() { metadata | jq -r --arg t "$1" '.topics[] | select(.topic == $t) | .partitions[] | "\(.partition) \(.leader)"'; }
# wait_for SECONDS WHAT CMD...: CMD succeeds within SECONDS, or the test fails naming WHAT
wait_for() {
    local limit=$1 what=$2 t0=$SECONDS
    shift 2
    until "$@"; do
        ((SECONDS - t0 < limit)) || fail "$what: not within ${limit}s"
        sleep 0.5
    done
}

# ---- the delivery gap: the sink's distinct count sampled every 0.1 s, a line when it moves --
gap_sampler() {
    local last=-1 u
    while :; do
        u=$(curl -fsS --max-time 1 "http://127.0.0.1:${SINK_M[s1]}/summary" 2>/dev/null |
            grep -o '"unique":[0-9]*' | cut -d: -f2) || u=""
        if [[ -n $u && $u != "$last" ]]; then
            echo "$(date +%s%3N) $u"
            last=$u
        fi
        sleep 0.1
    done >>"$W/unique.txt"
}
now_ms() { date +%s%3N; }
# longest gap (s) between two increases of the distinct count, from T0_MS until it reached TARGET
longest_gap() { # t0_ms target
    awk -v t0="$1" -v tgt="$2" '$1 >= t0 { if (prev) { d = $1 - prev; if (d > m) m = d } prev = $1;
        if ($2 >= tgt) exit } END { printf "%.1f", m / 1000 }' "$W/unique.txt"
}

# ---- one phase: the simulator from NEXT_SEQ on, the fault, then the accounting -----------
PRODUCED=0 NEXT_SEQ=0 DUPS_BEFORE=0
declare -a REPORT
phase_begin() { # name seconds
    PHASE=$1 PHASE_T0=$SECONDS PHASE_T0_MS=$(now_ms)
    "$BIN_SIM" --bootstrap "$B" --rate "$RATE" --duration "$2" --nf-mix SCP=1 --size natural \
        --copies 2 --topic-prefix "$PFX" --partitions 3 --seq-start "$NEXT_SEQ" --quiet \
        --flush-timeout "$SIM_FLUSH_TIMEOUT" >"$W/nfsim-$PHASE.json" 2>"$W/nfsim-$PHASE.log" &
    SIM_PID=$!
    FAULT_PIDS+=("$!")
    # the fault hits a flowing stream: wait until this phase's copies reach the sink
    local want=$((PRODUCED + RATE))
    wait_for 60 "phase $PHASE: copies at the sink" \
        eval '(($(sink_field s1 unique) >= want))'
}
phase_end() { # name [stop]: with "stop", the simulator is stopped (SIGTERM) instead of
    # running out its duration
    [[ ${2:-} == stop ]] && kill -TERM "$SIM_PID" 2>/dev/null
    wait "$SIM_PID" || fail "phase $PHASE: ndd-nf-sim failed: $(tail -3 "$W/nfsim-$PHASE.log")"
    local acked last
    acked=$(jq -r .acked "$W/nfsim-$PHASE.json")
    last=$(jq -r .seq_last "$W/nfsim-$PHASE.json")
    ((acked > 0)) || fail "phase $PHASE: ndd-nf-sim acknowledged nothing"
    PRODUCED=$((PRODUCED + acked)) NEXT_SEQ=$((last + 1))
    # the phases' total, where fault_lib's xDR account (ndd with every role) reads it
    echo "{\"acked\":$PRODUCED}" >"$W/nfsim.json"
    settle_and_account 120
    local dups=$((DUPS[s1] - DUPS_BEFORE)) gap
    DUPS_BEFORE=${DUPS[s1]}
    gap=$(longest_gap "$PHASE_T0_MS" "$PRODUCED")
    REPORT+=("$1: $acked copies at $(jq -r .achieved_mps "$W/nfsim-$PHASE.json")/s, lost 0, duplicates $dups, longest delivery gap ${gap} s, phase $((SECONDS - PHASE_T0)) s")
    echo "cluster phase ${REPORT[-1]}"
}

cluster_start
if [[ -n ${NDD_CLUSTER_SESSION_MS:-} ]]; then
    export NDD_KAFKA_SESSION_TIMEOUT_MS=$NDD_CLUSTER_SESSION_MS
    # the same for ndd (NDD_FAULT_ALLINONE=1), which takes its roles' kafka.* from its file
    FAULT_NDD_KAFKA="{\"session.timeout.ms\":\"$NDD_KAFKA_SESSION_TIMEOUT_MS\"}"
fi
start_sink s1
write_feeds s1
start_agg 0
start_adapter 0
gap_sampler &
FAULT_PIDS+=("$!")
# NDD created its topics: replication factor 3, min.insync.replicas 2 (KAFKA_REPLICATION_AUTO)
for t in "${PFX}MAIN" "${PFX}SCP" "${PFX}dlq-aggregation"; do
    wait_for 30 "topic $t with 3 replicas" eval \
        "metadata | jq -e --arg t '$t' '[.topics[] | select(.topic == \$t) | .partitions[] | .replicas | length] | length > 0 and min == 3' >/dev/null"
done
for t in "${PFX}MAIN" "${PFX}SCP"; do
    grep -qE "created topic $t: [0-9]+ partitions, replication factor 3, min.insync.replicas 2" \
        "$W/agg-0.log" || fail "NDD did not create $t with replication factor 3, min.insync.replicas 2"
done

# The group coordinator of a consumer group: the leader of the __consumer_offsets partition
# Kafka maps the group to (Java's String.hashCode of its name, & 0x7fffffff, % 10 partitions).
coordinator() {
    local g=$1 h=0 i c
    for ((i = 0; i < ${#g}; i++)); do
        printf -v c '%d' "'${g:i:1}"
        h=$(((h * 31 + c) & 0xffffffff))
    done
    leaders __consumer_offsets | awk -v p="$(((h & 0x7fffffff) % 10))" '$1 == p {print $2}'
}

# a. kill -9 of the broker leading partitions of MAIN and of the NF topic; the coordinator of
# the aggregation's group when it leads both (the worst case: the group moves too)
phase_begin "a. kill -9 of a leader" 20
victim="" coord=$(coordinator "ndd-agg-${PFX}SCP")
for cand in $coord $(leaders "${PFX}MAIN" | awk '{print $2}'); do
    leaders "${PFX}MAIN" | awk '{print $2}' | grep -qx "$cand" &&
        leaders "${PFX}SCP" | awk '{print $2}' | grep -qx "$cand" && { victim=$cand; break; }
done
[[ -n $victim ]] || fail "no broker leads partitions of both ${PFX}MAIN and ${PFX}SCP"
main_p=$(leaders "${PFX}MAIN" | awk -v v="$victim" '$2 == v {print $1; exit}')
kill -KILL "$(broker_pid "$victim")"
t_kill=$SECONDS
say "broker $victim (leader of ${PFX}MAIN[$main_p] and of a ${PFX}SCP partition$([[ $victim == "$coord" ]] && echo ", coordinator of the aggregation's group")) killed with SIGKILL"
leader_moved() { [[ $(leaders "${PFX}MAIN" | awk -v p="$main_p" '$1 == p {print $2}') =~ ^[0-9]+$ ]] &&
    [[ $(leaders "${PFX}MAIN" | awk -v p="$main_p" '$1 == p {print $2}') != "$victim" ]]; }
wait_for 60 "a new leader for ${PFX}MAIN[$main_p]" leader_moved
say "${PFX}MAIN[$main_p] has a new leader $((SECONDS - t_kill)) s after the kill"
sleep $((t_kill + 10 > SECONDS ? t_kill + 10 - SECONDS : 0))
cluster_restart_missing
wait_for 90 "every replica in sync after broker $victim's return" all_in_sync
phase_end "a. kill -9 of broker $victim (leader of MAIN and SCP partitions$([[ $victim == "$coord" ]] && echo ", the group coordinator"))"

# b. rolling restart: each broker stopped (controlled shutdown), started, all in sync again
phase_begin "b. rolling restart" 900
for n in 1 2 3; do
    t0=$SECONDS
    broker_stop "$n"
    t1=$SECONDS
    cluster_restart_missing
    t2=$SECONDS
    wait_for 90 "every replica in sync after broker $n's restart" all_in_sync
    say "broker $n: stopped in $((t1 - t0)) s, listed again after $((t2 - t1)) s, every replica in sync after $((SECONDS - t2)) s more"
done
sleep 2
phase_end "b. rolling restart of brokers 1, 2, 3" stop

# c. two brokers stopped: the last one refuses writes (NOT_ENOUGH_REPLICAS), then both back
phase_begin "c. two brokers stopped" 900
last_log=$OWN_STACK/kafka-3.log
ner_before=$(grep -c NotEnoughReplicasException "$last_log" || true)
t0=$SECONDS
broker_stop 1
# one broker gone: two replicas in sync are enough (min.insync.replicas 2), copies still flow
u0=$(sink_field s1 unique)
wait_for 30 "copies at the sink with broker 1 stopped" eval '(($(sink_field s1 unique) >= u0 + RATE))'
broker_stop 2
t_stop=$SECONDS
say "brokers 1 and 2 stopped one after the other in $((t_stop - t0)) s"
# broker 3 leads every partition alone (in-sync replicas: 3) and refuses the writes
only3() { metadata | jq -e '[.topics[].partitions[] | [.isrs[].id]] | length > 0 and all(. == [3])' >/dev/null 2>&1; }
wait_for 30 "broker 3 the only in-sync replica" only3
ner() { (($(grep -c NotEnoughReplicasException "$last_log" || true) > ner_before)); }
wait_for 30 "NOT_ENOUGH_REPLICAS from broker 3" ner
say "broker 3 refuses writes with NOT_ENOUGH_REPLICAS ($((SECONDS - t_stop)) s after the stops)"
sleep 5
t0=$SECONDS
cluster_restart_missing
wait_for 90 "every replica in sync after brokers 1 and 2 returned" all_in_sync
say "brokers 1 and 2 back and in sync $((SECONDS - t0)) s after their start"
sleep 2
phase_end "c. brokers 1 and 2 stopped (NOT_ENOUGH_REPLICAS), then back" stop

# d. static members fenced on demand: whether a broker crash fences a member depends on timing
# (its session must expire before the group has a coordinator again), so here a second consumer
# joins each daemon's group under that daemon's own group.instance.id, which is what the
# coordinator sees then: it answers the daemon's member FENCED_INSTANCE_ID, librdkafka's fatal
# error. The intruder (kcat) never commits. The daemon rebuilds its consumer, whose return
# fences the intruder in turn; delivery goes on and nothing is lost.
phase_begin "d. static members fenced" 20
static_id() { # log group: the group.instance.id the daemon logged for its member of group
    grep -m1 "kafka consumer: group $2: static member " "$W/$1" | sed 's/.*: static member //'
}
rebuilds_of() { grep -cE "kafka consumer .*: group $2: rebuilt \(" "$W/$1" || true; }
agg_group="ndd-agg-${PFX}SCP"
ada_group=$(grep -m1 -o "kafka consumer: group [^:]*: static member" "$W/adapter-0.log" |
    sed 's/kafka consumer: group \(.*\): static member/\1/')
declare -A FENCE_LOG=([$agg_group]=agg-0.log [$ada_group]=adapter-0.log)
declare -A FENCE_TOPIC=([$agg_group]=${PFX}SCP [$ada_group]=${PFX}MAIN)
declare -A REBUILDS_BEFORE=() INTRUDER=()
for g in "$agg_group" "$ada_group"; do
    id=$(static_id "${FENCE_LOG[$g]}" "$g")
    [[ -n $id ]] || fail "no static member of group $g in ${FENCE_LOG[$g]}"
    REBUILDS_BEFORE[$g]=$(rebuilds_of "${FENCE_LOG[$g]}" "$g")
    kcat -b "$B" -G "$g" -X "group.instance.id=$id" -X enable.auto.commit=false \
        -X session.timeout.ms=6000 -q "${FENCE_TOPIC[$g]}" >/dev/null 2>>"$W/intruder.log" &
    INTRUDER[$g]=$!
    FAULT_PIDS+=("$!")
    say "an intruder joined group $g as $id"
done
t_fence=$SECONDS
for g in "$agg_group" "$ada_group"; do
    rebuilt() { (($(rebuilds_of "${FENCE_LOG[$1]}" "$1") > ${REBUILDS_BEFORE[$1]})); }
    wait_for 60 "${FENCE_LOG[$g]%-0.log}: consumer of $g rebuilt after the fence" rebuilt "$g"
    say "${FENCE_LOG[$g]%-0.log}: fenced and rebuilt $((SECONDS - t_fence)) s after the intruder joined"
    kill "${INTRUDER[$g]}" 2>/dev/null || true
done
phase_end "d. ndd-aggregation's and ndd-adapter's static members fenced (FENCED_INSTANCE_ID)"

# Fatal consumer errors (a fenced static member) and the rebuilds that answered them, per
# daemon: every one rebuilt (delivery went on: lost 0 above says the rest).
fences() { grep -c "rebuilding the consumer" "$W/$1" || true; }
rebuilds() { grep -cE "kafka consumer .*: rebuilt \(" "$W/$1" || true; }
for d in agg-0.log adapter-0.log; do
    f=$(fences "$d") r=$(rebuilds "$d")
    ((r >= f)) || fail "${d%.log}: $f fatal consumer errors but $r rebuilds"
    REPORT+=("${d%-0.log}: $f fatal consumer error(s) (FENCED_INSTANCE_ID), $r consumer rebuild(s)")
done
for r in "${REPORT[@]}"; do echo "cluster: $r"; done
echo "PASS: 3-broker cluster: kill -9 of a leader, a rolling restart, NOT_ENOUGH_REPLICAS and fenced static members, nothing lost ($((SECONDS - T_START)) s)"
