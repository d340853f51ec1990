#!/usr/bin/env bash
# NDD's container image (deploy/images, docs/helm.md "Images"), label `image`:
#   1. deploy/images/build.sh builds it here (the registry's base cannot be pulled on this
#      machine: the mmdebstrap base path; the image is reused while its sources are unchanged);
#   2. the image runs as a non-root numeric user, has no HEALTHCHECK and the OCI labels;
#   3. `buildah run` of each daemon's --version (every shared library resolves in the runtime
#      stage) and --check-config (a valid configuration: exit 0; a bad one: exit 2);
#   4. ndd-aggregation from the image against the test stack's Kafka (NDD_TEST_KAFKA; host
#      network) becomes ready (/readyz 200) and stops on SIGTERM;
#   5. the console: ndd-gui-api from the image, with the chart's --web-root, answers / with
#      200, and the index.html and main script it serves are byte for byte the console
#      stage's build output (sha256 of each against localhost/ndd-console:src-<hash>, the
#      stage build.sh tagged for the same sources).
# Installs buildah and mmdebstrap from Debian when missing (fails when it cannot: no image,
# no test). First build: a few minutes (bases + Debian packages + npm ci + compiling NDD);
# later runs: seconds (the image of unchanged sources is reused; after a change, buildah's
# layer cache keeps the bases, the packages and the console's node_modules).
set -uo pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
BROKER=${NDD_TEST_KAFKA:?NDD_TEST_KAFKA must name the test stack's Kafka}
BROKER=${BROKER//\'/}
VERSION=$(sed -n 's/^project(ndd VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
# shellcheck source=helm/tools.sh
. "$SRC/tests/e2e/helm/tools.sh"
FAILS=0
CHECKS=0
fail() {
    echo "FAIL: $*"
    FAILS=$((FAILS + 1))
}
ok() { CHECKS=$((CHECKS + 1)); }
CTR=
CCTR=
RUN_PID=
T=$(mktemp -d /tmp/ndd-image-e2e.XXXXXX)
cleanup() {
    if [[ -n $RUN_PID ]] && kill -0 "$RUN_PID" 2>/dev/null; then
        kill -KILL "$RUN_PID" 2>/dev/null
        wait "$RUN_PID" 2>/dev/null
    fi
    [[ -n $CTR ]] && buildah rm "$CTR" >/dev/null 2>&1
    [[ -n $CCTR ]] && buildah rm "$CCTR" >/dev/null 2>&1
    rm -rf "$T"
}
trap cleanup EXIT

tools_buildah || { echo "FAIL: cannot install buildah/mmdebstrap"; exit 1; }
t0=$SECONDS
IMG=$(timeout 1500 "$SRC/deploy/images/build.sh" | tail -n1)
[[ -n $IMG ]] && buildah inspect --type image "$IMG" >/dev/null 2>&1 || { echo "FAIL: deploy/images/build.sh built no image"; exit 1; }
echo "image $IMG ready in $((SECONDS - t0)) s"
ok

# 2. user, healthcheck, labels
user=$(buildah inspect --type image --format '{{.OCIv1.Config.User}}' "$IMG")
[[ $user == 10001:10001 ]] && ok || fail "image user is '$user', not 10001:10001"
hc=$(buildah inspect --type image --format '{{.Docker.Config.Healthcheck}}' "$IMG" 2>/dev/null)
[[ -z $hc || $hc == '<nil>' ]] && ok || fail "image has a HEALTHCHECK: $hc"
for l in title version revision created description; do
    v=$(buildah inspect --type image --format "{{index .OCIv1.Config.Labels \"org.opencontainers.image.$l\"}}" "$IMG")
    [[ -n $v ]] && ok || fail "label org.opencontainers.image.$l missing"
done
v=$(buildah inspect --type image --format '{{index .OCIv1.Config.Labels "org.opencontainers.image.version"}}' "$IMG")
[[ $v == "$VERSION" ]] && ok || fail "label version '$v' is not $VERSION"

CTR=$(buildah from --pull=never "$IMG")
brun() { buildah run --isolation chroot --network host "$CTR" -- "$@"; }

# The runtime stage has no compiler and no -dev package.
if brun sh -c 'command -v cc || command -v gcc || ls /usr/include/librdkafka' >/dev/null 2>&1; then
    fail "the runtime stage holds a compiler or -dev headers"
else ok; fi
uid=$(brun id -u 2>/dev/null)
[[ $uid == 10001 ]] && ok || fail "commands run as uid '$uid'"

# 3. --version and --check-config of each daemon
for d in ndd-aggregation ndd-correlation ndd-adapter ndd-admin ndd; do
    if out=$(brun "$d" --version 2>&1) && grep -q "^$d $VERSION" <<<"$out" && grep -q '^librdkafka ' <<<"$out"; then
        ok
        echo "$d --version: $(head -n1 <<<"$out")"
    else
        echo "$out" | tail -n 5
        fail "$d --version in the image"
    fi
done
check() { # EXPECTED_RC DAEMON ARGS...
    local want=$1
    shift
    brun "$@" --check-config >"$T/check.log" 2>&1
    local rc=$?
    if ((rc == want)); then ok; else
        tail -n 5 "$T/check.log"
        fail "$* --check-config: exit $rc, expected $want"
    fi
}
check 0 ndd-aggregation --nf-type SCP --bootstrap 127.0.0.1:1
check 2 ndd-aggregation --nf-type AMF --bootstrap 127.0.0.1:1
check 0 ndd-correlation --bootstrap 127.0.0.1:1
check 0 ndd-adapter --bootstrap 127.0.0.1:1 --config-topic ndd.config
check 2 ndd-adapter --bootstrap 127.0.0.1:1
check 0 ndd-admin --pg "host=127.0.0.1 port=1 dbname=ndd" --bootstrap 127.0.0.1:1
check 2 ndd-admin --bootstrap 127.0.0.1:1

# 4. ndd-aggregation from the image against the stack's Kafka
read -r PORT < <("$SRC/deploy/local/stack.sh" free-ports 1)
TAG=img-$$-$RANDOM
# buildah itself in the background (not through brun, whose subshell would get the signal):
# it passes SIGTERM on to the daemon and exits with it.
buildah run --isolation chroot --network host "$CTR" -- ndd-aggregation --nf-type SCP --bootstrap "$BROKER" --topic "ndd-$TAG-scp" \
    --main-topic "ndd-$TAG-main" --dlq-topic "ndd-$TAG-dlq" --group "ndd-$TAG" --main-partitions 1 \
    --http.listen 127.0.0.1 --http.port "$PORT" --config-topic= --events-topic= \
    --kafka.consumer.session.timeout.ms 6000 >"$T/agg.log" 2>&1 &
RUN_PID=$!
ready=0
for _ in $(seq 1 120); do
    if [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/readyz") == 200 ]]; then
        ready=1
        break
    fi
    kill -0 "$RUN_PID" 2>/dev/null || break
    sleep 0.5
done
if ((ready)); then
    ok
    echo "ndd-aggregation from the image is ready against $BROKER"
    metrics=$(curl -s "http://127.0.0.1:$PORT/metrics")
    grep -q '^ndd_build_info{' <<<"$metrics" && ok || fail "/metrics lacks ndd_build_info"
else
    tail -n 20 "$T/agg.log"
    fail "ndd-aggregation from the image did not become ready: $(curl -s "http://127.0.0.1:$PORT/readyz")"
fi
kill -TERM "$RUN_PID" 2>/dev/null
for _ in $(seq 1 40); do
    kill -0 "$RUN_PID" 2>/dev/null || break
    sleep 0.5
done
if kill -0 "$RUN_PID" 2>/dev/null; then
    fail "ndd-aggregation in the image did not stop within 20 s of SIGTERM"
else
    wait "$RUN_PID" 2>/dev/null
    RUN_PID=
    ok
fi
curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && fail "the daemon still answers after its stop" || ok

# 5. the console from the image, against the console stage's build output
HASH=$(buildah inspect --type image --format '{{index .OCIv1.Config.Labels "ndd.source-hash"}}' "$IMG")
CIMG=localhost/ndd-console:src-$HASH
if [[ -z $HASH ]] || ! CCTR=$(buildah from --pull=never "$CIMG" 2>/dev/null); then
    fail "no console stage $CIMG for the image's sources (deploy/images/build.sh tags it)"
    CCTR=
fi
read -r GPORT < <("$SRC/deploy/local/stack.sh" free-ports 1)
buildah run --isolation chroot --network host "$CTR" -- ndd-gui-api \
    --web-root /usr/local/share/ndd/console --admin-url http://127.0.0.1:1 \
    --http.listen 127.0.0.1 --http.port "$GPORT" >"$T/gui.log" 2>&1 &
RUN_PID=$!
code=000
for _ in $(seq 1 60); do
    code=$(curl -s -o "$T/index.html" -w '%{http_code}' "http://127.0.0.1:$GPORT/")
    [[ $code == 200 ]] && break
    kill -0 "$RUN_PID" 2>/dev/null || break
    sleep 0.5
done
if [[ $code == 200 ]]; then
    ok
    echo "ndd-gui-api from the image answers / with 200 ($(wc -c <"$T/index.html") bytes)"
else
    tail -n 20 "$T/gui.log"
    fail "ndd-gui-api from the image answered / with $code, not 200"
fi
# The main script: the module index.html loads (content-hashed name under assets/).
js=$(grep -o 'src="/assets/[^"]*\.js"' "$T/index.html" | head -n1 | sed 's/^src="\(.*\)"$/\1/')
if [[ -n $js ]] && [[ $(curl -s -o "$T/main.js" -w '%{http_code}' "http://127.0.0.1:$GPORT$js") == 200 ]]; then
    ok
else
    fail "the console's main script '$js' is not served"
fi
if [[ -n $CCTR && -n $js ]]; then
    for f in index.html "${js#/}"; do
        built=$(buildah run --isolation chroot "$CCTR" -- sha256sum "/out/console/$f" 2>/dev/null | cut -d' ' -f1)
        local_f=$T/index.html
        [[ $f == index.html ]] || local_f=$T/main.js
        served=$(sha256sum "$local_f" | cut -d' ' -f1)
        if [[ -n $built && $built == "$served" ]]; then
            ok
            echo "served $f = the build's: sha256 ${served:0:16}…"
        else
            fail "served $f (sha256 $served) is not the console stage's build output (${built:-missing})"
        fi
    done
fi
kill -TERM "$RUN_PID" 2>/dev/null
for _ in $(seq 1 40); do
    kill -0 "$RUN_PID" 2>/dev/null || break
    sleep 0.5
done
if kill -0 "$RUN_PID" 2>/dev/null; then
    fail "ndd-gui-api in the image did not stop within 20 s of SIGTERM"
else
    wait "$RUN_PID" 2>/dev/null
    RUN_PID=
    ok
fi

echo "$CHECKS checks passed, $FAILS failed"
((FAILS == 0))
