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
  ves-pipeline-413 --port P --n N
      a well-behaved pipelining VES client, but for its last request: N valid `POST
      /eventListener/v7` and one announcing a body above max-body, in one write, then reads
      until the server closes; prints one JSON line: the statuses in order, and whether the
      413's body is ONAP's (SVC2000, ["Request Entity Too Large","413"]).
  hv-stall --port P --n N --size B --hold S [--frame]
      N connections, each sends a WTP header announcing B bytes and B-1 of them, then waits;
      prints one JSON line: how many the server closed and after how many seconds. --frame:
      the same inside an NDD binary frame (docs/encodings.md: magic "NDD1", version 1, DATA,
      payload length, id), for the copy listener.
  hv-send --port P --prefix ID --every SEC --seconds S [--domain D] [--span SEC]
      one connection sending a valid VesEvent (eventId ID-<n>) every SEC seconds for S
      seconds, each spanning --span seconds (startEpochMicrosec that long before
      lastEpochMicrosec, which is the send time); prints the number of frames written.
  http-pipeline --port P --path PATH --seconds S --hold H [--conns C]
      the same against any HTTP/1.1 listener (tests/fault/test_fault_hostile_http.sh): C
      sockets (1), each with a 4 KiB receive buffer, pipeline `GET PATH` for S seconds and
      never read; prints one JSON line (bytes, requests), then waits up to H seconds, still
      without reading, for the server to close every one and prints {"closed_s": seconds
      after the flood, or null}.
  http-pipeline-read --port P --path PATH --n N
      a well-behaved pipelining client: N `GET PATH` in one write, then reads the replies;
      prints one JSON line: how many 200 came within 5 s.
  body-stall --port P --path PATH --n N --length L --hold H
      N connections, each sends `POST PATH` with Content-Length L and 16 bytes of the body,
      then is silent; prints one JSON line: how many the server closed (and answered: sent
      bytes back, such as a 408) and after how many seconds, within H.
  body-trickle --port P --path PATH --n N --length L --first F --every SEC --hold H
      N connections, each sends `POST PATH` (Content-Type application/json) with
      Content-Length L and the first F bytes of the body at once, then one more byte every
      SEC seconds (so no idle timeout ends it) until the server closes it; prints one JSON
      line: how many the server closed (and how many of those it had answered), the most
      open at once as the client saw them, and when the first and the last were closed,
      within H seconds.
  h2-noread --port P --path PATH --seconds S --hold H
      HTTP/2 with prior knowledge (h2c): `GET PATH` on new streams and PINGs, as fast as the
      socket takes them for S seconds, never read (4 KiB receive buffer); then like
      http-pipeline: bytes written, then whether the server closed it within H seconds.
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


def ves_pipeline_413(a):
    ev = json.dumps({"event": {"commonEventHeader": {
        "domain": "fault", "eventId": "pipelined", "eventName": "n_fault",
        "lastEpochMicrosec": 1700000000000000, "priority": "Normal",
        "reportingEntityName": "r1", "sequence": 1, "sourceName": "pipelined",
        "startEpochMicrosec": 1700000000000000, "version": "4.1",
        "vesEventListenerVersion": "7.2.1"}, "otherFields": {"otherFieldsVersion": "3.0"}}})
    head = ("POST /eventListener/v7 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\n\r\n")
    one = (head % len(ev)).encode() + ev.encode()
    big = (head % (1 << 30)).encode()
    s = socket.create_connection(("127.0.0.1", a.port))
    s.sendall(one * a.n + big)
    s.settimeout(15)
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except OSError:
        pass
    s.close()
    statuses, rest, body413 = [], out, b""
    while rest.startswith(b"HTTP/1.1 "):
        hdr, _, rest = rest.partition(b"\r\n\r\n")
        statuses.append(int(hdr[9:12]))
        n = 0
        for line in hdr.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                n = int(line.split(b":")[1])
        body, rest = rest[:n], rest[n:]
        if statuses[-1] == 413:
            body413 = body
    try:
        e = json.loads(body413)["requestError"]["ServiceException"]
        onap = e["messageId"] == "SVC2000" and e["variables"] == ["Request Entity Too Large", "413"]
    except (ValueError, KeyError, TypeError):
        onap = False
    print(json.dumps({"statuses": statuses, "onap_413": onap}), flush=True)


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


def wait_closed(socks, hold):
    """Seconds until the server has closed every one of socks (FIN or reset), None if one
    stays open for hold seconds. Nothing is read: reading would let the server write again."""
    p = select.poll()
    for s in socks:
        p.register(s, select.POLLRDHUP | select.POLLHUP | select.POLLERR)
    t0, left = time.time(), len(socks)
    while time.time() - t0 < hold:
        for fd, _ in p.poll(200):
            p.unregister(fd)
            left -= 1
        if not left:
            return round(time.time() - t0, 2)
    return None


def flood(socks, make, seconds):
    """Writes make() chunks on each of socks as fast as they take them for seconds; the
    bytes written."""
    pending = {}
    for s in socks:
        s.setblocking(False)
        pending[s] = b""
    sent, end = 0, time.time() + seconds
    while pending and time.time() < end:
        moved = False
        for s in list(pending):
            pending[s] = pending[s] or make()
            try:
                n = s.send(pending[s])
                sent += n
                pending[s] = pending[s][n:]
                moved = True
            except BlockingIOError:
                pass
            except OSError:
                del pending[s]  # closed by the server
        if not moved and pending:
            select.select([], list(pending), [], 0.05)
    return sent


def small_rcvbuf_socket(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    return s


def http_pipeline(a):
    socks = [small_rcvbuf_socket(a.port) for _ in range(a.conns)]
    req = ("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % a.path).encode()
    sent = flood(socks, lambda: req * 256, a.seconds)
    print(json.dumps({"connections": a.conns, "bytes": sent, "requests": sent // len(req)}),
          flush=True)
    print(json.dumps({"closed_s": wait_closed(socks, a.hold)}), flush=True)
    for s in socks:
        s.close()


def http_pipeline_read(a):
    s = socket.create_connection(("127.0.0.1", a.port))
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % a.path).encode() * a.n)
    got, t0 = b"", time.time()
    s.settimeout(0.2)
    while got.count(b"HTTP/1.1 200 ") < a.n and time.time() - t0 < 5:
        try:
            d = s.recv(1 << 20)
        except socket.timeout:
            continue
        if not d:
            break
        got += d
    print(json.dumps({"sent": a.n, "answered": got.count(b"HTTP/1.1 200 "),
                      "seconds": round(time.time() - t0, 2)}), flush=True)
    s.close()


def body_stall(a):
    head = ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\n\r\n" % (a.path, a.length)).encode() + b"{" * 16
    conns = [socket.create_connection(("127.0.0.1", a.port)) for _ in range(a.n)]
    t0, early = time.time(), 0
    for s in conns:  # a second pass: every connection is open before the bytes go
        try:
            s.sendall(head)
        except OSError:
            early += 1
    open_, closed_at, answered = set(conns), [], set()
    while open_ and time.time() - t0 < a.hold:
        r, _, _ = select.select(list(open_), [], [], 0.2)
        for s in r:
            try:
                got = s.recv(65536)
            except OSError:
                got = b""
            if got:
                answered.add(s)
                continue
            closed_at.append(time.time() - t0)
            open_.discard(s)
            s.close()
    print(json.dumps({"connections": a.n, "closed": len(closed_at), "answered": len(answered),
                      "closed_while_writing": early,
                      "first_closed_s": round(min(closed_at), 2) if closed_at else None,
                      "last_closed_s": round(max(closed_at), 2) if closed_at else None}),
          flush=True)


def body_trickle(a):
    head = ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\n\r\n" % (a.path, a.length)).encode()
    t0, open_, closed_at, answered, most = time.time(), set(), [], 0, 0
    refused = 0

    def closed(s):
        nonlocal answered
        got = b""
        try:
            got = s.recv(65536)
        except OSError:
            pass
        if got:
            answered += 1  # the server said something (an error) before it closed
            while got:
                try:
                    got = s.recv(65536)
                except OSError:
                    break
        closed_at.append(time.time() - t0)
        open_.discard(s)
        s.close()

    for _ in range(a.n):
        try:
            s = socket.create_connection(("127.0.0.1", a.port), timeout=5)
            s.sendall(head + b"{" * a.first)
        except OSError:
            refused += 1
            continue
        open_.add(s)
        most = max(most, len(open_))
        # connections the server closed while this one was opened (evicted)
        r, _, _ = select.select(list(open_), [], [], 0)
        for x in r:
            closed(x)
    while open_ and time.time() - t0 < a.hold:
        r, _, _ = select.select(list(open_), [], [], a.every)
        for x in r:
            closed(x)
        for x in list(open_):
            try:
                x.send(b"{")
            except OSError:
                closed(x)
    print(json.dumps({"connections": a.n, "closed": len(closed_at), "answered": answered,
                      "refused": refused, "still_open": len(open_), "most_open": most,
                      "first_closed_s": round(min(closed_at), 2) if closed_at else None,
                      "last_closed_s": round(max(closed_at), 2) if closed_at else None}),
          flush=True)
    for x in open_:
        x.close()


def h2_frame(ftype, flags, sid, payload):
    return struct.pack(">I", len(payload))[1:] + struct.pack(">BBI", ftype, flags, sid) + payload


def h2_noread(a):
    s = small_rcvbuf_socket(a.port)
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2_frame(4, 0, 0, b""))
    # HPACK: :method GET (static 2), :scheme http (6), :path literal without indexing (name
    # index 4), :authority literal "x" (name index 1, incremental indexing).
    path = a.path.encode()
    hdr = b"\x82\x86\x04" + bytes([len(path)]) + path + b"\x41\x01x"
    sid = [1]

    def chunk():
        out = []
        for _ in range(64):
            out.append(h2_frame(1, 0x5, sid[0], hdr))  # HEADERS, END_STREAM | END_HEADERS
            sid[0] += 2
        out.append(h2_frame(6, 0, 0, b"12345678"))  # PING
        return b"".join(out)

    sent = flood([s], chunk, a.seconds)
    print(json.dumps({"bytes": sent, "streams": (sid[0] - 1) // 2}), flush=True)
    print(json.dumps({"closed_s": wait_closed([s], a.hold)}), flush=True)
    s.close()


ap = argparse.ArgumentParser()
ap.add_argument("mode", choices=["h1-pipeline", "ves-pipeline-413", "hv-stall", "hv-send", "http-pipeline",
                                   "http-pipeline-read", "body-stall", "body-trickle",
                                   "h2-noread"])
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--seconds", type=float, default=6)
ap.add_argument("--hold", type=float, default=0)
ap.add_argument("--n", type=int, default=100)
ap.add_argument("--size", type=int, default=1000000)
ap.add_argument("--prefix", default="ev")
ap.add_argument("--every", type=float, default=0.02)
ap.add_argument("--domain", default="perf3gpp")
ap.add_argument("--frame", action="store_true")
ap.add_argument("--conns", type=int, default=1, help="http-pipeline: sockets")
ap.add_argument("--path", default="/metrics", help="http-pipeline, body-stall, h2-noread")
ap.add_argument("--length", type=int, default=262144, help="body-stall: the Content-Length")
ap.add_argument("--span", type=float, default=0, help="hv-send: start this long before last")
ap.add_argument("--first", type=int, default=16, help="body-trickle: body bytes sent at once")
a = ap.parse_args()
{"h1-pipeline": h1_pipeline, "ves-pipeline-413": ves_pipeline_413, "hv-stall": hv_stall, "hv-send": hv_send,
 "http-pipeline": http_pipeline, "http-pipeline-read": http_pipeline_read,
 "body-stall": body_stall, "body-trickle": body_trickle, "h2-noread": h2_noread}[a.mode](a)
