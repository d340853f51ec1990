#!/usr/bin/env bash
# Installs what NDD needs to build, test and run locally, and nothing that is already there.
# Idempotent and fast when everything is present (dpkg and file checks only; no apt-get update).
#   deploy/local/install-deps.sh [--quiet]
# Env: NDD_CACHE (default ~/.cache/ndd) holds the Kafka jars in kafka-3.9.1/libs.
set -euo pipefail

# ---- The one list of Debian packages. Helpers add theirs here. ----------------------------
NDD_DEB_PACKAGES=(
    # build
    build-essential cmake ninja-build pkg-config clang clang-format libclang-rt-14-dev
    # libraries the services/ runtime links
    librdkafka-dev libnghttp2-dev libevent-dev libjansson-dev libpq-dev libssl-dev libpcre2-dev
    # ndd-ingress (HV-VES's protobuf VesEvent)
    libprotobuf-c-dev protobuf-c-compiler
    # tests
    libcmocka-dev nghttp2-server nghttp2-client prometheus kcat socat curl jq tshark
    # local stack
    postgresql maven procps
)
# A Java runtime for Kafka and Maven, only when no `java` is on PATH.
NDD_JAVA_PACKAGE=default-jre-headless
KAFKA_VERSION=3.9.1
# -------------------------------------------------------------------------------------------

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
QUIET=0
[[ ${1:-} == --quiet ]] && QUIET=1
say() { [[ $QUIET == 1 ]] || echo "install-deps: $*" >&2; }

missing=()
for p in "${NDD_DEB_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
if ! command -v java >/dev/null 2>&1; then
    missing+=("$NDD_JAVA_PACKAGE")
fi

if ((${#missing[@]})); then
    say "installing: ${missing[*]}"
    SUDO=
    if [[ $(id -u) != 0 ]]; then
        command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
        SUDO=sudo
    fi
    export DEBIAN_FRONTEND=noninteractive
    # The package lists may be absent or stale on a fresh machine: refresh once, then install.
    $SUDO apt-get update -qq </dev/null
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
    # Debian's postgresql package starts its own cluster on 5432; the NDD stack runs private
    # clusters and does not need it, but leaves it alone (it may belong to someone else).
else
    say "all Debian packages present"
fi

# ---- Kafka jars from Maven Central -------------------------------------------------------
# HOME may be unset under a bare CI runner.
HOME=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}
CACHE=${NDD_CACHE:-$HOME/.cache/ndd}
LIBS=$CACHE/kafka-$KAFKA_VERSION/libs
if [[ -f $LIBS/kafka_2.13-$KAFKA_VERSION.jar && -f $LIBS/slf4j-reload4j-1.7.36.jar && -f $LIBS/.complete ]]; then
    say "Kafka $KAFKA_VERSION jars present in $LIBS"
else
    say "resolving Kafka $KAFKA_VERSION with Maven into $LIBS"
    mkdir -p "$CACHE"
    tmp=$(mktemp -d "$CACHE/tmp.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    # A copy of the pom keeps Maven's target/ out of the source tree.
    cp "$ROOT/deploy/local/kafka/pom.xml" "$tmp/pom.xml"
    if ! mvn -q -B -Dstyle.color=never -f "$tmp/pom.xml" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$tmp/libs" </dev/null >"$tmp/mvn.log" 2>&1; then
        cat "$tmp/mvn.log" >&2
        echo "install-deps: Maven could not resolve org.apache.kafka:kafka_2.13:$KAFKA_VERSION" >&2
        exit 1
    fi
    [[ -f $tmp/libs/kafka_2.13-$KAFKA_VERSION.jar ]] || { echo "install-deps: kafka jar missing after Maven" >&2; exit 1; }
    touch "$tmp/libs/.complete"
    mkdir -p "$(dirname "$LIBS")"
    rm -rf "$LIBS"
    # Rename is atomic, so a concurrent reader never sees a half-filled libs/ folder.
    mv "$tmp/libs" "$LIBS"
    say "Kafka jars: $(ls "$LIBS" | wc -l) files"
fi

# ---- Kafka's admin commands (deploy/local/kafka-tool.sh) -----------------------------------
# kafka-topics.sh's class is in kafka-tools, which the broker does not need: one more jar in a
# folder of its own (its dependencies are the broker's), so the broker's libs/ is never
# rewritten under a running broker.
TOOLS=$CACHE/kafka-$KAFKA_VERSION/tools
if [[ -f $TOOLS/kafka-tools-$KAFKA_VERSION.jar ]]; then
    say "Kafka $KAFKA_VERSION admin tools present in $TOOLS"
else
    say "resolving org.apache.kafka:kafka-tools:$KAFKA_VERSION with Maven into $TOOLS"
    mkdir -p "$CACHE"
    ttmp=$(mktemp -d "$CACHE/tmp.XXXXXX")
    trap 'rm -rf "$ttmp" ${tmp:+"$tmp"}' EXIT
    if ! (cd "$ttmp" && mvn -q -B -Dstyle.color=never dependency:copy \
        -Dartifact="org.apache.kafka:kafka-tools:$KAFKA_VERSION" -DoutputDirectory="$ttmp/tools" \
        </dev/null >"$ttmp/mvn.log" 2>&1); then
        cat "$ttmp/mvn.log" >&2
        echo "install-deps: Maven could not resolve org.apache.kafka:kafka-tools:$KAFKA_VERSION" >&2
        exit 1
    fi
    [[ -f $ttmp/tools/kafka-tools-$KAFKA_VERSION.jar ]] || { echo "install-deps: kafka-tools jar missing after Maven" >&2; exit 1; }
    rm -rf "$TOOLS"
    mv "$ttmp/tools" "$TOOLS"
fi

# ---- MirrorMaker 2 (deploy/local/mirror.sh, docs/georedundancy.md) -------------------------
# Its jars come with the others, so the two-site test never fetches anything while it runs.
"$ROOT/deploy/local/mirror.sh" install || { echo "install-deps: MirrorMaker 2's jars could not be fetched" >&2; exit 1; }
