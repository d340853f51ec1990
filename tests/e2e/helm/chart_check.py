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
Exit 0 when every check passes; each failure is one line "FAIL: ...".
"""
import base64
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
    if what == "configs":
        print(configs(docs, sys.argv[3]))
        return 0
    print("unknown check", what, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
