#!/usr/bin/env bash
# Builds NDD's container image (deploy/images/Dockerfile) with buildah, on a plain root
# machine without a container daemon or registry access:
#   1. the bases: the registry's Debian 12 slim image (the daemons' build and runtime stages)
#      and Debian 13 slim (the console's build stage: its Node.js) when they can be pulled,
#      else a minbase of each made from Debian's packages with mmdebstrap and imported into
#      buildah's storage (made once, then reused: localhost/ndd-base:bookworm, :trixie);
#   2. `buildah bud --isolation chroot --layers` with those bases as the BASE and CONSOLE_BASE
#      build arguments: the console is built in the image's console stage (npm ci from
#      gui-api/web/package-lock.json, then its build script), never taken from the tree.
#      The console stage is also tagged localhost/ndd-console:src-<hash>: its /out/console is
#      the build's output, which tests/image compares with what ndd-gui-api serves.
# The image is tagged IMAGE (default localhost/ndd:<version>) and localhost/ndd:src-<hash>, the
# hash of the sources and the Dockerfile it was built from: when that tag exists the build is
# skipped, so a second run with unchanged sources takes seconds. The last line printed on
# stdout is the image name.
#
#   deploy/images/build.sh [--tag IMAGE] [--base IMAGE] [--console-base IMAGE] [--no-pull]
#                          [--force] [--jobs N]
#     --tag IMAGE   name of the built image (default localhost/ndd:<version from CMakeLists.txt>)
#     --base IMAGE  the registry base to try first (default docker.io/library/debian:12-slim)
#     --console-base IMAGE  the console stage's (default docker.io/library/debian:13-slim)
#     --no-pull     do not try the registry: use (or make) the mmdebstrap base directly
#     --force       build even when an image of the same sources exists
#     --jobs N      compile jobs inside the build stage (default 2)
# Env: NDD_DEBIAN_MIRROR (default http://deb.debian.org/debian), NDD_DEBIAN_SECURITY
#      (default http://deb.debian.org/debian-security), NDD_PULL_TIMEOUT (seconds, default 60),
#      NDD_BUILD_CA_FILE (the CA bundle npm trusts in the console stage, default
#      /etc/ssl/certs/ca-certificates.crt: this machine's).
# Needs: buildah; mmdebstrap when the registry cannot be reached (apt-get install buildah
# mmdebstrap). Exit 0 when the image exists at the end.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/deploy/images
VERSION=$(sed -nE 's/^project\(ndd VERSION ([0-9.]+).*/\1/p' "$ROOT/CMakeLists.txt")
TAG=localhost/ndd:$VERSION
REG_BASE=docker.io/library/debian:12-slim
REG_CONSOLE_BASE=docker.io/library/debian:13-slim
PULL=1
FORCE=0
JOBS=2
while (($#)); do
    case $1 in
    --tag) TAG=${2:?--tag needs a value}; shift 2 ;;
    --base) REG_BASE=${2:?--base needs a value}; shift 2 ;;
    --console-base) REG_CONSOLE_BASE=${2:?--console-base needs a value}; shift 2 ;;
    --no-pull) PULL=0; shift ;;
    --force) FORCE=1; shift ;;
    --jobs) JOBS=${2:?--jobs needs a value}; shift 2 ;;
    -h | --help) sed -n '2,30p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
say() { echo "build.sh: $*" >&2; }
command -v buildah >/dev/null || { say "buildah is not installed (apt-get install buildah)"; exit 1; }

# ---- the build context: only what the daemons are built from -----------------------------
SRC_ITEMS=(CMakeLists.txt services aggregation correlation adapter admin gui-api ingress ndd bench tests)
CTX=$(mktemp -d /tmp/ndd-image-ctx.XXXXXX)
trap 'rm -rf "$CTX"' EXIT
mkdir -p "$CTX/src"
for i in "${SRC_ITEMS[@]}"; do
    [[ -e $ROOT/$i ]] && cp -a "$ROOT/$i" "$CTX/src/"
done
# Build outputs a developer may keep inside the tree are not sources.
find "$CTX/src" \( -name build -o -name 'build-*' -o -name '__pycache__' -o -name node_modules \) \
    -prune -exec rm -rf {} +
# The console's sources apart (web/: the console stage's context), so that a change of the
# console does not compile the daemons again, nor a change of the daemons rebuild the console.
# Its node_modules and any dist/ built in the tree are left out: the stage installs from the
# lock file and builds.
mv "$CTX/src/gui-api/web" "$CTX/web"
rm -rf "$CTX/web/dist"
# The console stage downloads the console's packages with the trust anchors of this machine
# (a TLS-inspecting proxy's CA included); nothing of them reaches the image.
CA_FILE=${NDD_BUILD_CA_FILE:-/etc/ssl/certs/ca-certificates.crt}
[[ -r $CA_FILE ]] || { say "no CA bundle $CA_FILE (set NDD_BUILD_CA_FILE)"; exit 1; }
cp "$CA_FILE" "$CTX/build-ca.crt"
cp "$HERE/Dockerfile" "$CTX/Dockerfile"
HASH=$( (cd "$CTX" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16)
HASH_TAG=localhost/ndd:src-$HASH
CONSOLE_TAG=localhost/ndd-console:src-$HASH

if ((!FORCE)) && buildah inspect --type image "$HASH_TAG" >/dev/null 2>&1 &&
    buildah inspect --type image "$CONSOLE_TAG" >/dev/null 2>&1; then
    say "image of these sources exists ($HASH_TAG): not rebuilt"
    buildah tag "$HASH_TAG" "$TAG" >/dev/null
    echo "$TAG"
    exit 0
fi

# ---- the bases -----------------------------------------------------------------------------
# base REGISTRY_IMAGE SUITE: prints the image to build FROM: the registry's when it can be
# pulled, else localhost/ndd-base:SUITE, made with mmdebstrap once and reused.
base() {
    local reg=$1 suite=$2 local_img=localhost/ndd-base:$2 ctr
    if ((PULL)); then
        say "trying the registry base $reg (${NDD_PULL_TIMEOUT:-60}s at most)"
        if timeout "${NDD_PULL_TIMEOUT:-60}" buildah pull -q "$reg" >/dev/null 2>&1; then
            echo "$reg"
            return 0
        fi
        say "cannot pull $reg: making the base from Debian's packages"
    fi
    if buildah inspect --type image "$local_img" >/dev/null 2>&1; then
        say "using the base made before: $local_img"
        echo "$local_img"
        return 0
    fi
    command -v mmdebstrap >/dev/null || { say "mmdebstrap is not installed (apt-get install mmdebstrap)"; return 1; }
    local mirror=${NDD_DEBIAN_MIRROR:-http://deb.debian.org/debian}
    local security=${NDD_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
    say "mmdebstrap --variant=minbase $suite from $mirror"
    mmdebstrap --quiet --variant=minbase --include=ca-certificates \
        --aptopt='APT::Install-Recommends "false"' \
        --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        "$suite" "$CTX/base-$suite.tar" \
        "deb $mirror $suite main" "deb $mirror $suite-updates main" \
        "deb $security $suite-security main" >&2 || return 1
    # buildah's equivalent of `podman import`: a scratch container with the tarball
    # unpacked into it, committed as an image.
    ctr=$(buildah from scratch) || return 1
    buildah add -q "$ctr" "$CTX/base-$suite.tar" / >/dev/null &&
        buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            --cmd /bin/bash "$ctr" &&
        buildah commit -q --rm "$ctr" "$local_img" >/dev/null || return 1
    rm -f "$CTX/base-$suite.tar"
    say "base image $local_img made"
    echo "$local_img"
}
BASE=$(base "$REG_BASE" bookworm)
CONSOLE_BASE=$(base "$REG_CONSOLE_BASE" trixie)

# ---- the image -------------------------------------------------------------------------------
REVISION=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)
say "buildah bud --isolation chroot (base $BASE, revision $REVISION)"
bud() {
    buildah bud --isolation chroot --layers --pull=never -q \
        --build-arg BASE="$BASE" --build-arg CONSOLE_BASE="$CONSOLE_BASE" --build-arg JOBS="$JOBS" \
        --build-arg VERSION="$VERSION" --build-arg REVISION="$REVISION" \
        --label ndd.source-hash="$HASH" -f "$CTX/Dockerfile" "$@" "$CTX" >&2
}
bud --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" -t "$TAG" -t "$HASH_TAG"
# The console stage alone, from the layers just built (nothing runs again).
bud --target console -t "$CONSOLE_TAG"
say "built $TAG ($HASH_TAG) and its console stage $CONSOLE_TAG"
# Images of earlier sources are not kept: storage holds one NDD image (plus the layer cache
# of its build stage, which the next build reuses).
# (grep finds nothing on a machine's first build: with pipefail that must not end the script.)
buildah images --format '{{.Name}}:{{.Tag}}' 2>/dev/null | { grep -E '^localhost/ndd(-console)?:src-' || true; } |
    { grep -vx -e "$HASH_TAG" -e "$CONSOLE_TAG" || true; } | while read -r old; do buildah rmi "$old" >/dev/null 2>&1 || true; done
echo "$TAG"
