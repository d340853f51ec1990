#!/bin/sh
# Builds the console into OUT (the first argument, default dist/): npm ci from package-lock.json (packages from the cache
# ~/.cache/ndd/npm, so a second run downloads nothing), then tsc + vite build + gzip.
# node_modules is reused while the lock file is unchanged.
set -eu
cd "$(dirname "$0")"
CACHE="${NDD_NPM_CACHE:-$HOME/.cache/ndd/npm}"
mkdir -p "$CACHE"
if [ ! -f node_modules/.ndd-lock ] || ! cmp -s package-lock.json node_modules/.ndd-lock; then
  npm ci --cache "$CACHE" --prefer-offline --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.ndd-lock
fi
# Each build tree gets its own output (CMake passes <build>/gui-api/console): two trees that
# shared web/dist emptied each other's assets.
OUT="${1:-dist}"
npx --no-install tsc --noEmit
npx --no-install vite build --logLevel warn --outDir "$OUT" --emptyOutDir
node gzip.mjs "$OUT"
