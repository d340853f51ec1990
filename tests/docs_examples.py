#!/usr/bin/env python3
"""Extracts the examples of README.md and docs/*.md that a user is told to run or copy, for
tests/e2e/test_docs_examples.sh, and checks that none is left unmarked.

A marked example is a fenced block with an HTML comment on the line right before its fence
(invisible when the Markdown is rendered):

    <!-- docs-test: sh -->                     run the block with bash -e (substitutions below)
    <!-- docs-test: sh check-config -->        run only its `ndd-...` lines, each with
                                               --check-config appended (a daemon's command line)
    <!-- docs-test: sh helm -->                a block for a Kubernetes cluster, run without
                                               one: `kubectl` is not run (`deploy/NAME` must be
                                               a Deployment of the last render), `helm install`
                                               and `helm upgrade` are rendered by helm template
                                               and validated by kubernetes-validate
    <!-- docs-test: json feeds-file -->        ndd-adapter --check-config --feeds-file
    <!-- docs-test: json feed -->              one feed object, checked as {"feeds":[it]}
    <!-- docs-test: json filter -->            ndd-aggregation --check-config --filter-file
    <!-- docs-test: json config DAEMON -->     DAEMON --check-config --config
    <!-- docs-test: json -->                   valid JSON (an API body or record shown whole)
    <!-- docs-test: skip REASON -->            not run, with the reason (output, a sketch, ...)

`file=NAME` after the kind also saves the block as NAME in the test's etc directory, which
stands for /etc/ndd/ in the shell examples. In README.md and every docs/*.md (all named in STRICT;
a new doc is added there, or to NOT_STRICT with its reason) every ```sh and ```json block (and ```bash,
```shell, ```console) must carry a marker (run or skip): an example added without one fails
the test.

Usage: docs_examples.py ROOT OUTDIR  -> writes OUTDIR/NNN.<sh|json> and prints one line per
example: "NNN|kind|args|file:line"; exit 1 on an unmarked or malformed block.
"""
import os
import re
import sys

# The strict docs: each of their ```sh and ```json blocks carries a marker. Every doc is here;
# the test fails on a doc in neither list (a new doc is added here, or to NOT_STRICT with the
# reason it cannot be strict) and on a name here that is not a doc.
STRICT = (
    "README.md",
    "docs/adapter.md",
    "docs/aggregation.md",
    "docs/api.md",
    "docs/benchmarks.md",
    "docs/build.md",
    "docs/configuration.md",
    "docs/console.md",
    "docs/contributing.md",
    "docs/control-path.md",
    "docs/correlation.md",
    "docs/encodings.md",
    "docs/filters.md",
    "docs/georedundancy.md",
    "docs/helm.md",
    "docs/ingress.md",
    "docs/kafka-cluster.md",
    "docs/kafka-feed.md",
    "docs/local-stack.md",
    "docs/message-format.md",
    "docs/ndd.md",
    "docs/nfsim.md",
    "docs/observability.md",
    "docs/quickstart.md",
    "docs/synthetic.md",
    "docs/xdr.md",
)
NOT_STRICT = {}
MARK = re.compile(r"^<!--\s*docs-test:\s*(sh|json|skip)\b(.*?)-->\s*$")
KINDS = {"sh": {"", "check-config", "helm"},
         "json": {"", "feeds-file", "feed", "filter", "config"}}


def blocks(path):
    """(line, info, marker-or-None, text) for every fenced block of path."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\S*)", lines[i])
        if not m:
            i += 1
            continue
        start, info = i, m.group(1)
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        mark = MARK.match(lines[i - 1]) if i > 0 else None
        yield start + 1, info, mark, "\n".join(lines[i + 1:j]) + "\n"
        i = j + 1


def main():
    root, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    files = ["README.md"] + sorted(
        os.path.relpath(os.path.join(d, f), root)
        for d, _, names in os.walk(os.path.join(root, "docs")) for f in names if f.endswith(".md"))
    bad, n = [], 0
    for rel in sorted(set(files) - set(STRICT) - set(NOT_STRICT)):
        bad.append(f"{rel}: in neither STRICT nor NOT_STRICT of tests/docs_examples.py")
    for rel in sorted(set(STRICT) - set(files)):
        bad.append(f"{rel}: named in STRICT but not a doc")
    for rel in files:
        for line, info, mark, text in blocks(os.path.join(root, rel)):
            where = f"{rel}:{line}"
            if not mark:
                if rel in STRICT and info in ("sh", "bash", "shell", "console", "json"):
                    bad.append(f"{where}: ```{info} block without a docs-test marker")
                continue
            kind, rest = mark.group(1), mark.group(2).split()
            if kind == "skip":
                if not rest:
                    bad.append(f"{where}: docs-test: skip needs a reason")
                continue
            save = [a[5:] for a in rest if a.startswith("file=")]
            args = [a for a in rest if not a.startswith("file=")]
            sub = args[0] if args else ""
            if sub not in KINDS[kind] or (sub == "config" and len(args) != 2):
                bad.append(f"{where}: unknown docs-test kind '{kind} {' '.join(args)}'")
                continue
            n += 1
            name = f"{n:03d}"
            with open(os.path.join(out, f"{name}.{kind}"), "w", encoding="utf-8") as f:
                f.write(text)
            extra = " ".join(args[1:] + [f"file={s}" for s in save])
            print(f"{name}|{kind}{'-' + sub if sub else ''}|{extra}|{where}")
    for b in bad:
        print(b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
