#!/usr/bin/env bash
# Kafka's own admin commands for the local stack, which ships the broker's jars but not Kafka's
# bin/ scripts: each runs the class the Kafka script of that name runs, with the jars
# deploy/local/install-deps.sh fetched with Maven and the machine's Java.
#   deploy/local/kafka-tool.sh acls    ARGS...   as kafka-acls.sh ARGS      (kafka.admin.AclCommand)
#   deploy/local/kafka-tool.sh configs ARGS...   as kafka-configs.sh ARGS   (kafka.admin.ConfigCommand)
#   deploy/local/kafka-tool.sh topics  ARGS...   as kafka-topics.sh ARGS    (org.apache.kafka.tools.TopicCommand)
# e.g. deploy/local/kafka-tool.sh acls --bootstrap-server 127.0.0.1:9092 --list
# Env: NDD_CACHE (default ~/.cache/ndd), NDD_KAFKA_LIBS (the broker's jars, as stack.sh).
set -euo pipefail
KAFKA_VERSION=3.9.1
HOME=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}
CACHE=${NDD_CACHE:-$HOME/.cache/ndd}
LIBS=${NDD_KAFKA_LIBS:-$CACHE/kafka-$KAFKA_VERSION/libs}
TOOLS=$CACHE/kafka-$KAFKA_VERSION/tools
usage() {
    sed -n '2,9s/^# \{0,1\}//p' "$0" >&2
    exit 2
}
(($# >= 1)) || usage
case $1 in
acls) main=kafka.admin.AclCommand ;;
configs) main=kafka.admin.ConfigCommand ;;
topics) main=org.apache.kafka.tools.TopicCommand ;;
-h | --help) usage ;;
*)
    echo "kafka-tool: unknown tool '$1' (acls, configs or topics)" >&2
    exit 2
    ;;
esac
shift
die() {
    echo "kafka-tool: $*" >&2
    exit 1
}
command -v java >/dev/null || die "java not found (run deploy/local/install-deps.sh)"
[[ -f $LIBS/kafka_2.13-$KAFKA_VERSION.jar ]] || die "no Kafka jars in $LIBS (run deploy/local/install-deps.sh)"
[[ $main != org.apache.kafka.tools.* || -f $TOOLS/kafka-tools-$KAFKA_VERSION.jar ]] ||
    die "no kafka-tools jar in $TOOLS (run deploy/local/install-deps.sh)"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# A short-lived client: the C1 compiler and the serial collector start it in about half the
# time; log4j's warnings to stderr (deploy/local/kafka/tools-log4j.properties).
exec java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
    -Dlog4j.configuration="file:$HERE/kafka/tools-log4j.properties" \
    -cp "$LIBS/*:$TOOLS/*" "$main" "$@"
