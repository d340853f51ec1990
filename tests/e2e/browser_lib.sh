# Shared by the browser tests (sourced, not run; not a test itself).

# browser_setup: what a browser test needs, installed when missing, or the test fails: the
# tools, Debian's chromium (apt, once), the build tree's console (gui-api/web/build.sh from
# its lock file when the build has none) and tests/browser's npm packages (npm ci from the
# lock file, cache ~/.cache/ndd/npm: a second run downloads nothing). Needs SRC and BUILD;
# sets BT (tests/browser) and DIST (the console's files).
browser_setup() {
    local tool cache=${NDD_NPM_CACHE:-$HOME/.cache/ndd/npm}
    for tool in curl psql node npm jq; do
        command -v $tool >/dev/null || { echo "FAIL: $tool missing"; exit 1; }
    done
    if [ ! -x /usr/bin/chromium ]; then
        echo "installing Debian's chromium (once)"
        { apt-get install -y chromium >/dev/null 2>&1 || sudo -n apt-get install -y chromium >/dev/null 2>&1; } ||
            { echo "FAIL: /usr/bin/chromium missing and apt-get install chromium failed"; exit 1; }
    fi
    DIST=$BUILD/gui-api/console
    [ -f "$DIST/index.html" ] || "$SRC/gui-api/web/build.sh" "$DIST" || { echo "FAIL: console build"; exit 1; }
    BT=$SRC/tests/browser
    if [ ! -f "$BT/node_modules/.ndd-lock" ] || ! cmp -s "$BT/package-lock.json" "$BT/node_modules/.ndd-lock"; then
        (cd "$BT" && npm ci --cache "$cache" --prefer-offline --no-audit --no-fund --loglevel=error &&
            cp package-lock.json node_modules/.ndd-lock) || { echo "FAIL: npm ci in tests/browser"; exit 1; }
    fi
}
