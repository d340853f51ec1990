#!/usr/bin/env bash
# Builds NDD's container image (deploy/images/Dockerfile) with buildah, on a plain root
# machine without a container daemon or registry access:
#   1. the base: the registry's Debian 12 slim image when it can be pulled, else a Debian 12
#      minbase made from Debian's packages with mmdebstrap and imported into buildah's storage
#      (made once, then reused: localhost/ndd-base:bookworm);
#   2. `buildah bud --isolation chroot --layers` with that base as the BASE build argument.
# The image is tagged IMAGE (default localhost/ndd:<version>) and localhost/ndd:src-<hash>, the
# hash of the sources and the Dockerfile it was built from: when that tag exists the build is
# skipped, so a second run with unchanged sources takes seconds. The last line printed on
# stdout is the image name.
#
#   deploy/images/build.sh [--tag IMAGE] [--base IMAGE] [--no-pull] [--force] [--jobs N]
#     --tag IMAGE   name of the built image (default localhost/ndd:<version from CMakeLists.txt>)
#     --base IMAGE  the registry base to try first (default docker.io/library/debian:12-slim)
#     --no-pull     do not try the registry: use (or make) the mmdebstrap base directly
#     --force       build even when an image of the same sources exists
#     --jobs N      compile jobs inside the build stage (default 2)
# Env: NDD_DEBIAN_MIRROR (default http://deb.debian.org/debian), NDD_DEBIAN_SECURITY
#      (default http://deb.debian.org/debian-security), NDD_PULL_TIMEOUT (seconds, default 60).
# Needs: buildah; mmdebstrap when the registry cannot be reached (apt-get install buildah
# mmdebstrap). Exit 0 when the image exists at the end.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/deploy/images
VERSION=$(sed -nE 's/^project\(ndd VERSION ([0-9.]+).*/\1/p' "$ROOT/CMakeLists.txt")
TAG=localhost/ndd:$VERSION
REG_BASE=docker.io/library/debian:12-slim
LOCAL_BASE=localhost/ndd-base:bookworm
PULL=1
FORCE=0
JOBS=2
while (($#)); do
    case $1 in
    --tag) TAG=${2:?--tag needs a value}; shift 2 ;;
    --base) REG_BASE=${2:?--base needs a value}; shift 2 ;;
    --no-pull) PULL=0; shift ;;
    --force) FORCE=1; shift ;;
    --jobs) JOBS=${2:?--jobs needs a value}; shift 2 ;;
    -h | --help) sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
# node_modules is the console's toolchain, not part of the image (its built files, dist/, are).
find "$CTX/src" \( -name build -o -name 'build-*' -o -name '__pycache__' -o -name node_modules \) \
    -prune -exec rm -rf {} +
# The console's built files (the Dockerfile installs them for ndd-gui-api): from the build tree
# that built the daemons being tested (NDD_BUILD_DIR), else build/.
CONSOLE=${NDD_BUILD_DIR:-$ROOT/build}/gui-api/console
if [[ -f $CONSOLE/index.html ]]; then
    mkdir -p "$CTX/src/gui-api/web" && cp -a "$CONSOLE" "$CTX/src/gui-api/web/dist"
else
    say "no built console in $CONSOLE: the image carries ndd-gui-api without the console's files"
fi
cp "$HERE/Dockerfile" "$CTX/Dockerfile"
HASH=$( (cd "$CTX" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16)
HASH_TAG=localhost/ndd:src-$HASH

if ((!FORCE)) && buildah inspect --type image "$HASH_TAG" >/dev/null 2>&1; then
    say "image of these sources exists ($HASH_TAG): not rebuilt"
    buildah tag "$HASH_TAG" "$TAG" >/dev/null
    echo "$TAG"
    exit 0
fi

# ---- the base ------------------------------------------------------------------------------
BASE=
if ((PULL)); then
    say "trying the registry base $REG_BASE (${NDD_PULL_TIMEOUT:-60}s at most)"
    if timeout "${NDD_PULL_TIMEOUT:-60}" buildah pull -q "$REG_BASE" >/dev/null 2>&1; then
        BASE=$REG_BASE
    else
        say "cannot pull $REG_BASE: making the base from Debian's packages"
    fi
fi
if [[ -z $BASE ]]; then
    if ! buildah inspect --type image "$LOCAL_BASE" >/dev/null 2>&1; then
        command -v mmdebstrap >/dev/null || { say "mmdebstrap is not installed (apt-get install mmdebstrap)"; exit 1; }
        MIRROR=${NDD_DEBIAN_MIRROR:-http://deb.debian.org/debian}
        SECURITY=${NDD_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
        say "mmdebstrap --variant=minbase bookworm from $MIRROR"
        mmdebstrap --quiet --variant=minbase --include=ca-certificates \
            --aptopt='APT::Install-Recommends "false"' \
            --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
            --dpkgopt='path-exclude=/usr/share/locale/*' \
            bookworm "$CTX/base.tar" \
            "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
            "deb $SECURITY bookworm-security main" >&2
        # buildah's equivalent of `podman import`: a scratch container with the tarball
        # unpacked into it, committed as an image.
        ctr=$(buildah from scratch)
        buildah add -q "$ctr" "$CTX/base.tar" / >/dev/null
        buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            --cmd /bin/bash "$ctr"
        buildah commit -q --rm "$ctr" "$LOCAL_BASE" >/dev/null
        rm -f "$CTX/base.tar"
        say "base image $LOCAL_BASE made"
    else
        say "using the base made before: $LOCAL_BASE"
    fi
    BASE=$LOCAL_BASE
fi

# ---- the image -------------------------------------------------------------------------------
REVISION=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)
say "buildah bud --isolation chroot (base $BASE, revision $REVISION)"
buildah bud --isolation chroot --layers --pull=never -q \
    --build-arg BASE="$BASE" --build-arg JOBS="$JOBS" --build-arg VERSION="$VERSION" \
    --build-arg REVISION="$REVISION" --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    --label ndd.source-hash="$HASH" \
    -t "$TAG" -t "$HASH_TAG" -f "$CTX/Dockerfile" "$CTX" >&2
say "built $TAG ($HASH_TAG)"
# Images of earlier sources are not kept: storage holds one NDD image (plus the layer cache
# of its build stage, which the next build reuses).
# (grep finds nothing on a machine's first build: with pipefail that must not end the script.)
buildah images --format '{{.Name}}:{{.Tag}}' 2>/dev/null | { grep '^localhost/ndd:src-' || true; } |
    { grep -vx "$HASH_TAG" || true; } | while read -r old; do buildah rmi "$old" >/dev/null 2>&1 || true; done
echo "$TAG"
