# shellcheck shell=bash
# The multi-broker Kafka of the local stack: sourced by deploy/local/stack.sh for
# `start --brokers N` (N >= 2) and for the stop/status/destroy of a DIR that holds one.
#
# Layout: a controller-only process (node 0, DIR/kafka-controller) and N broker-only processes
# (nodes 1..N, DIR/kafka-1 .. DIR/kafka-N), each with its own server.properties, data/ folder,
# kafka.pid, kafka.out and log (DIR/kafka-<node>.log). The cluster's shape (brokers, ports,
# cluster id) is fixed at its first start in DIR/kafka-cluster and kept: a later `start` on the
# same DIR needs no port options and starts only the nodes that are not running (a broker
# killed by a test comes back on its port and data). The controller is a process of its own so
# that two of three brokers can be stopped without losing the metadata quorum
# (deploy/local/kafka/cluster-controller.properties.in says why).
#
# Uses stack.sh's DIR, KAFKA_PORT, CONTROLLER_PORT, KAFKA_PORTS, BROKERS, NODE, KAFKA_LIBS,
# KAFKA_VERSION, KAFKA_START_TIMEOUT, STOP_TIMEOUT, and its log/die/port_open/pid_alive/
# read_pid/wait_gone.

CLUSTER_CONF=$DIR/kafka-cluster

cluster_in_dir() { [[ -f $CLUSTER_CONF ]]; }

# The cluster's nodes: "controller" then 1..CL_BROKERS.
cluster_nodes() {
    local i
    echo controller
    for ((i = 1; i <= CL_BROKERS; i++)); do echo "$i"; done
}
node_dir() { echo "$DIR/kafka-$1"; }
node_log() { echo "$DIR/kafka-$1.log"; }
# A node's PID only when that process runs this node's config (not another node's, not a
# recycled PID).
node_pid() { read_pid "$(node_dir "$1")/kafka.pid" "$(node_dir "$1")/server.properties"; }
node_port() { # the node's listener port
    if [[ $1 == controller ]]; then echo "$CL_CONTROLLER_PORT"; else
        cut -d, -f"$1" <<<"$CL_PORTS"
    fi
}
cluster_bootstrap() {
    local i out=""
    for ((i = 1; i <= CL_BROKERS; i++)); do out+="${out:+,}127.0.0.1:$(node_port "$i")"; done
    echo "$out"
}

# Reads DIR/kafka-cluster into CL_*; without it (first start) makes it from the options.
cluster_load() {
    if cluster_in_dir; then
        # shellcheck disable=SC1090
        . "$CLUSTER_CONF"
        if [[ -n ${BROKERS_GIVEN:-} && $BROKERS != "$CL_BROKERS" ]]; then
            die "$DIR holds a $CL_BROKERS-broker cluster, not $BROKERS; destroy it first"
        fi
        return 0
    fi
    [[ $cmd == start ]] || return 1
    [[ -e $DIR/kafka ]] && die "$DIR holds a one-broker stack; use another --dir or destroy it first"
    local ports=$KAFKA_PORTS i p
    if [[ -z $ports ]]; then
        # Default: the four ports a one-broker stack on KAFKA_PORT takes (brokers 1, 2, 3 on
        # KAFKA_PORT, +2, +3, the controller on +1), then +4, +5 ... for more brokers.
        ports=$KAFKA_PORT
        for ((i = 2; i <= BROKERS; i++)); do ports+=",$((KAFKA_PORT + i))"; done
    fi
    IFS=, read -ra p <<<"$ports"
    ((${#p[@]} == BROKERS)) || die "--kafka-ports lists ${#p[@]} ports for $BROKERS brokers"
    for i in "${p[@]}"; do
        [[ $i =~ ^[0-9]+$ ]] && ((i > 0 && i < 65536 && i != CONTROLLER_PORT)) ||
            die "bad broker port '$i' in '$ports'"
    done
    [[ $(printf '%s\n' "${p[@]}" | sort -u | wc -l) == "$BROKERS" ]] || die "--kafka-ports repeats a port: $ports"
    # A cluster id: 16 random bytes, URL-safe base64 without padding, not starting with '-'.
    local cid=-
    while [[ $cid == -* ]]; do cid=$(head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n'); done
    printf 'CL_BROKERS=%s\nCL_CONTROLLER_PORT=%s\nCL_PORTS=%s\nCL_ID=%s\n' \
        "$BROKERS" "$CONTROLLER_PORT" "$ports" "$cid" >"$CLUSTER_CONF.tmp"
    mv "$CLUSTER_CONF.tmp" "$CLUSTER_CONF"
    . "$CLUSTER_CONF"
}

# The JVM of a node; the controller needs less heap. Short-lived tools (the storage format)
# run with C1 and the serial GC: about half the CPU of a default JVM for a one-shot task.
# Sets CL_JVM (an array: the classpath's '*' must reach java unexpanded).
cluster_jvm() { # node [tool]
    local d heap=512m gc=(-XX:+UseG1GC -XX:MaxGCPauseMillis=20)
    d=$(node_dir "$1")
    [[ $1 == controller ]] && heap=256m
    if [[ -n ${NDD_KAFKA_JVM_GC:-} ]]; then read -ra gc <<<"$NDD_KAFKA_JVM_GC"; fi
    [[ ${2:-} == tool ]] && gc=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC)
    CL_JVM=(java -Xms128m "-Xmx$heap" "${gc[@]}" -Djava.awt.headless=true
        "-Dlog4j.configuration=file:$d/log4j.properties" "-Dkafka.logs.dir=$d" -cp "$KAFKA_LIBS/*")
}

cluster_write_config() { # node
    local n=$1 d rf min_isr=1 tmpl=cluster-broker.properties.in id=$1
    d=$(node_dir "$n")
    mkdir -p "$d/data"
    rf=$((CL_BROKERS < 3 ? CL_BROKERS : 3))
    ((CL_BROKERS >= 3)) && min_isr=2
    [[ $n == controller ]] && { tmpl=cluster-controller.properties.in; id=0; }
    sed -e "s|@KAFKA_PORT@|$(node_port "$n")|g" -e "s|@CONTROLLER_PORT@|$CL_CONTROLLER_PORT|g" \
        -e "s|@NODE_ID@|$id|g" -e "s|@DATA_DIR@|$d/data|g" -e "s|@REPLICATION@|$rf|g" \
        -e "s|@MIN_ISR@|$min_isr|g" "$ROOT/deploy/local/kafka/$tmpl" >"$d/server.properties"
    if [[ -n ${NDD_KAFKA_EXTRA_PROPERTIES:-} ]]; then
        cat "$NDD_KAFKA_EXTRA_PROPERTIES" >>"$d/server.properties" ||
            die "NDD_KAFKA_EXTRA_PROPERTIES: cannot read $NDD_KAFKA_EXTRA_PROPERTIES"
    fi
    sed -e "s|@LOG_FILE@|$(node_log "$n")|g" "$ROOT/deploy/local/kafka/log4j.properties.in" \
        >"$d/log4j.properties"
}

# Formats the storage of the given nodes that have none. Only the controller's needs Kafka's
# StorageTool (its metadata log is bootstrapped with the metadata version); a broker's is its
# meta.properties (node, cluster, format version 1: the broker adds its directory.id at its
# first start) beside the controller's bootstrap.checkpoint, written here: three JVM starts
# less, several seconds of a loaded 2-core host.
cluster_format() {
    local n d c
    c=$(node_dir controller)/data
    for n in "$@"; do
        d=$(node_dir "$n")
        [[ -f $d/data/meta.properties ]] && continue
        [[ $n == controller ]] || continue
        log "formatting Kafka storage of the controller in $d/data (cluster $CL_ID)"
        cluster_jvm "$n" tool
        if ! "${CL_JVM[@]}" kafka.tools.StorageTool format -t "$CL_ID" -c "$d/server.properties" \
            >"$d/format.out" 2>&1 </dev/null 9>&-; then
            cat "$d/format.out" >&2
            die "Kafka storage format failed (output above)"
        fi
    done
    for n in "$@"; do
        d=$(node_dir "$n")/data
        [[ $n == controller || -f $d/meta.properties ]] && continue
        [[ -f $c/bootstrap.checkpoint ]] || die "$c/bootstrap.checkpoint is missing; destroy the cluster"
        cp "$c/bootstrap.checkpoint" "$d/"
        printf 'node.id=%s\nversion=1\ncluster.id=%s\n' "$n" "$CL_ID" >"$d/meta.properties.tmp"
        mv "$d/meta.properties.tmp" "$d/meta.properties"
    done
}

# Ready: every broker answers a metadata request that lists all CL_BROKERS brokers.
cluster_ready() {
    local i
    for ((i = 1; i <= CL_BROKERS; i++)); do
        kcat -L -b "127.0.0.1:$(node_port "$i")" -m 2 2>/dev/null | grep -q "^ *$CL_BROKERS brokers:" ||
            return 1
    done
}

cluster_start() {
    cluster_load
    [[ -f $KAFKA_LIBS/kafka_2.13-$KAFKA_VERSION.jar ]] || "$ROOT/deploy/local/install-deps.sh" --quiet
    [[ -f $KAFKA_LIBS/kafka_2.13-$KAFKA_VERSION.jar ]] || die "Kafka jars missing in $KAFKA_LIBS (run deploy/local/install-deps.sh)"
    command -v java >/dev/null || die "java not found (run deploy/local/install-deps.sh)"
    local n pid todo=() started=()
    for n in $(cluster_nodes); do
        if pid=$(node_pid "$n"); then
            log "Kafka node $n already running (pid $pid) on 127.0.0.1:$(node_port "$n")"
        else
            port_open "$(node_port "$n")" &&
                die "port $(node_port "$n") (Kafka node $n) is in use by another process; pick other ports"
            todo+=("$n")
        fi
    done
    for n in "${todo[@]}"; do cluster_write_config "$n"; done
    ((${#todo[@]})) && cluster_format "${todo[@]}"
    for n in "${todo[@]}"; do
        local d
        d=$(node_dir "$n")
        log "starting Kafka $KAFKA_VERSION node $n on 127.0.0.1:$(node_port "$n")"
        cluster_jvm "$n"
        setsid "${CL_JVM[@]}" kafka.Kafka "$d/server.properties" >"$d/kafka.out" 2>&1 </dev/null 9>&- &
        echo $! >"$d/kafka.pid"
        started+=("$n:$!")
    done
    local deadline=$((SECONDS + KAFKA_START_TIMEOUT)) s
    until cluster_ready; do
        for s in "${started[@]}"; do
            pid_alive "${s#*:}" && continue
            tail -n 40 "$(node_log "${s%%:*}")" "$(node_dir "${s%%:*}")/kafka.out" >&2 2>/dev/null || true
            cluster_kill_started "${started[@]}"
            die "Kafka node ${s%%:*} exited during start-up (logs above)"
        done
        if ((SECONDS >= deadline)); then
            for s in "${started[@]}"; do tail -n 20 "$(node_log "${s%%:*}")" >&2 2>/dev/null || true; done
            cluster_kill_started "${started[@]}"
            die "the Kafka cluster did not list $CL_BROKERS brokers on every broker within ${KAFKA_START_TIMEOUT}s"
        fi
        sleep 0.5
    done
    log "Kafka cluster ready: $CL_BROKERS brokers $(cluster_bootstrap), controller 127.0.0.1:$CL_CONTROLLER_PORT"
}

cluster_kill_started() { # node:pid...
    local s
    for s in "$@"; do kill "${s#*:}" 2>/dev/null || true; done
    for s in "$@"; do
        wait_gone "${s#*:}" 10 || kill -9 "${s#*:}" 2>/dev/null || true
        rm -f "$(node_dir "${s%%:*}")/kafka.pid"
    done
}

# Stops the given nodes: SIGTERM to all of them at once (a broker's controlled shutdown hands
# its partitions over), STOP_TIMEOUT seconds, then SIGKILL.
cluster_stop_nodes() {
    local n pid pids=() names=() i
    for n in "$@"; do
        if pid=$(node_pid "$n"); then
            log "stopping Kafka node $n (pid $pid)"
            kill -TERM "$pid" 2>/dev/null || true
            pids+=("$pid") names+=("$n")
        else
            rm -f "$(node_dir "$n")/kafka.pid"
        fi
    done
    for i in "${!pids[@]}"; do
        if ! wait_gone "${pids[$i]}" "$STOP_TIMEOUT"; then
            log "Kafka node ${names[$i]} did not stop in ${STOP_TIMEOUT}s; killing it"
            kill -KILL "${pids[$i]}" 2>/dev/null || true
            wait_gone "${pids[$i]}" 10 || die "Kafka node ${names[$i]} (pid ${pids[$i]}) survives SIGKILL"
        fi
        rm -f "$(node_dir "${names[$i]}")/kafka.pid"
    done
}

# Every broker first (their controlled shutdown needs the controller), then the controller;
# with NODE set, that broker alone.
cluster_stop() {
    cluster_load || return 0
    if [[ -n $NODE ]]; then
        ((NODE >= 1 && NODE <= CL_BROKERS)) || die "--node $NODE: the cluster has brokers 1..$CL_BROKERS"
        cluster_stop_nodes "$NODE"
        return 0
    fi
    cluster_stop_nodes $(cluster_nodes | grep -v controller)
    cluster_stop_nodes controller
}

cluster_status() {
    cluster_load || return 1
    local n pid rc=0
    for n in $(cluster_nodes); do
        if pid=$(node_pid "$n"); then
            echo "kafka-$n: running pid $pid, 127.0.0.1:$(node_port "$n")"
        else
            echo "kafka-$n: stopped (127.0.0.1:$(node_port "$n"))"
            rc=1
        fi
    done
    return $rc
}
