#!/usr/bin/env python3
"""An independent sender of message copies in NDD binary frames (docs/encodings.md), written
from the frame's description, not from NDD's code: DATA frames of copies over TCP or TLS, each
asking for an acknowledgement; it waits for one ACK or NACK per frame and prints
"acked N nacked M". Used by tests/e2e/test_ingress_copy_tcp.sh against ndd-ingress.

  frame_sender.py --port P --frames F --per-frame R [--bad B] [--tls --ca CA --cert C --key K]
                  [--prefix ID] [--raw-bad-magic] [--body-bytes N] [--window W]

Record i of the run is a request copy from an NRF with correlation id <prefix>-<i> as its key;
the last B records of every frame lack @nf-type (the codec refuses them: missing-field).
"""
import argparse
import socket
import ssl
import struct
import sys

MAGIC, VERSION, DATA, ACK, NACK = 0x4E444431, 1, 1, 2, 3


def record(key, headers, body):
    h = b"".join(struct.pack(">H", len(n)) + n + struct.pack(">I", len(v)) + v for n, v in headers)
    rec = struct.pack(">H", len(headers)) + h + struct.pack(">I", len(key)) + key
    rec += struct.pack(">I", len(body)) + body
    return struct.pack(">I", len(rec)) + rec


def frame(fid, records):
    payload = struct.pack(">I", len(records)) + b"".join(records)
    return struct.pack(">IBBHIQ", MAGIC, VERSION, DATA, 1, len(payload), fid) + payload


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        got = s.recv(n - len(b))
        if not got:
            raise EOFError("connection closed after %d of %d bytes" % (len(b), n))
        b += got
    return b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--frames", type=int, default=1)
    ap.add_argument("--per-frame", type=int, default=1)
    ap.add_argument("--bad", type=int, default=0)
    ap.add_argument("--prefix", default="c")
    ap.add_argument("--tls", action="store_true")
    ap.add_argument("--ca")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--raw-bad-magic", action="store_true", help="send one frame with a bad magic")
    ap.add_argument("--body-bytes", type=int, default=0, help="pad each body to this size")
    ap.add_argument("--window", type=int, default=0,
                    help="frames sent ahead of their answers (0: all, then read the answers)")
    a = ap.parse_args()
    s = socket.create_connection((a.host, a.port), timeout=60)
    if a.tls:
        ctx = ssl.create_default_context(cafile=a.ca)
        if a.cert:
            ctx.load_cert_chain(a.cert, a.key)
        s = ctx.wrap_socket(s, server_hostname=a.host)
    if a.raw_bad_magic:
        s.sendall(b"\xde\xad\xbe\xef" + bytes(16))
        try:
            print("closed" if not s.recv(1) else "answered")
        except (ConnectionError, ssl.SSLError):
            print("closed")
        return 0
    n = 0
    acked = nacked = last = 0

    def read_answer():
        nonlocal acked, nacked, last
        magic, ver, typ, flags, plen, fid = struct.unpack(">IBBHIQ", recv_exact(s, 20))
        payload = recv_exact(s, plen)
        if magic != MAGIC:
            raise ValueError("bad answer magic %x" % magic)
        if typ == ACK:
            acked += fid - last  # ACK is cumulative
            last = fid
        elif typ == NACK:
            status, rl = struct.unpack(">HH", payload[:4])
            print("nack frame %d: %d %s" % (fid, status, payload[4:4 + rl].decode()), file=sys.stderr)
            nacked += 1
            last = fid

    pad = b"x" * max(0, a.body_bytes - 16)
    for f in range(1, a.frames + 1):
        recs = []
        for r in range(a.per_frame):
            key = ("%s-%d" % (a.prefix, n)).encode()
            hdrs = [(b"@timestamp-us", b"1700000000000000"), (b"@message-type", b"request"),
                    (b"@trigger-point", b"rx-request"), (b":method", b"GET"),
                    (b":path", b"/nnrf-disc/v1/nf-instances"), (b"user-agent", b"smf-1")]
            if r < a.per_frame - a.bad:
                hdrs.insert(3, (b"@nf-type", b"NRF"))
            body = b'{"n":%d' % n + (b',"p":"' + pad + b'"' if pad else b"") + b"}"
            recs.append(record(key, hdrs, body))
            n += 1
        s.sendall(frame(f, recs))
        while a.window and f - (acked + nacked) >= a.window:
            read_answer()
    while acked + nacked < a.frames:
        read_answer()
    print("acked %d nacked %d" % (acked, nacked))
    return 0


if __name__ == "__main__":
    sys.exit(main())
