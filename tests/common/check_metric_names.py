#!/usr/bin/env python3
"""Checks scraped /metrics bodies against NDD's metric naming rules and its catalog.

    tests/common/check_metric_names.py DOCS.md NAME=FILE [NAME=FILE ...]

DOCS.md is docs/observability.md: its "Naming rules" section is what this script applies
(keep the two in step), its catalog tables list every family with type and labels. Each
FILE is one daemon's /metrics body (text format 0.0.4), NAME the daemon it came from (used
in messages). Exit 1 with one line per problem when

  (a) a family breaks the naming rules: prefix ndd_<component>_ (or a standard process_*
      family), snake_case, `_total` if and only if the family is a counter, histograms in
      `_seconds` or `_bytes`, base units only and only as the last word (before `_total`),
      none of the words the vocabulary replaced (inflight, unacked, records, ...), label
      names from the allowed set, `endpoint` values host:port and not a URL;
  (b) a family is missing from the catalog of DOCS.md, or the catalog gives it another type
      or other labels than the daemon exports.

Exit 0 when every family of every FILE passes; 2 on bad usage or an unreadable file."""
import re
import sys

COMPONENTS = ("aggregation", "correlation", "adapter", "admin", "ingress", "sink", "gui", "events", "config",
              "metrics", "director")
PROCESS_FAMILIES = {
    "process_cpu_seconds_total", "process_resident_memory_bytes",
    "process_virtual_memory_bytes", "process_start_time_seconds", "process_open_fds",
    "process_max_fds",
}
LABELS = {
    "feed", "endpoint", "partition", "topic", "nf_type", "reason", "result", "method", "code",
    "kind", "service", "status_code", "completion", "side", "trigger_point", "family",
    "transport", "version", "revision", "daemon",
}
# Units: base units only, and only as the family's last word (before _total on counters).
UNITS = {"seconds", "bytes", "ratio", "info"}
# Non-base units and the words the vocabulary replaced: each has one spelling in NDD.
FORBIDDEN = {
    "ms": "seconds", "millis": "seconds", "milliseconds": "seconds", "us": "seconds",
    "usec": "seconds", "micros": "seconds", "microseconds": "seconds", "ns": "seconds",
    "nanoseconds": "seconds", "sec": "seconds", "secs": "seconds", "minutes": "seconds",
    "hours": "seconds", "kb": "bytes", "kib": "bytes", "mb": "bytes", "mib": "bytes",
    "gb": "bytes", "kilobytes": "bytes", "megabytes": "bytes", "percent": "ratio",
    "pct": "ratio", "inflight": "in_flight", "unacked": "in_flight", "records": "messages", "copies": "messages", "dlq": "dead_lettered",
    "letter": "dead_lettered", "egress": "messages_produced",
    "count": "_total (a counter) or a plain noun (a gauge)", "sum": "a histogram",
    "bucket": "a histogram",
}
ENDPOINT_VALUE = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):[0-9]{1,5}$")
NAME = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_body(text):
    """{family: {"type": t, "labels": set(), "values": {label: set(values)}}}"""
    fams = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            parts = line.split()
            if len(parts) == 4:
                fams.setdefault(parts[2], {"labels": set(), "values": {}})["type"] = parts[3]
            continue
        if not line.strip() or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            continue
        name = m.group(1)
        fam = name
        for suffix in ("_bucket", "_sum", "_count"):
            base = name[: -len(suffix)]
            if name.endswith(suffix) and fams.get(base, {}).get("type") == "histogram":
                fam = base
        f = fams.setdefault(fam, {"labels": set(), "values": {}})
        for k, v in LABEL.findall(m.group(3) or ""):
            if k == "le" and f.get("type") == "histogram":
                continue
            f["labels"].add(k)
            f["values"].setdefault(k, set()).add(v)
    return fams


def parse_catalog(text):
    """{family: (type, frozenset(labels))} from the catalog tables of the docs: rows
    | `name`[, `name` ...] | type | labels | meaning |"""
    cat = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4 or not cells[0].startswith("`"):
            continue
        typ = cells[1]
        if typ not in ("counter", "gauge", "histogram"):
            continue
        labels = frozenset(l.strip() for l in cells[2].replace("`", "").split(",")
                           if l.strip() and l.strip() not in ("—", "-"))
        for name in re.findall(r"`([a-z_:][a-z0-9_:]*)`", cells[0]):
            cat[name] = (typ, labels)
    return cat


def name_problems(name, typ):
    out = []
    if name in PROCESS_FAMILIES:
        return out
    if not NAME.match(name):
        return [f"not snake_case (lower-case words joined by single underscores)"]
    words = name.split("_")
    if name != "ndd_build_info" and (words[0] != "ndd" or len(words) < 3 or
                                     words[1] not in COMPONENTS):
        out.append(f"prefix is not ndd_<component>_ with a component of {', '.join(COMPONENTS)}")
    if (typ == "counter") != name.endswith("_total"):
        out.append("_total is for counters, and every counter ends in _total"
                   if typ == "counter" else f"a {typ} must not end in _total")
    if typ == "histogram" and words[-1] not in ("seconds", "bytes"):
        out.append("a histogram is in _seconds or _bytes")
    body = words[2:-1] if typ == "counter" else words[2:]
    for i, w in enumerate(body):
        if w in FORBIDDEN:
            out.append(f"word '{w}': the vocabulary says {FORBIDDEN[w]}")
        if w == "total":
            out.append("_total only at the end")
        if w in UNITS and i != len(body) - 1:
            out.append(f"unit '{w}' only as the last word")
    joined = "_".join(body)
    if "in_flight" in joined and not joined.endswith("in_flight"):
        out.append("in_flight is a gauge's last word (<object>_in_flight)")
    if typ == "counter" and "in_flight" in joined:
        out.append("in_flight is a level: a gauge, not a counter")
    return out


def main(argv):
    if len(argv) < 3 or any("=" not in a for a in argv[2:]):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        catalog = parse_catalog(open(argv[1], encoding="utf-8").read())
    except OSError as e:
        print(f"check_metric_names: {e}", file=sys.stderr)
        return 2
    if not catalog:
        print(f"check_metric_names: no catalog rows in {argv[1]}", file=sys.stderr)
        return 2
    problems = 0
    checked = 0
    for arg in argv[2:]:
        daemon, path = arg.split("=", 1)
        try:
            fams = parse_body(open(path, encoding="utf-8").read())
        except OSError as e:
            print(f"check_metric_names: {e}", file=sys.stderr)
            return 2
        for name in sorted(fams):
            f = fams[name]
            typ = f.get("type", "untyped")
            checked += 1
            msgs = name_problems(name, typ)
            for l in sorted(f["labels"] - LABELS):
                msgs.append(f"label '{l}' is not one of the vocabulary's labels")
            for v in sorted(f["values"].get("endpoint", ())):
                if v != "_overflow" and not ENDPOINT_VALUE.match(v):
                    msgs.append(f"endpoint=\"{v}\" is not host:port")
            if name not in catalog:
                msgs.append(f"missing from the catalog of {argv[1]}")
            else:
                dtyp, dlabels = catalog[name]
                if dtyp != typ:
                    msgs.append(f"the catalog says {dtyp}, /metrics says {typ}")
                if dlabels != f["labels"]:
                    msgs.append(f"the catalog gives labels {', '.join(sorted(dlabels)) or '—'}, "
                                f"/metrics has {', '.join(sorted(f['labels']))}")
            for m in msgs:
                print(f"FAIL {daemon}: {name}: {m}")
                problems += 1
    if problems:
        print(f"check_metric_names: {problems} problem(s) in {checked} families")
        return 1
    print(f"check_metric_names: {checked} families follow the naming rules and are documented")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
