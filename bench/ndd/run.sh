#!/usr/bin/env bash
# ndd (the all-in-one, docs/ndd.md) beside the separate daemons at the quickstart's load
# (docs/benchmarks.md, "ndd (all-in-one) beside the separate daemons").
#
#   bench/ndd/run.sh [--build DIR] [--bootstrap HOST:PORT [--pg CONNINFO]] [--seconds S]
#                    [--rounds N] [--rate N] [--quick] [--out FILE] [--work-dir W] [--keep]
#                    [--drain-timeout S] [--load-limit L] [--no-admin] [--quiet]
#
# Two arms, alternating (a, b, a, b, ...), each run on fresh topics (a prefix per arm run), with
# the daemons as the quickstart (deploy/local/quickstart.sh) starts them:
#   (a) separate: ndd-aggregation x5 (SCP NRF SEPP BSF PCF), ndd-correlation, ndd-adapter with
#       one h2c JSON feed to ndd-sink (and ndd-admin when ndd accepts an admin role, see below);
#   (b) ndd: one `ndd` process with the same roles and the same settings.
# Traffic is the quickstart's: ndd-nf-sim --rate 200 --nf-mix SCP=3,NRF=1,SEPP=1,BSF=1,PCF=1
# --copies 4 --size mix --partitions 3, for --seconds, started once every daemon is ready and
# every consumer group (5 aggregation, correlation, the feed) holds its partitions.
# Measured per arm over the window (traffic + drain: until the sink holds every produced copy
# and the correlation has closed every transaction, bounded): CPU (utime + stime from
# /proc/PID/stat) of NDD's own processes only (the daemons summed for (a), ndd for (b); not the
# broker, the simulator or the sink), CPU per copy, peak RSS (VmHWM; for (a) per daemon and
# summed), produced / delivered (ndd-sink's distinct @seq) / dead-lettered (records in the
# aggregation DLQ and the feed's DLQ, ndd-offsets) / lost = produced - delivered - dead-lettered,
# duplicates, xDRs written, and the 1-minute load average before, during (max) and after.
# Prints a table (medians and range, ratio ndd / separate) with the machine, and the same as
# JSON (--out FILE; the last line of stdout is that JSON too).
#
# The admin: included in both arms only when `ndd --check-config` accepts a config with
# roles.admin (pg from the stack's NDD_PG); otherwise left out of both (the output says so).
#
#   --build DIR        build directory (default $NDD_BUILD_DIR, else <repo>/build); Release
#                      for figures (the quickstart builds Release)
#   --bootstrap B      use this Kafka instead of a private stack (then --pg or $NDD_PG for
#                      the admin; without one the admin is left out)
#   --seconds S        traffic per arm run (default 60)
#   --rounds N         rounds of (a, b) (default 3)
#   --rate N           copies/s (default 200, the quickstart's)
#   --quick            1 round of 10 s, shorter drain bound (the smoke test's mode)
#   --out FILE         write the result JSON there
#   --work-dir W       logs and per-run files (default a new /tmp/ndd-bench-ndd.XXXXXX,
#                      removed after a run without loss unless --keep)
#   --keep             keep W (and the private stack: prints how to destroy it)
#   --drain-timeout S  bound on the drain after the traffic (default 60, --quick 30)
#   --load-limit L     repeat a round (at most 2 more times) whose 1-minute load average went
#                      above L during either arm (default 0: off; figures always show it)
#   --no-admin         leave the admin out even when ndd has the role
#   --ndd-only         run only arm (b), ndd (its memory and loss; no ratio to the separate
#                      daemons): tests/e2e/test_bench_memory_bounds.sh
#   --warmup S         before round 1, S s of the same traffic to topics no daemon reads, so
#                      the broker's JIT warm-up is not in the first arm (default 10, --quick 0)
# Ports come from deploy/local/stack.sh free-ports; loopback only. Everything started is
# stopped by PID at exit (the private stack destroyed).
# Exit 0 when every arm run lost nothing and every role became ready; 1 otherwise; 2 on usage.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STACK=$ROOT/deploy/local/stack.sh
# shared benchmark helpers: bench_cpu (utime + stime in s), bench_machine (one line)
# shellcheck source=../admin/common.sh
. "$ROOT/bench/admin/common.sh"

BUILD=${NDD_BUILD_DIR:-$ROOT/build}
EXT_BOOTSTRAP=""
EXT_PG=${NDD_PG:-}
SECS=60
ROUNDS=3
RATE=200
QUICK=0
OUT=""
WORK=""
KEEP=0
DRAIN_TIMEOUT=""
LOAD_LIMIT=0
NO_ADMIN=0
NDD_ONLY=0
QUIET=0
WARMUP=""
NF_TYPES=(SCP NRF SEPP BSF PCF)
NF_MIX=SCP=3,NRF=1,SEPP=1,BSF=1,PCF=1
PARTITIONS=3
RSS_LIMIT_MB=128

usage() {
    awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "${BASH_SOURCE[0]}" >&2
    exit 2
}
say() { ((QUIET)) || echo "bench-ndd: $*" >&2; }
warn() { echo "bench-ndd: $*" >&2; }
die() {
    echo "bench-ndd: error: $*" >&2
    exit 1
}
while (($#)); do
    case $1 in
    --build) BUILD=${2:?}; shift 2 ;;
    --bootstrap) EXT_BOOTSTRAP=${2:?}; shift 2 ;;
    --pg) EXT_PG=${2:?}; shift 2 ;;
    --seconds) SECS=${2:?}; shift 2 ;;
    --rounds) ROUNDS=${2:?}; shift 2 ;;
    --rate) RATE=${2:?}; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --out) OUT=${2:?}; shift 2 ;;
    --work-dir) WORK=${2:?}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --drain-timeout) DRAIN_TIMEOUT=${2:?}; shift 2 ;;
    --load-limit) LOAD_LIMIT=${2:?}; shift 2 ;;
    --no-admin) NO_ADMIN=1; shift ;;
    --ndd-only) NDD_ONLY=1; shift ;;
    --warmup) WARMUP=${2:?}; shift 2 ;;
    --quiet) QUIET=1; shift ;;
    -h | --help) usage ;;
    *) echo "bench-ndd: unknown option '$1'" >&2; usage ;;
    esac
done
if ((QUICK)); then
    ROUNDS=1
    SECS=10
    DRAIN_TIMEOUT=${DRAIN_TIMEOUT:-30}
    WARMUP=${WARMUP:-0}
fi
WARMUP=${WARMUP:-10}
[[ $WARMUP =~ ^[0-9]+$ ]] || die "--warmup must be a number of seconds"
DRAIN_TIMEOUT=${DRAIN_TIMEOUT:-60}
for v in SECS ROUNDS RATE DRAIN_TIMEOUT; do
    [[ ${!v} =~ ^[0-9]+$ && ${!v} -ge 1 ]] || die "--${v,,} must be a positive integer"
done
[[ $LOAD_LIMIT =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--load-limit must be a number"
for tool in jq curl awk; do
    command -v $tool >/dev/null || die "$tool is missing (deploy/local/install-deps.sh)"
done
BUILD=$(realpath "$BUILD")
BIN_NDD=$BUILD/ndd/ndd
BIN_AGG=$BUILD/aggregation/ndd-aggregation
BIN_ADA=$BUILD/adapter/ndd-adapter
BIN_CORR=$BUILD/correlation/ndd-correlation
BIN_ADMIN=$BUILD/admin/ndd-admin
BIN_SIM=$BUILD/bench/nfsim/ndd-nf-sim
BIN_SINK=$BUILD/bench/sink/ndd-sink
BIN_OFF=$BUILD/bench/probes/ndd-offsets
for b in "$BIN_NDD" "$BIN_AGG" "$BIN_ADA" "$BIN_CORR" "$BIN_SIM" "$BIN_SINK" "$BIN_OFF"; do
    [[ -x $b ]] || die "$b is not built (cmake -S $ROOT -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C $BUILD)"
done
BUILD_TYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
[[ ${BUILD_TYPE:-} == Release ]] || warn "warning: $BUILD is a '${BUILD_TYPE:-unknown}' build; the quickstart (and these figures) use Release"

if [[ -z $WORK ]]; then
    WORK=$(mktemp -d /tmp/ndd-bench-ndd.XXXXXX)
    WORK_GIVEN=0
else
    mkdir -p "$WORK"
    WORK_GIVEN=1
fi
WORK=$(realpath "$WORK")
chmod 755 "$WORK" # a private stack runs PostgreSQL as user postgres, which must reach it
RUN_ID="$(date +%s)-$$-$RANDOM"

# ---- bookkeeping: everything started is stopped by PID ----
declare -a PIDS=()
OWN_STACK=""
SCHEMAS=()
stop_pids() { # pid... : TERM all, wait up to 20 s for all, then KILL the rest
    local p i alive
    for p in "$@"; do kill -TERM "$p" 2>/dev/null || true; done
    for ((i = 0; i < 200; i++)); do
        alive=0
        for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
        ((alive)) || break
        sleep 0.1
    done
    for p in "$@"; do
        if kill -0 "$p" 2>/dev/null; then
            warn "pid $p did not stop in 20 s: SIGKILL"
            kill -KILL "$p" 2>/dev/null || true
        fi
        wait "$p" 2>/dev/null || true
    done
}
forget_pids() {
    local -a keep=()
    local p q gone
    for p in "${PIDS[@]}"; do
        gone=0
        for q in "$@"; do [[ $p == "$q" ]] && gone=1; done
        ((gone)) || keep+=("$p")
    done
    PIDS=("${keep[@]}")
}
FAILED=0
cleanup() {
    local rc=$?
    set +e
    trap '' PIPE INT TERM HUP
    ((${#PIDS[@]})) && stop_pids "${PIDS[@]}"
    if [[ -n ${PG:-} && ${#SCHEMAS[@]} -gt 0 ]] && command -v psql >/dev/null; then
        local s
        for s in "${SCHEMAS[@]}"; do psql "$PG" -q -c "DROP SCHEMA IF EXISTS $s CASCADE" >/dev/null 2>&1; done
    fi
    if [[ -n $OWN_STACK ]]; then
        if ((KEEP)); then
            warn "kept the stack: $STACK destroy --dir $OWN_STACK"
        else
            "$STACK" destroy --dir "$OWN_STACK" >/dev/null 2>&1 || warn "stack destroy failed ($OWN_STACK)"
        fi
    fi
    if ((KEEP || WORK_GIVEN)); then
        warn "work dir kept: $WORK"
    elif ((rc == 0 && !FAILED)); then
        rm -rf "$WORK"
    else
        warn "logs kept in $WORK"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE

spawn() { # log command... -> SPAWNED (pid); the process is stopped at exit
    local log=$1
    shift
    "$@" >"$log" 2>&1 </dev/null &
    SPAWNED=$!
    PIDS+=("$SPAWNED")
}
free_ports() { # n -> PORTS array
    mapfile -t PORTS < <("$STACK" free-ports "$1")
    ((${#PORTS[@]} == $1)) || die "stack.sh free-ports $1 gave ${#PORTS[@]} ports"
}
http_get() { curl -fsS --max-time 2 "$1" 2>/dev/null; }
wait_http() { # url seconds -> 0 when it answered 2xx in time
    local i
    for ((i = 0; i < $2 * 5; i++)); do
        http_get "$1" >/dev/null && return 0
        sleep 0.2
    done
    return 1
}
metric_sum() { # metrics-text name [label-substring] -> sum of the family's samples
    awk -v m="$2" -v l="${3:-}" '($1 == m || index($1, m "{") == 1) && (l == "" || index($1, l)) {s += $NF}
        END {printf "%d\n", s}' <<<"$1"
}
topic_records() { # topic -> records (0 when it does not exist)
    local out
    out=$("$BIN_OFF" --bootstrap "$BOOTSTRAP" --topic "$1" --timeout-ms 3000 2>/dev/null) || true
    [[ -n $out ]] || { echo 0; return; }
    jq -r --arg t "$1" '.topics[$t].records // 0' <<<"$out"
}
peak_rss_kb() { awk '/^VmHWM:/{print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
load1() { cut -d' ' -f1 /proc/loadavg; }
fnum() { LC_ALL=C printf "%.${2:-1}f" "$1"; }

# ---- Kafka (and PostgreSQL for the admin) ----
if [[ -n $EXT_BOOTSTRAP ]]; then
    BOOTSTRAP=${EXT_BOOTSTRAP#\'}
    BOOTSTRAP=${BOOTSTRAP%\'}
    PG=${EXT_PG#\'}
    PG=${PG%\'}
    say "Kafka $BOOTSTRAP (given)"
else
    OWN_STACK=$WORK/stack
    free_ports 5
    say "starting a private stack in $OWN_STACK (Kafka 127.0.0.1:${PORTS[0]}, PostgreSQL ${PORTS[2]})"
    "$STACK" start --dir "$OWN_STACK" --kafka-port "${PORTS[0]}" --controller-port "${PORTS[1]}" \
        --pg-port "${PORTS[2]}" --ssl-port "${PORTS[3]}" --sasl-port "${PORTS[4]}" \
        >"$WORK/stack.out" 2>"$WORK/stack.err" || { tail -5 "$WORK/stack.err" >&2; die "stack start failed"; }
    BOOTSTRAP=$(. "$OWN_STACK/env" && printf %s "$NDD_KAFKA")
    PG=$(. "$OWN_STACK/env" && printf %s "${NDD_PG:-}")
fi
[[ -n $BOOTSTRAP ]] || die "no Kafka bootstrap"

# ---- does ndd have an admin role? (older builds had none: the admin is then in neither arm) ----
ADMIN=0
ADMIN_NOTE=""
if ((NO_ADMIN)); then
    ADMIN_NOTE="left out (--no-admin)"
elif [[ -z $PG ]]; then
    ADMIN_NOTE="left out (no PostgreSQL: --pg or NDD_PG)"
elif [[ ! -x $BIN_ADMIN ]]; then
    ADMIN_NOTE="left out ($BIN_ADMIN is not built)"
else
    jq -n --arg b "$BOOTSTRAP" --arg pg "$PG" \
        '{bootstrap: $b, http: {port: 0}, roles: {admin: {pg: $pg}, correlation: {}}}' >"$WORK/admin-check.json"
    if "$BIN_NDD" --config "$WORK/admin-check.json" --check-config >"$WORK/admin-check.out" 2>&1; then
        ADMIN=1
        ADMIN_NOTE="included: ndd-admin in (a), roles.admin in (b)"
    else
        ADMIN_NOTE="left out of both arms: ndd --check-config refuses roles.admin ($(grep -m1 'roles.admin' "$WORK/admin-check.out" || tail -n1 "$WORK/admin-check.out"))"
    fi
fi
say "admin: $ADMIN_NOTE"

CPU_MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
CORES=$(nproc)
MACHINE=$(bench_machine)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
START_UTC=$(date -u +%FT%TZ)
CLK_TCK=$(getconf CLK_TCK)
ticks() { # pid -> utime + stime in ticks (fields 14, 15; comm has no spaces for our daemons)
    local s
    s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
    s=${s##*) }
    awk '{print $12 + $13}' <<<"$s"
}

# ---- one arm run: daemons up, ready, traffic, drain, figures -> W/<tag>.json ----
run_arm() { # arm(separate|ndd) round try
    local arm=$1 round=$2 try=$3
    local tag="r$round-$arm${try:+-t$try}"
    local d=$WORK/$tag pfx="nb-$RUN_ID-$tag-"
    mkdir -p "$d"
    local -a run_pids=() ndd_pids=() ndd_names=()
    local ok_ready=1 ready_note=""

    # the sink: the third-party tool stand-in (not measured)
    free_ports 2
    local sink_port=${PORTS[0]} sink_m=${PORTS[1]}
    spawn "$d/sink.log" "$BIN_SINK" --h2-port "$sink_port" --metrics-port "$sink_m" --log.level warn \
        --summary-file "$d/sink-summary.json"
    local sink_pid=$SPAWNED
    run_pids+=("$sink_pid")
    wait_http "http://127.0.0.1:$sink_m/healthz" 10 || die "$tag: ndd-sink did not start ($d/sink.log)"

    # the quickstart's demo feed: MAIN -> JSON over h2c (its file feed is not part of this)
    local feed="${pfx}demo"
    jq -n --arg n "$feed" --arg t "${pfx}MAIN" --arg u "http://127.0.0.1:$sink_port/ndd/demo" \
        '{feeds: [{name: $n, source_topic: $t, encoding: "json", transport: "http2",
           endpoints: [{url: $u}], delivery: {max_in_flight: 64, timeout_ms: 5000}}]}' >"$d/feeds.json"

    # the quickstart's settings; topics, groups, the config and events topics per run
    local -a common=(--bootstrap "$BOOTSTRAP")
    local cfg_topic="${pfx}config" ev_topic="${pfx}events" schema=""
    local -a agg_ports=() agg_pids=()
    local ada_port corr_port admin_port="" ndd_port="" nf i
    if ((ADMIN)); then
        schema="nbench_${RUN_ID//-/_}_${tag//-/_}"
        SCHEMAS+=("$schema")
    fi
    if [[ $arm == separate ]]; then
        free_ports $((${#NF_TYPES[@]} + 3))
        for i in "${!NF_TYPES[@]}"; do
            nf=${NF_TYPES[$i]}
            agg_ports+=("${PORTS[$i]}")
            spawn "$d/aggregation-$nf.log" "$BIN_AGG" --nf-type "$nf" "${common[@]}" --topic "$pfx$nf" \
                --main-topic "${pfx}MAIN" --dlq-topic "${pfx}dlq-aggregation" --group "ndd-agg-$pfx$nf" \
                --main-partitions "$PARTITIONS" --http.port "${PORTS[$i]}" --log.level warn \
                --filter-check-interval 1s --config-topic "$cfg_topic" --events-topic "$ev_topic"
            agg_pids+=("$SPAWNED")
            ndd_pids+=("$SPAWNED")
            ndd_names+=("aggregation-$nf")
        done
        i=${#NF_TYPES[@]}
        corr_port=${PORTS[$i]}
        ada_port=${PORTS[$((i + 1))]}
        admin_port=${PORTS[$((i + 2))]}
        spawn "$d/correlation.log" "$BIN_CORR" "${common[@]}" --main-topic "${pfx}MAIN" \
            --xdr-topic "${pfx}XDR" --dlq-topic "${pfx}dlq-correlation" --group "${pfx}correlation" \
            --main-partitions "$PARTITIONS" --http.port "$corr_port" --log.level warn \
            --config-topic "$cfg_topic" --events-topic "$ev_topic"
        ndd_pids+=("$SPAWNED")
        ndd_names+=(correlation)
        spawn "$d/adapter.log" "$BIN_ADA" "${common[@]}" --feeds-file "$d/feeds.json" \
            --http.port "$ada_port" --events-topic "$ev_topic"
        ndd_pids+=("$SPAWNED")
        ndd_names+=(adapter)
        if ((ADMIN)); then
            spawn "$d/admin.log" "$BIN_ADMIN" --pg "$PG" --db-schema "$schema" "${common[@]}" \
                --http.port "$admin_port" --config-topic "$cfg_topic" --events-topic "$ev_topic"
            ndd_pids+=("$SPAWNED")
            ndd_names+=(admin)
        fi
    else
        free_ports 1
        ndd_port=${PORTS[0]}
        local nfs_json
        nfs_json=$(printf '%s\n' "${NF_TYPES[@]}" | jq -R . | jq -cs .)
        jq -n --arg b "$BOOTSTRAP" --arg p "$pfx" --argjson port "$ndd_port" --arg feeds "$d/feeds.json" \
            --argjson nfs "$nfs_json" --argjson parts "$PARTITIONS" --arg pg "$PG" --arg schema "$schema" \
            --argjson admin "$ADMIN" '
            {bootstrap: $b, http: {port: $port}, log: {level: "info"},
             roles: ({
               aggregation: ({"nf-types": $nfs, "main-topic": ($p + "MAIN"),
                   "dlq-topic": ($p + "dlq-aggregation"), "main-partitions": $parts,
                   "filter-check-interval": "1s", "config-topic": ($p + "config"),
                   "events-topic": ($p + "events"), log: {level: "warn"}}
                 + ([$nfs[] | {key: ., value: {topic: ($p + .), group: ("ndd-agg-" + $p + .)}}] | from_entries)),
               correlation: {"main-topic": ($p + "MAIN"), "xdr-topic": ($p + "XDR"),
                   "dlq-topic": ($p + "dlq-correlation"), group: ($p + "correlation"),
                   "main-partitions": $parts, "config-topic": ($p + "config"),
                   "events-topic": ($p + "events"), log: {level: "warn"}},
               adapter: {"feeds-file": $feeds, "events-topic": ($p + "events")}}
               + (if $admin == 1 then {admin: {pg: $pg, "db-schema": $schema,
                   "config-topic": ($p + "config"), "events-topic": ($p + "events")}} else {} end))}' \
            >"$d/ndd.json"
        "$BIN_NDD" --config "$d/ndd.json" --check-config >"$d/ndd-check.out" 2>&1 ||
            die "$tag: ndd --check-config refused $d/ndd.json: $(tail -n1 "$d/ndd-check.out")"
        spawn "$d/ndd.log" "$BIN_NDD" --config "$d/ndd.json"
        ndd_pids+=("$SPAWNED")
        ndd_names+=(ndd)
        ada_port=$ndd_port
        corr_port=$ndd_port
        admin_port=$ndd_port
    fi
    run_pids+=("${ndd_pids[@]}")

    # ready: every daemon's /readyz, then every consumer group holds its partitions
    local t_ready0=$SECONDS
    if [[ $arm == separate ]]; then
        for i in "${!NF_TYPES[@]}"; do
            wait_http "http://127.0.0.1:${agg_ports[$i]}/readyz" 60 ||
                { ok_ready=0; ready_note+="aggregation-${NF_TYPES[$i]} not ready; "; }
        done
        wait_http "http://127.0.0.1:$corr_port/readyz" 60 || { ok_ready=0; ready_note+="correlation not ready; "; }
        wait_http "http://127.0.0.1:$ada_port/readyz" 60 || { ok_ready=0; ready_note+="adapter not ready; "; }
        if ((ADMIN)); then
            wait_http "http://127.0.0.1:$admin_port/healthz" 60 || { ok_ready=0; ready_note+="admin not up; "; }
        fi
    else
        if ! wait_http "http://127.0.0.1:$ndd_port/readyz" 90; then
            ok_ready=0
            ready_note+="ndd /readyz: $(curl -sS --max-time 2 "http://127.0.0.1:$ndd_port/readyz" 2>&1 | tr '\n' ';'); "
        fi
    fi
    local have=0 want=$((${#NF_TYPES[@]} + 2)) until=$((SECONDS + 60)) m ma mc
    while ((SECONDS < until)); do
        have=0
        if [[ $arm == separate ]]; then
            for i in "${!NF_TYPES[@]}"; do
                m=$(http_get "http://127.0.0.1:${agg_ports[$i]}/metrics" || true)
                (($(metric_sum "$m" ndd_aggregation_partitions_assigned) > 0)) && have=$((have + 1))
            done
            mc=$(http_get "http://127.0.0.1:$corr_port/metrics" || true)
            ma=$(http_get "http://127.0.0.1:$ada_port/metrics" || true)
        else
            m=$(http_get "http://127.0.0.1:$ndd_port/metrics" || true)
            # ndd's /readyz already needs every aggregation instance's partitions
            ((ok_ready)) && have=${#NF_TYPES[@]}
            mc=$m
            ma=$m
        fi
        (($(metric_sum "$mc" ndd_correlation_partitions_assigned) > 0)) && have=$((have + 1))
        (($(metric_sum "$ma" ndd_adapter_partitions_assigned "feed=\"$feed\"") > 0)) && have=$((have + 1))
        ((have == want)) && break
        sleep 0.5
    done
    if ((have != want)); then
        ok_ready=0
        ready_note+="only $have of $want consumer groups held partitions after 60 s; "
    fi
    local ready_s=$((SECONDS - t_ready0))
    if ((!ok_ready)); then
        warn "$tag: $ready_note(starting the traffic anyway; see $d)"
    fi
    say "$tag: ready in ${ready_s}s (${#ndd_pids[@]} NDD process(es)); traffic $RATE copies/s for ${SECS}s"

    # ---- the measured window ----
    local load_before load_max l
    load_before=$(load1)
    load_max=$load_before
    declare -A T0=()
    local pid
    for pid in "${ndd_pids[@]}"; do T0[$pid]=$(ticks "$pid"); done
    local start_ns
    start_ns=$(date +%s%N)
    "$BIN_SIM" --bootstrap "$BOOTSTRAP" --rate "$RATE" --duration "$SECS" --nf-mix "$NF_MIX" \
        --copies 4 --size mix --partitions "$PARTITIONS" --topic-prefix "$pfx" --seq-start 0 \
        >"$d/nfsim.json" 2>"$d/nfsim.log" </dev/null &
    local sim_pid=$!
    PIDS+=("$sim_pid")
    local n=0
    while kill -0 "$sim_pid" 2>/dev/null; do
        sleep 1
        n=$((n + 1))
        l=$(load1)
        awk -v a="$l" -v b="$load_max" 'BEGIN{exit !(a > b)}' && load_max=$l
        if ((n % 10 == 0)); then
            say "$tag: ${n}s produced $( (grep -o 'produced [0-9]*' "$d/nfsim.log" || true) | tail -n1 | awk '{print $2+0}'), delivered $( (http_get "http://127.0.0.1:$sink_m/summary" || echo '{}') | jq -r '.unique // 0'), load $l"
        fi
    done
    wait "$sim_pid" || warn "$tag: ndd-nf-sim exited with status $? ($d/nfsim.log)"
    forget_pids "$sim_pid"
    local produced
    produced=$(jq -r '.acked // empty' "$d/nfsim.json" 2>/dev/null || true)
    [[ -n $produced ]] || die "$tag: ndd-nf-sim printed no summary: $(tail -3 "$d/nfsim.log")"

    # drain: every copy at the sink (or dead-lettered), bounded; DLQs are read only when the
    # sink is short, so the window does not pay for probes
    local deadline=$((SECONDS + DRAIN_TIMEOUT)) u prev=-1 last_change=$SECONDS dead=0 drained=0
    while :; do
        u=$( (http_get "http://127.0.0.1:$sink_m/summary" || echo '{}') | jq -r '.unique // 0')
        ((u >= produced)) && { drained=1; break; }
        if ((u != prev)); then
            prev=$u
            last_change=$SECONDS
        fi
        if ((SECONDS - last_change >= 3)); then
            dead=$(($(topic_records "${pfx}dlq-aggregation") + $(topic_records "ndd.dlq.$feed")))
            ((u + dead >= produced)) && { drained=1; break; }
        fi
        ((SECONDS >= deadline)) && break
        ((SECONDS - last_change >= 15)) && break
        l=$(load1)
        awk -v a="$l" -v b="$load_max" 'BEGIN{exit !(a > b)}' && load_max=$l
        sleep 0.25
    done
    ((drained)) || warn "$tag: drain incomplete: sink has $u of $produced (+$dead dead-lettered)"
    # the correlation closes the last transactions (four copies each: complete, or at its 5 s
    # timeout): every copy read from MAIN, none open, none unacknowledged
    local corr_done=0 cdl=$((SECONDS + 20)) cm
    while :; do
        cm=$(http_get "http://127.0.0.1:$corr_port/metrics" || true)
        if (($(metric_sum "$cm" ndd_correlation_messages_consumed_total) >= produced &&
            $(metric_sum "$cm" ndd_correlation_transactions_open) == 0 &&
            $(metric_sum "$cm" ndd_correlation_messages_in_flight) == 0)); then
            corr_done=1
            break
        fi
        ((SECONDS >= cdl)) && break
        sleep 0.25
    done
    ((corr_done)) || warn "$tag: the correlation had not closed every transaction 20 s after the drain"
    local end_ns window
    end_ns=$(date +%s%N)
    local -A T1=() HWM=()
    for pid in "${ndd_pids[@]}"; do
        T1[$pid]=$(ticks "$pid")
        HWM[$pid]=$(peak_rss_kb "$pid")
    done
    window=$(awk -v a="$start_ns" -v b="$end_ns" 'BEGIN{printf "%.3f", (b - a) / 1e9}')
    local load_after
    load_after=$(load1)
    awk -v a="$load_after" -v b="$load_max" 'BEGIN{exit !(a > b)}' && load_max=$load_after
    # ---- end of the window ----

    # figures outside the window
    local xdrs xdr_by xdr_records corr_dlq
    xdrs=$(metric_sum "$cm" ndd_correlation_xdrs_produced_total)
    xdr_by=$(awk '/^ndd_correlation_transactions_total\{/ {if (match($1, /completion="[a-z]*"/)) {c = substr($1, RSTART + 12, RLENGTH - 13); n[c] += $NF}}
        END {printf "{"; for (c in n) printf "%s\"%s\":%d", (k++ ? "," : ""), c, n[c]; printf "}"}' <<<"$cm")
    local summary
    summary=$(http_get "http://127.0.0.1:$sink_m/summary") || summary='{}'
    local agg_dlq feed_dlq
    agg_dlq=$(topic_records "${pfx}dlq-aggregation")
    feed_dlq=$(topic_records "ndd.dlq.$feed")
    xdr_records=$(topic_records "${pfx}XDR")
    corr_dlq=$(topic_records "${pfx}dlq-correlation")
    local roles_json='null' restarts=0
    if [[ $arm == ndd ]]; then
        local nm
        nm=$(http_get "http://127.0.0.1:$ndd_port/metrics" || true)
        restarts=$(metric_sum "$nm" ndd_director_role_restarts_total)
        roles_json=$( (http_get "http://127.0.0.1:$ndd_port/readyz" || curl -sS --max-time 2 "http://127.0.0.1:$ndd_port/readyz" 2>/dev/null || true) | jq -Rsc 'split("\n") | map(select(length > 0))')
    fi
    local procs="{" psep=""
    for i in "${!ndd_pids[@]}"; do
        pid=${ndd_pids[$i]}
        procs+="$psep\"${ndd_names[$i]}\":{\"pid\":$pid,\"cpu_s\":$(awk -v t=$((T1[$pid] - T0[$pid])) -v h="$CLK_TCK" 'BEGIN{printf "%.2f", t / h}'),\"peak_rss_mb\":$(awk -v k="${HWM[$pid]:-0}" 'BEGIN{printf "%.1f", k / 1024}')}"
        psep=","
    done
    procs+="}"
    stop_pids "${run_pids[@]}"
    forget_pids "${run_pids[@]}"
    jq -n --arg arm "$arm" --argjson round "$round" --arg tag "$tag" --arg pfx "$pfx" \
        --argjson produced "$produced" --argjson summary "$summary" --argjson agg_dlq "$agg_dlq" \
        --argjson feed_dlq "$feed_dlq" --argjson xdrs "$xdrs" --argjson xdr_records "$xdr_records" \
        --argjson xdr_by "$xdr_by" --argjson corr_dlq "$corr_dlq" --argjson window "$window" \
        --argjson procs "$procs" --argjson lb "$load_before" --argjson la "$load_after" \
        --argjson lm "$load_max" --argjson ready "$ok_ready" --arg ready_note "$ready_note" \
        --argjson ready_s "$ready_s" --argjson drained "$drained" --argjson corr_done "$corr_done" \
        --argjson nfsim "$(cat "$d/nfsim.json")" --argjson roles "$roles_json" \
        --argjson restarts "$restarts" --argjson secs "$SECS" '
        ($procs | [.[] | .cpu_s] | add) as $cpu
        | ($procs | [.[] | .peak_rss_mb] | add) as $rss
        | ($summary.unique // 0) as $delivered
        | {arm: $arm, round: $round, tag: $tag, topic_prefix: $pfx, produced: $produced,
           achieved_mps: $nfsim.achieved_mps, delivered: $delivered,
           dead_lettered: ($agg_dlq + $feed_dlq),
           lost: ([$produced - $delivered - $agg_dlq - $feed_dlq, 0] | max),
           duplicates: ($summary.duplicates // 0),
           e2e_ms: {avg: ($summary.latency_ms.avg // null), p99: ($summary.latency_ms.p99 // null)},
           xdrs: $xdrs, xdr_records: $xdr_records, xdr_completion: $xdr_by,
           correlation_dead_lettered: $corr_dlq,
           traffic_s: $secs, window_s: $window, cpu_s: ($cpu * 100 | round / 100),
           cpu_pct_of_core: (100 * $cpu / $window * 10 | round / 10),
           cpu_us_per_copy: (if $produced > 0 then ($cpu / $produced * 1e6 | round) else null end),
           peak_rss_mb: ($rss * 10 | round / 10),
           peak_rss_max_process_mb: ([$procs[] | .peak_rss_mb] | max),
           processes: $procs,
           load1: {before: $lb, max: $lm, after: $la},
           ready: ($ready == 1), ready_s: $ready_s, ready_note: $ready_note,
           drained: ($drained == 1), correlation_closed: ($corr_done == 1),
           ndd_readyz_at_end: $roles, ndd_role_restarts: $restarts}' >"$WORK/$tag.json"
    say "$tag: $(jq -r '"produced \(.produced), delivered \(.delivered), dead \(.dead_lettered), lost \(.lost), xDRs \(.xdrs); CPU \(.cpu_s) s (\(.cpu_us_per_copy) us/copy), peak RSS \(.peak_rss_mb) MiB; load \(.load1.before)..\(.load1.max)"' "$WORK/$tag.json")"
    LAST_RESULT=$WORK/$tag.json
}

# ---- warm-up: the broker's first produce and fetch traffic (JIT) outside every window ----
if ((WARMUP > 0)); then
    say "warm-up: ${WARMUP}s of the same traffic to topics nb-$RUN_ID-warmup-* (not measured)"
    spawn "$WORK/warmup.log" "$BIN_SIM" --bootstrap "$BOOTSTRAP" --rate "$RATE" --duration "$WARMUP" \
        --nf-mix "$NF_MIX" --copies 4 --size mix --partitions "$PARTITIONS" \
        --topic-prefix "nb-$RUN_ID-warmup-" --seq-start 0 --quiet
    wpid=$SPAWNED
    wait "$wpid" || warn "warm-up: ndd-nf-sim exited with status $? ($WORK/warmup.log)"
    forget_pids "$wpid"
fi

# ---- the rounds: a, b alternating; a round whose load went above --load-limit is repeated
# (at most twice) and the pair with the lowest load kept; the others stay in the JSON ----
RESULTS=()
DISCARDED=()
REPEATED=0
for ((r = 1; r <= ROUNDS; r++)); do
    best=()
    best_load=""
    for ((try = 0; try <= 2; try++)); do
        t=""
        ((try > 0)) && t=$try
        pair=()
        if ((!NDD_ONLY)); then
            run_arm separate "$r" "$t"
            pair+=("$LAST_RESULT")
        fi
        run_arm ndd "$r" "$t"
        pair+=("$LAST_RESULT")
        pair_load=$(jq -s 'map(.load1.max) | max' "${pair[@]}")
        if [[ -z $best_load ]] || awk -v a="$pair_load" -v b="$best_load" 'BEGIN{exit !(a < b)}'; then
            ((${#best[@]})) && DISCARDED+=("${best[@]}")
            best=("${pair[@]}")
            best_load=$pair_load
        else
            DISCARDED+=("${pair[@]}")
        fi
        if awk -v lim="$LOAD_LIMIT" -v a="$pair_load" 'BEGIN{exit !(lim > 0 && a > lim)}' && ((try < 2)); then
            warn "round $r: the load average went to $pair_load (above $LOAD_LIMIT): repeating it"
            REPEATED=$((REPEATED + 1))
            continue
        fi
        break
    done
    ((try > 0)) && say "round $r: kept the pair with the lowest load ($best_load)"
    RESULTS+=("${best[@]}")
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- summary: medians and range per arm, ratio ndd / separate ----
FINAL=$(jq -s --arg machine "$MACHINE" --arg cpu "$CPU_MODEL" --argjson cores "$CORES" \
    --arg lstart "$LOAD_START" --arg lend "$LOAD_END" --arg started "$START_UTC" \
    --arg ended "$(date -u +%FT%TZ)" --arg build "$BUILD" --arg btype "${BUILD_TYPE:-unknown}" \
    --arg admin_note "$ADMIN_NOTE" --argjson admin "$ADMIN" --argjson rate "$RATE" \
    --argjson secs "$SECS" --argjson rounds "$ROUNDS" --arg mix "$NF_MIX" --arg bootstrap "$BOOTSTRAP" \
    --argjson rss_limit "$RSS_LIMIT_MB" --argjson repeated "$REPEATED" \
    --argjson discarded "$( ((${#DISCARDED[@]})) && jq -sc . "${DISCARDED[@]}" || echo '[]')" \
    --arg rev "$("$BIN_NDD" --version 2>/dev/null | sed -n '1s/.*revision \([^)]*\)).*/\1/p')" \
    --arg dirty "$(git -C "$ROOT" status --porcelain 2>/dev/null | grep -qv '^??' && echo yes || echo no)" '
    def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
        else (.[length / 2 - 1] + .[length / 2]) / 2 end;
    def stat(f): [.[] | f] | {median: median, min: min, max: max};
    . as $runs
    | def arm(a): [$runs[] | select(.arm == a)];
    (arm("separate")) as $a | (arm("ndd")) as $b
    | def figs(x): x | {runs: length, produced: stat(.produced), delivered: stat(.delivered),
          dead_lettered: stat(.dead_lettered), lost: stat(.lost), duplicates: stat(.duplicates),
          xdrs: stat(.xdrs), window_s: stat(.window_s), cpu_s: stat(.cpu_s),
          cpu_pct_of_core: stat(.cpu_pct_of_core), cpu_us_per_copy: stat(.cpu_us_per_copy),
          peak_rss_mb: stat(.peak_rss_mb), e2e_p99_ms: stat(.e2e_ms.p99 // 0),
          load1_max: stat(.load1.max)};
    (figs($a)) as $fa | (figs($b)) as $fb
    | ([range(0; [$a, $b] | map(length) | min)] | map(if $a[.].cpu_s > 0 then $b[.].cpu_s / $a[.].cpu_s else null end)) as $pr
    | {benchmark: "ndd-vs-separate", started: $started, ended: $ended,
       machine: {description: $machine, cpu_model: $cpu, cores: $cores,
                 load_before: $lstart, load_after: $lend},
       build: {dir: $build, type: $btype, revision: $rev, source_tree_has_tracked_changes_now: $dirty},
       settings: {rate: $rate, seconds: $secs, rounds: $rounds, nf_mix: $mix, copies: 4,
                  size: "mix", partitions: 3, feed: "one h2c JSON feed to ndd-sink",
                  kafka: $bootstrap, admin: ($admin == 1), admin_note: $admin_note,
                  rounds_repeated_for_load: $repeated},
       separate: ($fa + {per_daemon_peak_rss_mb: ([$a[].processes | to_entries[]] | group_by(.key)
                   | map({key: .[0].key, value: ([.[].value.peak_rss_mb] | {median: median, min: min, max: max})}) | from_entries),
                 per_daemon_cpu_s: ([$a[].processes | to_entries[]] | group_by(.key)
                   | map({key: .[0].key, value: ([.[].value.cpu_s] | median)}) | from_entries)}),
       ndd: $fb,
       ratio_ndd_to_separate: {cpu_s_of_medians: (if $fa.cpu_s.median > 0 then $fb.cpu_s.median / $fa.cpu_s.median else null end),
            cpu_s_per_round: $pr,
            cpu_us_per_copy_of_medians: (if ($fa.cpu_us_per_copy.median // 0) > 0 then $fb.cpu_us_per_copy.median / $fa.cpu_us_per_copy.median else null end),
            peak_rss_of_medians: (if $fa.peak_rss_mb.median > 0 then $fb.peak_rss_mb.median / $fa.peak_rss_mb.median else null end)},
       verdict: {rss_limit_mb: $rss_limit,
                 ndd_peak_rss_max_mb: $fb.peak_rss_mb.max,
                 rss_ok: ($fb.peak_rss_mb.max <= $rss_limit),
                 cpu_ok: ($fb.cpu_s.median <= $fa.cpu_s.median),
                 lost_zero: ([$runs[].lost] | all(. == 0)),
                 all_ready: ([$runs[].ready] | all)},
       runs: $runs, discarded_for_load: $discarded}' "${RESULTS[@]}")
[[ -n $OUT ]] && { echo "$FINAL" | jq . >"$OUT"; say "result JSON: $OUT"; }

# ---- the table ----
row() { # label jq-path-under-arm decimals
    local a b
    a=$(jq -r --arg d "$3" "def f(x): if x == null then \"-\" else (x * pow(10; (\$d|tonumber)) | round / pow(10; (\$d|tonumber)) | tostring) end;
        .separate.$2 | \"\(f(.median)) [\(f(.min))-\(f(.max))]\"" <<<"$FINAL")
    b=$(jq -r --arg d "$3" "def f(x): if x == null then \"-\" else (x * pow(10; (\$d|tonumber)) | round / pow(10; (\$d|tonumber)) | tostring) end;
        .ndd.$2 | \"\(f(.median)) [\(f(.min))-\(f(.max))]\"" <<<"$FINAL")
    printf '| %-34s | %-26s | %-26s |\n' "$1" "$a" "$b"
}
{
    echo
    echo "ndd (all-in-one) beside the separate daemons — $RATE copies/s, NF mix $NF_MIX, 4 copies per transaction, size mix, ${SECS}s per arm run, $ROUNDS round(s) (a, b alternating)"
    echo "machine: $CORES cores ($CPU_MODEL), load average before $LOAD_START, after $LOAD_END; Kafka $BOOTSTRAP"
    echo "build: $BUILD (${BUILD_TYPE:-unknown}), $(jq -r '.build | "ndd --version revision \(.revision) (tracked changes in the source tree now: \(.source_tree_has_tracked_changes_now))"' <<<"$FINAL")"
    echo "admin: $ADMIN_NOTE"
    echo
    printf '| %-34s | %-26s | %-26s |\n' "median [min-max]" "(a) separate daemons" "(b) ndd"
    printf '|%s|%s|%s|\n' "------------------------------------" "----------------------------" "----------------------------"
    row "produced (copies)" produced 0
    row "delivered (distinct @seq at sink)" delivered 0
    row "dead-lettered" dead_lettered 0
    row "lost" lost 0
    row "duplicates" duplicates 0
    row "xDRs written" xdrs 0
    row "window s (traffic + drain)" window_s 1
    row "CPU s (NDD processes)" cpu_s 2
    row "CPU % of one core" cpu_pct_of_core 1
    row "CPU us per copy" cpu_us_per_copy 0
    row "peak RSS MiB (sum for a)" peak_rss_mb 1
    row "e2e p99 ms (sink)" e2e_p99_ms 1
    row "load average (1 min), max" load1_max 2
    echo
    ((NDD_ONLY)) || echo "ratio ndd / separate: CPU $(jq -r '.ratio_ndd_to_separate | "\(.cpu_s_of_medians * 1000 | round / 1000) (of the medians; per round: \(.cpu_s_per_round | map(. * 1000 | round / 1000) | join(", "))), CPU per copy \(.cpu_us_per_copy_of_medians * 1000 | round / 1000), peak RSS \(.peak_rss_of_medians * 1000 | round / 1000)"' <<<"$FINAL")"
    ((NDD_ONLY)) || echo "separate daemons, per daemon (median peak RSS MiB / CPU s): $(jq -r '.separate | [.per_daemon_peak_rss_mb | to_entries[] | .key] as $k | . as $s | $k | map("\(.) \($s.per_daemon_peak_rss_mb[.].median) / \($s.per_daemon_cpu_s[.])") | join(", ")' <<<"$FINAL")"
    echo "targets: ndd peak RSS <= $RSS_LIMIT_MB MiB: $(jq -r '.verdict | if .rss_ok then "met" else "NOT met" end + " (max \(.ndd_peak_rss_max_mb) MiB)"' <<<"$FINAL"); ndd CPU <= separate: $(jq -r 'if .verdict.cpu_ok then "met" else "NOT met" end' <<<"$FINAL")"
    echo "lost 0 in every run: $(jq -r '.verdict.lost_zero' <<<"$FINAL"); every role ready: $(jq -r '.verdict.all_ready' <<<"$FINAL")"
    echo
} >&2
echo "$FINAL" | jq -c .
jq -e '.verdict.lost_zero and .verdict.all_ready' >/dev/null <<<"$FINAL" || { FAILED=1; exit 1; }
