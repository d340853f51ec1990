#!/usr/bin/env bash
# NDD quickstart: the whole data path on one machine, with a live view (docs/quickstart.md).
#
#   deploy/local/quickstart.sh [--separate] [--seconds N] [--rate N] [--build DIR] [--no-build]
#                              [--dir DIR] [--kafka-port N] [--pg-port N] [--ports-from N]
#   deploy/local/quickstart.sh --stop [--dir DIR]
#
# 1. installs missing Debian packages and the Kafka jars (deploy/local/install-deps.sh),
# 2. builds NDD (Release) in DIR (default <repo>/build-release) and installs it with
#    `cmake --install DIR --prefix <stack dir>/quickstart/prefix`: the daemons below run from
#    PREFIX/bin, the installed commands,
# 3. starts the local stack (Kafka + PostgreSQL, stack.sh; default dir <repo>/.stack),
# 4. starts ndd-sink (a stand-in third-party tool) and `ndd`, the all-in-one (docs/ndd.md): one
#    process with the roles admin (REST API), gui-api (the console, when built), aggregation
#    for SCP, NRF, SEPP, BSF and PCF, correlation (MAIN -> xDRs on XDR) and adapter with one
#    demo feed: MAIN -> JSON over HTTP/2 (and feed "wireshark": MAIN -> pcapng files in
#    $QS/pcap, the synthetic packet feed). With --separate: the same as separate daemons
#    (ndd-admin, ndd-gui-api, five ndd-aggregation, ndd-correlation, ndd-adapter), as Helm
#    runs them,
# 5. runs ndd-nf-sim at a modest rate (default 200 copies/s) for --seconds (default 60) and shows
#    a live line per second: ingress rate, egress rate, p99 latency, backlog, xDRs,
# 6. waits for delivery and for the last xDRs, prints the summary (lost counted by sequence
#    number at the sink, xDRs written to XDR) and where to look. The daemons keep running until `quickstart.sh --stop`.
# Idempotent: a second run stops the daemons of the first and starts them again.
# Ports (--ports-from P, default 9100): admin P, ndd's /metrics P+1, sink metrics P+3,
# console P+8, sink HTTP/2 P+80; with --separate: aggregation SCP P+1 (NRF…PCF P+11…P+14),
# adapter P+2, correlation P+4.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SECONDS_RUN=60
RATE=200
BUILD=${NDD_BUILD_DIR:-$ROOT/build-release}
DO_BUILD=1
STACK_DIR=${NDD_STACK_DIR:-$ROOT/.stack}
KAFKA_PORT=${NDD_KAFKA_PORT:-9092}
PG_PORT=${NDD_PG_PORT:-55432}
BASE=${NDD_QUICKSTART_PORTS:-9100}
STOP=0
SEPARATE=0
NF_TYPES=(SCP NRF SEPP BSF PCF)

usage() {
    sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
say() { echo "quickstart: $*" >&2; }
die() {
    echo "quickstart: error: $*" >&2
    exit 1
}
while (($#)); do
    case $1 in
    --seconds) SECONDS_RUN=${2:?}; shift 2 ;;
    --rate) RATE=${2:?}; shift 2 ;;
    --build) BUILD=${2:?}; shift 2 ;;
    --no-build) DO_BUILD=0; shift ;;
    --dir) STACK_DIR=${2:?}; shift 2 ;;
    --kafka-port) KAFKA_PORT=${2:?}; shift 2 ;;
    --pg-port) PG_PORT=${2:?}; shift 2 ;;
    --ports-from) BASE=${2:?}; shift 2 ;;
    --stop) STOP=1; shift ;;
    --separate) SEPARATE=1; shift ;;
    -h | --help) usage ;;
    *) echo "quickstart: unknown option '$1'" >&2; usage ;;
    esac
done
[[ $SECONDS_RUN =~ ^[0-9]+$ && $SECONDS_RUN -ge 1 && $SECONDS_RUN -le 86400 ]] || die "--seconds must be 1..86400"
[[ $RATE =~ ^[0-9]+$ && $RATE -ge 1 ]] || die "--rate must be a positive integer"
[[ $BASE =~ ^[0-9]+$ && $BASE -ge 1024 && $BASE -le 65400 ]] || die "--ports-from must be 1024..65400"
mkdir -p "$STACK_DIR"
STACK_DIR=$(realpath "$STACK_DIR")
QS=$STACK_DIR/quickstart
mkdir -p "$QS"

# ---- our daemons: pid files in $QS, a PID is only trusted when its command line matches ----
# A pid file holds the PID and the process's command line as started: a recycled PID (another
# command line) is never signalled.
pid_of() { # name -> pid of a live quickstart daemon, or nothing
    local f=$QS/$1.pid pid cmd
    [[ -f $f ]] || return 1
    pid=$(head -n1 "$f" | tr -dc 0-9)
    [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 1
    cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
    [[ $cmd == "$(sed -n 2p "$f")" ]] || return 1
    echo "$pid"
}
stop_daemon() {
    local pid i
    pid=$(pid_of "$1") || { rm -f "$QS/$1.pid"; return 0; }
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 150; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && { say "$1 (pid $pid) did not stop in 15 s: SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; }
    rm -f "$QS/$1.pid"
    say "stopped $1 (pid $pid)"
}
DAEMONS=(nf-sim ndd adapter correlation "${NF_TYPES[@]/#/aggregation-}" gui-api admin sink)
stop_all_daemons() {
    local d
    for d in "${DAEMONS[@]}"; do stop_daemon "$d"; done
}

if ((STOP)); then
    stop_all_daemons
    "$ROOT/deploy/local/stack.sh" stop --dir "$STACK_DIR"
    exit 0
fi

# ---- 1. dependencies, 2. build ----
say "checking dependencies (deploy/local/install-deps.sh)"
"$ROOT/deploy/local/install-deps.sh" --quiet
if ((DO_BUILD)); then
    say "building NDD (Release) in $BUILD"
    # Warnings are errors in development builds; a user's compiler may warn differently.
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNDD_WERROR=OFF >"$QS/cmake.log" 2>&1 ||
        { tail -20 "$QS/cmake.log" >&2; die "cmake configure failed ($QS/cmake.log)"; }
    cmake --build "$BUILD" -j"$(nproc)" --target ndd ndd-admin ndd-aggregation ndd-adapter ndd-sink \
        ndd-correlation ndd-nf-sim ndd-offsets ndd-travel ndd-gui-api ndd-ingress \
        $(command -v npm >/dev/null && echo ndd_console) >"$QS/build.log" 2>&1 ||
        { grep -m5 -E 'error|FAILED' "$QS/build.log" >&2; die "build failed ($QS/build.log)"; }
fi
# What a user runs is what `cmake --install` puts on PATH, not the build tree.
PREFIX=$QS/prefix
say "installing into $PREFIX (cmake --install)"
cmake --install "$BUILD" --prefix "$PREFIX" >"$QS/install.log" 2>&1 ||
    { tail -5 "$QS/install.log" >&2; die "cmake --install failed ($QS/install.log; build first, or drop --no-build)"; }
export PATH=$PREFIX/bin:$PATH
NDD=$PREFIX/bin/ndd
ADMIN=$PREFIX/bin/ndd-admin
AGG=$PREFIX/bin/ndd-aggregation
ADA=$PREFIX/bin/ndd-adapter
CORR=$PREFIX/bin/ndd-correlation
SINK=$PREFIX/bin/ndd-sink
SIM=$PREFIX/bin/ndd-nf-sim
OFF=$PREFIX/bin/ndd-offsets
for b in "$NDD" "$ADMIN" "$AGG" "$ADA" "$CORR" "$SINK" "$SIM" "$OFF"; do
    [[ -x $b ]] || die "$b missing after cmake --install (build first, or drop --no-build)"
done

# ---- 3. the stack ----
say "starting the local stack in $STACK_DIR (Kafka $KAFKA_PORT, PostgreSQL $PG_PORT)"
"$ROOT/deploy/local/stack.sh" start --dir "$STACK_DIR" --kafka-port "$KAFKA_PORT" --pg-port "$PG_PORT" >/dev/null 2>"$QS/stack.log" ||
    { tail -20 "$QS/stack.log" >&2; die "stack start failed ($QS/stack.log)"; }
NDD_KAFKA=$(. "$STACK_DIR/env" && printf %s "$NDD_KAFKA")
NDD_PG=$(. "$STACK_DIR/env" && printf %s "$NDD_PG")

# ---- 4. daemons (a rerun replaces those of the previous run) ----
stop_all_daemons
P_ADMIN=$BASE P_AGG=$((BASE + 1)) P_ADA=$((BASE + 2)) P_SINKM=$((BASE + 3)) P_CORR=$((BASE + 4)) P_SINK=$((BASE + 80))
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in $P_ADMIN $((BASE + 8)) $P_AGG $P_ADA $P_SINKM $P_CORR $P_SINK $((BASE + 11)) $((BASE + 12)) $((BASE + 13)) $((BASE + 14)); do
    port_busy "$p" && die "port $p is in use by another program (choose --ports-from N)"
done
start_daemon() { # name log command...
    local name=$1 log=$2
    shift 2
    "$@" >"$log" 2>&1 </dev/null &
    local pid=$! i
    # the command line as /proc shows it once exec is done (the binary's path and arguments)
    for ((i = 0; i < 50; i++)); do
        [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$(realpath "$1")" ]] && break
        sleep 0.02
    done
    printf '%s\n%s\n' "$pid" "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" >"$QS/$name.pid"
}
http_ok() { curl -fsS --max-time 2 "$1" >/dev/null 2>&1; }
wait_http() { # what url seconds log
    local i
    for ((i = 0; i < $3 * 5; i++)); do
        http_ok "$2" && return 0
        sleep 0.2
    done
    tail -15 "$4" >&2
    die "$1 did not come up at $2 within $3 s (log: $4)"
}

start_daemon sink "$QS/sink.log" "$SINK" --h2-port "$P_SINK" --metrics-port "$P_SINKM" \
    --summary-file "$QS/sink-summary.json"
wait_http ndd-sink "http://127.0.0.1:$P_SINKM/healthz" 10 "$QS/sink.log"

# What NDD runs is configured in one place, the admin (PostgreSQL -> ndd.config): the demo's
# feeds, the NF sources and the correlation settings are applied to it as a declarative file
# (docs/api.md, "Declarative apply"), exactly as an operator's GitOps repository would be, and
# every role follows ndd.config. A feed the operator adds in the console runs the same way.
cat >"$QS/ndd-config.json" <<EOF
{"feeds": [
  {"name": "demo", "source_topic": "MAIN", "encoding": "json", "transport": "http2",
   "endpoints": [{"url": "http://127.0.0.1:$P_SINK/ndd/demo"}],
   "delivery": {"max_in_flight": 64, "timeout_ms": 5000}},
  {"name": "wireshark", "source_topic": "MAIN", "encoding": "synthetic", "transport": "file",
   "endpoints": [{"url": "file://$QS/pcap"}],
   "file": {"max_seconds": 10, "retention_bytes": 104857600}}
 ],
 "sources": [
  {"name": "scp", "type": "SCP", "topic": "SCP", "partitions": 3, "description": "SCP copies"},
  {"name": "nrf", "type": "NRF", "topic": "NRF", "partitions": 3, "description": "NRF copies"},
  {"name": "sepp", "type": "SEPP", "topic": "SEPP", "partitions": 3, "description": "SEPP copies"},
  {"name": "bsf", "type": "BSF", "topic": "BSF", "partitions": 3, "description": "BSF copies"},
  {"name": "pcf", "type": "PCF", "topic": "PCF", "partitions": 3, "description": "PCF copies"}
 ],
 "correlation": [
  {"name": "main", "enabled": true, "source_topic": "MAIN", "xdr_topic": "XDR", "timeout_ms": 5000,
   "description": "request/response pairs of MAIN into xDRs"}
 ]}
EOF
mkdir -p "$QS/pcap" # the synthetic feed's pcapng files (docs/synthetic.md)
P_GUI=$((BASE + 8)) CONSOLE_LINE="  web console                 not built (needs npm: see docs/console.md)"
HAVE_CONSOLE=0
[[ -x $PREFIX/bin/ndd-gui-api && -f $PREFIX/share/ndd/console/index.html ]] && HAVE_CONSOLE=1

# A token for this demo, kept in a 0600 file, once the admin's schema exists.
make_token() {
    [[ -s $QS/admin.token ]] && return 0
    "$ADMIN" token revoke --pg "$NDD_PG" --name quickstart >/dev/null 2>&1 || true
    (umask 077 && "$ADMIN" token create --pg "$NDD_PG" --role admin --name quickstart >"$QS/admin.token" 2>"$QS/token.log") ||
        { rm -f "$QS/admin.token"; die "ndd-admin token create failed: $(tail -3 "$QS/token.log")"; }
}

# The demo's configuration through the admin's API (objects matched by name: a rerun changes
# nothing that is already so). --wait: the admin answers 503 until it has loaded its objects
# from PostgreSQL.
apply_config() {
    "$ADMIN" apply --wait 60 --url "http://127.0.0.1:$P_ADMIN" --token-file "$QS/admin.token" \
        "$QS/ndd-config.json" >"$QS/apply.log" 2>&1 ||
        { tail -5 "$QS/apply.log" >&2; die "ndd-admin apply did not apply $QS/ndd-config.json ($QS/apply.log)"; }
}

if ((SEPARATE)); then
    # ndd-admin: the REST API over PostgreSQL.
    start_daemon admin "$QS/admin.log" "$ADMIN" --pg "$NDD_PG" --bootstrap "$NDD_KAFKA" --http.port "$P_ADMIN"
    wait_http ndd-admin "http://127.0.0.1:$P_ADMIN/healthz" 40 "$QS/admin.log"
    make_token
    apply_config
    # ndd-gui-api: the web console (docs/console.md) on port P+8, in front of ndd-admin.
    if ((HAVE_CONSOLE)); then
        start_daemon gui-api "$QS/gui-api.log" "$PREFIX/bin/ndd-gui-api" --admin-url "http://127.0.0.1:$P_ADMIN" \
            --web-root "$PREFIX/share/ndd/console" --http.port "$P_GUI" \
            --metrics-urls "$(printf 'http://127.0.0.1:%s/metrics,' "$P_ADA" "$P_CORR" "$P_AGG" \
                $((BASE + 11)) $((BASE + 12)) $((BASE + 13)) $((BASE + 14)) | sed 's/,$//')"
        wait_http ndd-gui-api "http://127.0.0.1:$P_GUI/healthz" 10 "$QS/gui-api.log"
    fi
    i=0
    for nf in "${NF_TYPES[@]}"; do
        [[ $nf == SCP ]] && port=$P_AGG || port=$((BASE + 10 + i))
        start_daemon "aggregation-$nf" "$QS/aggregation-$nf.log" "$AGG" --nf-type "$nf" \
            --bootstrap "$NDD_KAFKA" --main-partitions 3 --http.port "$port" --log.level warn \
            --filter-check-interval 1s
        echo "$port" >"$QS/aggregation-$nf.port"
        i=$((i + 1))
    done
    # ndd-correlation: its own consumer group on MAIN, one xDR per transaction to XDR (docs/correlation.md).
    start_daemon correlation "$QS/correlation.log" "$CORR" --bootstrap "$NDD_KAFKA" --http.port "$P_CORR" \
        --log.level warn
    start_daemon adapter "$QS/adapter.log" "$ADA" --bootstrap "$NDD_KAFKA" --config-topic ndd.config \
        --http.port "$P_ADA"
    for nf in "${NF_TYPES[@]}"; do
        wait_http "ndd-aggregation $nf" "http://127.0.0.1:$(cat "$QS/aggregation-$nf.port")/readyz" 40 "$QS/aggregation-$nf.log"
    done
    wait_http ndd-adapter "http://127.0.0.1:$P_ADA/readyz" 30 "$QS/adapter.log"
    wait_http ndd-correlation "http://127.0.0.1:$P_CORR/readyz" 30 "$QS/correlation.log"
else
    # ndd: every role in one process with the separate daemons' settings; one /metrics
    # /healthz /readyz on P+1 (every role's figures, a readiness line per role); the admin's
    # REST API and the console keep their own ports (docs/ndd.md).
    P_AGG=$((BASE + 1)) P_ADA=$((BASE + 1)) P_CORR=$((BASE + 1))
    for nf in "${NF_TYPES[@]}"; do echo "$P_AGG" >"$QS/aggregation-$nf.port"; done
    nf_json=$(printf '%s\n' "${NF_TYPES[@]}" | jq -R . | jq -cs .)
    # 0600: the file holds the PostgreSQL conninfo
    (umask 077 && jq -n --arg b "$NDD_KAFKA" --argjson port "$P_AGG" --arg pg "$NDD_PG" \
        --argjson aport "$P_ADMIN" --argjson nfs "$nf_json" \
        --argjson console "$HAVE_CONSOLE" --arg root "$PREFIX/share/ndd/console" \
        --argjson gport "$P_GUI" --arg murl "http://127.0.0.1:$P_AGG/metrics" '{
        bootstrap: $b, http: {port: $port}, log: {level: "warn"},
        roles: ({
          admin: {pg: $pg, http: {port: $aport}},
          aggregation: {"nf-types": $nfs, "main-partitions": 3, "filter-check-interval": "1s"},
          correlation: {},
          adapter: {"config-topic": "ndd.config"}}
          + (if $console == 1 then {"gui-api": {"admin-url": ("http://127.0.0.1:" + ($aport | tostring)),
              "web-root": $root, http: {port: $gport}, "metrics-urls": $murl}} else {} end))}' \
        >"$QS/ndd.json") || die "cannot write $QS/ndd.json"
    "$NDD" --config "$QS/ndd.json" --check-config >"$QS/ndd-check.log" 2>&1 ||
        { tail -5 "$QS/ndd-check.log" >&2; die "ndd refused its configuration ($QS/ndd.json)"; }
    start_daemon ndd "$QS/ndd.log" "$NDD" --config "$QS/ndd.json"
    wait_http ndd "http://127.0.0.1:$P_AGG/healthz" 20 "$QS/ndd.log"
    wait_http "ndd's admin role" "http://127.0.0.1:$P_ADMIN/healthz" 40 "$QS/ndd.log"
    make_token
    apply_config
    # every role ready (/readyz has a line per role: aggregation-SCP ... adapter)
    wait_http ndd "http://127.0.0.1:$P_AGG/readyz" 60 "$QS/ndd.log"
fi
((HAVE_CONSOLE)) && CONSOLE_LINE="  web console                 http://127.0.0.1:$P_GUI/   log in with the token in $QS/admin.token"
# Traffic starts once the demo feed holds MAIN's partitions (a group join is not latency):
# the adapter's ndd_adapter_partitions_assigned{feed="demo"} gauge (docs/adapter.md).
for ((i = 0; i < 120; i++)); do
    v=$( (curl -fsS --max-time 1 "http://127.0.0.1:$P_ADA/metrics" 2>/dev/null || true) |
        awk '$1 == "ndd_adapter_partitions_assigned{feed=\"demo\"}" {v = $2 + 0} END {printf "%d\n", v}')
    ((v > 0)) && break
    sleep 0.5
done

# ---- 5. traffic and the live view ----
SEQ0=$(($(date +%s) * 10000)) # a fresh @seq range per run: a rerun never looks like duplicates
say "ndd-nf-sim: $RATE copies/s for ${SECONDS_RUN}s over SCP, NRF, SEPP, BSF, PCF"
# Four copies per transaction (every trigger point), so SCP transactions (a proxy: four copies
# expected) close as complete xDRs, not at the correlation timeout.
start_daemon nf-sim "$QS/nf-sim.log" "$SIM" --bootstrap "$NDD_KAFKA" --rate "$RATE" \
    --duration "$SECONDS_RUN" --nf-mix SCP=3,NRF=1,SEPP=1,BSF=1,PCF=1 --copies 4 \
    --partitions 3 --seq-start "$SEQ0" --size mix
sim_pid=$(head -n1 "$QS/nf-sim.pid")
trap 'say "interrupted: the daemons keep running; stop them with $0 --stop"; kill -INT $sim_pid 2>/dev/null; exit 130' INT TERM

ingress_total() {
    local port t=0 v
    # ndd: one /metrics has every NF's aggregation; separate: one port per NF
    for port in $(for nf in "${NF_TYPES[@]}"; do cat "$QS/aggregation-$nf.port"; done | sort -u); do
        v=$( (curl -fsS --max-time 1 "http://127.0.0.1:$port/metrics" 2>/dev/null || true) |
            awk '/^ndd_aggregation_messages_consumed_total/{s+=$NF} END{printf "%d", s}')
        t=$((t + ${v:-0}))
    done
    echo "$t"
}
corr_metric() { # sum of one ndd-correlation metric (all its label sets); 0 when unreachable
    (curl -fsS --max-time 1 "http://127.0.0.1:$P_CORR/metrics" 2>/dev/null || true) |
        awk -v m="$1" '$1 == m || index($1, m "{") == 1 {s += $NF} END {printf "%d\n", s}'
}
summary() { curl -fsS --max-time 2 "http://127.0.0.1:$P_SINKM/summary" 2>/dev/null || echo '{}'; }
produced_so_far() { (grep -o 'produced [0-9]*' "$QS/nf-sim.log" 2>/dev/null || true) | tail -n1 | awk '{print $2+0}'; }
live() {
    local in out s p99 dup prod now dt
    now=$(date +%s%N)
    dt=$(((now - LAST_T) / 1000000))
    ((dt > 0)) || dt=1
    in=$(ingress_total)
    s=$(summary)
    out=$(jq -r '.unique // 0' <<<"$s")
    p99=$(jq -r '.latency_ms.p99 // 0' <<<"$s")
    dup=$(jq -r '.duplicates // 0' <<<"$s")
    prod=$(produced_so_far)
    printf '%s  ingress %6d/s  egress %6d/s  p99 %7.1f ms  delivered %8d of %8d  backlog %6d  duplicates %d  xDRs %d\n' \
        "$(date +%T)" $(((in - LAST_IN) * 1000 / dt)) $(((out - LAST_OUT) * 1000 / dt)) "$p99" "$out" "${prod:-0}" \
        $((${prod:-0} > out ? ${prod:-0} - out : 0)) "$dup" "$(corr_metric ndd_correlation_xdrs_produced_total)"
    LAST_IN=$in
    LAST_OUT=$out
    LAST_T=$now
}
LAST_T=$(date +%s%N)
LAST_IN=$(ingress_total)
LAST_OUT=$(summary | jq -r '.unique // 0')
while kill -0 "$sim_pid" 2>/dev/null; do
    sleep 1
    live
done
wait "$sim_pid" 2>/dev/null || true
rm -f "$QS/nf-sim.pid"
PRODUCED=$( (grep '^{' "$QS/nf-sim.log" || true) | tail -n1 | jq -r '.acked // 0')
[[ -n $PRODUCED ]] || die "ndd-nf-sim gave no summary ($QS/nf-sim.log)"

# ---- 6. drain, summary ----
dlq() { # records in a dead-letter topic; 0 when it does not exist (nothing was refused)
    local out
    out=$("$OFF" --bootstrap "$NDD_KAFKA" --topic "$1" --timeout-ms 3000 2>/dev/null) || true
    [[ -n $out ]] && jq -r --arg t "$1" '.topics[$t].records // 0' <<<"$out" || echo 0
}
for ((i = 0; i < 30; i++)); do
    S=$(summary)
    [[ $(jq -r '.unique // 0' <<<"$S") -ge $PRODUCED ]] && break
    live
    sleep 1
done
# The last transactions close when their copies are all in, or at the correlation timeout (5 s):
# wait until every copy of this run was read from MAIN and no transaction is open or unacknowledged.
for ((i = 0; i < 30; i++)); do
    (($(corr_metric ndd_correlation_messages_consumed_total) >= PRODUCED)) &&
        (($(corr_metric ndd_correlation_transactions_open) == 0)) &&
        (($(corr_metric ndd_correlation_messages_in_flight) == 0)) && break
    sleep 1
done
XDRS=$(corr_metric ndd_correlation_xdrs_produced_total)
XDR_BY=$( (curl -fsS --max-time 2 "http://127.0.0.1:$P_CORR/metrics" 2>/dev/null || true) |
    awk '/^ndd_correlation_transactions_total\{/ {if (match($1, /completion="[a-z]*"/)) {c = substr($1, RSTART + 12, RLENGTH - 13); n[c] += $NF}}
         END {for (c in n) printf "%s%s %d", (k++ ? ", " : ""), c, n[c]}')
S=$(summary)
DELIVERED=$(jq -r '.unique // 0' <<<"$S")
DEAD=$(($(dlq ndd.dlq.aggregation) + $(dlq ndd.dlq.demo)))
LOST=$((PRODUCED - DELIVERED - DEAD))
((LOST < 0)) && LOST=0
CONFIG_LINE=""
if ((SEPARATE)); then
    METRICS_LINES="  metrics  ndd-admin          http://127.0.0.1:$P_ADMIN/metrics
           ndd-aggregation    http://127.0.0.1:$P_AGG/metrics (SCP), ports $((BASE + 11))-$((BASE + 14)) (NRF, SEPP, BSF, PCF)
           ndd-adapter        http://127.0.0.1:$P_ADA/metrics
           ndd-correlation    http://127.0.0.1:$P_CORR/metrics (ndd_correlation_*)"
else
    METRICS_LINES="  metrics  ndd                http://127.0.0.1:$P_AGG/metrics (every role), /readyz (a line per role)"
    CONFIG_LINE="
  ndd's configuration         $QS/ndd.json   (its roles and their settings: docs/ndd.md)"
fi
TOKEN_HINT="curl -H \"Authorization: Bearer \$(cat $QS/admin.token)\" http://127.0.0.1:$P_ADMIN/api/v1/feeds"
cat <<EOF

NDD quickstart summary ($( ((SEPARATE)) && echo "separate daemons" || echo "ndd, the all-in-one: $(pid_of ndd || echo '?')"))
  produced by ndd-nf-sim      $PRODUCED copies ($(grep '^{' "$QS/nf-sim.log" | tail -n1 | jq -r .achieved_mps) copies/s achieved)
  delivered to ndd-sink       $DELIVERED (distinct @seq), duplicates $(jq -r '.duplicates // 0' <<<"$S")
  dead-lettered               $DEAD (topics ndd.dlq.aggregation, ndd.dlq.demo; their records say why)
  lost                        $LOST   (produced - delivered - dead-lettered, by sequence number)
  xDRs written to XDR         $XDRS (the correlation, this run: ${XDR_BY:-none}), open now $(corr_metric ndd_correlation_transactions_open), dead-lettered $(corr_metric ndd_correlation_messages_dead_lettered_total)
  end-to-end latency          avg $(jq -r '.latency_ms.avg // 0' <<<"$S") ms, p99 $(jq -r '.latency_ms.p99 // 0' <<<"$S") ms (NF timestamp -> sink)

Where to look
  Kafka                       $NDD_KAFKA   (kcat -L -b $NDD_KAFKA; topics SCP…PCF, MAIN, XDR)
  xDRs                        kcat -C -b $NDD_KAFKA -t XDR -o -3 -e   (format: docs/xdr.md)
  PostgreSQL                  $NDD_PG
$CONSOLE_LINE
  ndd-admin REST API          http://127.0.0.1:$P_ADMIN/api/v1/…   e.g. $TOKEN_HINT
$METRICS_LINES
           ndd-sink           http://127.0.0.1:$P_SINKM/metrics, http://127.0.0.1:$P_SINKM/summary$CONFIG_LINE
  packets (Wireshark)         $(ls "$QS"/pcap/*.pcapng 2>/dev/null | tail -n1)
                              wireshark FILE (Decode As HTTP2 on the server ports), or
                              tshark -r FILE -d tcp.port==8443,http2 -Y http2.headers.path   (docs/synthetic.md)
  logs                        $QS/*.log
  more traffic                $SIM --bootstrap $NDD_KAFKA --rate 500 --duration 30 --seq-start $((SEQ0 + 5000000))
  benchmarks                  bench/run.sh --profile smoke   (docs/benchmarks.md)
  stop everything             $0 --stop$([[ $STACK_DIR != "$ROOT/.stack" ]] && echo " --dir $STACK_DIR")
EOF
((LOST == 0)) || exit 1
