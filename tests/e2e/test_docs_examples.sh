#!/usr/bin/env bash
# Docs that run (and docs/api.md's feed tables are the feed schema, tests/docs_feed_schema.py):
# every example of README.md and docs/ that a user is told to run or copy is
# marked (tests/docs_examples.py says how) and run here, so a doc cannot drift from the code:
#   sh                 the block, with bash -e, in a scratch directory that looks like the
#                      repository (deploy/ and build/ link to the real ones, .stack is this
#                      test's own stack: the examples start, stop and destroy it)
#   sh check-config    each `ndd-...` line with --check-config appended
#   sh helm            kubectl not run, helm install/upgrade as helm template + kubernetes-validate
#   json feeds-file / feed / filter / config DAEMON   the daemon's --check-config parser
#   json               valid JSON
# Substitutions in shell examples (the documented ports are the defaults of the stack and the
# daemons; the test's own free ports replace them): 9092 -> this test's Kafka port, 55432 ->
# its PostgreSQL port, 9100 -> a free admin port, 9108 -> a free console port, /etc/ndd/ -> a
# directory holding the blocks saved with file=NAME, /tmp/s2 -> a scratch directory, /opt/ndd
# -> a scratch install prefix. The built daemons are first on PATH.
# An example that leaves a process behind is stopped with its process group.
set -euo pipefail

SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must name the build directory}
if [[ -z ${NDD_E2E_TIMED:-} ]]; then
    NDD_E2E_TIMED=1 exec timeout -k 10 1440 bash "$0" "$@"
fi
STACK=$SRC/deploy/local/stack.sh
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

W=$(mktemp -d /tmp/ndd-e2e-docs.XXXXXX)
RUN=$W/run
ETC=$W/etc
mkdir -p "$RUN" "$ETC" "$W/ex"
chmod 755 "$W" "$RUN" # the stack runs PostgreSQL as user postgres, which must reach it
ln -s "$BUILD" "$RUN/build"
mapfile -t ports < <("$STACK" free-ports 7)
KPORT=${ports[0]} CPORT=${ports[1]} PPORT=${ports[2]} APORT=${ports[3]} SPORT=${ports[4]} QSPORT=${ports[5]}
GPORT=${ports[6]}
export NDD_STACK_DIR=$RUN/.stack
# deploy/ as in the repository, but stack.sh gets this test's ports (through its environment
# only: NDD_KAFKA_* in the examples' environment would reach the daemons as kafka.* settings).
mkdir -p "$RUN/deploy/local"
for f in "$SRC"/deploy/*; do [[ $f == */local ]] || ln -s "$f" "$RUN/deploy/"; done
for f in "$SRC"/deploy/local/*; do [[ $f == */stack.sh ]] || ln -s "$f" "$RUN/deploy/local/"; done
printf '#!/usr/bin/env bash\nNDD_KAFKA_PORT=%s NDD_CONTROLLER_PORT=%s NDD_PG_PORT=%s NDD_SSL_PORT=%s NDD_SASL_PORT=%s exec %q "$@"\n' \
    "$KPORT" "$CPORT" "$PPORT" "$SPORT" "$QSPORT" "$STACK" >"$RUN/deploy/local/stack.sh"
chmod +x "$RUN/deploy/local/stack.sh"
cleanup() {
    "$STACK" destroy --dir "$NDD_STACK_DIR" >/dev/null 2>&1 || true
    "$STACK" destroy --dir "$W/s2" >/dev/null 2>&1 || true
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 143' TERM INT # a timeout still stops what the examples started
export PATH="$BUILD/admin:$BUILD/adapter:$BUILD/aggregation:$BUILD/correlation:$BUILD/ingress:$BUILD/ndd:$BUILD/gui-api:$BUILD/bench/sink:$BUILD/bench/nfsim:$PATH"
B=127.0.0.1:$KPORT

# docs/api.md's feed tables are the feed schema the admin validates with, rendered.
"$BUILD/admin/ndd-admin" schema feeds >"$W/feed-schema.json" || fail "ndd-admin schema feeds"
python3 "$SRC/tests/docs_feed_schema.py" "$W/feed-schema.json" "$SRC/docs/api.md" ||
    fail "docs/api.md's feed tables differ from the feed schema (see above)"

python3 "$SRC/tests/docs_examples.py" "$SRC" "$W/ex" >"$W/manifest" ||
    fail "unmarked or malformed examples (see above): mark each \`\`\`sh/\`\`\`json block"
[[ -s $W/manifest ]] || fail "no marked example found"

# The quickstart runs from the existing build (no Release build in the test), for 10 s, on
# free ports (--ports-from: admin P, the rest up to P+80).
QPORT=$(shuf -i 20000-28000 -n 1)
subst() { # file -> the example with the test's ports and paths
    sed -e "s/\b9092\b/$KPORT/g" -e "s/\b55432\b/$PPORT/g" \
        -e "s/\b9100\b/$APORT/g" -e "s/\b9108\b/$GPORT/g" -e "s|/etc/ndd/|$ETC/|g" \
        -e "s|/tmp/s2|$W/s2|g" -e "s|/opt/ndd\b|$W/opt/ndd|g" \
        -e "/--stop/!s|^deploy/local/quickstart.sh |deploy/local/quickstart.sh --no-build --build build --seconds 10 --ports-from $QPORT --kafka-port $KPORT --pg-port $PPORT |" "$1"
}

# Runs a script in RUN in its own session (so what it leaves behind can be stopped).
run_script() { # script log
    local rc=0
    # stdin from /dev/null: an example that reads stdin (psql) would eat the manifest this
    # loop reads, and every example after it would silently not run
    (cd "$RUN" && exec setsid timeout -k 5 180 bash -e "$1") </dev/null >"$2" 2>&1 &
    local pid=$!
    wait "$pid" || rc=$?
    kill -TERM -- "-$pid" 2>/dev/null || true
    sleep 0.2
    kill -KILL -- "-$pid" 2>/dev/null || true
    return "$rc"
}

# "sh helm" blocks: what a cluster would run, checked without one. helm and kubernetes-validate
# come from tests/e2e/helm/tools.sh (installed once, as the chart test does); missing, they fail.
helm_prelude() {
    cat <<EOF
kubectl() { # not run; a deploy/NAME it names must be a Deployment of the last render
    local a
    for a in "\$@"; do
        if [[ \$a == deploy/* ]] && ! grep -qx "  name: \${a#deploy/}" helm-render.yaml; then
            echo "kubectl \$*: no Deployment \${a#deploy/} in the rendered chart" >&2
            return 1
        fi
    done
    echo "not run (needs a cluster): kubectl \$*"
}
helm() {
    case \$1 in
    install | upgrade)
        shift
        $(printf %q "$HELM") template "\$@" --kube-version 1.30.0 >helm-render.yaml
        rm -rf helm-split && mkdir helm-split
        $(printf %q "$KV_PY") $(printf %q "$SRC/tests/e2e/helm/chart_check.py") split helm-render.yaml helm-split >/dev/null
        local files=() out m
        for m in helm-split/*.yaml; do
            grep -q '^apiVersion: monitoring.coreos.com/' "\$m" || files+=("\$m")
        done
        ((\${#files[@]} > 0)) || { echo "helm \$*: nothing rendered" >&2; return 1; }
        out=\$($(printf %q "$KV") --strict -k 1.30.0 "\${files[@]}" 2>&1) || true
        if grep -v '^INFO .* passed for resource' <<<"\$out" | grep .; then return 1; fi
        echo "rendered and valid (Kubernetes 1.30, strict): \${#files[@]} manifests"
        ;;
    *) echo "not run (needs a cluster): helm \$*" ;;
    esac
}
set -e
EOF
}

check_json() { # kind args file
    local kind=$1 args=$2 f=$3
    case $kind in
    json) jq -e . "$f" >/dev/null ;;
    json-feeds-file) ndd-adapter --bootstrap "$B" --feeds-file "$f" --check-config ;;
    json-feed)
        jq '{feeds: [.]}' "$f" >"$f.feeds" &&
            ndd-adapter --bootstrap "$B" --feeds-file "$f.feeds" --check-config ;;
    json-filter) ndd-aggregation --nf-type SCP --bootstrap "$B" --filter-file "$f" --check-config ;;
    json-config) "${args%% *}" --config "$f" --check-config ;;
    *) return 2 ;;
    esac
}

# Blocks saved with file=NAME first: an example may name a file a later doc shows.
while IFS='|' read -r id kind args where; do
    for a in $args; do
        if [[ $a == file=* ]]; then cp "$W/ex/$id.json" "$ETC/${a#file=}"; fi
    done
done <"$W/manifest"

n=0 failed=0
while IFS='|' read -r id kind args where; do
    n=$((n + 1))
    log=$W/ex/$id.log
    args=$(tr ' ' '\n' <<<"$args" | grep -v '^file=' | xargs || true)
    rc=0
    case $kind in
    sh)
        subst "$W/ex/$id.sh" >"$W/ex/$id.run.sh"
        run_script "$W/ex/$id.run.sh" "$log" || rc=$?
        ;;
    sh-check-config)
        # a command continued over lines (a trailing backslash) is one command
        { echo "set -e"; subst "$W/ex/$id.sh" | sed -e ':a' -e '/\\$/{N;s/\\\n//;ba}' |
            sed 's/[[:space:]]#.*$//' | awk '/^ndd-/{print $0 " --check-config"}'; } >"$W/ex/$id.run.sh"
        run_script "$W/ex/$id.run.sh" "$log" || rc=$?
        ;;
    sh-helm)
        if [[ -z ${KV:-} ]]; then
            # shellcheck source=helm/tools.sh
            . "$SRC/tests/e2e/helm/tools.sh"
            tools_helm && tools_kubernetes_validate || fail "helm or kubernetes-validate missing"
        fi
        { helm_prelude; subst "$W/ex/$id.sh"; } >"$W/ex/$id.run.sh"
        run_script "$W/ex/$id.run.sh" "$log" || rc=$?
        ;;
    json*) check_json "$kind" "$args" "$W/ex/$id.json" >"$log" 2>&1 || rc=$? ;;
    esac
    if ((rc == 0)); then
        echo "ok   $where ($kind)"
    else
        failed=$((failed + 1))
        echo "FAIL $where ($kind, exit $rc):"
        sed 's/^/     /' "$log" | tail -n 15
    fi
done <"$W/manifest"
((failed == 0)) || fail "$failed of $n documented examples do not run as written"
echo "PASS: $n documented examples run as written"
