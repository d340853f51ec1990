# Sourced by the chart and image tests: brings helm, kubernetes-validate and buildah when they
# are missing, idempotently and cached under ~/.cache/ndd so that a second run installs nothing.
#   helm                 go install helm.sh/helm/v3/cmd/helm@$NDD_HELM_VERSION into ~/.cache/ndd/bin
#   kubernetes-validate  from PyPI into the private virtualenv ~/.cache/ndd/venv-k8s
#   buildah, mmdebstrap  from Debian (apt-get)
NDD_HELM_VERSION=${NDD_HELM_VERSION:-v3.22.0}
HOME=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}
NDD_TOOLS_CACHE=${NDD_CACHE:-$HOME/.cache/ndd}
HELM=$NDD_TOOLS_CACHE/bin/helm
KV=$NDD_TOOLS_CACHE/venv-k8s/bin/kubernetes-validate
KV_PY=$NDD_TOOLS_CACHE/venv-k8s/bin/python

tools_helm() {
    # A `go install`ed helm reports its minor version only ("v3.22").
    if [[ -x $HELM ]] && "$HELM" version --short 2>/dev/null | grep -q "^${NDD_HELM_VERSION%.*}"; then
        return 0
    fi
    command -v go >/dev/null || { echo "tools: go is needed to install helm" >&2; return 1; }
    echo "tools: go install helm.sh/helm/v3/cmd/helm@$NDD_HELM_VERSION (once, ~2-5 min)" >&2
    mkdir -p "$NDD_TOOLS_CACHE/bin"
    GOBIN=$NDD_TOOLS_CACHE/bin GOFLAGS=-mod=mod go install "helm.sh/helm/v3/cmd/helm@$NDD_HELM_VERSION" >&2
}

tools_kubernetes_validate() {
    [[ -x $KV && -x $KV_PY ]] && return 0
    echo "tools: kubernetes-validate into $NDD_TOOLS_CACHE/venv-k8s (once)" >&2
    rm -rf "$NDD_TOOLS_CACHE/venv-k8s"
    python3 -m venv "$NDD_TOOLS_CACHE/venv-k8s" >&2 &&
        "$NDD_TOOLS_CACHE/venv-k8s/bin/pip" install -q kubernetes-validate >&2
}

tools_buildah() {
    command -v buildah >/dev/null && command -v mmdebstrap >/dev/null && return 0
    [[ $(id -u) == 0 ]] || { echo "tools: buildah/mmdebstrap missing and not root" >&2; return 1; }
    echo "tools: apt-get install buildah mmdebstrap (once)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=300 update -qq </dev/null >&2 &&
        apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends buildah mmdebstrap </dev/null >&2
}
