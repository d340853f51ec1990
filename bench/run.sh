#!/usr/bin/env bash
# NDD benchmark runner (docs/benchmarks.md).
#
#   bench/run.sh --profile NAME [--build DIR] [--stack-dir D] [--keep] [--work-dir W]
#                [--duration S] [--rate N] [--set NAME=VALUE]... [--no-baselines] [--quiet]
#                [--report-only]
#
# Starts a private stack (Kafka only) on free ports, the daemons with their metrics ports
# (ndd-aggregation per NF type, ndd-adapter with the profile's feeds, ndd-correlation when the
# profile sets CORRELATION=1), one ndd-sink per feed,
# the Kafka-side travel probe, then ndd-nf-sim per the profile (bench/profiles/NAME.profile).
# Shows progress once per second; at the end prints a table like the OCNADD benchmark tables and
# then ONE final line of JSON (its fields: bench/README.md, "bench/run.sh"):
#   {"profile","produced","delivered","dead_lettered","lost","duplicates","mps",
#    "e2e_ms":{"avg","p50","p99","max"},"cpu_s":{…},"msgs_per_cpu_s":{…},"rss_mb":{…}, …}
# With CORRELATION=1 it adds "xdr" (ndd-correlation's counts by completion) and
# "travel_xdr_ms" (NF timestamp of a transaction's last copy -> its xDR on XDR, read by the
# probe: avg/p50/p99/max/records, and the same per completion, since a timeout xDR travels the
# correlation timeout by design).
# `lost` = produced − delivered − dead_lettered, delivered counted by sequence number at the
# sink(s). Everything it starts is stopped by PID on exit (the stack too, unless --keep or a
# --stack-dir whose stack was already running).
#
#   --build DIR      build directory (default $NDD_BUILD_DIR, else <repo>/build)
#   --stack-dir D    stack directory (default W/stack); reused when its stack already runs
#   --keep           leave the stack and W in place (prints how to stop)
#   --work-dir W     logs, feeds file, summaries, rss.csv (default a new /tmp/ndd-bench.XXXXXX,
#                    removed after a run without loss; a W named here is kept, without the
#                    Kafka log of the stack the run started in W/stack)
#   --duration S     override the profile's traffic duration (per step for `max`)
#   --rate N         override the profile's rate (copies/s)
#   --no-baselines   skip h2load and the librdkafka baselines
#   --set NAME=VAL   override one profile setting, e.g. --set BATCH_MAX=50 (repeatable);
#                    AGG_ARGS, ADA_ARGS and SIM_ARGS add options to every ndd-aggregation, to
#                    ndd-adapter and to ndd-nf-sim,
#                    e.g. --set "AGG_ARGS=--kafka.linger.ms=20" --set "SIM_ARGS=--prop linger.ms=20"
#   --report-only    print table and JSON again from a kept --work-dir (no new run)
#   --profile compare  not a traffic profile: bench/compare.sh (adapter per delivery mode,
#                    librdkafka consume baseline, h2load, aggregation; same topic, ratios)
# Kafka client settings (profile settings): KAFKA_SECURITY=sasl_ssl makes ndd-nf-sim and every
# NDD daemon reach Kafka on the stack's SASL_SSL listener (SCRAM-SHA-512 over TLS) as a user
# made for the run (ACLs on every topic and group; removed at the end from a stack the run did
# not start); the probes stay on the plaintext listener. COMPRESSION (none|gzip|snappy|lz4|zstd),
# LINGER_MS and BATCH_BYTES set compression.type, linger.ms and batch.size of the producers of
# the NF topics (ndd-nf-sim) and of MAIN (ndd-aggregation); empty = the client's default.
# KAFKA_PROPS="K=V ..." adds librdkafka properties to every pipeline client (ndd-nf-sim and every
# daemon), e.g. socket.nagle.disable=true.
# Ports come from $NDD_BENCH_PORTS (default 22000-26999: each is held for 20 minutes, and a run takes about 60) through stack.sh free-ports.
# Exit 0 when the run completed and lost = 0; 1 when something was lost or failed; 2 on usage.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROFILE=""
BUILD=${NDD_BUILD_DIR:-$ROOT/build}
STACK_DIR=""
KEEP=0
WORK=""
WORK_GIVEN=0
OVR_DURATION=""
OVR_RATE=""
NO_BASELINES=0
QUIET=0
REPORT_ONLY=0
SETS=()
PORT_RANGE=${NDD_BENCH_PORTS:-22000-26999}

usage() {
    sed -n '2,49p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
say() { echo "bench: $*" >&2; }
die() {
    echo "bench: error: $*" >&2
    exit 1
}

while (($#)); do
    case $1 in
    --profile) PROFILE=${2:?}; shift 2 ;;
    --build) BUILD=${2:?}; shift 2 ;;
    --stack-dir) STACK_DIR=${2:?}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --work-dir) WORK=${2:?}; WORK_GIVEN=1; shift 2 ;;
    --duration) OVR_DURATION=${2:?}; shift 2 ;;
    --rate) OVR_RATE=${2:?}; shift 2 ;;
    --no-baselines) NO_BASELINES=1; shift ;;
    --quiet) QUIET=1; shift ;;
    --report-only) REPORT_ONLY=1; shift ;; # re-print table + JSON from --work-dir's results
    --set) SETS+=("${2:?}"); shift 2 ;;
    -h | --help) usage ;;
    *) echo "bench: unknown option '$1'" >&2; usage ;;
    esac
done
[[ -n $PROFILE ]] || usage
# `compare` is not a traffic profile: the same-run adapter / librdkafka / h2load comparison on
# one backlog (bench/compare.sh), on $NDD_KAFKA when set, else on a private stack.
if [[ $PROFILE == compare ]]; then
    if [[ -n ${NDD_KAFKA:-} ]]; then
        exec "$ROOT/bench/compare.sh" --build "$BUILD"
    fi
    CSTACK=${STACK_DIR:-$(mktemp -d /tmp/ndd-compare-stack.XXXXXX)}
    read -r KP CP < <("$ROOT/deploy/local/stack.sh" free-ports 2 "$PORT_RANGE" | tr '\n' ' ') || true
    "$ROOT/deploy/local/stack.sh" start --dir "$CSTACK" --kafka-port "$KP" --controller-port "$CP" \
        --no-pg >"$CSTACK.out" 2>&1 || die "stack did not start ($CSTACK.out)"
    rc=0
    NDD_KAFKA=127.0.0.1:$KP "$ROOT/bench/compare.sh" --build "$BUILD" || rc=$?
    ((KEEP)) || "$ROOT/deploy/local/stack.sh" destroy --dir "$CSTACK" --no-pg >/dev/null 2>&1 || true
    exit $rc
fi
PROFILE_FILE=$ROOT/bench/profiles/$PROFILE.profile
[[ -f $PROFILE_FILE ]] || die "no profile '$PROFILE' (have: $(cd "$ROOT/bench/profiles" && ls ./*.profile | sed 's|./||; s|\.profile||' | xargs))"

# ---- profile defaults, then the profile ----
DESCRIPTION=""
DURATION=10
RATE=1000
NF_MIX=SCP=1
SIZE=natural
COPIES=2
PARTITIONS=3
FEEDS="f1:http2"   # name:transport, transport = http2 | https | tcp | tls
BATCH_MAX=1
MAX_IN_FLIGHT=64
STEPS=""           # `max`: rates to try in order; stops at the first that fails
P99_LIMIT_MS=50
MAX_DRAIN_S=10     # `max`: delivery must end within this many seconds after the traffic
DRAIN_TIMEOUT=60   # after the simulator ends, how long delivery may take
DRAIN_IDLE=15      # ... or how long without progress before giving up
BASELINES="h2load kafka"
RSS_SAMPLE_S=0     # > 0: current RSS (VmRSS) of every daemon every N s into W/<tag>/rss.csv
RSS_WARMUP_S=120   # samples before this are left out of the RSS slope (allocator warm-up)
RSS_FLAT_MB_PER_H=16 # a daemon whose RSS slope stays at or below this is "flat"
BASELINE_COUNT=100000
SETTLE_TIMEOUT=300 # after a window that did not drain: how long to wait for late copies
SETTLE_IDLE=20
TRAVEL=1
CORRELATION=0      # 1: also ndd-correlation on MAIN (xDRs to XDR), component `correlation`
OCNADD=""          # the published figure this profile stands beside (table footer)
KAFKA_SECURITY=plaintext # plaintext | sasl_ssl: how ndd-nf-sim and the daemons reach Kafka
COMPRESSION=none   # compression.type of the NF-topic and MAIN producers
LINGER_MS=""       # linger.ms of those producers (empty: the client's default)
BATCH_BYTES=""     # batch.size of those producers (empty: the client's default)
KAFKA_PROPS=""     # "K=V ...": librdkafka properties of every pipeline client
# shellcheck source=/dev/null
. "$PROFILE_FILE"
for kv in "${SETS[@]}"; do
    [[ $kv =~ ^[A-Z_0-9]+=.*$ ]] || die "--set wants NAME=VALUE (a profile setting), not '$kv'"
    declare "${kv%%=*}=${kv#*=}"
done
[[ -n $OVR_DURATION ]] && DURATION=$OVR_DURATION
[[ -n $OVR_RATE ]] && RATE=$OVR_RATE
((NO_BASELINES)) && BASELINES=""
[[ $KAFKA_SECURITY == plaintext || $KAFKA_SECURITY == sasl_ssl ]] ||
    die "KAFKA_SECURITY must be plaintext or sasl_ssl, not '$KAFKA_SECURITY'"
[[ $COMPRESSION =~ ^(none|gzip|snappy|lz4|zstd)$ ]] ||
    die "COMPRESSION must be none, gzip, snappy, lz4 or zstd, not '$COMPRESSION'"
[[ -z $LINGER_MS || $LINGER_MS =~ ^[0-9]+$ ]] || die "LINGER_MS must be a number of ms, not '$LINGER_MS'"
[[ -z $BATCH_BYTES || $BATCH_BYTES =~ ^[0-9]+$ ]] || die "BATCH_BYTES must be a number of bytes, not '$BATCH_BYTES'"

for tool in jq curl; do
    command -v $tool >/dev/null || die "$tool is missing (Debian package $tool; deploy/local/install-deps.sh)"
done
BIN_AGG=$BUILD/aggregation/ndd-aggregation
BIN_ADA=$BUILD/adapter/ndd-adapter
BIN_SIM=$BUILD/bench/nfsim/ndd-nf-sim
BIN_SINK=$BUILD/bench/sink/ndd-sink
BIN_OFF=$BUILD/bench/probes/ndd-offsets
BIN_TRAVEL=$BUILD/bench/probes/ndd-travel
BIN_KB=$BUILD/bench/baseline/ndd-kafka-baseline
BIN_CORR=$BUILD/correlation/ndd-correlation
((REPORT_ONLY)) || for b in "$BIN_AGG" "$BIN_ADA" "$BIN_SIM" "$BIN_SINK" "$BIN_OFF" "$BIN_TRAVEL" "$BIN_KB"; do
    [[ -x $b ]] || die "$b is not built (cmake -S $ROOT -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $BUILD)"
done

if [[ -z $WORK ]]; then
    WORK=$(mktemp -d /tmp/ndd-bench.XXXXXX)
else
    mkdir -p "$WORK"
fi
WORK=$(realpath "$WORK")
STACK_DIR=${STACK_DIR:-$WORK/stack}
CLK_TCK=$(getconf CLK_TCK)

# ---- process bookkeeping: everything started is stopped by PID ----
declare -a PIDS=()
STACK_STARTED=0
stop_pid() { # pid [seconds]
    local pid=$1 t=${2:-15} i
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < t * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        say "pid $pid did not stop in ${t}s: SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
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
cleanup() {
    local rc=$?
    set +e
    trap '' PIPE INT TERM HUP # finish stopping even when the reader of our output went away
    local pid
    for pid in "${PIDS[@]}"; do stop_pid "$pid" 10; done
    ((STACK_STARTED)) || teardown_sasl
    if ((STACK_STARTED && !KEEP)); then
        "$ROOT/deploy/local/stack.sh" stop --dir "$STACK_DIR" --no-pg >/dev/null 2>&1 ||
            say "stack stop failed: see $STACK_DIR/kafka.log"
        # A named work dir keeps its results (rss.csv, logs) but not the broker's log, which
        # is tens of GB after a soak.
        [[ $WORK_GIVEN == 1 && $rc == 0 && $STACK_DIR == "$WORK/stack" ]] &&
            rm -rf "$STACK_DIR/kafka/data"
    fi
    if ((KEEP)); then
        say "kept: work dir $WORK; stack: $ROOT/deploy/local/stack.sh stop --dir $STACK_DIR --no-pg"
    elif ((WORK_GIVEN)); then
        say "results kept in $WORK"
    elif ((rc == 0)); then
        rm -rf "$WORK"
    else
        say "logs kept in $WORK"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE

# Free ports from our range; one call so they are distinct.
FREE=()
((REPORT_ONLY)) || mapfile -t FREE < <("$ROOT/deploy/local/stack.sh" free-ports 60 "$PORT_RANGE")
((REPORT_ONLY || ${#FREE[@]} >= 60)) ||
    die "fewer than 60 free ports in $PORT_RANGE: name another range in NDD_BENCH_PORTS"
NEXT_PORT=0
take_port() {
    PORT=${FREE[$NEXT_PORT]}
    NEXT_PORT=$((NEXT_PORT + 1))
}

# ---- /proc readings ----
cpu_ticks() { # pid -> utime+stime ticks (0 when gone)
    local s
    s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
    s=${s##*) }
    # after "comm) ": field 3 is state, utime is field 14 overall = 12th here
    awk '{print $12 + $13}' <<<"$s"
}
peak_rss_kb() { # pid -> VmHWM kB
    awk '/^VmHWM:/{print $2}' "/proc/$1/status" 2>/dev/null || echo 0
}
cur_rss_kb() { # pid -> VmRSS kB (empty when gone)
    awk '/^VmRSS:/{print $2}' "/proc/$1/status" 2>/dev/null || true
}
# One line per daemon process of COMP_PIDS and Kafka: t_s,component,pid,rss_kb (soak profile).
rss_sample() { # csv start_ns
    local t comp pid r
    t=$(awk -v a="$2" -v b="$(date +%s%N)" 'BEGIN{printf "%.1f", (b-a)/1e9}')
    for comp in "${!COMP_PIDS[@]}"; do
        [[ $comp == nf-sim || $comp == travel ]] && continue
        for pid in ${COMP_PIDS[$comp]}; do
            r=$(cur_rss_kb "$pid")
            [[ -n $r ]] && echo "$t,$comp,$pid,$r" >>"$1"
        done
    done
    if [[ -n $KAFKA_PID ]]; then
        r=$(cur_rss_kb "$KAFKA_PID")
        [[ -n $r ]] && echo "$t,kafka,$KAFKA_PID,$r" >>"$1"
    fi
    return 0
}
# The RSS samples as JSON: per component (processes summed per sample time) first/last/max MiB
# and the least-squares slope in MiB per hour over the samples after RSS_WARMUP_S; "flat" when
# every NDD daemon's slope is at most RSS_FLAT_MB_PER_H (Kafka's JVM heap is reported, not
# judged). null when nothing was sampled.
rss_series_json() { # csv
    [[ -s $1 ]] || { echo null; return; }
    awk -F, -v warm="$RSS_WARMUP_S" -v lim="$RSS_FLAT_MB_PER_H" -v iv="$RSS_SAMPLE_S" -v csv="$1" '
        NR > 1 { k = $2 SUBSEP $1; if (!(k in v)) { n[$2]++; ts[$2, n[$2]] = $1 } v[k] += $4; comps[$2] = 1 }
        END {
            printf "{\"interval_s\":%s,\"warmup_s\":%s,\"limit_mb_per_h\":%s,\"csv\":\"%s\",\"components\":{", iv, warm, lim, csv
            flat = 1; sep = ""
            for (c in comps) {
                sx = sy = sxx = sxy = m = 0; mx = 0
                for (i = 1; i <= n[c]; i++) {
                    t = ts[c, i]; r = v[c SUBSEP t] / 1024
                    if (i == 1) first = r; last = r; if (r > mx) mx = r
                    if (t + 0 < warm + 0) continue
                    m++; sx += t; sy += r; sxx += t * t; sxy += t * r
                }
                d = m * sxx - sx * sx
                slope = (m >= 3 && d > 0) ? (m * sxy - sx * sy) / d * 3600 : 0
                if (c != "kafka" && slope > lim) flat = 0
                printf "%s\"%s\":{\"samples\":%d,\"first_mb\":%.1f,\"last_mb\":%.1f,\"max_mb\":%.1f,\"slope_mb_per_h\":%.2f}", sep, c, n[c], first, last, mx, slope
                sep = ","
            }
            printf "},\"flat\":%s}", flat ? "true" : "false"
        }' "$1"
}
# A copy's size in bytes for SIZE (N, MIN-MAX, mix or natural): the largest ("max", for the
# disk check) or a typical one ("typical", for the baselines' records).
size_bytes() {
    case $SIZE in
    natural) [[ $1 == max ]] && echo 3700 || echo 1500 ;;
    mix) [[ $1 == max ]] && echo 3960 || echo 3040 ;;
    *-*) [[ $1 == max ]] && echo "${SIZE#*-}" || echo $(((${SIZE%-*} + ${SIZE#*-}) / 2)) ;;
    *) echo "$SIZE" ;;
    esac
}
http_get() { curl -fsS --max-time 2 "$1" 2>/dev/null; }
wait_ready() { # name url seconds
    local i
    for ((i = 0; i < $3 * 5; i++)); do
        http_get "$2" >/dev/null && return 0
        sleep 0.2
    done
    die "$1 not ready at $2 after $3 s"
}
# assigned_partitions METRICS FEED: ndd_adapter_partitions_assigned{feed="FEED"} from a
# /metrics scrape (docs/adapter.md), 0 when absent.
assigned_partitions() {
    awk -v want="ndd_adapter_partitions_assigned{feed=\"$2\"}" \
        '$1 == want {v = $2 + 0} END {printf "%d\n", v}' <<<"$1"
}
fmt() { LC_ALL=C printf "%'.${2:-0}f" "$1"; }

if ((!REPORT_ONLY)); then
# ---- disk: the run must fit ----
# Each copy is written twice (its NF topic, then MAIN). The stack's broker keeps at most
# log.retention.bytes (2 GiB) per partition of each; a longer run needs no more than that.
# A one-hour soak once filled the disk and stopped the broker mid-run: refuse instead.
if ! ((REPORT_ONLY)); then
    copy_bytes=$(size_bytes max)
    need_mb=$(( RATE * DURATION / 1024 * (copy_bytes + 600) * 2 / 1024 ))
    cap_mb=$(( 2 * PARTITIONS * (2048 + 64) ))
    ((need_mb > cap_mb)) && need_mb=$cap_mb
    free_mb=$(df -Pm "$WORK" | awk 'NR==2 {print $4}')
    if [[ -n $free_mb ]] && ((free_mb < need_mb + 2048)); then
        die "the run needs about $need_mb MB of Kafka log (plus 2 GB to spare) and $WORK's file system has $free_mb MB free"
    fi
fi

# ---- stack ----
if "$ROOT/deploy/local/stack.sh" status --dir "$STACK_DIR" --no-pg >/dev/null 2>&1; then
    say "reusing the stack in $STACK_DIR"
else
    take_port
    KPORT=$PORT
    take_port
    CPORT=$PORT
    take_port
    SPORT=$PORT
    take_port
    QPORT=$PORT
    say "starting Kafka on 127.0.0.1:$KPORT (stack dir $STACK_DIR)"
    STACK_STARTED=1
    "$ROOT/deploy/local/stack.sh" start --dir "$STACK_DIR" --kafka-port "$KPORT" \
        --controller-port "$CPORT" --ssl-port "$SPORT" --sasl-port "$QPORT" --no-pg \
        >"$WORK/stack.out" 2>"$WORK/stack.err" ||
        { cat "$WORK/stack.err" >&2; die "stack start failed"; }
fi
BOOTSTRAP=$(. "$STACK_DIR/env" && printf %s "$NDD_KAFKA")
[[ -n $BOOTSTRAP ]] || die "no NDD_KAFKA in $STACK_DIR/env"
KAFKA_PID=$(head -n1 "$STACK_DIR/kafka/kafka.pid" 2>/dev/null | tr -dc 0-9)
fi

# ---- Kafka client settings of the pipeline (KAFKA_SECURITY, COMPRESSION, LINGER_MS, ...) ----
# CLIENT_BOOTSTRAP is where ndd-nf-sim and the daemons connect; DAEMON_KAFKA their kafka.*
# options, SIM_KAFKA ndd-nf-sim's. The probes (travel, offsets, baselines) keep BOOTSTRAP.
CLIENT_BOOTSTRAP=${BOOTSTRAP:-}
DAEMON_KAFKA=()
AGG_KAFKA=()
SIM_KAFKA=()
SASL_USER=""
kafka_tool() { "$ROOT/deploy/local/kafka-tool.sh" "$@" --bootstrap-server "$BOOTSTRAP"; }
# A SCRAM user of this run with every right on topics and groups (the plaintext listener's
# ANONYMOUS is a super user; the stack's own test user is not touched: its ACL test expects it
# to have none). Its password is random, in W/kafka-client (0600) only.
setup_sasl() {
    local ca d=$WORK/kafka-client i
    CLIENT_BOOTSTRAP=$(. "$STACK_DIR/env" && printf %s "${NDD_KAFKA_SASL:-}")
    ca=$(. "$STACK_DIR/env" && printf %s "${NDD_KAFKA_CA:-}")
    [[ -n $CLIENT_BOOTSTRAP && -f $ca ]] ||
        die "KAFKA_SECURITY=sasl_ssl: $STACK_DIR/env names no SASL_SSL listener (NDD_KAFKA_SASL, NDD_KAFKA_CA); a stack made by an older stack.sh: destroy it and start again"
    command -v kcat >/dev/null || die "kcat missing (Debian package kcat)"
    SASL_USER=ndd-bench-$(od -An -N4 -tx4 /dev/urandom | tr -dc 0-9a-f)
    # 0700: the credential's files, and the tools' logs, which may quote the credential
    mkdir -p -m 700 "$d"
    (
        umask 077
        head -c 24 /dev/urandom | base64 | tr -dc A-Za-z0-9 >"$d/password"
        # a file's value is the credential without the [ ] of --add-config's syntax
        printf 'SCRAM-SHA-512=password=%s\n' "$(cat "$d/password")" >"$d/scram.config"
        printf '%s\n' security.protocol=SASL_SSL sasl.mechanisms=SCRAM-SHA-512 "sasl.username=$SASL_USER" \
            "sasl.password=$(cat "$d/password")" "ssl.ca.location=$ca" >"$d/sasl.properties"
    )
    say "Kafka clients: SASL_SSL on $CLIENT_BOOTSTRAP as $SASL_USER (SCRAM-SHA-512)"
    # the credential and the ACLs at once: two JVMs of about 1 CPU-second each
    kafka_tool configs --alter --entity-type users --entity-name "$SASL_USER" \
        --add-config-file "$d/scram.config" >"$d/configs.log" 2>&1 &
    local cpid=$!
    kafka_tool acls --add --allow-principal "User:$SASL_USER" --operation All --topic '*' \
        --group '*' --cluster >"$d/acls.log" 2>&1 || die "ACLs for $SASL_USER: $(tail -3 "$d/acls.log")"
    wait "$cpid" || die "SCRAM credential for $SASL_USER: $(tail -3 "$d/configs.log")"
    # the credential reaches the broker through the KRaft metadata: wait until it logs in
    for ((i = 0; i < 60; i++)); do
        kcat -L -b "$CLIENT_BOOTSTRAP" -F "$d/sasl.properties" -m 5 >/dev/null 2>&1 && break
        sleep 0.5
    done
    ((i < 60)) || die "$SASL_USER cannot log in on $CLIENT_BOOTSTRAP after 30 s"
    DAEMON_KAFKA=(--kafka.security.protocol=SASL_SSL --kafka.sasl.mechanisms=SCRAM-SHA-512
        "--kafka.sasl.username=$SASL_USER" "--kafka.sasl.password-file=$d/password"
        "--kafka.ssl.ca.location=$ca")
    SIM_KAFKA=(--prop-file "$d/sasl.properties")
}
# Undone only on a stack the run did not start (one it started goes away with it).
teardown_sasl() {
    [[ -n $SASL_USER ]] || return 0
    kafka_tool acls --remove --force --allow-principal "User:$SASL_USER" --operation All \
        --topic '*' --group '*' --cluster >/dev/null 2>&1 &
    local apid=$!
    kafka_tool configs --alter --entity-type users --entity-name "$SASL_USER" \
        --delete-config SCRAM-SHA-512 >/dev/null 2>&1 || say "could not remove the SCRAM user $SASL_USER"
    wait "$apid" || say "could not remove the ACLs of $SASL_USER"
}
if ((!REPORT_ONLY)); then
    [[ $KAFKA_SECURITY == sasl_ssl ]] && setup_sasl
    # producer settings of the NF topics (ndd-nf-sim) and of MAIN (ndd-aggregation)
    [[ $COMPRESSION != none ]] && { SIM_KAFKA+=(--prop "compression.type=$COMPRESSION")
        AGG_KAFKA+=("--kafka.producer.compression.type=$COMPRESSION"); }
    [[ -n $LINGER_MS ]] && { SIM_KAFKA+=(--prop "linger.ms=$LINGER_MS")
        AGG_KAFKA+=("--kafka.producer.linger.ms=$LINGER_MS"); }
    [[ -n $BATCH_BYTES ]] && { SIM_KAFKA+=(--prop "batch.size=$BATCH_BYTES")
        AGG_KAFKA+=("--kafka.producer.batch.size=$BATCH_BYTES"); }
    for kv in $KAFKA_PROPS; do
        [[ $kv =~ ^[a-z0-9._]+=[^[:space:]]*$ ]] || die "KAFKA_PROPS: '$kv' is not NAME=VALUE"
        SIM_KAFKA+=(--prop "$kv")
        DAEMON_KAFKA+=("--kafka.$kv")
    done
fi

# ---- TLS material for https/tls feeds: a private CA and a server certificate ----
make_certs() {
    [[ -f $WORK/tls/server.pem ]] && return 0
    command -v openssl >/dev/null || die "openssl missing (Debian package openssl)"
    mkdir -p "$WORK/tls"
    (
        cd "$WORK/tls"
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=ndd-bench-ca" \
            -keyout ca.key -out ca.pem
        openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >ext.cnf
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
            -extfile ext.cnf -out server.pem
    ) >"$WORK/tls.log" 2>&1 || die "certificate generation failed: $WORK/tls.log"
}

# Waits until every feed's sink has every copy (or the copy is dead-lettered): 0 when so, 1
# after TIMEOUT seconds or IDLE seconds without progress. Shows progress lines meanwhile.
wait_delivered() { # dir start_ns produced timeout idle what
    local d=$1 start_ns=$2 produced=$3 what=$6
    local deadline=$((SECONDS + $4)) idle=$5 last_change=$SECONDS total prev_total=-1 dead u i
    while :; do
        dead=$(dlq_total "$pfx")
        total=0
        local done_all=1
        for i in "${!sink_mports[@]}"; do
            u=$( (http_get "http://127.0.0.1:${sink_mports[$i]}/summary" || echo '{}') | jq -r '.unique // 0')
            u=${u:-0}
            total=$((total + u))
            ((u + dead >= produced)) || done_all=0
        done
        ((done_all)) && return 0
        if ((total != prev_total)); then
            last_change=$SECONDS
            prev_total=$total
        fi
        ((SECONDS >= deadline)) && { say "$what: timeout after ${4}s"; return 1; }
        ((SECONDS - last_change >= idle)) && { say "$what: no progress for ${idle}s"; return 1; }
        progress_line "$d" "$start_ns" "$produced"
        sleep 1
    done
}

# ---- one measured run: daemons up, traffic, drain, figures into $WORK/<tag>.result.json ----
# Components and their PIDs for this run (component name -> space separated PIDs).
declare -A COMP_PIDS
run_once() { # tag rate duration
    local tag=$1 rate=$2 dur=$3
    local pfx="$tag-" d="$WORK/$tag"
    mkdir -p "$d"
    COMP_PIDS=()
    PREV_T=0
    PREV_U=()
    local -a run_pids=() feed_names=() feed_kinds=() sink_mports=() nf_types=()
    local f name kind i

    # sinks, one per feed (each feed carries every copy: counting per feed keeps dups honest)
    local feeds_json="[" sep=""
    for f in $FEEDS; do
        name=${f%%:*}
        kind=${f#*:}
        take_port
        local lport=$PORT
        take_port
        local mport=$PORT
        local -a sargs=(--metrics-port "$mport" --log.level warn)
        local url enc=json tls_json=""
        case $kind in
        http2) sargs+=(--h2-port "$lport"); url="http://127.0.0.1:$lport/ndd/$name" ;;
        https)
            make_certs
            sargs+=(--h2tls-port "$lport" --cert "$WORK/tls/server.pem" --key "$WORK/tls/server.key")
            url="https://localhost:$lport/ndd/$name"
            tls_json=",\"tls\":{\"ca_file\":\"$WORK/tls/ca.pem\"}" ;;
        tcp) sargs+=(--tcp-port "$lport"); url="tcp://127.0.0.1:$lport"; enc=frame ;;
        tls)
            make_certs
            sargs+=(--tls-port "$lport" --cert "$WORK/tls/server.pem" --key "$WORK/tls/server.key")
            url="tls://localhost:$lport"; enc=frame
            tls_json=",\"tls\":{\"ca_file\":\"$WORK/tls/ca.pem\"}" ;;
        *) die "profile $PROFILE: feed '$f': transport must be http2, https, tcp or tls" ;;
        esac
        "$BIN_SINK" "${sargs[@]}" --summary-file "$d/sink-$name.json" >"$d/sink-$name.out" 2>"$d/sink-$name.log" &
        PIDS+=("$!")
        run_pids+=("$!")
        COMP_PIDS[sink]+="$! "
        feed_names+=("$name")
        feed_kinds+=("$kind")
        sink_mports+=("$mport")
        feeds_json+="$sep{\"name\":\"$pfx$name\",\"source_topic\":\"${pfx}MAIN\",\"encoding\":\"$enc\",\"transport\":\"${kind/https/http2}\""
        feeds_json+=",\"endpoints\":[{\"url\":\"$url\"}],\"delivery\":{\"batch_max\":$BATCH_MAX,\"max_in_flight\":$MAX_IN_FLIGHT}$tls_json}"
        sep=","
    done
    feeds_json+="]"
    echo "{\"feeds\":$feeds_json}" | jq . >"$d/feeds.json" || die "feeds file for $PROFILE is not JSON"

    # aggregation, one worker per NF type of the mix
    local mix_item
    for mix_item in ${NF_MIX//,/ }; do
        nf_types+=("${mix_item%%=*}")
    done
    local agg_ports=()
    for name in "${nf_types[@]}"; do
        take_port
        agg_ports+=("$PORT")
        "$BIN_AGG" --nf-type "$name" --bootstrap "$CLIENT_BOOTSTRAP" "${DAEMON_KAFKA[@]}" "${AGG_KAFKA[@]}" --topic "$pfx$name" \
            --main-topic "${pfx}MAIN" --dlq-topic "${pfx}dlq-aggregation" \
            --group "ndd-agg-$pfx$name" --main-partitions "$PARTITIONS" \
            --http.port "$PORT" --log.level warn ${AGG_ARGS:-} >"$d/agg-$name.log" 2>&1 &
        PIDS+=("$!")
        run_pids+=("$!")
        COMP_PIDS[aggregation]+="$! "
    done
    take_port
    local ada_port=$PORT
    "$BIN_ADA" --bootstrap "$CLIENT_BOOTSTRAP" "${DAEMON_KAFKA[@]}" --feeds-file "$d/feeds.json" --http.port "$ada_port" \
        --log.level info ${ADA_ARGS:-} >"$d/adapter.log" 2>&1 &
    PIDS+=("$!")
    run_pids+=("$!")
    COMP_PIDS[adapter]+="$! "

    local corr_port=""
    if ((CORRELATION)); then
        [[ -x $BIN_CORR ]] || die "$BIN_CORR is not built (cmake --build $BUILD --target ndd-correlation)"
        take_port
        corr_port=$PORT
        # its own consumer group on this run's MAIN, xDRs to this run's XDR
        "$BIN_CORR" --bootstrap "$CLIENT_BOOTSTRAP" "${DAEMON_KAFKA[@]}" --main-topic "${pfx}MAIN" --xdr-topic "${pfx}XDR" \
            --dlq-topic "${pfx}dlq-correlation" --group "ndd-corr-$pfx" --main-partitions "$PARTITIONS" \
            --http.port "$corr_port" --log.level warn >"$d/correlation.log" 2>&1 &
        PIDS+=("$!")
        run_pids+=("$!")
        COMP_PIDS[correlation]+="$! "
    fi

    for i in "${!agg_ports[@]}"; do wait_ready "ndd-aggregation ${nf_types[$i]}" "http://127.0.0.1:${agg_ports[$i]}/readyz" 30; done
    wait_ready ndd-adapter "http://127.0.0.1:$ada_port/readyz" 30
    [[ -n $corr_port ]] && wait_ready ndd-correlation "http://127.0.0.1:$corr_port/readyz" 30
    for i in "${!sink_mports[@]}"; do wait_ready "ndd-sink ${feed_names[$i]}" "http://127.0.0.1:${sink_mports[$i]}/healthz" 10; done
    # Traffic starts once every consumer group holds its partitions, so the figures are those
    # of the steady state, not of group joins (which would show as seconds of latency).
    local want=$((${#nf_types[@]} + ${#feed_names[@]} + (CORRELATION ? 1 : 0))) have=0 wait_until=$((SECONDS + 60)) m ada_metrics
    while ((SECONDS < wait_until)); do
        have=0
        for i in "${!agg_ports[@]}"; do
            m=$( (http_get "http://127.0.0.1:${agg_ports[$i]}/metrics" || true) | awk '/^ndd_aggregation_partitions_assigned/{s+=$NF} END{print s+0}')
            ((m > 0)) && have=$((have + 1))
        done
        # The adapter's gauge, not its log: one scrape for all feeds, exact label match.
        ada_metrics=$(http_get "http://127.0.0.1:$ada_port/metrics" || true)
        for name in "${feed_names[@]}"; do
            m=$(assigned_partitions "$ada_metrics" "$pfx$name")
            ((m > 0)) && have=$((have + 1))
        done
        if [[ -n $corr_port ]]; then
            m=$( (http_get "http://127.0.0.1:$corr_port/metrics" || true) | awk '/^ndd_correlation_partitions_assigned/{s+=$NF} END{print s+0}')
            ((m > 0)) && have=$((have + 1))
        fi
        ((have == want)) && break
        sleep 0.5
    done
    ((have == want)) || say "warning: only $have of $want consumer groups had partitions after 60 s; starting anyway"

    local travel_pid=""
    if ((TRAVEL)); then
        # MAIN, and the NF topics themselves: NF -> NF topic is Kafka alone on this machine,
        # the floor under every NDD latency figure of the same run.
        local -a ttopics=(--topic "${pfx}MAIN") tquiet=(--quiet)
        for name in "${nf_types[@]}"; do ttopics+=(--topic "$pfx$name"); done
        # XDR too (travel to the xDR, by completion); its progress lines tell when it has read
        # every xDR, so it is not stopped before the last ones
        if ((CORRELATION)); then
            ttopics+=(--topic "${pfx}XDR")
            tquiet=()
        fi
        "$BIN_TRAVEL" --bootstrap "$BOOTSTRAP" "${ttopics[@]}" --group "ndd-travel-$pfx" \
            --duration $((dur + DRAIN_TIMEOUT + 60)) "${tquiet[@]}" >"$d/travel.json" 2>"$d/travel.log" &
        travel_pid=$!
        PIDS+=("$travel_pid")
        run_pids+=("$travel_pid")
        COMP_PIDS[travel]+="$travel_pid "
    fi

    # the measured window starts here
    local comp pid
    declare -A T0=()
    for comp in "${!COMP_PIDS[@]}"; do
        for pid in ${COMP_PIDS[$comp]}; do T0[$pid]=$(cpu_ticks "$pid"); done
    done
    [[ -n $KAFKA_PID ]] && T0[$KAFKA_PID]=$(cpu_ticks "$KAFKA_PID")
    local start_ns
    start_ns=$(date +%s%N)
    say "run $tag: $rate copies/s for ${dur}s, NF mix $NF_MIX, size $SIZE, feeds: $FEEDS"
    "$BIN_SIM" --bootstrap "$CLIENT_BOOTSTRAP" "${SIM_KAFKA[@]}" --rate "$rate" --duration "$dur" --nf-mix "$NF_MIX" \
        --size "$SIZE" --copies "$COPIES" --topic-prefix "$pfx" --partitions "$PARTITIONS" \
        --seq-start 0 ${SIM_ARGS:-} >"$d/nfsim.json" 2>"$d/nfsim.log" &
    local sim_pid=$!
    PIDS+=("$sim_pid")
    COMP_PIDS[nf-sim]="$sim_pid "
    T0[$sim_pid]=$(cpu_ticks "$sim_pid")

    # progress once per second; sim CPU/RSS sampled while it lives (it exits before the end)
    local sim_ticks=0 sim_rss=0 produced=0 s u next_rss=0
    if ((RSS_SAMPLE_S > 0)); then echo "t_s,component,pid,rss_kb" >"$d/rss.csv"; fi
    while kill -0 "$sim_pid" 2>/dev/null; do
        sleep 1
        if ((RSS_SAMPLE_S > 0 && SECONDS >= next_rss)); then
            rss_sample "$d/rss.csv" "$start_ns"
            next_rss=$((SECONDS + RSS_SAMPLE_S))
        fi
        s=$(cpu_ticks "$sim_pid")
        ((s > sim_ticks)) && sim_ticks=$s
        s=$(peak_rss_kb "$sim_pid")
        [[ -n $s ]] && ((s > sim_rss)) && sim_rss=$s
        produced=$( (grep -o 'produced [0-9]*' "$d/nfsim.log" 2>/dev/null || true) | tail -n1 | awk '{print $2}')
        produced=${produced:-0}
        progress_line "$d" "$start_ns" "$produced"
    done
    wait "$sim_pid" || say "ndd-nf-sim exited with status $? (see $d/nfsim.log)"
    [[ -s $d/nfsim.json ]] || die "ndd-nf-sim printed no summary: $(tail -5 "$d/nfsim.log")"
    produced=$(jq -r .acked "$d/nfsim.json")

    # drain: until every feed's sink has every copy (or the copy is dead-lettered), bounded
    local drained=1
    wait_delivered "$d" "$start_ns" "$produced" "$DRAIN_TIMEOUT" "$DRAIN_IDLE" drain || drained=0
    # correlation: the last transactions close at the latest at its timeout (5 s); the window
    # ends when every copy was read from MAIN and no transaction is open or unacknowledged
    local xdr_json=null
    if [[ -n $corr_port ]]; then
        local cm cdl=$((SECONDS + 20))
        while :; do
            cm=$(http_get "http://127.0.0.1:$corr_port/metrics" || true)
            awk -v want="$produced" '/^ndd_correlation_messages_consumed_total/{c+=$NF} /^ndd_correlation_transactions_open/{o+=$NF}
                /^ndd_correlation_messages_in_flight/{u+=$NF} END{exit !(c >= want && o == 0 && u == 0)}' <<<"$cm" && break
            ((SECONDS >= cdl)) && { say "correlation: transactions still open after 20 s"; break; }
            sleep 0.5
        done
        xdr_json=$(awk '/^ndd_correlation_xdrs_produced_total/{x+=$NF} /^ndd_correlation_messages_consumed_total/{c+=$NF}
            /^ndd_correlation_messages_dead_lettered_total/{d+=$NF} /^ndd_correlation_transactions_open/{o+=$NF}
            /^ndd_correlation_transactions_total\{/{if (match($1, /completion="[a-z]*"/)) n[substr($1, RSTART + 12, RLENGTH - 13)] += $NF}
            END{printf "{\"records\":%d,\"consumed\":%d,\"dead_lettered\":%d,\"open\":%d,\"completion\":{", x, c, d, o
                for (k in n) printf "%s\"%s\":%d", (i++ ? "," : ""), k, n[k]; printf "}}"}' <<<"$cm")
    fi
    local end_ns window
    end_ns=$(date +%s%N)
    window=$(awk -v a="$start_ns" -v b="$end_ns" 'BEGIN{printf "%.3f", (b-a)/1e9}')

    # end of the window: CPU and peak RSS per component
    local cpu_json="{" rss_json="{" csep=""
    for comp in "${!COMP_PIDS[@]}"; do
        local ticks=0 rss=0 t
        for pid in ${COMP_PIDS[$comp]}; do
            if [[ $pid == "$sim_pid" ]]; then
                t=$((sim_ticks - T0[$pid]))
                rss=$((rss + sim_rss))
            else
                t=$(($(cpu_ticks "$pid") - T0[$pid]))
                rss=$((rss + $(peak_rss_kb "$pid")))
            fi
            ((t > 0)) && ticks=$((ticks + t))
        done
        cpu_json+="$csep\"$comp\":$(awk -v t=$ticks -v h="$CLK_TCK" 'BEGIN{printf "%.2f", t/h}')"
        rss_json+="$csep\"$comp\":$(awk -v k=$rss 'BEGIN{printf "%.1f", k/1024}')"
        csep=","
    done
    if [[ -n $KAFKA_PID ]] && kill -0 "$KAFKA_PID" 2>/dev/null; then
        cpu_json+="$csep\"kafka\":$(awk -v t=$(($(cpu_ticks "$KAFKA_PID") - T0[$KAFKA_PID])) -v h="$CLK_TCK" 'BEGIN{printf "%.2f", t/h}')"
        rss_json+="$csep\"kafka\":$(awk -v k="$(peak_rss_kb "$KAFKA_PID")" 'BEGIN{printf "%.1f", k/1024}')"
    fi
    cpu_json+="}"
    rss_json+="}"

    # Not drained in the window: the copies still on their way are not lost yet. Outside the
    # window (figures above are kept), wait for them so that `lost` counts copies that never
    # arrive, not copies that arrive late; `drained_in_window` says which case this was.
    local settle_s=0
    if ((!drained)); then
        local t_settle=$SECONDS
        say "settle: waiting (outside the measured window) for the copies still on their way"
        wait_delivered "$d" "$start_ns" "$produced" "$SETTLE_TIMEOUT" "$SETTLE_IDLE" settle || true
        settle_s=$((SECONDS - t_settle))
    fi

    # sink summaries, offsets and lag, then stop this run's processes
    local sinks_json="{" ssep=""
    for i in "${!sink_mports[@]}"; do
        s=$(http_get "http://127.0.0.1:${sink_mports[$i]}/summary") || s='{}'
        sinks_json+="$ssep\"${feed_names[$i]}\":{\"transport\":\"${feed_kinds[$i]}\",\"dlq\":$(dlq_topic_records "ndd.dlq.$pfx${feed_names[$i]}"),\"summary\":$s}"
        ssep=","
    done
    sinks_json+="}"
    local -a groups=()
    for name in "${nf_types[@]}"; do groups+=(--group "ndd-agg-$pfx$name"); done
    for name in "${feed_names[@]}"; do groups+=(--group "ndd-feed-$pfx$name"); done
    # end offsets of the NF topics and MAIN, lag of every group at the end of the window
    local -a otopics=(--topic "${pfx}MAIN")
    for name in "${nf_types[@]}"; do otopics+=(--topic "$pfx$name"); done
    "$BIN_OFF" --bootstrap "$BOOTSTRAP" "${otopics[@]}" "${groups[@]}" \
        >"$d/offsets.json" 2>"$d/offsets.log" || say "ndd-offsets: $(head -3 "$d/offsets.log")"
    local agg_dlq
    agg_dlq=$(dlq_topic_records "${pfx}dlq-aggregation")
    if [[ -n $travel_pid && $xdr_json != null ]]; then
        # outside the measured window: wait (bounded) until the probe has read every xDR
        local want_x seen_x tdl=$((SECONDS + 10))
        want_x=$(jq -r '.records' <<<"$xdr_json")
        while :; do
            seen_x=$(travel_read "$d/travel.log" "${pfx}XDR")
            ((seen_x >= want_x)) && break
            ((SECONDS >= tdl)) && { say "travel: read $seen_x of $want_x xDRs after 10 s"; break; }
            sleep 0.5
        done
    fi
    if [[ -n $travel_pid ]]; then stop_pid "$travel_pid" 10; fi
    for pid in "${run_pids[@]}"; do stop_pid "$pid" 15; done
    # reaped: forget them, so the exit trap can never signal a recycled PID
    forget_pids "${run_pids[@]}" "$sim_pid"
    local travel_json='null' rss_series='null'
    [[ -s $d/travel.json ]] && travel_json=$(tail -n1 "$d/travel.json")
    ((RSS_SAMPLE_S > 0)) && rss_series=$(rss_series_json "$d/rss.csv")
    jq -n --arg tag "$tag" --argjson rate "$rate" --argjson dur "$dur" --argjson window "$window" \
        --argjson nfsim "$(cat "$d/nfsim.json")" --argjson sinks "$sinks_json" \
        --argjson agg_dlq "$agg_dlq" --argjson cpu "$cpu_json" --argjson rss "$rss_json" \
        --argjson travel "$travel_json" --argjson xdr "$xdr_json" \
        --argjson offsets "$(tail -n1 "$d/offsets.json" 2>/dev/null | grep . || echo null)" \
        --argjson drained "$( ((drained)) && echo true || echo false)" --argjson settle "$settle_s" \
        --argjson rss_series "$rss_series" \
        '{tag:$tag, rate:$rate, duration:$dur, window_s:$window, nfsim:$nfsim, sinks:$sinks,
          agg_dlq:$agg_dlq, cpu_s:$cpu, rss_mb:$rss, travel:$travel, xdr:$xdr, offsets:$offsets,
          drained_in_window:$drained, settle_s:$settle, rss_series:$rss_series}' \
        >"$WORK/$tag.result.json"
}

# Records of TOPIC read so far by ndd-travel, from its last progress line
# ("travel: ... TOPIC N p99 ..."), 0 before the first one.
travel_read() { # log topic
    (grep -a '^travel:' "$1" 2>/dev/null || true) | tail -n 1 |
        awk -v t="$2" '{for (i = 2; i < NF; i++) if ($i == t) v = $(i + 1)} END {print v + 0}'
}

# Records in a topic (0 when it does not exist: nothing was dead-lettered there).
dlq_topic_records() {
    local out
    out=$("$BIN_OFF" --bootstrap "$BOOTSTRAP" --topic "$1" --timeout-ms 3000 2>/dev/null) || true
    [[ -n $out ]] || { echo 0; return; }
    jq -r --arg t "$1" '.topics[$t].records // 0' <<<"$out"
}
dlq_total() { # prefix -> records in the aggregation DLQ and every feed DLQ
    local n f
    n=$(dlq_topic_records "${1}dlq-aggregation")
    for f in $FEEDS; do n=$((n + $(dlq_topic_records "ndd.dlq.$1${f%%:*}"))); done
    echo "$n"
}

# One progress line from the simulator's log and the sinks' /summary.
declare -A PREV_U=()
PREV_T=0
progress_line() { # dir start_ns produced
    ((QUIET)) && return 0
    local d=$1 el now i u s p99 rate line
    now=$(date +%s%N)
    el=$(awk -v a="$2" -v b="$now" 'BEGIN{printf "%.0f", (b-a)/1e9}')
    line=$(printf '[%4ss] ingress %9s (%s/s)' "$el" "$(fmt "$3")" "$( (grep -o '([0-9]*/s)' "$d/nfsim.log" 2>/dev/null || true) | tail -n1 | tr -dc 0-9)")
    for i in "${!sink_mports[@]}"; do
        s=$(http_get "http://127.0.0.1:${sink_mports[$i]}/summary") || s='{}'
        u=$(jq -r '.unique // 0' <<<"$s")
        p99=$(jq -r '.latency_ms.p99 // 0' <<<"$s")
        rate=$((u - ${PREV_U[$i]:-0}))
        ((PREV_T == 0)) && rate=$u
        PREV_U[$i]=$u
        line+=$(printf ' | %s %9s (%s/s) p99 %s ms' "${feed_names[$i]}" "$(fmt "$u")" "$rate" "$(fmt "$p99" 1)")
    done
    PREV_T=$now
    echo "$line" >&2
}

# ---- baselines: h2load against a sink, librdkafka produce-only and consume-only ----
run_baselines() {
    local out="$WORK/baselines.json" parts=()
    if [[ " $BASELINES " == *" h2load "* ]]; then
        if command -v h2load >/dev/null; then
            take_port
            local lp=$PORT
            take_port
            local mp=$PORT
            local bsize
            bsize=$(size_bytes typical)
            head -c "$bsize" /dev/zero | tr '\0' 'x' >"$WORK/h2load.body"
            # over TLS when the profile's first feed is https, so the limit matches the feed
            local scheme=http host=127.0.0.1 first=${FEEDS%% *}
            local -a lsn=(--h2-port "$lp")
            if [[ ${first#*:} == https ]]; then
                make_certs
                scheme=https host=localhost
                lsn=(--h2tls-port "$lp" --cert "$WORK/tls/server.pem" --key "$WORK/tls/server.key")
            fi
            "$BIN_SINK" "${lsn[@]}" --metrics-port "$mp" --log.level warn >"$WORK/h2load-sink.out" 2>&1 &
            local spid=$!
            PIDS+=("$spid")
            wait_ready "h2load sink" "http://127.0.0.1:$mp/healthz" 10
            local t0 n=$BASELINE_COUNT
            t0=$(cpu_ticks "$spid")
            say "baseline: h2load, $n POSTs of $bsize bytes to ndd-sink ($scheme, 4 connections x 32 streams)"
            h2load -n "$n" -c 4 -m 32 -t 1 -d "$WORK/h2load.body" -H 'content-type: application/octet-stream' \
                "$scheme://$host:$lp/" >"$WORK/h2load.out" 2>&1 || say "h2load failed: $(tail -3 "$WORK/h2load.out")"
            local t1 rps ok cpu
            t1=$(cpu_ticks "$spid")
            rps=$(awk '/^finished in/{gsub(",","",$4); print $4}' "$WORK/h2load.out")
            ok=$(awk '/^requests:/{print $8}' "$WORK/h2load.out")
            cpu=$(awk -v t=$((t1 - t0)) -v h="$CLK_TCK" 'BEGIN{printf "%.2f", t/h}')
            parts+=("\"h2load_sink\":{\"scheme\":\"$scheme\",\"requests\":$n,\"succeeded\":${ok:-0},\"rps\":${rps:-0},\"sink_cpu_s\":$cpu,\"sink_msgs_per_cpu_s\":$(awk -v n="${ok:-0}" -v c="$cpu" 'BEGIN{printf "%.0f", (c > 0 ? n / c : 0)}'),\"sink_rss_mb\":$(awk -v k="$(peak_rss_kb "$spid")" 'BEGIN{printf "%.1f", k/1024}')}")
            stop_pid "$spid" 5
            forget_pids "$spid"
        else
            say "baseline h2load skipped: h2load missing (Debian package nghttp2-client)"
        fi
    fi
    if [[ " $BASELINES " == *" kafka "* ]]; then
        local bsize topic="baseline-$RANDOM"
        bsize=$(size_bytes typical)
        # plaintext and uncompressed whatever the profile's clients do: its records are a run
        # of 'x' (lz4 would shrink them ~250:1, a limit no real traffic has)
        say "baseline: librdkafka produce-only then consume-only, $BASELINE_COUNT records of $bsize bytes"
        local p c
        p=$("$BIN_KB" --mode produce --bootstrap "$BOOTSTRAP" --topic "$topic" --count "$BASELINE_COUNT" --size "$bsize" 2>"$WORK/kb.log") || say "produce baseline failed: $(tail -3 "$WORK/kb.log")"
        c=$("$BIN_KB" --mode consume --bootstrap "$BOOTSTRAP" --topic "$topic" --count "$BASELINE_COUNT" --timeout 60 2>>"$WORK/kb.log") || say "consume baseline failed: $(tail -3 "$WORK/kb.log")"
        [[ -n $p ]] && parts+=("\"kafka_produce\":$p")
        [[ -n $c ]] && parts+=("\"kafka_consume\":$c")
    fi
    local IFS=,
    echo "{${parts[*]}}" >"$out"
}

# ---- figures of one run -> the JSON object of the final line ----
# delivered = the fewest distinct @seq any feed's sink received (every feed must carry every
# copy); lost = produced − delivered − dead_lettered for that feed, the worst feed.
summarise() { # result.json baselines.json profile
    jq -c --arg profile "$3" --slurpfile b "$2" --arg sec "$KAFKA_SECURITY" --arg comp "$COMPRESSION" \
        --arg linger "$LINGER_MS" --arg batch "$BATCH_BYTES" --arg props "$KAFKA_PROPS" '
      def tfig: if . then {avg:.avg_ms, p50:.p50_ms, p99:.p99_ms, max:.max_ms, records} else null end;
      . as $r
      | (($r.travel.topics // {}) | to_entries) as $tt
      | ($r.nfsim.acked) as $produced
      | [ $r.sinks | to_entries[] | {name:.key, transport:.value.transport,
            unique:(.value.summary.unique // 0), dups:(.value.summary.duplicates // 0),
            dead:(.value.dlq + $r.agg_dlq), lat:(.value.summary.latency_ms // {}),
            rate:(.value.summary.rate_mps // 0), received:(.value.summary.received // 0)} ] as $f
      | ($f | min_by(.unique)) as $worst
      | ($f | map(.lat.count // 0) | add) as $lc
      | {profile:$profile, produced:$produced, delivered:$worst.unique, dead_lettered:$worst.dead,
         lost:([$f[] | $produced - .unique - .dead] | max | if . < 0 then 0 else . end),
         duplicates:($f | map(.dups) | add), mps:$r.nfsim.achieved_mps,
         e2e_ms:{avg:(if $lc > 0 then ($f | map((.lat.avg // 0) * (.lat.count // 0)) | add) / $lc else 0 end),
                 p50:($f | map(.lat.p50 // 0) | max), p99:($f | map(.lat.p99 // 0) | max),
                 max:($f | map(.lat.max // 0) | max)},
         cpu_s:$r.cpu_s,
         msgs_per_cpu_s:($r.cpu_s | with_entries(.value as $c
            | .value = (if $c <= 0 then null
                        elif .key == "adapter" or .key == "sink" then (($f | map(.received) | add) / $c)
                        else $produced / $c end | if . == null then null else floor end))),
         rss_mb:$r.rss_mb, rss_series:($r.rss_series // null),
         per_core:{ndd:((($r.cpu_s.aggregation // 0) + ($r.cpu_s.adapter // 0)) as $c
                        | (if $c > 0 then ($produced / $c | floor) else null end)),
                   ndd_with_kafka:((($r.cpu_s.aggregation // 0) + ($r.cpu_s.adapter // 0) + ($r.cpu_s.kafka // 0)) as $c
                        | (if $c > 0 then ($produced / $c | floor) else null end))},
         rate:$r.rate, target_missed:$r.nfsim.target_missed, window_s:$r.window_s,
         drained_in_window:($r.drained_in_window // true), settle_s:($r.settle_s // 0), xdr:($r.xdr // null),
         feeds:($f | map({key:.name, value:{transport, delivered:.unique, duplicates:.dups,
                 dead_lettered:.dead, egress_mps:.rate, p99_ms:(.lat.p99 // 0)}}) | from_entries),
         travel_main_ms:($tt | map(select(.key | endswith("MAIN"))) | .[0].value | tfig),
         travel_nf_topic_ms:($tt | map(select(.key | (endswith("MAIN") or endswith("XDR")) | not))
                 | .[0].value | tfig),
         travel_xdr_ms:($tt | map(select(.key | endswith("XDR"))) | .[0].value
                 | if . then tfig + {no_timestamp, binary:(.binary // 0),
                         completion:((.completion // {}) | map_values(tfig))} else null end),
         kafka_clients:{security:$sec, compression:$comp,
                 linger_ms:(if $linger == "" then null else ($linger | tonumber) end),
                 batch_bytes:(if $batch == "" then null else ($batch | tonumber) end),
                 props:($props | split(" ") | map(select(. != "")))},
         baselines:($b[0] // {})}' "$1"
}

print_table() { # summary-json
    local j=$1 success
    success=$(jq -r 'if .produced > 0 then (100 * (.produced - .lost) / .produced) else 0 end' <<<"$j")
    echo
    echo "NDD benchmark — profile $PROFILE: $DESCRIPTION"
    echo "Kafka clients (ndd-nf-sim, NDD): $(jq -r '.kafka_clients | "\(if .security == "sasl_ssl" then "SASL_SSL (SCRAM-SHA-512)" else "plaintext" end), compression \(.compression) on the NF topics and MAIN, linger.ms \(.linger_ms // "default"), batch.size \(.batch_bytes // "default")\(if (.props // []) | length > 0 then ", " + (.props | join(" ")) else "" end)"' <<<"$j")"
    echo "machine: $(nproc) CPU ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(free -g | awk '/^Mem:/{print $2}') GiB, load average at the end $(cut -d' ' -f1-3 /proc/loadavg); Kafka $BOOTSTRAP (single broker, same host$([[ $KAFKA_SECURITY == sasl_ssl ]] && echo "; pipeline on its SASL_SSL listener${CLIENT_BOOTSTRAP:+ $CLIENT_BOOTSTRAP}, probes on plaintext"))"
    echo
    printf '| %-44s | %18s |\n' "Metric" "Value"
    printf '|%s|%s|\n' "----------------------------------------------" "--------------------"
    printf '| %-44s | %18s |\n' "Target rate (copies/s)" "$(fmt "$(jq .rate <<<"$j")")"
    printf '| %-44s | %18s |\n' "Ingress rate, achieved (MPS)" "$(fmt "$(jq .mps <<<"$j")")"
    local fname
    for fname in $(jq -r '.feeds | keys[]' <<<"$j"); do
        printf '| %-44s | %18s |\n' "Egress rate feed $fname ($(jq -r --arg f "$fname" '.feeds[$f].transport' <<<"$j")) (MPS)" \
            "$(fmt "$(jq --arg f "$fname" '.feeds[$f].egress_mps' <<<"$j")")"
    done
    printf '| %-44s | %18s |\n' "Produced / delivered / dead-lettered" "$(jq -r '"\(.produced)/\(.delivered)/\(.dead_lettered)"' <<<"$j")"
    printf '| %-44s | %18s |\n' "Lost / duplicates" "$(jq -r '"\(.lost) / \(.duplicates)"' <<<"$j")"
    if jq -e '.rss_series' <<<"$j" >/dev/null; then
        local c
        for c in $(jq -r '.rss_series.components | keys[]' <<<"$j"); do
            printf '| %-44s | %18s |\n' "RSS $c first / last MiB, slope MiB/h" \
                "$(jq -r --arg c "$c" '.rss_series.components[$c] | "\(.first_mb) / \(.last_mb), \(.slope_mb_per_h)"' <<<"$j")"
        done
        printf '| %-44s | %18s |\n' "RSS flat (slope <= $(jq -r .rss_series.limit_mb_per_h <<<"$j") MiB/h, every daemon)" "$(jq -r '.rss_series.flat' <<<"$j")"
    fi
    if jq -e '.drained_in_window == false' <<<"$j" >/dev/null; then
        printf '| %-44s | %18s |\n' "Drained in the measured window" "$(jq -r '"no (+\(.settle_s) s)"' <<<"$j")"
    fi
    printf '| %-44s | %18s |\n' "Average E2E latency NF -> sink (ms)" "$(fmt "$(jq .e2e_ms.avg <<<"$j")" 2)"
    printf '| %-44s | %18s |\n' "p50 / p99 / max E2E latency (ms)" "$(jq -r '.e2e_ms | "\(.p50*100|round/100) / \(.p99*100|round/100) / \(.max*100|round/100)"' <<<"$j")"
    if jq -e '.travel_main_ms' <<<"$j" >/dev/null; then
        printf '| %-44s | %18s |\n' "Travel NF -> MAIN avg / p99 (ms, probe)" "$(jq -r '.travel_main_ms | "\(.avg*100|round/100) / \(.p99*100|round/100)"' <<<"$j")"
        printf '| %-44s | %18s |\n' "Kafka alone NF -> NF topic avg / p99 (ms)" "$(jq -r '.travel_nf_topic_ms | if . then "\(.avg*100|round/100) / \(.p99*100|round/100)" else "-" end' <<<"$j")"
    fi
    if jq -e '.xdr' >/dev/null <<<"$j"; then
        printf '| %-44s | %18s |\n' "xDRs to XDR (ndd-correlation)" "$(jq -r '.xdr.records' <<<"$j")"
        printf '| %-44s | %18s |\n' "  by completion" "$(jq -r '.xdr.completion | to_entries | map("\(.key) \(.value)") | join(", ")' <<<"$j")"
        if jq -e '.travel_xdr_ms' <<<"$j" >/dev/null; then
            printf '| %-44s | %18s |\n' "Travel NF -> XDR avg / p99 (ms, probe, all)" "$(jq -r '.travel_xdr_ms | "\(.avg*100|round/100) / \(.p99*100|round/100)"' <<<"$j")"
            local cname
            for cname in $(jq -r '.travel_xdr_ms.completion | to_entries[] | select(.value.records > 0) | .key' <<<"$j"); do
                printf '| %-44s | %18s |\n' "  $cname: avg / p99 (ms), xDRs read" \
                    "$(jq -r --arg c "$cname" '.travel_xdr_ms.completion[$c] | "\(.avg*100|round/100) / \(.p99*100|round/100), \(.records)"' <<<"$j")"
            done
        fi
    fi
    printf '| %-44s | %17s%% |\n' "Success rate" "$(fmt "$success" 3)"
    echo
    printf '| %-12s | %9s | %7s | %13s | %17s |\n' "Component" "CPU s" "CPU %" "Peak RSS MiB" "msgs / CPU-second"
    printf '|%s|%s|%s|%s|%s|\n' "--------------" "-----------" "---------" "---------------" "-------------------"
    local comp w
    w=$(jq .window_s <<<"$j")
    for comp in $(jq -r '.cpu_s | keys[]' <<<"$j"); do
        printf '| %-12s | %9s | %7s | %13s | %17s |\n' "$comp" \
            "$(fmt "$(jq --arg c "$comp" '.cpu_s[$c]' <<<"$j")" 2)" \
            "$(fmt "$(jq --arg c "$comp" --argjson w "$w" '100 * .cpu_s[$c] / $w' <<<"$j")" 1)" \
            "$(fmt "$(jq --arg c "$comp" '.rss_mb[$c] // 0' <<<"$j")" 1)" \
            "$(fmt "$(jq --arg c "$comp" '.msgs_per_cpu_s[$c] // 0' <<<"$j")")"
    done
    echo "(measured window ${w}s: traffic + drain; CPU % of one core; msgs = copies handled by that component)"
    echo "Whole pipeline: $(fmt "$(jq '.per_core.ndd // 0' <<<"$j")") copies per CPU-second of NDD (aggregation + adapter), $(fmt "$(jq '.per_core.ndd_with_kafka // 0' <<<"$j")") with the Kafka broker"
    if jq -e '.baselines | length > 0' <<<"$j" >/dev/null; then
        echo
        echo "Local limits (baselines, same machine, same run):"
        jq -r '.baselines | to_entries[] | "  \(.key): " + (.value | to_entries | map("\(.key)=\(.value)") | join(" "))' <<<"$j"
    fi
    [[ -n $OCNADD ]] && { echo; echo "OCNADD published: $OCNADD"; }
    echo
}

# ---- main ----
if ((REPORT_ONLY)); then
    [[ -f $WORK/run.result.json ]] || die "--report-only: no $WORK/run.result.json"
    [[ -f $WORK/baselines.json ]] || echo '{}' >"$WORK/baselines.json"
    KEEP=1
    final=$(summarise "$WORK/run.result.json" "$WORK/baselines.json" "$PROFILE")
    BOOTSTRAP="(kept run)"
    print_table "$final"
    echo "$final"
    exit 0
fi
# The baselines run first: besides giving the local limits, their produce and fetch traffic
# warms the broker's JIT, which otherwise costs the first measured run ~6 CPU-seconds of
# compilation counted as the broker's CPU (measured: 17.0 vs 10.5 CPU-s, same run twice).
if [[ -n $BASELINES ]]; then run_baselines; else echo '{}' >"$WORK/baselines.json"; fi
if [[ -n $STEPS ]]; then
    best=""
    steps_json="["
    ssep=""
    n=0
    for r in $STEPS; do
        n=$((n + 1))
        run_once "s$n" "$r" "$DURATION"
        echo '{}' >"$WORK/nobase.json"
        sj=$(summarise "$WORK/s$n.result.json" "$WORK/nobase.json" "$PROFILE")
        steps_json+="$ssep$(jq -c '{rate, mps, delivered, lost, dead_lettered, duplicates, p99_ms:.e2e_ms.p99, kafka_alone_p99_ms:(.travel_nf_topic_ms.p99 // null), window_s, drained_in_window, settle_s, target_missed, per_core, msgs_per_cpu_s}' <<<"$sj")"
        ssep=","
        # held = nothing lost, p99 under the limit, the simulator reached the rate, and the
        # pipeline kept up: delivery finished within MAX_DRAIN_S of the end of the traffic
        if jq -e --argjson lim "$P99_LIMIT_MS" --argjson dr "$MAX_DRAIN_S" --argjson d "$DURATION" \
            '.lost == 0 and .e2e_ms.p99 < $lim and (.target_missed | not) and (.window_s - $d) <= $dr' <<<"$sj" >/dev/null; then
            say "step $n: $r copies/s sustained (lost 0, p99 $(jq .e2e_ms.p99 <<<"$sj") ms)"
            best=s$n
        else
            say "step $n: $r copies/s NOT sustained: $(jq -c '{mps, lost, p99_ms:.e2e_ms.p99, target_missed}' <<<"$sj")"
            break
        fi
    done
    steps_json+="]"
    if [[ -n $best ]]; then
        final=$(summarise "$WORK/$best.result.json" "$WORK/baselines.json" "$PROFILE" |
            jq -c --argjson steps "$steps_json" '. + {max_sustained_mps:.mps, steps:$steps}')
    else
        # Not even the first step held: show it, say so, and fail.
        say "not even the first step ($(awk '{print $1}' <<<"$STEPS") copies/s) was sustained"
        final=$(summarise "$WORK/s1.result.json" "$WORK/baselines.json" "$PROFILE" |
            jq -c --argjson steps "$steps_json" '. + {max_sustained_mps:0, steps:$steps}')
    fi
else
    run_once run "$RATE" "$DURATION"
    final=$(summarise "$WORK/run.result.json" "$WORK/baselines.json" "$PROFILE")
fi
print_table "$final"
if [[ -n $STEPS ]]; then
    echo "Steps (held = lost 0, p99 < ${P99_LIMIT_MS} ms, rate reached, drained within ${MAX_DRAIN_S} s):"
    jq -r --argjson d "$DURATION" '.steps[] | "  \(.rate) copies/s: achieved \(.mps), lost \(.lost), p99 \(.p99_ms) ms (Kafka alone \(.kafka_alone_p99_ms) ms), drain \(((.window_s - $d) * 10 | round) / 10) s\(if .drained_in_window == false then " (not drained in the window; lost counted after \(.settle_s) s more)" else "" end), target missed \(.target_missed), NDD \(.per_core.ndd) copies per CPU-second"' <<<"$final"
    echo "Highest sustained: $(jq .max_sustained_mps <<<"$final") copies/s"
    echo
fi
echo "$final"
[[ $(jq .lost <<<"$final") == 0 ]] || exit 1
[[ -z $STEPS || $(jq .max_sustained_mps <<<"$final") != 0 ]] || exit 1
