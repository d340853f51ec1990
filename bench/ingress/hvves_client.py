#!/usr/bin/env python3
"""HV-VES load and test client: WTP frames carrying protobuf VesEvents over TCP, from N
concurrent producers. Independent of ndd-ingress: its own copy of the public schema
(hvves_event.proto) compiled with protoc from PyPI's grpcio-tools, the protobuf package.

  hvves_client.py --port P [--producers N] [--count M] [--payload-bytes B] [--domain D]
                  [--bad KIND] [--json]

Each producer opens one connection and sends --count frames; sequence numbers are unique per
producer so a consumer can count exactly. --bad sends one frame of a bad kind (then, unless it
closes the connection, one valid frame after it, to prove the stream goes on):
  bad-magic oversized bad-version bad-type bad-protobuf missing-header missing-field
  bad-listener-version unrouted
Prints one JSON line: frames, bytes, seconds, MB/s, frames/s, client CPU seconds.

Setup (idempotent, cached): python3 -m venv ~/.cache/ndd/ingress-venv &&
~/.cache/ndd/ingress-venv/bin/pip install protobuf grpcio-tools"""
import argparse
import json
import os
import resource
import socket
import ssl
import struct
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(os.path.expanduser("~"), ".cache", "ndd", "hvves-gen")


def load_proto():
    os.makedirs(GEN, exist_ok=True)
    src = os.path.join(HERE, "hvves_event.proto")
    out = os.path.join(GEN, "hvves_event_pb2.py")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        from grpc_tools import protoc
        rc = protoc.main(["protoc", "-I" + HERE, "--python_out=" + GEN, src])
        if rc:
            sys.exit("protoc failed on %s" % src)
    sys.path.insert(0, GEN)
    import hvves_event_pb2
    return hvves_event_pb2


def wtp(payload, magic=0xAA, major=1, minor=0, ptype=1, length=None):
    n = len(payload) if length is None else length
    return struct.pack(">BBB3sHI", magic, major, minor, b"\0\0\0", ptype, n) + payload


def event(pb, domain, producer, seq, fields_bytes, listener="7.2"):
    ev = pb.VesEvent()
    h = ev.commonEventHeader
    h.version = "1.0"
    h.domain = domain
    h.sequence = seq
    h.priority = h.NORMAL
    h.eventId = "p%d-%d" % (producer, seq)
    h.eventName = "perf3gpp_ndd_test"
    h.eventType = "test"
    now = int(time.time() * 1e6)
    h.startEpochMicrosec = now
    h.lastEpochMicrosec = now
    h.reportingEntityName = "ndd-bench"
    h.sourceName = "source-%d" % producer
    h.vesEventListenerVersion = listener
    ev.eventFields = fields_bytes
    return ev


def bad_frame(pb, kind, domain):
    good = event(pb, domain, 0, 0, b"x" * 16)
    if kind == "bad-magic":
        return wtp(good.SerializeToString(), magic=0x55)
    if kind == "oversized":
        return wtp(b"", length=(1 << 20) + 1)
    if kind == "bad-version":
        return wtp(good.SerializeToString(), major=2)
    if kind == "bad-type":
        return wtp(good.SerializeToString(), ptype=0x0002)
    if kind == "bad-protobuf":
        return wtp(b"\xff\xff\xff\xff\x0f\x0a")
    if kind == "missing-header":
        ev = pb.VesEvent()
        ev.eventFields = b"abc"
        return wtp(ev.SerializeToString())
    if kind == "missing-field":
        good.commonEventHeader.sourceName = ""
        return wtp(good.SerializeToString())
    if kind == "bad-listener-version":
        good.commonEventHeader.vesEventListenerVersion = "5.4"
        return wtp(good.SerializeToString())
    if kind == "unrouted":
        good.commonEventHeader.domain = "noSuchDomain"
        return wtp(good.SerializeToString())
    sys.exit("unknown --bad kind " + kind)


def connect(a):
    s = socket.create_connection((a.host, a.port))
    if a.ca:
        ctx = ssl.create_default_context(cafile=a.ca)
        if a.cert:
            ctx.load_cert_chain(a.cert, a.key)
        s = ctx.wrap_socket(s, server_hostname=a.host)
    return s


def producer(args, pb, idx, result):
    s = connect(args)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    fields = b"m" * args.payload_bytes
    sent = nbytes = 0
    batch = []
    for seq in range(args.count):
        f = wtp(event(pb, args.domain, idx, seq, fields).SerializeToString())
        batch.append(f)
        nbytes += len(f) - 12
        if len(batch) == 64 or seq == args.count - 1:
            s.sendall(b"".join(batch))
            sent += len(batch)
            batch = []
    if not args.ca:
        s.shutdown(socket.SHUT_WR)
    s.settimeout(30 if not args.ca else 1)
    try:
        while s.recv(4096):
            pass
    except (OSError, ssl.SSLError):
        pass
    s.close()
    result[idx] = (sent, nbytes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--producers", type=int, default=1)
    ap.add_argument("--count", type=int, default=10)
    ap.add_argument("--payload-bytes", type=int, default=100)
    ap.add_argument("--domain", default="perf3gpp")
    ap.add_argument("--bad")
    ap.add_argument("--ca", help="TLS: trust anchors (PEM); TLS is on when given")
    ap.add_argument("--cert", help="TLS: client certificate (PEM)")
    ap.add_argument("--key", help="TLS: client key (PEM)")
    a = ap.parse_args()
    pb = load_proto()
    if a.bad:
        s = connect(a)
        s.sendall(bad_frame(pb, a.bad, a.domain))
        closed = False
        try:
            s.sendall(wtp(event(pb, a.domain, 9, 1, b"after").SerializeToString()))
            s.settimeout(2)
            closed = s.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            closed = True
        except socket.timeout:
            closed = False
        s.close()
        print(json.dumps({"bad": a.bad, "closed": closed}))
        return
    result = {}
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.time()
    ts = [threading.Thread(target=producer, args=(a, pb, i, result)) for i in range(a.producers)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    dt = time.time() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    frames = sum(v[0] for v in result.values())
    nbytes = sum(v[1] for v in result.values())
    print(json.dumps({"frames": frames, "payload_bytes": nbytes, "seconds": round(dt, 3),
                      "mb_per_s": round(nbytes / dt / 1e6, 2),
                      "frames_per_s": round(frames / dt),
                      "client_cpu_s": round(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, 3)}))


if __name__ == "__main__":
    main()
