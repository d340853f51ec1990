#!/usr/bin/env python3
"""Checks the feed tables of docs/api.md against the feed schema the admin validates with.

The tables between `<!-- feed-schema: transports -->` / `<!-- feed-schema: options -->` and the
next `<!-- feed-schema: end -->` in docs/api.md are rendered from the schema
(`ndd-admin schema feeds`, the same JSON as GET /api/v1/schema/feeds). The docs test fails when
the document's tables differ from what the schema renders, and prints the difference; a new
transport, encoding or option therefore reaches the docs by being described in the code, and a
range changed in the code cannot leave the docs behind.

Usage: docs_feed_schema.py SCHEMA.json DOC.md [--write]
  --write  replace the tables in DOC.md with the rendered ones (after changing the code)
Exit 0 when equal (or written), 1 when they differ.
"""
import difflib
import json
import re
import sys


def cell(v):
    return str(v).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def fmt_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"%s"' % v
    if isinstance(v, int) and abs(v) >= 1 << 20 and v & (v - 1) == 0:
        return "2^%d" % (v.bit_length() - 1)
    return str(v)


def fmt_range(o):
    t = o["type"]
    if t == "integer":
        lo, hi = o["minimum"], o["maximum"]
        hi_s = "2^63-1" if hi == 2**63 - 1 else fmt_value(hi)
        return "%s – %s" % (fmt_value(lo), hi_s)
    if t == "string" and "maxLength" in o:
        return "at most %d bytes" % o["maxLength"]
    if t == "enum":
        return ", ".join("`%s`" % e for e in o.get("enum", []))
    if t == "array":
        if "maxItems" in o:
            return "%d – %d items" % (o.get("minItems", 0), o["maxItems"])
        return "at least %d items" % o.get("minItems", 0)
    if t == "map" and "maxProperties" in o:
        return "at most %d" % o["maxProperties"]
    return ""


def option_rows(opts, applies, out):
    for o in opts:
        if o["type"] == "object" and o.get("options"):
            option_rows(o["options"], applies.get(o["name"], applies) if isinstance(applies, dict)
                        else applies, out)
            continue
        where = applies[""] if isinstance(applies, dict) else applies
        flags = []
        if o.get("required"):
            flags.append("required")
        if o.get("secret"):
            flags.append("names a secret file")
        typ = o["type"] + (" (%s)" % ", ".join(flags) if flags else "")
        default = fmt_value(o["default"]) if "default" in o else ""
        unit = (" " + o["unit"]) if o.get("unit") and default else ""
        out.append("| `%s` | %s | %s | %s | %s | %s |" % (
            o["path"], typ, cell(default + unit), cell(fmt_range(o)), where, cell(o.get("help", ""))))
        if o["type"] == "array" and o.get("options"):
            option_rows(o["options"], where, out)


def render_options(s):
    out = ["| option | type | default | range | applies to | meaning |",
           "|---|---|---|---|---|---|"]
    # the common members a transport lists in its sections apply to those transports only
    by_section = {"": "every feed", "delivery": "every feed"}
    for sec in ("tls", "http"):
        names = [t["name"] for t in s["transports"] if sec in t["sections"]]
        by_section[sec] = "transport " + ", ".join("`%s`" % n for n in names)
    option_rows(s["feed"], by_section, out)
    for t in s["transports"]:
        if t.get("options"):
            option_rows(t["options"], "transport `%s`" % t["name"], out)
    for e in s["encodings"]:
        if e.get("options"):
            option_rows(e["options"], "encoding `%s`" % e["name"], out)
    return out


def render_transports(s):
    out = ["| transport | endpoint URL | encodings it carries | acknowledged | exactly once | "
           "fire and forget | topic and ACLs made by the admin | members |",
           "|---|---|---|---|---|---|---|---|"]
    for t in s["transports"]:
        members = list(t["sections"]) + ([t["member"]] if t.get("member") else [])
        yes = lambda k: "yes" if t.get(k) else "no"
        out.append("| `%s` | `%s` | %s | %s | %s | %s | %s | %s |" % (
            t["name"], t.get("url_example", ""), ", ".join("`%s`" % e for e in t["encodings"]),
            t["acknowledged"], yes("exactly_once"), yes("fire_and_forget"), yes("provisions_topic"),
            ", ".join("`%s`" % m for m in members)))
    return out


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    schema = json.load(open(sys.argv[1], encoding="utf-8"))
    path = sys.argv[2]
    write = "--write" in sys.argv[3:]
    text = open(path, encoding="utf-8").read()
    rendered = {"transports": render_transports(schema), "options": render_options(schema)}
    bad = 0
    for name, rows in rendered.items():
        pat = re.compile(r"(<!-- feed-schema: %s -->\n)(.*?)(<!-- feed-schema: end -->)" % name, re.S)
        m = pat.search(text)
        if not m:
            print("%s: no '<!-- feed-schema: %s -->' ... '<!-- feed-schema: end -->' block" % (path, name))
            bad += 1
            continue
        want = "\n".join(rows) + "\n"
        if m.group(2) != want:
            if write:
                text = text[:m.start(2)] + want + text[m.end(2):]
                continue
            bad += 1
            print("%s: the %s table differs from the feed schema (ndd-admin schema feeds);" % (path, name))
            print("fix: tests/docs_feed_schema.py <(ndd-admin schema feeds) %s --write" % path)
            sys.stdout.writelines(difflib.unified_diff(
                m.group(2).splitlines(True), want.splitlines(True), "docs", "schema"))
    if write:
        open(path, "w", encoding="utf-8").write(text)
    print("feed schema tables: %s" % ("differ" if bad else "match"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
