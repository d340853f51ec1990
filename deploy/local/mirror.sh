#!/usr/bin/env bash
# Kafka's own MirrorMaker 2 between two local stacks (docs/georedundancy.md): site A's NF
# topics and ndd.config copied to site B under the same names, and the consumer groups'
# offsets on them translated to B (checkpoints + group offset sync), so B's NDD can take over.
#
#   deploy/local/mirror.sh start --from DIR_A --to DIR_B [--topics REGEX] [--groups REGEX]
#   deploy/local/mirror.sh stop|status --to DIR_B [--state DIR]
#   deploy/local/mirror.sh install          fetches MirrorMaker's jars (Maven), nothing else
#
# DIR_A, DIR_B: the directories of two stacks (deploy/local/stack.sh start --dir ...); their
# env files give the brokers. MirrorMaker runs on B's side (it pulls from A), one process,
# its files in DIR_B.mirror beside DIR_B (mm2.properties, mm2.log, pid; stack.sh destroy
# leaves it alone) or --state DIR; its progress is kept in B's Kafka (topics
# mm2-*.A.internal), so a restart resumes where it stopped.
# --topics: default every NF topic (SCP NRF SEPP BSF PCF NON_NF) and ndd.config;
# --groups: default every group (MirrorMaker only checkpoints groups that read mirrored topics).
# Replication policy: IdentityReplicationPolicy (B's topics keep A's names, so B's NDD runs
# with the configuration A ran with). Checkpoints and offset syncs every second.
# start returns when MirrorMaker scans A's topics (it copies from then on); stop waits for the
# process to end. Env: NDD_CACHE (default ~/.cache/ndd), NDD_MIRROR_START_TIMEOUT (120 s).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KAFKA_VERSION=3.9.1
HOME=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}
CACHE=${NDD_CACHE:-$HOME/.cache/ndd}
MLIBS=$CACHE/kafka-$KAFKA_VERSION/mirror
START_TIMEOUT=${NDD_MIRROR_START_TIMEOUT:-120}

usage() {
    sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
log() { echo "mirror: $*" >&2; }
die() {
    echo "mirror: error: $*" >&2
    exit 1
}

# MirrorMaker's runtime (connect-mirror and its dependencies) in a folder of its own, resolved
# with Maven like the broker's jars (deploy/local/install-deps.sh); renamed into place whole.
install_jars() {
    [[ -f $MLIBS/.complete ]] && return 0
    command -v mvn >/dev/null || die "mvn not found (run deploy/local/install-deps.sh)"
    log "resolving org.apache.kafka:connect-mirror:$KAFKA_VERSION with Maven into $MLIBS"
    mkdir -p "$CACHE"
    local tmp
    tmp=$(mktemp -d "$CACHE/tmp.XXXXXX")
    cat >"$tmp/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>ndd.local</groupId><artifactId>mirror-runtime</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>connect-mirror</artifactId>
      <version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId>
      <version>1.7.36</version><scope>runtime</scope></dependency>
  </dependencies>
</project>
EOF
    if ! mvn -q -B -Dstyle.color=never -f "$tmp/pom.xml" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$tmp/libs" </dev/null >"$tmp/mvn.log" 2>&1; then
        cat "$tmp/mvn.log" >&2
        rm -rf "$tmp"
        die "Maven could not resolve connect-mirror $KAFKA_VERSION"
    fi
    [[ -f $tmp/libs/connect-mirror-$KAFKA_VERSION.jar ]] || die "connect-mirror jar missing after Maven"
    touch "$tmp/libs/.complete"
    rm -rf "$MLIBS"
    mv "$tmp/libs" "$MLIBS"
    rm -rf "$tmp"
}

cmd=${1:-}
[[ -n $cmd ]] || usage
shift
FROM="" TO="" STATE="" TOPICS='(SCP|NRF|SEPP|BSF|PCF|NON_NF|ndd\.config)' GROUPS_RE='.*'
while (($#)); do
    case $1 in
    --from) FROM=${2:?--from needs a directory}; shift 2 ;;
    --to) TO=${2:?--to needs a directory}; shift 2 ;;
    --topics) TOPICS=${2:?--topics needs a regex}; shift 2 ;;
    --groups) GROUPS_RE=${2:?--groups needs a regex}; shift 2 ;;
    --state) STATE=${2:?--state needs a directory}; shift 2 ;;
    -h | --help) usage ;;
    *) echo "mirror: unknown option '$1'" >&2; usage ;;
    esac
done

if [[ $cmd == install ]]; then
    install_jars
    exit 0
fi
[[ -n $TO ]] || die "--to DIR_B is required"
TO=$(realpath -m -- "$TO")
M=$(realpath -m -- "${STATE:-$TO.mirror}")
PIDF=$M/pid

running_pid() { # prints the pid when MirrorMaker runs
    local p
    p=$(cat "$PIDF" 2>/dev/null) || return 1
    [[ -n $p && -r /proc/$p/cmdline ]] || return 1
    local cmdline
    cmdline=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || return 1
    [[ $cmdline == *connect.mirror.MirrorMaker* ]] && echo "$p"
}

# "bootstrap" of a stack's env file (its NDD_KAFKA, quotes removed)
stack_kafka() {
    [[ -f $1/env ]] || die "$1/env: not a started stack (deploy/local/stack.sh start --dir $1)"
    local k
    k=$(sed -n 's/^NDD_KAFKA=//p' "$1/env")
    k=${k#\'}
    echo "${k%\'}"
}

write_config() { # A_bootstrap B_bootstrap
    cat >"$M/mm2.properties" <<EOF
# Written by deploy/local/mirror.sh: site A -> site B only.
clusters = A, B
A.bootstrap.servers = $1
B.bootstrap.servers = $2
A->B.enabled = true
B->A.enabled = false
A->B.topics = $TOPICS
A->B.groups = $GROUPS_RE
# B's topics keep A's names (no "A." prefix): B's NDD runs with A's configuration unchanged.
replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy
# Group offsets translated to B and written into B's groups (while those have no members).
A->B.emit.checkpoints.enabled = true
A->B.emit.checkpoints.interval.seconds = 1
A->B.sync.group.offsets.enabled = true
A->B.sync.group.offsets.interval.seconds = 1
A->B.emit.heartbeats.interval.seconds = 1
A->B.refresh.topics.interval.seconds = 5
A->B.refresh.groups.interval.seconds = 5
A->B.sync.topic.acls.enabled = false
# Copies ordered and complete before speed: the producer to B waits for all replicas.
A->B.producer.acks = all
A->B.producer.linger.ms = 5
# One broker per local site: every internal topic with one replica.
replication.factor = 1
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
offset-syncs.topic.replication.factor = 1
offset.storage.replication.factor = 1
status.storage.replication.factor = 1
config.storage.replication.factor = 1
# A single MirrorMaker process: no REST listener between MirrorMaker nodes.
dedicated.mode.enable.internode.rest = false
tasks.max = 2
EOF
    cat >"$M/log4j.properties" <<EOF
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.RollingFileAppender
log4j.appender.file.File=$M/mm2.log
log4j.appender.file.MaxFileSize=20MB
log4j.appender.file.MaxBackupIndex=2
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.kafka.clients=WARN
log4j.logger.org.reflections=ERROR
EOF
}

case $cmd in
start)
    [[ -n $FROM ]] || die "--from DIR_A is required"
    FROM=$(realpath -m -- "$FROM")
    if p=$(running_pid); then
        log "running (pid $p)"
        exit 0
    fi
    install_jars
    command -v java >/dev/null || die "java not found (run deploy/local/install-deps.sh)"
    a=$(stack_kafka "$FROM")
    b=$(stack_kafka "$TO")
    mkdir -p "$M"
    write_config "$a" "$b"
    : >"$M/mm2.log"
    # setsid: MirrorMaker outlives the shell that started it, like the stack's servers.
    setsid java -Xms64m -Xmx384m -Djava.awt.headless=true \
        -Dlog4j.configuration="file:$M/log4j.properties" -cp "$MLIBS/*" \
        org.apache.kafka.connect.mirror.MirrorMaker "$M/mm2.properties" --clusters B \
        >"$M/mm2.out" 2>&1 </dev/null &
    echo $! >"$PIDF"
    pid=$!
    # Ready when the source connector runs its topic scan (from then on it copies what the
    # regex matches, topics created later within refresh.topics.interval.seconds).
    for ((i = 0; i < START_TIMEOUT * 2; i++)); do
        running_pid >/dev/null || die "MirrorMaker exited: $(tail -5 "$M/mm2.out" 2>/dev/null)"
        grep -q 'refreshing topics took' "$M/mm2.log" 2>/dev/null && break
        sleep 0.5
    done
    if ((i >= START_TIMEOUT * 2)); then
        kill -KILL "$pid" 2>/dev/null || true
        die "MirrorMaker not ready after ${START_TIMEOUT}s (stopped; log $M/mm2.log)"
    fi
    log "running (pid $pid): $a -> $b, topics $TOPICS, groups $GROUPS_RE"
    ;;
stop)
    if p=$(running_pid); then
        kill -TERM "$p"
        for ((i = 0; i < 60; i++)); do
            running_pid >/dev/null || break
            sleep 0.5
        done
        if running_pid >/dev/null; then kill -KILL "$p" 2>/dev/null || true; fi
        log "stopped (pid $p)"
    else
        log "not running"
    fi
    rm -f "$PIDF"
    ;;
status)
    if p=$(running_pid); then
        log "running (pid $p)"
    else
        log "not running"
        exit 1
    fi
    ;;
*) usage ;;
esac
