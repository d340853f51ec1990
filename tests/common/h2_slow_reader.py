#!/usr/bin/env python3
"""An HTTP/2 client that never reads (tests/e2e/test_ingress_protocols.sh): prior-knowledge
preface, SETTINGS, then PINGs and requests (each answered with a body) as fast as the socket
takes them for --seconds, without reading a byte. Prints how many bytes it got written. The
server must stay bounded: it stops reading when its output is full, so the kernel buffers
fill and the writes stop."""
import argparse
import socket
import struct
import time


def frame(ftype, flags, sid, payload):
    return struct.pack(">I", len(payload))[1:] + struct.pack(">BBI", ftype, flags, sid) + payload


ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--seconds", type=float, default=5)
a = ap.parse_args()
s = socket.create_connection(("127.0.0.1", a.port))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b""))
s.setblocking(False)
# HPACK: :method GET (static 2), :scheme http (6), :path / (4), :authority literal "x".
hdr = b"\x82\x86\x84\x41\x01x"
sid, written, t0 = 1, 0, time.time()
pending = b""
while time.time() - t0 < a.seconds:
    if not pending:
        chunk = []
        for _ in range(64):
            chunk.append(frame(1, 0x5, sid, hdr))
            sid += 2
        chunk.append(frame(6, 0, 0, b"12345678"))
        pending = b"".join(chunk)
    try:
        n = s.send(pending)
        written += n
        pending = pending[n:]
    except BlockingIOError:
        time.sleep(0.01)
    except OSError:
        break
print(written)
s.close()
