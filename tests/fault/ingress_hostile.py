#!/usr/bin/env python3
"""Hostile and well-behaved clients of ndd-ingress's listeners, for tests/fault/test_fault_
ingress_*.sh. Independent of NDD's code: plain sockets, WTP frames and VesEvents encoded by hand
from ONAP's published formats (WTP: 12-byte header, magic 0xAA; VesEvent.proto of ONAP's
HV-VES collector, field numbers as ONAP numbers them).

  h1-pipeline --port P --seconds S
      one socket with a 4 KiB receive buffer sends `POST /eventListener/v7` requests
      (Content-Length 9, body `{"event":`) as fast as the socket takes them for S seconds and
      never reads; prints the bytes and requests written, then keeps the socket open --hold
      seconds.
  hv-stall --port P --n N --size B --hold S [--frame]
      N connections, each sends a WTP header announcing B bytes and B-1 of them, then waits;
      prints one JSON line: how many the server closed and after how many seconds. --frame:
      the same inside an NDD binary frame (docs/encodings.md: magic "NDD1", version 1, DATA,
      payload length, id), for the copy listener.
  hv-send --port P --prefix ID --every SEC --seconds S [--domain D] [--span SEC]
      one connection sending a valid VesEvent (eventId ID-<n>) every SEC seconds for S
      seconds, each spanning --span seconds (startEpochMicrosec that long before
      lastEpochMicrosec, which is the send time); prints the number of frames written.
"""
import argparse
import json
import select
import socket
import struct
import time


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field_bytes(num, data):
    return varint(num << 3 | 2) + varint(len(data)) + data


def field_varint(num, v):
    return varint(num << 3) + varint(v)


def ves_event(domain, event_id, source, span=0.0):
    now = int(time.time() * 1e6)  # lastEpochMicrosec; startEpochMicrosec is span seconds before
    h = b"".join([
        field_bytes(1, b"1.0"),                     # version
        field_bytes(2, domain.encode()),            # domain
        field_varint(3, 1),                         # sequence
        field_varint(4, 3),                         # priority NORMAL
        field_bytes(5, event_id.encode()),          # eventId
        field_bytes(6, b"perf3gpp_hostile_test"),   # eventName
        field_varint(8, now),                       # lastEpochMicrosec (ONAP: 8)
        field_varint(9, now - int(span * 1e6)),     # startEpochMicrosec (ONAP: 9)
        field_bytes(14, b"hostile-test"),           # reportingEntityName
        field_bytes(16, source.encode()),           # sourceName
        field_bytes(18, b"7.2"),                    # vesEventListenerVersion
    ])
    return field_bytes(1, h) + field_bytes(2, b"x" * 64)


def wtp(payload, length=None):
    n = len(payload) if length is None else length
    return struct.pack(">BBB3sHI", 0xAA, 1, 0, b"\0\0\0", 1, n) + payload


def h1_pipeline(a):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", a.port))
    s.setblocking(False)
    req = (b"POST /eventListener/v7 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           b"Content-Length: 9\r\n\r\n{\"event\":")
    burst, sent, end = req * 256, 0, time.time() + a.seconds
    pending = burst
    while time.time() < end:
        try:
            n = s.send(pending)
            sent += n
            pending = pending[n:] or burst
        except BlockingIOError:
            select.select([], [s], [], 0.05)
        except OSError:
            break  # closed by the server
    print(json.dumps({"bytes": sent, "requests": sent // len(req)}), flush=True)
    time.sleep(a.hold)
    s.close()


def hv_stall(a):
    conns = []
    head = wtp(b"", length=a.size)
    if a.frame:
        head = struct.pack(">IBBHIQ", 0x4E444431, 1, 1, 1, a.size, 1)
    chunk = b"\0" * (a.size - 1)
    for _ in range(a.n):
        s = socket.create_connection(("127.0.0.1", a.port))
        conns.append(s)
    t0 = time.time()
    early = 0
    for s in conns:  # written in a second pass: every connection is open before the bytes go
        s.settimeout(30)
        try:
            s.sendall(head + chunk)
        except OSError:
            early += 1  # closed by the server while writing (the listener's bound)
    sent_s = time.time() - t0
    open_, closed_at = set(conns), []
    end = time.time() + a.hold
    while open_ and time.time() < end:
        r, _, _ = select.select(list(open_), [], [], 0.2)
        for s in r:
            try:
                got = s.recv(4096)
            except OSError:
                got = b""
            if not got:
                closed_at.append(time.time() - t0)
                open_.discard(s)
                s.close()
    print(json.dumps({"connections": a.n, "closed": len(closed_at), "closed_while_writing": early,
                      "written_s": round(sent_s, 2),
                      "first_closed_s": round(min(closed_at), 2) if closed_at else None,
                      "last_closed_s": round(max(closed_at), 2) if closed_at else None}),
          flush=True)


def hv_send(a):
    s = socket.create_connection(("127.0.0.1", a.port))
    n, t0 = 0, time.time()
    while time.time() - t0 < a.seconds:
        s.sendall(wtp(ves_event(a.domain, "%s-%d" % (a.prefix, n), "hostile-src", a.span)))
        n += 1
        time.sleep(a.every)
    s.close()
    print(n, flush=True)


ap = argparse.ArgumentParser()
ap.add_argument("mode", choices=["h1-pipeline", "hv-stall", "hv-send"])
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--seconds", type=float, default=6)
ap.add_argument("--hold", type=float, default=0)
ap.add_argument("--n", type=int, default=100)
ap.add_argument("--size", type=int, default=1000000)
ap.add_argument("--prefix", default="ev")
ap.add_argument("--every", type=float, default=0.02)
ap.add_argument("--domain", default="perf3gpp")
ap.add_argument("--frame", action="store_true")
ap.add_argument("--span", type=float, default=0, help="hv-send: start this long before last")
a = ap.parse_args()
{"h1-pipeline": h1_pipeline, "hv-stall": hv_stall, "hv-send": hv_send}[a.mode](a)
