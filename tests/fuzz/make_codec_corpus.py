#!/usr/bin/env python3
"""Seeds of fuzz_codec_decode from every test vector (layout: tests/fuzz/fuzz_codec_decode.c).

Run from anywhere: python3 tests/fuzz/make_codec_corpus.py
Vectors whose parts do not fit a u16 length (the 1 MiB body) are skipped.
"""
import base64
import json
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus", "fuzz_codec_decode")
NULL = 0xFFFF


def field(b):
    if b is None:
        return struct.pack(">H", NULL)
    if len(b) >= NULL:
        raise ValueError("too long")
    return struct.pack(">H", len(b)) + b


def value_of(v):
    if "value_base64" in v:
        return base64.b64decode(v["value_base64"])
    if "value_repeat" in v:
        return v["value_repeat"]["text"].encode() * v["value_repeat"]["count"]
    return None if v.get("value") is None else v["value"].encode()


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.unlink(os.path.join(OUT, f))
    n = 0
    for kind in ("valid", "invalid"):
        d = os.path.join(ROOT, "tests", "vectors", kind)
        for name in sorted(os.listdir(d)):
            if not name.endswith(".json"):
                continue
            v = json.load(open(os.path.join(d, name)))
            try:
                key = None if v["key"] is None else v["key"].encode()
                out = field(key) + field(value_of(v))
                for hn, hv in v["headers"]:
                    out += field(hn.encode()) + field(None if hv is None else hv.encode())
            except ValueError:
                continue
            with open(os.path.join(OUT, kind + "_" + name[:-5]), "wb") as fh:
                fh.write(out)
            n += 1
    print("wrote %d seeds to %s" % (n, OUT))


main()
