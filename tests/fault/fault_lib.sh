# shellcheck shell=bash
# Shared by tests/fault/test_fault_*.sh: the data path (ndd-nf-sim -> NF topic ->
# ndd-aggregation -> MAIN -> ndd-adapter -> ndd-sink) on unique topics, a fault injected while
# traffic flows, and the accounting every scenario ends with:
#   produced (ndd-nf-sim's acknowledged copies, each with its @seq)
#     = delivered (distinct @seq at the sink) + dead-lettered (aggregation DLQ + feed DLQ),
#   lost = 0, duplicates counted (the sink counts repeated @seq) and printed.
# Source it after `set -euo pipefail`:
#   SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
#   . "$SRC/tests/fault/fault_lib.sh"; fault_init NAME
# Kafka is NDD_TEST_KAFKA (the suite's shared stack) unless the scenario calls
# fault_own_stack first (it breaks the broker or PostgreSQL: its own stack, destroyed at exit).
# Every process it starts is stopped by PID at exit. The whole test runs under a timeout.

# FAULT_TIMEOUT (set before sourcing): the whole scenario's bound, 240 s unless the scenario
# restarts a server (a Kafka start alone can take a minute on a loaded 2-core host).
if [[ -z ${NDD_FAULT_TIMED:-} ]]; then
    NDD_FAULT_TIMED=1 exec timeout -k 10 "${FAULT_TIMEOUT:-240}" bash "$0" "$@"
fi

BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must name the build directory}
STACK=$SRC/deploy/local/stack.sh
BIN_AGG=$BUILD/aggregation/ndd-aggregation
BIN_ADA=$BUILD/adapter/ndd-adapter
BIN_SIM=$BUILD/bench/nfsim/ndd-nf-sim
BIN_SINK=$BUILD/bench/sink/ndd-sink
BIN_OFF=$BUILD/bench/probes/ndd-offsets
FAULT_PIDS=()
OWN_STACK=""

fail() {
    echo "FAIL: $*" >&2
    NDD_FAULT_KEEP=1
    exit 1
}
say() { echo "fault: $*" >&2; }

fault_cleanup() {
    local p
    for p in "${FAULT_PIDS[@]}"; do
        kill -KILL "$p" 2>/dev/null || true
    done
    if [[ -n $OWN_STACK ]]; then "$STACK" destroy --dir "$OWN_STACK" >/dev/null 2>&1 || true; fi
    if [[ -n ${W:-} && -z ${NDD_FAULT_KEEP:-} ]]; then rm -rf "$W"; fi
}

# fault_init NAME: work dir W, topic prefix PFX, broker B.
fault_init() {
    W=$(mktemp -d "/tmp/ndd-fault-$1.XXXXXX")
    chmod 755 "$W" # an own stack runs PostgreSQL as user postgres, which must reach it
    trap fault_cleanup EXIT
    trap 'exit 143' TERM INT # a timeout still stops what the scenario started
    PFX="f$1-$$-$RANDOM-"
    B=${NDD_TEST_KAFKA:-}
    B=${B#\'}
    B=${B%\'}
    local b
    for b in "$BIN_AGG" "$BIN_ADA" "$BIN_SIM" "$BIN_SINK" "$BIN_OFF"; do
        [[ -x $b ]] || fail "$b is not built"
    done
}

# fault_own_stack [--no-pg]: a private stack for a scenario that stops its broker or database.
fault_own_stack() {
    OWN_STACK=$W/stack
    local -a ports
    mapfile -t ports < <("$STACK" free-ports 5)
    OWN_ARGS=(--dir "$OWN_STACK" --kafka-port "${ports[0]}" --controller-port "${ports[1]}"
        --pg-port "${ports[2]}" --ssl-port "${ports[3]}" --sasl-port "${ports[4]}" "$@")
    "$STACK" start "${OWN_ARGS[@]}" >"$W/stack.out" 2>"$W/stack.err" ||
        fail "own stack did not start: $(tail -3 "$W/stack.err")"
    B=127.0.0.1:${ports[0]}
    OWN_PG=$(sed -n 's/^NDD_PG=//p' "$W/stack.out")
    OWN_PG=${OWN_PG#\'}
    OWN_PG=${OWN_PG%\'}
}

free_port() { "$STACK" free-ports 1; }
# running PID: the process runs (a killed child not yet waited for is a zombie: kill -0 would
# still find it)
running() {
    [[ -n $1 && -r /proc/$1/stat ]] || return 1
    local st
    st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
    [[ -n $st && $st != Z ]]
}
http_get() { curl -fsS --max-time 3 "$1" 2>/dev/null; }
wait_http() { # url seconds
    local i
    for ((i = 0; i < $2 * 5; i++)); do
        http_get "$1" >/dev/null && return 0
        sleep 0.2
    done
    return 1
}

# start_sink NAME [ndd-sink options...]: SINK_PORT[NAME] (h2c), SINK_M[NAME] (metrics).
declare -A SINK_PORT SINK_M SINK_PID
start_sink() {
    local name=$1
    shift
    [[ -n ${SINK_PORT[$name]:-} ]] || SINK_PORT[$name]=$(free_port)
    [[ -n ${SINK_M[$name]:-} ]] || SINK_M[$name]=$(free_port)
    "$BIN_SINK" --h2-port "${SINK_PORT[$name]}" --metrics-port "${SINK_M[$name]}" \
        --log.level warn "$@" >>"$W/sink-$name.log" 2>&1 &
    SINK_PID[$name]=$!
    FAULT_PIDS+=("$!")
    wait_http "http://127.0.0.1:${SINK_M[$name]}/healthz" 10 || fail "ndd-sink $name did not start"
}
sink_control() { # name json
    curl -fsS --max-time 3 -X POST -H 'Content-Type: application/json' -d "$2" \
        "http://127.0.0.1:${SINK_M[$1]}/control" >/dev/null || fail "sink $1 /control $2"
}
sink_field() { # name field -> number (0 when the sink does not answer)
    local s
    s=$(http_get "http://127.0.0.1:${SINK_M[$1]}/summary") || s='{}'
    jq -r --arg f "$2" '.[$f] // 0' <<<"$s"
}

# write_feeds NAME...: one h2c JSON feed per sink, all reading MAIN; FEEDS_FILE.
FEED_NAMES=()
write_feeds() {
    FEEDS_FILE=$W/feeds.json
    FEED_NAMES=("$@")
    local n sep="" doc='{"feeds":['
    for n in "$@"; do
        doc+="$sep{\"name\":\"$PFX$n\",\"source_topic\":\"${PFX}MAIN\",\"transport\":\"http2\","
        doc+="\"encoding\":\"json\",\"endpoints\":[{\"url\":\"http://127.0.0.1:${SINK_PORT[$n]}/ndd/$n\"}],"
        doc+="\"delivery\":{\"max_in_flight\":64${FEED_DELIVERY_EXTRA:-}}}"
        sep=","
    done
    echo "$doc]}" | jq . >"$FEEDS_FILE" || fail "feeds file is not JSON"
}

# start_agg SLOT: ndd-aggregation for SCP (instance SLOT) on PFX's topics; AGG_PID[SLOT].
# With NDD_FAULT_ALLINONE=1 (the scenarios' second registration, tests/CMakeLists.txt),
# start_agg and start_adapter start `ndd` with every role instead (start_ndd): the same
# scenario, the same assertions, against the all-in-one.
declare -A AGG_PID AGG_HTTP
start_agg() {
    if [[ -n ${NDD_FAULT_ALLINONE:-} ]]; then
        start_ndd_slot "$1"
        return
    fi
    [[ -n ${AGG_HTTP[$1]:-} ]] || AGG_HTTP[$1]=$(free_port)
    # FAULT_AGG_ARGS: more options, e.g. --exactly-once=true
    # shellcheck disable=SC2086
    "$BIN_AGG" --nf-type SCP --bootstrap "$B" --topic "${PFX}SCP" --main-topic "${PFX}MAIN" \
        --dlq-topic "${PFX}dlq-aggregation" --group "ndd-agg-${PFX}SCP" --main-partitions 3 \
        --http.port "${AGG_HTTP[$1]}" --log.level info ${FAULT_AGG_ARGS:-} >>"$W/agg-$1.log" 2>&1 &
    AGG_PID[$1]=$!
    FAULT_PIDS+=("$!")
    wait_http "http://127.0.0.1:${AGG_HTTP[$1]}/healthz" 30 || fail "ndd-aggregation $1 did not start"
}

# start_adapter SLOT: ndd-adapter on FEEDS_FILE; ADA_PID[SLOT].
declare -A ADA_PID ADA_HTTP
start_adapter() {
    if [[ -n ${NDD_FAULT_ALLINONE:-} ]]; then
        start_ndd_slot "$1"
        return
    fi
    [[ -n ${ADA_HTTP[$1]:-} ]] || ADA_HTTP[$1]=$(free_port)
    "$BIN_ADA" --bootstrap "$B" --feeds-file "$FEEDS_FILE" --http.port "${ADA_HTTP[$1]}" \
        --log.level info >>"$W/adapter-$1.log" 2>&1 &
    ADA_PID[$1]=$!
    FAULT_PIDS+=("$!")
    wait_http "http://127.0.0.1:${ADA_HTTP[$1]}/healthz" 30 || fail "ndd-adapter $1 did not start"
}
# start_ndd SLOT: ndd (the all-in-one) with every role: the aggregation for SCP, the adapter
# on FEEDS_FILE and the correlation (MAIN -> PFX XDR) with the settings start_agg and
# start_adapter give the separate daemons, the ingress (HTTP/2 copies into PFX's NF topics)
# and, where PostgreSQL is at hand (NDD_TEST_PG, or the scenario's own stack), the admin on
# its own schema and topics; NDD_PID[SLOT], NDD_HTTP[SLOT]. Its log is W/ndd-SLOT.log.
BIN_NDD=$BUILD/ndd/ndd
declare -A NDD_PID NDD_HTTP NDD_IN_PORT NDD_ADMIN_PORT
start_ndd() {
    [[ -x $BIN_NDD ]] || fail "$BIN_NDD is not built"
    [[ -n ${NDD_HTTP[$1]:-} ]] || NDD_HTTP[$1]=$(free_port)
    [[ -n ${NDD_IN_PORT[$1]:-} ]] || NDD_IN_PORT[$1]=$(free_port)
    local pg=""
    [[ -z ${NDD_FAULT_NO_ADMIN:-} ]] && pg=${OWN_PG:-${NDD_TEST_PG:-}}
    pg=${pg#\'}
    pg=${pg%\'}
    [[ -z $pg || -n ${NDD_ADMIN_PORT[$1]:-} ]] || NDD_ADMIN_PORT[$1]=$(free_port)
    # a schema name is an identifier: PFX without its dashes
    # FAULT_NDD_KAFKA: a JSON object of librdkafka properties for every role (ndd takes its
    # roles' kafka.* from its file, not from the environment); FAULT_NDD_ROLES: a JSON object
    # merged (deeply) into the roles, e.g. {"aggregation": {"exactly-once": true}}
    jq -n --arg b "$B" --arg p "$PFX" --argjson port "${NDD_HTTP[$1]}" --arg feeds "$FEEDS_FILE" \
        --argjson kafka "${FAULT_NDD_KAFKA:-null}" --argjson extra "${FAULT_NDD_ROLES:-null}" \
        --argjson inport "${NDD_IN_PORT[$1]}" --arg pg "$pg" --arg schema "${PFX//-/_}ndd" \
        --argjson aport "${NDD_ADMIN_PORT[$1]:-0}" '{
        bootstrap: $b, http: {port: $port}, log: {level: "info"}} + (if $kafka then {kafka: $kafka} else {} end) + {
        roles: (({
          aggregation: {"nf-types": ["SCP"], "main-topic": ($p + "MAIN"),
            "dlq-topic": ($p + "dlq-aggregation"), "main-partitions": 3,
            SCP: {topic: ($p + "SCP"), group: ("ndd-agg-" + $p + "SCP")}},
          adapter: {"feeds-file": $feeds},
          correlation: {"main-topic": ($p + "MAIN"), "xdr-topic": ($p + "XDR"),
            "dlq-topic": ($p + "dlq-correlation"), group: ($p + "correlation"),
            "config-topic": ""},
          ingress: {"h2.port": $inport, "copy.topic-prefix": $p,
            "copy.dlq-topic": ($p + "dlq-ingress")}}
          + (if $pg == "" then {} else {admin: {pg: $pg, "db-schema": $schema,
            http: {port: $aport}, "config-topic": ($p + "config"),
            "events-topic": ($p + "events"), "events-group": ($p + "admin")}} end))
          * ($extra // {}))}' \
        >"$W/ndd-$1.json" || fail "ndd config is not JSON"
    "$BIN_NDD" --config "$W/ndd-$1.json" >>"$W/ndd-$1.log" 2>&1 &
    NDD_PID[$1]=$!
    FAULT_PIDS+=("$!")
    wait_http "http://127.0.0.1:${NDD_HTTP[$1]}/healthz" 30 || fail "ndd $1 did not start"
}
# start_ndd_slot SLOT: ndd SLOT in the place of the separate aggregation and adapter of that
# slot: started unless it runs; AGG_* and ADA_* name it, and the scenario's adapter and
# aggregation logs are its log.
start_ndd_slot() {
    if ! running "${NDD_PID[$1]:-}"; then
        start_ndd "$1"
        ln -sf "ndd-$1.log" "$W/adapter-$1.log"
        ln -sf "ndd-$1.log" "$W/agg-$1.log"
        say "ndd $1 (pid ${NDD_PID[$1]}) runs every role in the place of slot $1's daemons"
    fi
    AGG_PID[$1]=${NDD_PID[$1]} ADA_PID[$1]=${NDD_PID[$1]}
    AGG_HTTP[$1]=${NDD_HTTP[$1]} ADA_HTTP[$1]=${NDD_HTTP[$1]}
}
wait_ready() { # url seconds
    local i
    for ((i = 0; i < $2 * 5; i++)); do
        curl -fs --max-time 2 "$1" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    return 1
}

# produce RATE SECONDS: ndd-nf-sim in the background (SIM_PID), summary in W/nfsim.json;
# SIM_FLUSH_TIMEOUT: how long it waits for the last acknowledgements (a broker outage).
produce() {
    "$BIN_SIM" --bootstrap "$B" --rate "$1" --duration "$2" --nf-mix SCP=1 --size natural \
        --copies 2 --topic-prefix "$PFX" --partitions 3 --seq-start 0 --quiet \
        --flush-timeout "${SIM_FLUSH_TIMEOUT:-30}" \
        >"$W/nfsim.json" 2>"$W/nfsim.log" &
    SIM_PID=$!
    FAULT_PIDS+=("$!")
}
produce_wait() {
    wait "$SIM_PID" || fail "ndd-nf-sim failed: $(tail -3 "$W/nfsim.log")"
    PRODUCED=$(jq -r .acked "$W/nfsim.json")
    ((PRODUCED > 0)) || fail "ndd-nf-sim acknowledged nothing"
}

topic_records() { # topic -> records (0 when it does not exist)
    local out
    out=$("$BIN_OFF" --bootstrap "$B" --topic "$1" --timeout-ms 3000 2>/dev/null) || true
    [[ -n $out ]] || { echo 0; return; }
    jq -r --arg t "$1" '.topics[$t].records // 0' <<<"$out"
}

# settle_and_account [SECONDS]: waits (bounded) until every feed's sink has every produced copy
# that was not dead-lettered, then checks produced = delivered + dead-lettered, lost = 0 for
# every feed; prints the figures (DELIVERED, DEAD, DUPS per feed are left in the arrays).
declare -A DELIVERED DEAD DUPS
settle_and_account() {
    local limit=${1:-60} n agg_dlq t0=$SECONDS ok
    while :; do
        ok=1
        agg_dlq=$(topic_records "${PFX}dlq-aggregation")
        for n in "${FEED_NAMES[@]}"; do
            DELIVERED[$n]=$(sink_field "$n" unique)
            DEAD[$n]=$((agg_dlq + $(topic_records "ndd.dlq.$PFX$n")))
            ((DELIVERED[$n] + DEAD[$n] >= PRODUCED)) || ok=0
        done
        ((ok)) && break
        ((SECONDS - t0 >= limit)) && break
        sleep 1
    done
    local bad=0
    for n in "${FEED_NAMES[@]}"; do
        DUPS[$n]=$(sink_field "$n" duplicates)
        local lost=$((PRODUCED - DELIVERED[$n] - DEAD[$n]))
        echo "account feed $n: produced $PRODUCED = delivered ${DELIVERED[$n]} + dead-lettered ${DEAD[$n]}; lost $lost; duplicates ${DUPS[$n]}"
        ((lost == 0)) || bad=1
        # more than produced would mean a copy both delivered and dead-lettered
        ((DELIVERED[$n] + DEAD[$n] <= PRODUCED)) || bad=1
    done
    ((bad == 0)) || fail "accounting does not hold (work dir $W kept)"
    [[ -n ${NDD_FAULT_ALLINONE:-} ]] && xdr_account
    return 0
}

# xdr_account: with every role in ndd, the correlation role beside the scenario: every
# transaction the simulator sent (two copies each) became an xDR, across the fault too
# (more when a replay re-read copies: at-least-once).
xdr_account() {
    local want t0=$SECONDS xdrs
    want=$(($(jq -r .acked "$W/nfsim.json") / 2))
    while xdrs=$(topic_records "${PFX}XDR") && ((xdrs < want && SECONDS - t0 < 60)); do sleep 1; done
    echo "account xDRs: $xdrs for $want transactions"
    ((xdrs >= want)) || fail "the correlation role wrote $xdrs xDRs for $want transactions"
}

# DLQ records of topic with their @dlq-reason, one reason per line.
dlq_reasons() { # topic
    kcat -C -b "$B" -t "$1" -o beginning -e -q -m 10 -f '%h\n' 2>/dev/null |
        tr ',' '\n' | sed -n 's/^@dlq-reason=//p'
}
