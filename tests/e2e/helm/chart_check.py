"""Checks of a rendered NDD chart (`helm template` output), for tests/e2e/test_helm_chart.sh.

  chart_check.py split RENDERED OUTDIR      one file per manifest (for kubernetes-validate)
  chart_check.py security RENDERED          every pod: non-root, read-only root, seccomp
                                            RuntimeDefault, all capabilities dropped, no
                                            service-account token; no Secret value in a
                                            ConfigMap, a command, an argument or an env value
  chart_check.py configs RENDERED OUTDIR    for every NDD daemon container: its files
                                            (ConfigMaps and Secrets it mounts) laid out under
                                            OUTDIR/N/root, its paths rewritten to that root,
                                            and OUTDIR/N/cmd (NUL-separated argv) and env
  chart_check.py console RENDERED plain|mtls
                                            ndd-gui-api: metrics-urls names the /metrics of
                                            every worker Service rendered (aggregation,
                                            correlation, adapter, ingress); its NetworkPolicy
                                            egress admits DNS, the admin and exactly those
                                            Services' ports, and each worker's policy admits
                                            it; the admin URL is http:// (plain) or https://
                                            with the CA and a client certificate mounted from
                                            Secrets, never the admin's own key (mtls)
Exit 0 when every check passes; each failure is one line "FAIL: ...".
"""
import base64
import json
import os
import sys

import yaml


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def pod_specs(docs):
    for d in docs:
        kind = d.get("kind")
        name = f'{kind}/{d["metadata"]["name"]}'
        spec = d.get("spec") or {}
        if kind in ("Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet"):
            yield name, spec["template"]["spec"]
        elif kind == "CronJob":
            yield name, spec["jobTemplate"]["spec"]["template"]["spec"]
        elif kind == "Pod":
            yield name, spec


def containers(pod):
    return (pod.get("initContainers") or []) + (pod.get("containers") or [])


def secret_values(docs):
    vals = []
    for d in docs:
        if d.get("kind") != "Secret":
            continue
        for v in (d.get("data") or {}).values():
            vals.append(base64.b64decode(v).decode("utf-8", "replace"))
        vals += [str(v) for v in (d.get("stringData") or {}).values()]
    # A secret is its whole value; short ones (a port, "true") would match by chance.
    return [v for v in vals if len(v) >= 8]


def check_security(docs):
    fails = []
    n = 0
    for name, pod in pod_specs(docs):
        n += 1
        psc = pod.get("securityContext") or {}
        if pod.get("automountServiceAccountToken") is not False:
            fails.append(f"{name}: automountServiceAccountToken is not false")
        if pod.get("hostNetwork") or pod.get("hostPID") or pod.get("hostIPC"):
            fails.append(f"{name}: uses a host namespace")
        if (psc.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
            fails.append(f"{name}: pod seccompProfile is not RuntimeDefault")
        for c in containers(pod):
            cn = f'{name} container {c["name"]}'
            sc = c.get("securityContext") or {}
            if not (sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True):
                fails.append(f"{cn}: runAsNonRoot is not true")
            uid = sc.get("runAsUser", psc.get("runAsUser"))
            if uid is None or int(uid) == 0:
                fails.append(f"{cn}: runAsUser is {uid} (must be a non-zero uid)")
            if sc.get("readOnlyRootFilesystem") is not True:
                fails.append(f"{cn}: readOnlyRootFilesystem is not true")
            if sc.get("allowPrivilegeEscalation") is not False:
                fails.append(f"{cn}: allowPrivilegeEscalation is not false")
            if sc.get("privileged"):
                fails.append(f"{cn}: privileged")
            caps = sc.get("capabilities") or {}
            if "ALL" not in (caps.get("drop") or []):
                fails.append(f"{cn}: capabilities.drop lacks ALL")
            if caps.get("add"):
                fails.append(f"{cn}: adds capabilities {caps['add']}")
            prof = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
            if prof != "RuntimeDefault":
                fails.append(f"{cn}: seccompProfile is {prof}")
    if n == 0:
        fails.append("no pod in the rendered chart")
    secrets = secret_values(docs)
    for d in docs:
        where = f'{d.get("kind")}/{d.get("metadata", {}).get("name")}'
        texts = []
        if d.get("kind") == "ConfigMap":
            texts += [(f"{where} data.{k}", str(v)) for k, v in (d.get("data") or {}).items()]
        for pname, pod in pod_specs([d]):
            for c in containers(pod):
                for i, a in enumerate((c.get("command") or []) + (c.get("args") or [])):
                    texts.append((f"{pname} container {c['name']} argv[{i}]", str(a)))
                for e in c.get("env") or []:
                    if "value" in e:
                        texts.append((f"{pname} container {c['name']} env {e['name']}", str(e["value"])))
        for label, text in texts:
            for s in secrets:
                if s in text:
                    fails.append(f"{label}: holds the value of a Secret")
    return fails, n, len(secrets)


def configs(docs, outdir):
    cms = {d["metadata"]["name"]: d for d in docs if d.get("kind") == "ConfigMap"}
    sec = {d["metadata"]["name"]: d for d in docs if d.get("kind") == "Secret"}
    n = 0
    for pname, pod in pod_specs(docs):
        vols = {v["name"]: v for v in pod.get("volumes") or []}
        for c in containers(pod):
            cmd = (c.get("command") or []) + (c.get("args") or [])
            if not cmd or not cmd[0].startswith("ndd-"):
                continue
            n += 1
            d = os.path.join(outdir, str(n))
            root = os.path.join(d, "root")
            os.makedirs(root)

            def fix(s):
                return s.replace("/etc/ndd/", root + "/etc/ndd/")

            for m in c.get("volumeMounts") or []:
                v = vols[m["name"]]
                mp = root + m["mountPath"]
                os.makedirs(mp, exist_ok=True)
                files = {}
                if "configMap" in v:
                    data = cms[v["configMap"]["name"]].get("data") or {}
                    items = v["configMap"].get("items") or [{"key": k, "path": k} for k in data]
                    files = {it["path"]: fix(data[it["key"]]) for it in items}
                elif "secret" in v:
                    s = sec.get(v["secret"]["secretName"])
                    data = {k: base64.b64decode(x).decode() for k, x in ((s or {}).get("data") or {}).items()}
                    items = v["secret"].get("items") or [{"key": k, "path": k} for k in data]
                    if not items:
                        items = [{"key": "placeholder", "path": "placeholder"}]
                    # An external Secret is not in the render: its files get stand-in content.
                    files = {it["path"]: data.get(it["key"], f"stand-in for {it['key']}\n") for it in items}
                for p, text in files.items():
                    with open(os.path.join(mp, p), "w") as f:
                        f.write(text)
            with open(os.path.join(d, "cmd"), "w") as f:
                f.write("\0".join(fix(a) for a in cmd))
            with open(os.path.join(d, "env"), "w") as f:
                f.write("\0".join(f'{e["name"]}={fix(str(e["value"]))}' for e in c.get("env") or [] if "value" in e))
            with open(os.path.join(d, "name"), "w") as f:
                f.write(f"{pname} container {c['name']}")
    return n


WORKERS = ("aggregation", "correlation", "adapter", "ingress")
COMPONENT = "app.kubernetes.io/component"


def http_port(svc):
    return next(p["port"] for p in svc["spec"]["ports"] if p["name"] == "http")


def console_egress(np, workers, admin, fails):
    """Every egress rule of the console's policy: DNS, the admin, or one worker Service."""
    want = {json.dumps(w["spec"]["selector"], sort_keys=True): http_port(w) for w in workers}
    seen = set()
    for rule in np["spec"].get("egress") or []:
        ports = sorted(p["port"] for p in rule.get("ports") or [])
        peers = rule.get("to")
        if not peers:
            if ports != [53, 53]:
                fails.append(f"console egress to anywhere on ports {ports} (only DNS may be)")
            continue
        for peer in peers:
            sel = json.dumps((peer.get("podSelector") or {}).get("matchLabels"), sort_keys=True)
            if set(peer) != {"podSelector"}:
                fails.append(f"console egress peer {peer} is not a pod of this release")
            elif admin and sel == json.dumps(admin["spec"]["selector"], sort_keys=True):
                if ports != [http_port(admin)]:
                    fails.append(f"console egress to the admin on {ports}, not {http_port(admin)}")
            elif sel in want:
                if ports != [want[sel]]:
                    fails.append(f"console egress to {sel} on {ports}, not [{want[sel]}]")
                seen.add(sel)
            else:
                fails.append(f"console egress to {sel}: not a worker Service nor the admin")
    for sel in set(want) - seen:
        fails.append(f"console egress does not admit the worker {sel}")


def worker_ingress(docs, workers, gui_sel, fails):
    """Each worker's own policy lets the console in on its metrics port."""
    nps = [d for d in docs if d.get("kind") == "NetworkPolicy"]
    for w in workers:
        sel, port = w["spec"]["selector"], http_port(w)
        pol = [n for n in nps if n["spec"]["podSelector"].get("matchLabels") == sel]
        if not pol:
            fails.append(f'{w["metadata"]["name"]}: no NetworkPolicy selects its pods')
            continue
        ok = any(
            port in [p["port"] for p in r.get("ports") or []]
            and (not r.get("from") or any((f.get("podSelector") or {}).get("matchLabels") == gui_sel for f in r["from"]))
            for n in pol for r in n["spec"].get("ingress") or [])
        if not ok:
            fails.append(f'{w["metadata"]["name"]}: its NetworkPolicy does not admit the console on {port}')


def console_admin_tls(cfg, dep, admin_dep, mode, fails):
    url = cfg.get("admin-url", "")
    pod = dep["spec"]["template"]["spec"]
    vols = {v["name"]: v for v in pod.get("volumes") or []}
    mounts = pod["containers"][0].get("volumeMounts") or []
    if mode == "plain":
        if not url.startswith("http://") or any(k.startswith("admin-tls") for k in cfg):
            fails.append(f"admin over HTTP: the console has admin-url {url} and {sorted(cfg)}")
        return
    if not url.startswith("https://"):
        fails.append(f"admin over HTTPS: the console's admin-url is {url}")
    for key in ("admin-tls-ca", "admin-tls-cert", "admin-tls-key"):
        path = cfg.get(key)
        m = path and next((m for m in mounts if path.startswith(m["mountPath"] + "/")), None)
        v = m and vols.get(m["name"])
        if not v or "secret" not in v:
            fails.append(f"{key} {path}: not a file of a mounted Secret")
        elif os.path.basename(path) not in [i["path"] for i in v["secret"].get("items") or []]:
            fails.append(f"{key} {path}: not among the items of Secret {v['secret']['secretName']}")
    own = [v["secret"]["secretName"] for v in admin_dep["spec"]["template"]["spec"]["volumes"]
           if v["name"] == "admin-tls"]
    for v in vols.values():
        if "secret" in v and v["secret"]["secretName"] in own:
            keys = [i["key"] for i in v["secret"].get("items") or []]
            if keys != ["ca.crt"]:
                fails.append(f"the console mounts {keys or 'every key'} of the admin's own Secret")


def check_console(docs, mode):
    fails = []
    by = lambda kind: [d for d in docs if d.get("kind") == kind]
    gui = [d for d in by("ConfigMap") if d["metadata"].get("labels", {}).get(COMPONENT) == "gui-api"]
    if len(gui) != 1:
        return [f"{len(gui)} gui-api ConfigMaps rendered, not 1"], 0
    cfg = json.loads(gui[0]["data"]["config.json"])
    workers = [s for s in by("Service") if s["metadata"]["labels"].get(COMPONENT) in WORKERS]
    admin = next((s for s in by("Service") if s["metadata"]["labels"].get(COMPONENT) == "admin"), None)
    want = sorted(f'http://{w["metadata"]["name"]}:{http_port(w)}/metrics' for w in workers)
    got = (cfg.get("metrics-urls") or "").split(",")
    if sorted(got) != want:
        fails.append(f"metrics-urls {got} is not every worker Service's {want}")
    deps = {d["metadata"]["labels"].get(COMPONENT): d for d in by("Deployment")}
    gui_sel = deps["gui-api"]["spec"]["selector"]["matchLabels"]
    np = [n for n in by("NetworkPolicy") if n["spec"]["podSelector"].get("matchLabels") == gui_sel]
    if len(np) != 1:
        fails.append(f"{len(np)} NetworkPolicies select the console's pods, not 1")
    else:
        console_egress(np[0], workers, admin, fails)
    worker_ingress(docs, workers, gui_sel, fails)
    console_admin_tls(cfg, deps["gui-api"], deps.get("admin"), mode, fails)
    return fails, len(workers)


def main():
    what, rendered = sys.argv[1], sys.argv[2]
    docs = load(rendered)
    if what == "split":
        out = sys.argv[3]
        for i, d in enumerate(docs):
            with open(os.path.join(out, f"{i:03d}-{d['kind']}-{d['metadata']['name']}.yaml"), "w") as f:
                yaml.safe_dump(d, f)
        print(len(docs))
        return 0
    if what == "security":
        fails, n, ns = check_security(docs)
        for f in fails:
            print("FAIL:", f)
        print(f"security: {n} pods checked, {ns} Secret values looked for, {len(fails)} failures")
        return 1 if fails else 0
    if what == "console":
        fails, n = check_console(docs, sys.argv[3])
        for f in fails:
            print("FAIL:", f)
        print(f"console: {n} worker Services, {len(fails)} failures")
        return 1 if fails else 0
    if what == "configs":
        print(configs(docs, sys.argv[3]))
        return 0
    print("unknown check", what, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
