#!/usr/bin/env python3
"""Validates real responses of a running ndd-admin against docs/openapi.yaml.

For every request it makes (each object kind through create, list, get, replace, patch and
delete, and the error cases: 400, 401, 403, 404, 405, 409, 412, 413, 422), it finds the operation
in the spec by path template and method, requires the response's status to be documented
there, and validates the JSON body against that status's schema (jsonschema, Draft 4 rules with
OpenAPI 3.0's `nullable` turned into a "null" type). Paths outside the spec (/api/v2/...) must
still answer in the Error schema. Prints each check; exits 1 on the first list of failures.

usage: openapi_responses.py SPEC PORT ADMIN_TOKEN VIEWER_TOKEN
"""
import http.client
import json
import re
import sys

import jsonschema
import yaml

FAILURES = []
CHECKED = {"n": 0}


def to_jsonschema(node, root):
    """OpenAPI 3.0 schema -> JSON Schema: $refs inlined, nullable as a "null" type."""
    if isinstance(node, list):
        return [to_jsonschema(x, root) for x in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = root
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        return to_jsonschema(target, root)
    out = {k: to_jsonschema(v, root) for k, v in node.items()
           if k not in ("nullable", "example", "readOnly", "writeOnly", "discriminator")}
    if node.get("nullable"):
        if "type" in out:
            t = out["type"]
            out["type"] = (t if isinstance(t, list) else [t]) + ["null"]
        for key in ("oneOf", "anyOf"):
            if key in out:
                out[key] = out[key] + [{"type": "null"}]
        if "enum" in out:
            out["enum"] = out["enum"] + [None]
    return out


class Api:
    def __init__(self, spec_path, port):
        with open(spec_path) as f:
            self.spec = yaml.safe_load(f)
        self.port = port
        self.templates = []
        for path in self.spec["paths"]:
            rx = "^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$"
            self.templates.append((re.compile(rx), path))
        self.error_schema = to_jsonschema(self.spec["components"]["schemas"]["Error"], self.spec)

    def operation(self, method, path):
        for rx, template in self.templates:
            if rx.match(path):
                return template, self.spec["paths"][template].get(method.lower())
        return None, None

    def schema_for(self, op, status):
        resp = op["responses"].get(str(status)) or op["responses"].get("default")
        if resp is None:
            return None, False
        if "$ref" in resp:
            resp = to_jsonschema(resp, self.spec)
        content = resp.get("content") or {}
        media = content.get("application/json")
        if media is None:
            return None, True
        return to_jsonschema(media.get("schema", {}), self.spec), True

    def call(self, method, path, token=None, body=None, headers=None, want=None):
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + token
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            if isinstance(data, str):
                data = data.encode()
            h["Content-Type"] = "application/json"
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            c.request(method, path, body=data, headers=h)
            r = c.getresponse()
            raw = r.read()
            status, ctype, etag = r.status, r.getheader("Content-Type") or "", r.getheader("ETag")
        except (ConnectionError, http.client.HTTPException) as e:
            FAILURES.append(f"{method} {path}: no response ({e})")
            return None, None, None
        finally:
            c.close()
        doc = None
        if raw:
            try:
                doc = json.loads(raw)
            except ValueError:
                doc = None
        self.check(method, path, status, ctype, raw, doc, want)
        return status, doc, etag

    def check(self, method, path, status, ctype, raw, doc, want):
        CHECKED["n"] += 1
        where = f"{method} {path} -> {status}"
        if want is not None and status != want:
            FAILURES.append(f"{where}: expected status {want}; body {raw[:200]!r}")
        template, op = self.operation(method, path.split("?")[0])
        if op is None:
            schema, documented = (self.error_schema, True) if status >= 400 else (None, False)
            if not documented:
                FAILURES.append(f"{where}: not an operation of the spec")
                return
        else:
            schema, documented = self.schema_for(op, status)
            if not documented:
                FAILURES.append(f"{where}: status not documented for {method} {template}")
                return
        if schema is None:
            if raw and status != 204 and "application/json" in ctype:
                FAILURES.append(f"{where}: a JSON body where the spec documents none")
            print(f"ok   {where} (no JSON body documented)")
            return
        if "application/json" not in ctype or doc is None:
            FAILURES.append(f"{where}: Content-Type {ctype!r}, body {raw[:200]!r} is not JSON")
            return
        try:
            jsonschema.validate(doc, schema, cls=jsonschema.Draft4Validator)
        except jsonschema.ValidationError as e:
            FAILURES.append(f"{where}: {e.message} at {list(e.absolute_path)}")
            return
        print(f"ok   {where}")


def crud(api, adm, viewer, coll, body, put_body, patch_body, bad_body, bad_status):
    base = f"/api/v1/{coll}"
    st, obj, etag = api.call("POST", base, adm, body, want=201)
    if st != 201 or not obj:
        return
    oid = obj["id"]
    api.call("POST", base, adm, body, want=409)  # same name
    api.call("POST", base, adm, bad_body, want=bad_status)
    api.call("POST", base, adm, "{not json", want=400)
    api.call("POST", base, viewer, body, want=403)
    api.call("POST", base, None, body, want=401)
    api.call("GET", base, viewer, want=200)
    api.call("GET", base + "?limit=0", viewer, want=400)
    api.call("GET", f"{base}/{oid}", viewer, want=200)
    api.call("GET", f"{base}/00000000-0000-0000-0000-000000000000", viewer, want=404)
    st, obj, etag = api.call("PUT", f"{base}/{oid}", adm, put_body, want=200)
    api.call("PUT", f"{base}/{oid}", adm, put_body, headers={"If-Match": '"1"'}, want=412)
    api.call("PATCH", f"{base}/{oid}", adm, patch_body, want=200)
    api.call("PUT", f"{base}/{oid}", adm, bad_body, want=bad_status)
    api.call("DELETE", f"{base}/{oid}", viewer, want=403)
    api.call("DELETE", f"{base}/{oid}", adm, want=204)
    api.call("GET", f"{base}/{oid}", viewer, want=404)
    api.call("DELETE", f"{base}/{oid}", adm, want=404)


def main():
    spec, port, adm, viewer = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    api = Api(spec, port)
    filt = {"name": "oa-filter", "default": "drop", "rules": [
        {"name": "scp", "action": "allow",
         "match": {"field": "@nf-type", "op": "equals", "value": "SCP"}}]}
    feed = {"name": "oa-feed", "transport": "http2", "encoding": "json",
            "endpoints": [{"url": "http://127.0.0.1:28999/ingest", "weight": 1}]}
    crud(api, adm, viewer, "filters", filt, dict(filt, default="allow"), {"default": "drop"},
         {"name": "oa-bad", "default": "allow", "rules": [{"name": "r", "action": "drop",
          "match": {"field": ":path", "op": "regex", "value": "("}}]}, 422)
    crud(api, adm, viewer, "feeds", feed, dict(feed, dlq_topic="ndd.dlq.oa"),
         {"delivery": {"timeout_ms": 2000}},
         dict(feed, endpoints=[{"url": "ftp://x"}]), 422)
    # a feed naming a filter that does not exist: 422 missing reference
    api.call("POST", "/api/v1/feeds", adm, dict(feed, name="oa-ref", filter="no-such-filter"),
             want=422)
    crud(api, adm, viewer, "sources", {"name": "oa-src", "type": "SCP", "topic": "OA-SCP"},
         {"name": "oa-src", "type": "SCP", "topic": "OA-SCP", "partitions": 2},
         {"description": "patched"}, {"name": "oa-src2", "type": "SMF", "topic": "X"}, 422)
    crud(api, adm, viewer, "correlation", {"name": "oa-corr", "timeout_ms": 5000},
         {"name": "oa-corr", "timeout_ms": 6000}, {"enabled": False},
         {"name": "oa-corr2", "timeout_ms": "5s"}, 400)
    # names: one rule for every kind
    for coll, rest in (("feeds", feed), ("filters", filt),
                       ("sources", {"type": "SCP", "topic": "OA"}), ("correlation", {})):
        api.call("POST", f"/api/v1/{coll}", adm, dict(rest, name="a' OR '1'='1"), want=422)
    # declarative apply: a dry run, the apply, the same again (unchanged), an update with its
    # diff and a prune, and the refusals; the dead-letter view of an admin without Kafka
    doc = {"filters": [dict(filt, name="oa-apply-filter")],
           "feeds": [dict(feed, name="oa-apply", filter="oa-apply-filter")]}
    api.call("POST", "/api/v1/apply?dry_run=true", adm, doc, want=200)
    api.call("POST", "/api/v1/apply", adm, doc, want=200)
    api.call("POST", "/api/v1/apply", adm, doc, want=200)
    doc["feeds"][0]["delivery"] = {"timeout_ms": 2000}
    api.call("POST", "/api/v1/apply?prune=true", adm, doc, want=200)
    api.call("POST", "/api/v1/apply", adm, {"feeds": [dict(feed, endpoints=[{"url": "ftp://x"}])]},
             want=422)
    api.call("POST", "/api/v1/apply", adm, {"widgets": []}, want=400)
    api.call("POST", "/api/v1/apply?dry_run=maybe", adm, doc, want=400)
    api.call("POST", "/api/v1/apply", viewer, doc, want=403)
    api.call("GET", "/api/v1/deadletters", viewer, want=503)
    api.call("GET", "/api/v1/audit?kind=token", viewer, want=200)
    # the rest of the API
    api.call("GET", "/api/v1/status", viewer, want=200)
    api.call("GET", "/api/v1/alarms", viewer, want=200)
    api.call("GET", "/api/v1/alarms/999999", viewer, want=404)
    st, audit, _ = api.call("GET", "/api/v1/audit?limit=5", viewer, want=200)
    if audit and audit.get("items"):
        api.call("GET", f"/api/v1/audit/{audit['items'][0]['id']}", viewer, want=200)
    api.call("GET", "/api/v1/audit/999999", viewer, want=404)
    api.call("GET", "/healthz", want=200)
    # errors before a handler: too large, unknown path, wrong method
    api.call("POST", "/api/v1/feeds", adm, b"{" + b" " * (80 * 1024) + b"}", want=413)
    api.call("GET", "/api/v2/feeds", adm, want=404)
    api.call("DELETE", "/api/v1/feeds", adm, want=405)
    print(f"{CHECKED['n']} responses checked against {spec}")
    if FAILURES:
        print("FAIL:\n  " + "\n  ".join(FAILURES), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
