#!/usr/bin/env bash
# The Helm chart (deploy/helm/ndd, docs/helm.md), without a cluster:
#   1. `helm lint --strict` with the defaults (plus a site's brokers and PostgreSQL Secret),
#      each sizing profile, the bundled-dev values and a site with every Secret-reading
#      option on;
#   2. `helm template` of each, every manifest validated strictly against the Kubernetes
#      1.30 schemas (kubernetes-validate, offline; the Prometheus operator's CRD kinds are
#      not in those schemas and are counted apart);
#   3. values.schema.json (and the chart's own checks, templates/checks.yaml) refusing each
#      bad values file in tests/e2e/helm/bad/, with the message its "# expect:" line names and
#      at the values path its "# path:" line names (a.b[0].c, or /a/b/0/c as the schema says);
#   4. every NDD daemon container of every render: its ConfigMap files, Secret files (stand-
#      ins for external Secrets), env and args given to that daemon's --check-config from
#      NDD_BUILD_DIR, which must accept them (exit 0);
#   5. every pod non-root, read-only root, seccomp RuntimeDefault, all capabilities dropped,
#      no service-account token; no Secret value in a ConfigMap, a command, an arg or an env;
#   6. with the console (sets "console" and "secure"): ndd-gui-api given the /metrics URL of
#      every worker Service, its NetworkPolicy admitting exactly those and the admin, each
#      worker's admitting it; an https:// admin URL with the CA and a client certificate
#      mounted when the admin is TLS with client certificates (secure).
# Installs helm (go install) and kubernetes-validate (a virtualenv) once, in ~/.cache/ndd.
# Needs NDD_BUILD_DIR; no Kafka, no PostgreSQL, no cluster.
set -uo pipefail

BUILD=${NDD_BUILD_DIR:?NDD_BUILD_DIR must point at the build directory}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CHART=$SRC/deploy/helm/ndd
HT=$SRC/tests/e2e/helm
K8S_VERSION=1.30.0
# shellcheck source=helm/tools.sh
. "$HT/tools.sh"
T=$(mktemp -d /tmp/ndd-helm-e2e.XXXXXX)
trap 'rm -rf "$T"' EXIT
FAILS=0
CHECKS=0
fail() {
    echo "FAIL: $*"
    FAILS=$((FAILS + 1))
}
ok() { CHECKS=$((CHECKS + 1)); }

tools_helm || { echo "FAIL: cannot install helm"; exit 1; }
tools_kubernetes_validate || { echo "FAIL: cannot install kubernetes-validate"; exit 1; }
"$HELM" version --short

# The rules and the dashboard the chart ships are the ones in deploy/ (copies: Helm reads
# only files inside the chart).
cmp -s "$CHART/files/ndd-rules.yml" "$SRC/deploy/prometheus/ndd-rules.yml" && ok ||
    fail "deploy/helm/ndd/files/ndd-rules.yml differs from deploy/prometheus/ndd-rules.yml (copy it)"
cmp -s "$CHART/files/ndd-overview.json" "$SRC/deploy/grafana/dashboards/ndd-overview.json" && ok ||
    fail "deploy/helm/ndd/files/ndd-overview.json differs from deploy/grafana/dashboards/ndd-overview.json (copy it)"

# name: values files
declare -A SETS=(
    [default]="$HT/site.yaml"
    [10k]="$HT/site.yaml $CHART/values-10k.yaml"
    [135k]="$HT/site.yaml $CHART/values-135k.yaml"
    [270k]="$HT/site.yaml $CHART/values-270k.yaml"
    [dev]="$CHART/values-dev.yaml"
    [secure]="$HT/site-secure.yaml"
    [console]="$HT/site.yaml $CHART/values-270k.yaml $HT/site-console.yaml"
)
# 6. the console's check per set: the admin's TLS mode of that set
declare -A CONSOLE=([secure]=mtls [console]=plain)
daemon_bin() {
    case $1 in
    ndd-aggregation) echo "$BUILD/aggregation/ndd-aggregation" ;;
    ndd-correlation) echo "$BUILD/correlation/ndd-correlation" ;;
    ndd-adapter) echo "$BUILD/adapter/ndd-adapter" ;;
    ndd-admin) echo "$BUILD/admin/ndd-admin" ;;
    ndd-gui-api) echo "$BUILD/gui-api/ndd-gui-api" ;;
    ndd-ingress) echo "$BUILD/ingress/ndd-ingress" ;;
    esac
}

for set in default 10k 135k 270k dev secure console; do
    args=()
    for f in ${SETS[$set]}; do args+=(-f "$f"); done
    echo "--- $set: ${SETS[$set]}"
    # 1. lint
    if "$HELM" lint --strict --kube-version "$K8S_VERSION" "$CHART" "${args[@]}" >"$T/lint-$set.log" 2>&1; then ok; else
        cat "$T/lint-$set.log"
        fail "$set: helm lint --strict"
    fi
    # 2. render and validate
    if ! "$HELM" template ndd "$CHART" --kube-version "$K8S_VERSION" --namespace ndd "${args[@]}" >"$T/$set.yaml" 2>"$T/tpl-$set.log"; then
        cat "$T/tpl-$set.log"
        fail "$set: helm template"
        continue
    fi
    ok
    mkdir -p "$T/split-$set"
    n=$("$KV_PY" "$HT/chart_check.py" split "$T/$set.yaml" "$T/split-$set")
    crd=0 files=()
    for m in "$T/split-$set"/*.yaml; do
        if grep -q '^apiVersion: monitoring.coreos.com/' "$m"; then
            crd=$((crd + 1))
        else
            files+=("$m")
        fi
    done
    # One kubernetes-validate for the whole render: a line per manifest, INFO ... passed or
    # ERROR ... did not validate.
    out=$("$KV" --strict -k "$K8S_VERSION" "${files[@]}" 2>&1)
    valid=$(grep -c '^INFO .* passed for resource' <<<"$out")
    while IFS= read -r line; do
        [[ -n $line ]] || continue
        fail "$set: not a valid Kubernetes $K8S_VERSION object (strict): ${line#ERROR }"
    done < <(grep -v '^INFO .* passed for resource' <<<"$out")
    echo "$set: $n manifests, $valid valid against Kubernetes $K8S_VERSION (strict), $crd Prometheus operator objects"
    if ((n > 0 && valid + crd == n)); then ok; else fail "$set: $valid valid + $crd operator objects of $n manifests"; fi
    # 5. security contexts and Secret values
    if "$KV_PY" "$HT/chart_check.py" security "$T/$set.yaml"; then ok; else fail "$set: security"; fi
    # 6. the console's metrics URLs, NetworkPolicies and admin TLS
    if [[ -n ${CONSOLE[$set]:-} ]]; then
        if "$KV_PY" "$HT/chart_check.py" console "$T/$set.yaml" "${CONSOLE[$set]}"; then ok; else fail "$set: console"; fi
    fi
    # 4. each daemon's --check-config on what the chart renders for it
    mkdir -p "$T/cfg-$set"
    nd=$("$KV_PY" "$HT/chart_check.py" configs "$T/$set.yaml" "$T/cfg-$set")
    ((nd > 0)) || fail "$set: no NDD daemon container rendered"
    for d in "$T/cfg-$set"/*/; do
        mapfile -d '' -t cmd <"$d/cmd"
        mapfile -d '' -t envs <"$d/env"
        name=$(cat "$d/name")
        bin=$(daemon_bin "${cmd[0]}")
        if [[ -z $bin ]]; then
            fail "$set: $name runs ${cmd[0]}, not an NDD daemon"
            continue
        fi
        if [[ ! -x $bin ]]; then
            fail "$set: $name: $bin missing"
            continue
        fi
        if out=$(cd "$d" && env -i PATH=/usr/bin:/bin HOME="$d" "${envs[@]}" timeout 10 "$bin" "${cmd[@]:1}" --check-config 2>&1); then
            ok
            echo "$set: $name: --check-config ok"
        else
            echo "$out" | tail -n 5
            fail "$set: $name: ${cmd[*]} --check-config refused the rendered configuration"
        fi
    done
done

# 3. bad values refused, each with its message and at its values path
nbad=0
for bad in "$HT"/bad/*.yaml; do
    nbad=$((nbad + 1))
    name=$(basename "$bad")
    expect=$(sed -n 's/^# expect: //p' "$bad" | head -n1)
    path=$(sed -n 's/^# path: //p' "$bad" | head -n1)
    if [[ -z $expect || -z $path ]]; then
        fail "bad values $name lacks its '# expect:' or '# path:' line"
        continue
    fi
    # The schema names a path as a JSON pointer at '/a/b/0/c', the templates as a.b[0].c; a
    # "# path:" that is a pointer already (a key with a dot in it) is taken as it is.
    if [[ $path == /* ]]; then
        pointer="'$path'"
    else
        pointer="'/$(sed -E 's/\[([0-9]+)\]/.\1/g; s/\./\//g' <<<"$path")'"
    fi
    if out=$("$HELM" template ndd "$CHART" --kube-version "$K8S_VERSION" -f "$bad" 2>&1); then
        fail "bad values $name accepted"
    elif ! grep -Eq -- "$expect" <<<"$out"; then
        echo "$out" | head -n 5
        fail "bad values $name refused without naming /$expect/"
    elif ! grep -Fq -e "$path" -e "at $pointer" <<<"$out"; then
        echo "$out" | head -n 5
        fail "bad values $name refused, but not at $path ($pointer)"
    else
        ok
        echo "refused $name at $path: $(grep -E -m1 -- "$expect" <<<"$out" | cut -c1-160)"
    fi
done
((nbad >= 23)) && ok || fail "only $nbad bad values files"

echo "$CHECKS checks passed, $FAILS failed"
((FAILS == 0))
