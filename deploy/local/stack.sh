#!/usr/bin/env bash
# The NDD local stack: a real single-node Apache Kafka 3.9.1 (KRaft, broker+controller) and a
# private PostgreSQL 15 cluster, both on 127.0.0.1 only, all state in one directory.
#
#   deploy/local/stack.sh start|stop|status [--dir DIR] [--kafka-port N] [--controller-port N]
#                         [--ssl-port N] [--sasl-port N] [--pg-port N] [--no-kafka] [--no-pg]
#
# Defaults: DIR=<repo>/.stack, Kafka 9092, controller Kafka+1, SSL Kafka+2, SASL_SSL Kafka+3,
# PostgreSQL 55432. Env: NDD_STACK_DIR, NDD_KAFKA_PORT, NDD_CONTROLLER_PORT, NDD_SSL_PORT,
# NDD_SASL_PORT, NDD_PG_PORT; for measuring broker settings, NDD_KAFKA_JVM_GC (the JVM's GC
# flags, default "-XX:+UseG1GC -XX:MaxGCPauseMillis=20") and NDD_KAFKA_EXTRA_PROPERTIES (a file
# appended to server.properties; its keys win). Both apply when Kafka starts.
# start is idempotent and, when done, prints exactly two lines to stdout (also in DIR/env):
#   NDD_KAFKA=127.0.0.1:N
#   NDD_PG='host=127.0.0.1 port=N dbname=ndd user=ndd passfile=DIR/pgpass'
# quoted for a shell: `set -a; . DIR/env; set +a` or `set -a; eval "$(stack.sh start)"; set +a`.
# DIR/env also has the secure listeners (docs/local-stack.md): NDD_KAFKA_SSL, NDD_KAFKA_SASL,
# NDD_KAFKA_CA and NDD_KAFKA_CLIENTS (a folder of kcat/librdkafka property files).
# Everything else goes to stderr. Two stacks with different dirs and ports run side by side.
#
#   deploy/local/stack.sh start --brokers N [--kafka-ports P1,...,PN] [--controller-port N] ...
# a Kafka cluster of N brokers (N >= 2; 1, the default, is the single node above) and a
# controller, each its own process (deploy/local/kafka-cluster.sh); brokers on Kafka, +2, +3,
# +4 ... unless --kafka-ports lists them (env NDD_KAFKA_BROKERS, NDD_KAFKA_PORTS); plaintext
# only; NDD_KAFKA lists every broker. Its shape is kept in DIR: stop, status, destroy and a later
# start (which starts the nodes that are not running) need no --brokers.
#   deploy/local/stack.sh stop --node I [--dir DIR]   stops broker I (1..N) of the cluster alone
#
#   deploy/local/stack.sh destroy [--dir DIR]
# stops the stack and deletes DIR (all topics, tables and logs).
#
#   deploy/local/stack.sh free-ports N [LOW-HIGH]
# prints N distinct ports that nothing listens on, picked at random from LOW-HIGH (default
# $NDD_PORT_RANGE or 30000-32000), for tests that start their own stack; each is then held
# for other callers on the machine for NDD_PORT_HOLD seconds (default 1200, longer than any test).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KAFKA_VERSION=3.9.1
PG_BIN=${NDD_PG_BIN:-/usr/lib/postgresql/15/bin}
KAFKA_START_TIMEOUT=${NDD_KAFKA_START_TIMEOUT:-120}
PG_START_TIMEOUT=${NDD_PG_START_TIMEOUT:-60}
STOP_TIMEOUT=30

usage() {
    sed -n '2,35p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
log() { echo "stack: $*" >&2; }
die() {
    echo "stack: error: $*" >&2
    exit 1
}

cmd=${1:-}
[[ -n $cmd ]] || usage
shift

# True when something accepts TCP connections on 127.0.0.1:$1 (bash only, no extra tools).
port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

if [[ $cmd == free-ports ]]; then
    n=${1:?free-ports needs a count}
    range=${2:-${NDD_PORT_RANGE:-30000-32000}}
    lo=${range%-*} hi=${range#*-}
    [[ $n =~ ^[0-9]+$ && $lo =~ ^[0-9]+$ && $hi =~ ^[0-9]+$ ]] && ((lo < hi && n <= hi - lo)) ||
        die "free-ports: bad count '$n' or range '$range'"
    # A port handed out is reserved machine-wide for NDD_PORT_HOLD seconds (a directory per
    # port; mkdir is atomic): tests run side by side, and one that stops its broker for a while
    # leaves its ports unbound, which a neighbour choosing "free" ports must not take.
    reg=${TMPDIR:-/tmp}/ndd-port-reservations
    hold=${NDD_PORT_HOLD:-1200}
    mkdir -p "$reg" 2>/dev/null || true
    now=$(date +%s)
    picked=" "
    for ((tries = 0; n > 0 && tries < 4000; tries++)); do
        p=$((lo + (RANDOM * 32768 + RANDOM) % (hi - lo + 1)))
        [[ $picked == *" $p "* ]] && continue
        port_open "$p" && continue
        if ! mkdir "$reg/$p" 2>/dev/null; then
            # Reserved: reusable once its hold has passed (the reservation is renewed).
            t=$(stat -c %Y "$reg/$p" 2>/dev/null || echo "$now")
            ((now - t > hold)) || continue
            touch "$reg/$p" 2>/dev/null || continue
        fi
        picked+="$p "
        echo "$p"
        n=$((n - 1))
    done
    ((n == 0)) || die "free-ports: not enough free ports in $range"
    exit 0
fi
DIR=${NDD_STACK_DIR:-$ROOT/.stack}
KAFKA_PORT=${NDD_KAFKA_PORT:-9092}
CONTROLLER_PORT=${NDD_CONTROLLER_PORT:-}
SSL_PORT=${NDD_SSL_PORT:-}
SASL_PORT=${NDD_SASL_PORT:-}
PG_PORT=${NDD_PG_PORT:-55432}
WANT_KAFKA=1
WANT_PG=1
BROKERS=${NDD_KAFKA_BROKERS:-1}
KAFKA_PORTS=${NDD_KAFKA_PORTS:-}
NODE=""
while (($#)); do
    case $1 in
    --dir) DIR=${2:?--dir needs a value}; shift 2 ;;
    --kafka-port) KAFKA_PORT=${2:?--kafka-port needs a value}; shift 2 ;;
    --controller-port) CONTROLLER_PORT=${2:?--controller-port needs a value}; shift 2 ;;
    --ssl-port) SSL_PORT=${2:?--ssl-port needs a value}; shift 2 ;;
    --sasl-port) SASL_PORT=${2:?--sasl-port needs a value}; shift 2 ;;
    --pg-port) PG_PORT=${2:?--pg-port needs a value}; shift 2 ;;
    --no-kafka) WANT_KAFKA=0; shift ;;
    --no-pg) WANT_PG=0; shift ;;
    --brokers) BROKERS=${2:?--brokers needs a value}; BROKERS_GIVEN=1; shift 2 ;;
    --kafka-ports) KAFKA_PORTS=${2:?--kafka-ports needs a value}; shift 2 ;;
    --node) NODE=${2:?--node needs a value}; shift 2 ;;
    -h | --help) usage ;;
    *) echo "stack: unknown option '$1'" >&2; usage ;;
    esac
done
[[ $BROKERS =~ ^[0-9]+$ ]] && ((BROKERS >= 1 && BROKERS <= 9)) || die "--brokers: 1 to 9, not '$BROKERS'"
[[ -z $NODE || ($NODE =~ ^[0-9]+$ && $cmd == stop) ]] || die "--node: a broker number, for stop only"
CONTROLLER_PORT=${CONTROLLER_PORT:-$((KAFKA_PORT + 1))}
SSL_PORT=${SSL_PORT:-$((KAFKA_PORT + 2))}
SASL_PORT=${SASL_PORT:-$((KAFKA_PORT + 3))}
for p in "$KAFKA_PORT" "$CONTROLLER_PORT" "$SSL_PORT" "$SASL_PORT" "$PG_PORT"; do
    [[ $p =~ ^[0-9]+$ ]] && ((p > 0 && p < 65536)) || die "bad port '$p'"
done
# Only start creates DIR; stop and status on a missing DIR just find nothing running.
[[ $cmd == start ]] && mkdir -p "$DIR"
DIR=$(realpath -m -- "$DIR")

KDIR=$DIR/kafka
KAFKA_PID=$KDIR/kafka.pid
KAFKA_LOG=$DIR/kafka.log
TLS_DIR=$KDIR/tls
CLIENTS_DIR=$KDIR/clients
# The test principals of the secure listeners (docs/local-stack.md).
SCRAM_USER=ndd-test-scram
SSL_SUBJECT=CN=ndd-test-ssl
PGDIR=$DIR/pg
PG_LOG=$DIR/postgres.log
# As root the cluster runs as user postgres, which must reach DIR/pg. When a parent folder of
# DIR is closed to others (say a clone under /root, mode 0700), the cluster lives in
# /var/tmp/ndd-pg-<hash of DIR> instead, with DIR/pg and DIR/postgres.log as symlinks to it.
if [[ $(id -u) == 0 ]] && getent passwd postgres >/dev/null &&
    ! runuser -u postgres -- test -x "$(dirname "$DIR")" 2>/dev/null; then
    PGDIR=/var/tmp/ndd-pg-$(printf '%s' "$DIR" | sha256sum | cut -c1-16)
    PG_LOG=$PGDIR/postgres.log
fi
PGDATA=$PGDIR/data
PGPASS=$DIR/pgpass
HOME=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}
KAFKA_LIBS=${NDD_KAFKA_LIBS:-${NDD_CACHE:-$HOME/.cache/ndd}/kafka-$KAFKA_VERSION/libs}
KAFKA_ADDR=127.0.0.1:$KAFKA_PORT
# A multi-broker cluster: asked for (--brokers N > 1) or already in DIR (its shape is kept there).
# shellcheck source=deploy/local/kafka-cluster.sh
. "$ROOT/deploy/local/kafka-cluster.sh"
CLUSTER=0
if ((BROKERS > 1)) || cluster_in_dir; then CLUSTER=1; fi
[[ -z $NODE || $CLUSTER == 1 ]] || die "--node applies to a cluster (start --brokers N)"
PG_CONNINFO="host=127.0.0.1 port=$PG_PORT dbname=ndd user=ndd passfile=$PGPASS"

pid_alive() {
    [[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null
}

# PID from a pid file, only if that process is alive and its command line mentions our DIR, so a
# recycled PID is never mistaken for (or killed as) our server.
read_pid() {
    local file=$1 match=${2:-$DIR/} pid
    [[ -f $file ]] || return 1
    pid=$(head -n1 "$file" 2>/dev/null | tr -dc 0-9)
    pid_alive "$pid" || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$match" || return 1
    echo "$pid"
}

# Waits until process $1 is gone; returns 1 after $2 seconds.
wait_gone() {
    local pid=$1 deadline=$((SECONDS + $2))
    while pid_alive "$pid"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
}

# ---- PostgreSQL as the `postgres` user when we are root (initdb and postgres refuse root). ----
if [[ $(id -u) == 0 ]]; then
    PG_OS_USER=postgres
    as_pg() { runuser -u postgres -- "$@"; }
else
    PG_OS_USER=$(id -un)
    as_pg() { "$@"; }
fi

kafka_pid() { read_pid "$KAFKA_PID"; }
pg_pid() {
    # postmaster.pid's first line is the postmaster PID; its command line holds -D PGDATA.
    read_pid "$PGDATA/postmaster.pid" "$PGDATA"
}

# The stack's CA, the broker's certificate (SAN 127.0.0.1, localhost) and a client certificate
# for $SSL_SUBJECT, made once with openssl (EC P-256: a few milliseconds). PEM files, keys
# unencrypted and 0600: this is a loopback test stack.
kafka_make_tls() {
    [[ -s $TLS_DIR/ca.pem && -s $TLS_DIR/broker.pem && -s $TLS_DIR/client-ssl.key ]] && return 0
    command -v openssl >/dev/null || die "openssl not found (needed for the stack's TLS listeners)"
    log "making the stack's CA and certificates in $TLS_DIR"
    rm -rf "$TLS_DIR"
    mkdir -p "$TLS_DIR"
    (
        set -e
        umask 077
        cd "$TLS_DIR"
        ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
        openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 3650 \
            -subj "/CN=NDD local stack CA" -addext "basicConstraints=critical,CA:TRUE" \
            -addext "keyUsage=critical,keyCertSign,cRLSign"
        sign() { # sign NAME SUBJECT EXTENSIONS
            openssl req "${ec[@]}" -keyout "$1.key" -out "$1.csr" -subj "$2"
            printf '%s\n' "$3" >"$1.ext"
            openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -days 3650 \
                -set_serial "0x$(openssl rand -hex 12)" -extfile "$1.ext" -out "$1.crt"
            rm -f "$1.csr" "$1.ext"
        }
        # DNS:127.0.0.1 too: a client that checks the host name as a DNS name still matches.
        sign broker "/CN=127.0.0.1" $'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth'
        cat broker.key broker.crt >broker.pem
        sign client-ssl "/${SSL_SUBJECT}" 'extendedKeyUsage=clientAuth'
        chmod 0644 ca.pem broker.crt client-ssl.crt
    ) >"$KDIR/tls.out" 2>&1 || {
        cat "$KDIR/tls.out" >&2
        die "making the stack's TLS certificates in $TLS_DIR failed (openssl output above)"
    }
}

# kcat/librdkafka property files for the test principals (kcat -F FILE).
kafka_write_clients() {
    local pw=$1
    mkdir -p "$CLIENTS_DIR"
    (
        umask 077
        printf '%s\n' "security.protocol=SASL_SSL" "sasl.mechanisms=SCRAM-SHA-512" \
            "sasl.username=$SCRAM_USER" "sasl.password=$pw" "ssl.ca.location=$TLS_DIR/ca.pem" \
            >"$CLIENTS_DIR/scram.properties"
        printf '%s\n' "security.protocol=SSL" "ssl.ca.location=$TLS_DIR/ca.pem" \
            "ssl.certificate.location=$TLS_DIR/client-ssl.crt" \
            "ssl.key.location=$TLS_DIR/client-ssl.key" >"$CLIENTS_DIR/ssl.properties"
    )
}

# The secure listeners answer a metadata request as the test principals (a client with no ACL
# still gets the broker list).
kafka_check_secure() {
    local name port file
    for name in SSL:$SSL_PORT:ssl SASL_SSL:$SASL_PORT:scram; do
        IFS=: read -r name port file <<<"$name"
        [[ -f $CLIENTS_DIR/$file.properties ]] || {
            log "warning: $CLIENTS_DIR/$file.properties is missing (storage formatted by an older stack.sh); destroy the stack to get the $name test user"
            continue
        }
        # Three tries of 5 s: a TLS handshake and a SCRAM exchange on a busy machine can take
        # longer than one kcat metadata timeout just after the broker started.
        local try ok=0
        for try in 1 2 3; do
            if kcat -L -b "127.0.0.1:$port" -F "$CLIENTS_DIR/$file.properties" -m 5 2>"$KDIR/check-$file.err" |
                grep -q '1 brokers:'; then
                ok=1
                break
            fi
            sleep 1
        done
        if ((!ok)); then
            cat "$KDIR/check-$file.err" >&2
            tail -n 20 "$KAFKA_LOG" >&2 2>/dev/null || true
            die "Kafka's $name listener on 127.0.0.1:$port does not answer a metadata request as the test principal ($CLIENTS_DIR/$file.properties; kcat errors and broker log above)"
        fi
    done
}

kafka_start() {
    local pid
    if pid=$(kafka_pid); then
        port_open "$KAFKA_PORT" || die "Kafka (pid $pid) runs from $DIR but does not answer on $KAFKA_ADDR; was it started with other ports? Run stop first."
        log "Kafka already running (pid $pid) on $KAFKA_ADDR"
        return 0
    fi
    [[ -f $KAFKA_LIBS/kafka_2.13-$KAFKA_VERSION.jar ]] || "$ROOT/deploy/local/install-deps.sh" --quiet
    [[ -f $KAFKA_LIBS/kafka_2.13-$KAFKA_VERSION.jar ]] || die "Kafka jars missing in $KAFKA_LIBS (run deploy/local/install-deps.sh)"
    command -v java >/dev/null || die "java not found (run deploy/local/install-deps.sh)"
    port_open "$KAFKA_PORT" && die "port $KAFKA_PORT is in use by another process; pick --kafka-port"
    port_open "$CONTROLLER_PORT" && die "port $CONTROLLER_PORT is in use by another process; pick --controller-port"
    port_open "$SSL_PORT" && die "port $SSL_PORT is in use by another process; pick --ssl-port"
    port_open "$SASL_PORT" && die "port $SASL_PORT is in use by another process; pick --sasl-port"

    mkdir -p "$KDIR/data"
    kafka_make_tls
    sed -e "s|@KAFKA_PORT@|$KAFKA_PORT|g" -e "s|@CONTROLLER_PORT@|$CONTROLLER_PORT|g" \
        -e "s|@SSL_PORT@|$SSL_PORT|g" -e "s|@SASL_PORT@|$SASL_PORT|g" -e "s|@TLS_DIR@|$TLS_DIR|g" \
        -e "s|@DATA_DIR@|$KDIR/data|g" "$ROOT/deploy/local/kafka/server.properties.in" \
        >"$KDIR/server.properties"
    # Broker settings to measure (bench/broker/settings.sh): appended, so a key given there
    # overrides the template's (Java properties: the last value of a key wins).
    if [[ -n ${NDD_KAFKA_EXTRA_PROPERTIES:-} ]]; then
        cat "$NDD_KAFKA_EXTRA_PROPERTIES" >>"$KDIR/server.properties" ||
            die "NDD_KAFKA_EXTRA_PROPERTIES: cannot read $NDD_KAFKA_EXTRA_PROPERTIES"
    fi
    sed -e "s|@LOG_FILE@|$KAFKA_LOG|g" "$ROOT/deploy/local/kafka/log4j.properties.in" \
        >"$KDIR/log4j.properties"

    # G1 measured no worse than Parallel or Serial GC in CPU per copy (docs/benchmarks.md,
    # "The broker's cost per copy"); NDD_KAFKA_JVM_GC replaces these flags for such a measurement.
    local gc=(-XX:+UseG1GC -XX:MaxGCPauseMillis=20)
    if [[ -n ${NDD_KAFKA_JVM_GC:-} ]]; then read -ra gc <<<"$NDD_KAFKA_JVM_GC"; fi
    local jvm=(java -Xms128m -Xmx512m "${gc[@]}"
        -Djava.awt.headless=true -Dlog4j.configuration="file:$KDIR/log4j.properties"
        -Dkafka.logs.dir="$KDIR" -cp "$KAFKA_LIBS/*")
    if [[ ! -f $KDIR/data/meta.properties ]]; then
        # A Kafka cluster id is 16 random bytes in URL-safe base64 without padding; making it
        # here saves a JVM start (StorageTool random-uuid). Like Kafka's Uuid.randomUuid, draw
        # again while it starts with '-': the tool's argument parser would take it for an option.
        local cid=-
        while [[ $cid == -* ]]; do
            cid=$(head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
        done
        # The SCRAM test user is created with the storage (KRaft keeps SCRAM credentials in
        # its metadata log; the StorageTool writes them into the first snapshot). Its password
        # is random and only in the 0600 client file; it travels to the tool on its command
        # line, which only this short-lived local process has.
        local scram_pw
        scram_pw=$(head -c18 /dev/urandom | od -An -tx1 | tr -d ' \n')
        log "formatting Kafka storage in $KDIR/data (cluster $cid, SCRAM user $SCRAM_USER)"
        if ! "${jvm[@]}" kafka.tools.StorageTool format -t "$cid" -c "$KDIR/server.properties" \
            --add-scram "SCRAM-SHA-512=[name=$SCRAM_USER,password=$scram_pw]" \
            >"$KDIR/format.out" 2>&1 </dev/null; then
            cat "$KDIR/format.out" >&2
            die "Kafka storage format failed"
        fi
        kafka_write_clients "$scram_pw"
    fi

    log "starting Kafka $KAFKA_VERSION on $KAFKA_ADDR (controller 127.0.0.1:$CONTROLLER_PORT)"
    # setsid: the broker outlives this script and is not hit by the caller's terminal signals.
    # The config path (under DIR) on the command line lets read_pid recognise the process.
    setsid "${jvm[@]}" kafka.Kafka "$KDIR/server.properties" >"$KDIR/kafka.out" 2>&1 </dev/null 9>&- &
    pid=$!
    echo "$pid" >"$KAFKA_PID"

    # Ready means: the broker answers a metadata request and lists itself.
    local deadline=$((SECONDS + KAFKA_START_TIMEOUT))
    while :; do
        if ! pid_alive "$pid"; then
            tail -n 40 "$KAFKA_LOG" "$KDIR/kafka.out" >&2 2>/dev/null || true
            rm -f "$KAFKA_PID"
            die "Kafka exited during start-up (logs above: $KAFKA_LOG, $KDIR/kafka.out)"
        fi
        if kcat -L -b "$KAFKA_ADDR" -m 2 2>/dev/null | grep -q '1 brokers:'; then
            break
        fi
        if ((SECONDS >= deadline)); then
            tail -n 40 "$KAFKA_LOG" "$KDIR/kafka.out" >&2 2>/dev/null || true
            kill "$pid" 2>/dev/null || true
            wait_gone "$pid" 10 || kill -9 "$pid" 2>/dev/null || true
            rm -f "$KAFKA_PID"
            die "Kafka did not answer a metadata request on $KAFKA_ADDR within ${KAFKA_START_TIMEOUT}s"
        fi
        sleep 0.5
    done
    kafka_check_secure
    log "Kafka ready (pid $pid; SSL 127.0.0.1:$SSL_PORT, SASL_SSL 127.0.0.1:$SASL_PORT)"
}

kafka_stop() {
    local pid
    if ! pid=$(kafka_pid); then
        rm -f "$KAFKA_PID"
        return 0
    fi
    log "stopping Kafka (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    if ! wait_gone "$pid" "$STOP_TIMEOUT"; then
        log "Kafka did not stop in ${STOP_TIMEOUT}s; killing it"
        kill -KILL "$pid" 2>/dev/null || true
        wait_gone "$pid" 10 || die "Kafka (pid $pid) survives SIGKILL"
    fi
    rm -f "$KAFKA_PID"
}

# Makes DIR/pg reachable for the postgres user: DIR itself may be a 0700 root mktemp folder.
pg_prepare_dirs() {
    mkdir -p "$PGDIR"
    if [[ $PGDIR != "$DIR/pg" && (! -e $DIR/pg || -L $DIR/pg) ]]; then
        log "user postgres cannot reach $DIR; PostgreSQL data in $PGDIR (DIR/pg links to it)"
        ln -sfn "$PGDIR" "$DIR/pg"
        ln -sfn "$PG_LOG" "$DIR/postgres.log"
    fi
    if [[ $(id -u) == 0 ]]; then
        # Traverse-only for others on DIR: lists nothing, lets postgres reach its own folder.
        chmod o+x "$DIR"
        chown postgres: "$PGDIR"
        chmod 0700 "$PGDIR"
        as_pg test -x "$PGDIR" ||
            die "user postgres cannot reach $PGDIR (a parent folder of $DIR lacks o+x); use --dir under /tmp or another world-traversable path"
    fi
}

pg_socket_dir() {
    # Unix socket paths are limited to 107 bytes; a deep DIR falls back to /tmp (the socket file
    # name carries the port, so stacks still do not collide).
    local d=$PGDIR/run
    if ((${#d} + 20 > 100)); then d=/tmp; fi
    echo "$d"
}

pg_psql_admin() {
    # Superuser access over the cluster's own Unix socket with peer authentication: no
    # superuser password exists anywhere.
    as_pg "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$(pg_socket_dir)" -p "$PG_PORT" \
        -U "$PG_OS_USER" -d postgres "$@"
}

pg_start() {
    local pid sockdir
    [[ -x $PG_BIN/initdb ]] || "$ROOT/deploy/local/install-deps.sh" --quiet
    [[ -x $PG_BIN/initdb ]] || die "PostgreSQL 15 not found in $PG_BIN (run deploy/local/install-deps.sh)"
    pg_prepare_dirs
    sockdir=$(pg_socket_dir)
    if pid=$(pg_pid); then
        port_open "$PG_PORT" || die "PostgreSQL (pid $pid) runs from $DIR but not on port $PG_PORT; run stop first."
        log "PostgreSQL already running (pid $pid) on 127.0.0.1:$PG_PORT"
    else
        port_open "$PG_PORT" && die "port $PG_PORT is in use by another process; pick --pg-port"
        if [[ ! -f $PGDATA/PG_VERSION ]]; then
            log "creating PostgreSQL cluster in $PGDATA"
            rm -rf "$PGDATA"
            # Unix socket: peer (the OS user is the superuser); TCP: SCRAM passwords only.
            if ! as_pg "$PG_BIN/initdb" -D "$PGDATA" -U "$PG_OS_USER" -E UTF8 --locale=C \
                --auth-local=peer --auth-host=scram-sha-256 >"$PGDIR/initdb.out" 2>&1 </dev/null; then
                cat "$PGDIR/initdb.out" >&2
                die "initdb failed"
            fi
        fi
        as_pg mkdir -p "$PGDIR/run"
        # Settings on the command line, not in the data folder, so --pg-port can change between
        # runs. fsync off: this is a throwaway development/test cluster.
        local opts="-c listen_addresses=127.0.0.1 -c port=$PG_PORT"
        opts+=" -c unix_socket_directories=$sockdir -c fsync=off -c synchronous_commit=off"
        opts+=" -c full_page_writes=off -c shared_buffers=64MB -c max_connections=200"
        opts+=" -c password_encryption=scram-sha-256"
        [[ $(id -u) == 0 ]] && { touch "$PG_LOG"; chown postgres: "$PG_LOG"; }
        log "starting PostgreSQL 15 on 127.0.0.1:$PG_PORT"
        # pg_ctl daemonises the postmaster in its own session; -w waits for "ready".
        if ! as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$PG_LOG" -o "$opts" -w -t "$PG_START_TIMEOUT" \
            start >"$PGDIR/pg_ctl.out" 2>&1 </dev/null 9>&-; then
            cat "$PGDIR/pg_ctl.out" >&2
            tail -n 30 "$PG_LOG" >&2 || true
            die "PostgreSQL did not start on port $PG_PORT (log: $PG_LOG)"
        fi
        pid=$(pg_pid) || die "PostgreSQL started but postmaster.pid is not ours"
    fi

    # The application role and database; the password lives only in DIR/pgpass (0600).
    local have_role
    have_role=$(pg_psql_admin -tAc "SELECT 1 FROM pg_roles WHERE rolname = 'ndd'" </dev/null)
    if [[ $have_role != 1 || ! -s $PGPASS ]]; then
        local pw
        pw=$(head -c24 /dev/urandom | od -An -tx1 | tr -d ' \n')
        (
            umask 077
            printf '127.0.0.1:%s:*:ndd:%s\n' "$PG_PORT" "$pw" >"$PGPASS.tmp"
        )
        # The password travels on stdin, never on a command line that ps would show.
        if [[ $have_role == 1 ]]; then
            printf "ALTER ROLE ndd WITH LOGIN CREATEDB PASSWORD '%s';\n" "$pw" | pg_psql_admin
        else
            printf "CREATE ROLE ndd WITH LOGIN CREATEDB PASSWORD '%s';\n" "$pw" | pg_psql_admin
        fi
        mv "$PGPASS.tmp" "$PGPASS"
    elif ! grep -q "^127.0.0.1:$PG_PORT:" "$PGPASS"; then
        # Same cluster restarted on another port: the passfile line names the port.
        sed -i -E "s/^127\.0\.0\.1:[0-9]+:/127.0.0.1:$PG_PORT:/" "$PGPASS"
    fi
    chmod 0600 "$PGPASS"
    if [[ $(pg_psql_admin -tAc "SELECT 1 FROM pg_database WHERE datname = 'ndd'" </dev/null) != 1 ]]; then
        pg_psql_admin -c "CREATE DATABASE ndd OWNER ndd" </dev/null
    fi

    # Ready means: the application role logs in over TCP with SCRAM and runs a query.
    local deadline=$((SECONDS + PG_START_TIMEOUT)) out
    while ! out=$(psql -X -tA "$PG_CONNINFO connect_timeout=5" -c 'SELECT 1' 2>&1 </dev/null) ||
        [[ $out != 1 ]]; do
        if ((SECONDS >= deadline)); then
            echo "$out" >&2
            tail -n 30 "$PG_LOG" >&2 || true
            die "PostgreSQL on port $PG_PORT does not answer a query as user ndd"
        fi
        sleep 0.3
    done
    log "PostgreSQL ready (pid $pid)"
}

pg_stop() {
    local pid
    if ! pid=$(pg_pid); then
        return 0
    fi
    log "stopping PostgreSQL (pid $pid)"
    as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -m fast -w -t "$STOP_TIMEOUT" stop >/dev/null 2>&1 </dev/null || true
    if ! wait_gone "$pid" 5; then
        log "PostgreSQL did not stop; sending SIGQUIT"
        kill -QUIT "$pid" 2>/dev/null || true
        wait_gone "$pid" 10 || { kill -KILL "$pid" 2>/dev/null || true; wait_gone "$pid" 5 || die "PostgreSQL (pid $pid) survives SIGKILL"; }
    fi
}

# Serialises concurrent start/stop on one DIR. The servers are started with fd 9 closed, so
# only stack.sh itself ever holds the lock.
stack_lock() {
    exec 9>"$DIR/.stack.lock"
    flock -w 300 9 || die "another stack.sh holds $DIR/.stack.lock for 300s"
}

# NAME=VALUE as a shell can read it: VALUE single-quoted when it holds anything but
# [A-Za-z0-9_.:/,@%+=-] (the conninfo has spaces), so `. DIR/env` and `eval "$(start)"`
# set the whole value.
env_line() {
    local v=$2
    if [[ $v =~ ^[A-Za-z0-9_.:/,@%+=-]*$ ]]; then
        printf '%s=%s\n' "$1" "$v"
    else
        printf "%s='%s'\n" "$1" "${v//\'/\'\\\'\'}"
    fi
}

do_start() {
    stack_lock
    if [[ $WANT_KAFKA == 1 && $CLUSTER == 1 ]]; then
        cluster_start
        KAFKA_ADDR=$(cluster_bootstrap)
    elif [[ $WANT_KAFKA == 1 ]]; then kafka_start; fi
    if [[ $WANT_PG == 1 ]]; then pg_start; fi
    # DIR/env lists every server of this stack that runs, including one started earlier
    # without this call's --no-* flag; stdout lists the ones this call was asked for.
    local lines=() port
    if [[ $CLUSTER == 1 ]]; then
        # A cluster: every broker, plaintext only (no secure listeners).
        if cluster_in_dir && { [[ $WANT_KAFKA == 1 ]] || cluster_status | grep running >/dev/null; }; then
            cluster_load
            lines+=("$(env_line NDD_KAFKA "$(cluster_bootstrap)")")
        fi
    elif [[ $WANT_KAFKA == 1 ]] || kafka_pid >/dev/null; then
        # The ports the running broker was configured with (this call's, or an earlier one's).
        local adv
        adv=$(sed -n 's|^advertised.listeners=||p' "$KDIR/server.properties")
        port=$(sed -nE 's|.*PLAINTEXT://127.0.0.1:([0-9]+).*|\1|p' <<<"${adv%%,*}")
        lines+=("$(env_line NDD_KAFKA "127.0.0.1:$port")")
        port=$(grep -oE '(^|,)SSL://127.0.0.1:[0-9]+' <<<"$adv" | grep -oE '[0-9]+$' || true)
        [[ -n $port ]] && lines+=("$(env_line NDD_KAFKA_SSL "127.0.0.1:$port")")
        port=$(grep -oE 'SASL_SSL://127.0.0.1:[0-9]+' <<<"$adv" | grep -oE '[0-9]+$' || true)
        [[ -n $port ]] && lines+=("$(env_line NDD_KAFKA_SASL "127.0.0.1:$port")")
        [[ -f $TLS_DIR/ca.pem ]] && lines+=("$(env_line NDD_KAFKA_CA "$TLS_DIR/ca.pem")")
        [[ -d $CLIENTS_DIR ]] && lines+=("$(env_line NDD_KAFKA_CLIENTS "$CLIENTS_DIR")")
    fi
    if [[ $WANT_PG == 1 ]]; then
        lines+=("$(env_line NDD_PG "$PG_CONNINFO")")
    elif pg_pid >/dev/null; then
        port=$(sed -n 4p "$PGDATA/postmaster.pid")
        lines+=("$(env_line NDD_PG "host=127.0.0.1 port=$port dbname=ndd user=ndd passfile=$PGPASS")")
    fi
    printf '%s\n' "${lines[@]}" >"$DIR/env.tmp"
    mv "$DIR/env.tmp" "$DIR/env"
    [[ $WANT_KAFKA == 1 ]] && env_line NDD_KAFKA "$KAFKA_ADDR"
    [[ $WANT_PG == 1 ]] && env_line NDD_PG "$PG_CONNINFO"
    return 0
}

do_stop() {
    if [[ ! -d $DIR ]]; then
        log "nothing to stop ($DIR does not exist)"
        return 0
    fi
    stack_lock
    local rc=0
    if [[ -n $NODE ]]; then
        cluster_stop || rc=1
        log "stopped broker $NODE ($DIR)"
        return $rc
    fi
    if [[ $WANT_KAFKA == 1 && $CLUSTER == 1 ]]; then
        cluster_stop || rc=1
    elif [[ $WANT_KAFKA == 1 ]]; then kafka_stop || rc=1; fi
    if [[ $WANT_PG == 1 ]]; then pg_stop || rc=1; fi
    [[ $WANT_KAFKA == 1 && $WANT_PG == 1 ]] && rm -f "$DIR/env"
    log "stopped ($DIR)"
    return $rc
}

do_status() {
    local pid rc=0
    if [[ $WANT_KAFKA == 1 && $CLUSTER == 1 ]]; then
        cluster_status || rc=1
    elif [[ $WANT_KAFKA == 1 ]]; then
        if pid=$(kafka_pid); then
            echo "kafka: running pid $pid, $(grep -oE '^listeners=.*' "$KDIR/server.properties" | cut -d= -f2)"
        else
            echo "kafka: stopped"
            rc=1
        fi
    fi
    if [[ $WANT_PG == 1 ]]; then
        if pid=$(pg_pid); then
            echo "postgres: running pid $pid, port $(sed -n 4p "$PGDATA/postmaster.pid")"
        else
            echo "postgres: stopped"
            rc=1
        fi
    fi
    if ((rc == 0)) && [[ -f $DIR/env ]]; then cat "$DIR/env"; fi
    return $rc
}

# stop, then delete everything of the stack (topics, tables, logs). Refuses a DIR holding
# anything stack.sh did not make, so a wrong --dir never deletes someone's files.
do_destroy() {
    [[ -d $DIR ]] || return 0
    [[ -e $DIR/.stack.lock ]] || die "$DIR is not a stack directory (no .stack.lock); not deleting"
    local f base
    for f in "$DIR"/* "$DIR"/.[!.]*; do
        [[ -e $f || -L $f ]] || continue
        base=${f##*/}
        case $base in
        .stack.lock | env | env.tmp | pgpass | pgpass.tmp | kafka | kafka.log* | pg | postgres.log) ;;
        kafka-cluster | kafka-cluster.tmp | kafka-controller | kafka-controller.log* | kafka-[1-9] | kafka-[1-9].log*) ;;
        *) die "$DIR holds '$base', which stack.sh did not make; not deleting" ;;
        esac
    done
    WANT_KAFKA=1 WANT_PG=1 do_stop
    [[ $PGDIR != "$DIR/pg" ]] && rm -rf "$PGDIR"
    rm -rf "$DIR"
    log "deleted $DIR"
}

case $cmd in
start) do_start ;;
stop) do_stop ;;
destroy) do_destroy ;;
status) do_status ;;
*) usage ;;
esac
