#!/usr/bin/env python3
"""A bounded slowloris against one HTTP port on 127.0.0.1, with a /healthz probe beside it.

Opens CONNECTIONS connections, sends each a partial request header, then one more header byte
every 1-2 s (jittered per connection); a connection the server closes is reopened at its next
turn, as an attacker would. Meanwhile GET /healthz is sent every 0.5 s on a fresh connection
and must answer 200 within 1 s. Prints one JSON line with the figures; exits 1 when a probe was
slow or failed. Loopback only; every socket it opens is closed before it exits.

usage: slowloris.py PORT [--connections N] [--seconds S] [--label NAME]
"""
import argparse
import json
import random
import resource
import socket
import sys
import threading
import time

PARTIAL = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow-"


def raise_nofile(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def probe(port, stop, out):
    while not stop.is_set():
        t0 = time.monotonic()
        ok = False
        data = b""
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
                s.settimeout(max(0.01, 1.0 - (time.monotonic() - t0)))
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                ok = data.startswith(b"HTTP/1.1 200")
        except OSError as e:
            out["errors"].append(str(e))
        took = time.monotonic() - t0
        out["probes"] += 1
        out["worst_ms"] = max(out["worst_ms"], round(took * 1000))
        if not ok or took >= 1.0:
            out["slow_or_failed"] += 1
            if ok:
                out["errors"].append(f"slow: {round(took * 1000)} ms")
            elif len(out["errors"]) < 5:
                out["errors"].append(f"answer: {data[:60]!r}")
        stop.wait(0.5)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--connections", type=int, default=1100)
    ap.add_argument("--seconds", type=float, default=25)
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    limit = raise_nofile(a.connections + 256)
    if limit < a.connections + 64:
        print(f"slowloris: RLIMIT_NOFILE {limit} is below {a.connections + 64}", file=sys.stderr)
        return 2

    conns = [None] * a.connections
    due = [0.0] * a.connections
    stats = {"label": a.label, "connections": a.connections, "opened": 0, "closed_by_server": 0,
             "bytes_sent": 0, "probes": 0, "slow_or_failed": 0, "worst_ms": 0, "errors": []}
    stop = threading.Event()
    pt = threading.Thread(target=probe, args=(a.port, stop, stats), daemon=True)
    t_end = time.monotonic() + a.seconds
    pt.start()
    try:
        while time.monotonic() < t_end:
            now = time.monotonic()
            for i in range(a.connections):
                if due[i] > now:
                    continue
                due[i] = now + random.uniform(1.0, 2.0)
                s = conns[i]
                if s is not None:
                    try:
                        if s.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK) == b"":
                            raise ConnectionResetError
                    except BlockingIOError:
                        pass
                    except OSError:
                        s.close()
                        conns[i] = s = None
                        stats["closed_by_server"] += 1
                if s is None:
                    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    s.setblocking(False)
                    try:
                        s.connect(("127.0.0.1", a.port))
                    except BlockingIOError:
                        pass
                    except OSError:
                        s.close()
                        continue
                    conns[i] = s
                    stats["opened"] += 1
                    payload = PARTIAL
                else:
                    payload = b"a"
                try:
                    stats["bytes_sent"] += s.send(payload)
                except BlockingIOError:
                    pass
                except OSError:
                    pass  # not connected yet, or closed: looked at on its next turn
            time.sleep(0.05)
    finally:
        stop.set()
        pt.join(5)
        for s in conns:
            if s is not None:
                s.close()
    stats["errors"] = stats["errors"][:5]
    print(json.dumps(stats))
    return 0 if stats["probes"] >= 10 and stats["slow_or_failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
