#!/usr/bin/env python3
"""Load client for the ndd-admin management-plane benchmarks (bench/admin/*.sh).

h2load cannot mix reads and writes or pace operators, so this small client does: threads,
one keep-alive HTTP/1.1 connection each (http.client, standard library only), latencies with
time.perf_counter. Every subcommand prints one JSON object on stdout.

  populate --count N --threads T --prefix P --ids-out FILE   create N feeds, write their ids
  mixed    --ids FILE --clients C --duration S --write-pct W  W % PATCH, the rest GET
  poll     --operators N --duration S [--stop-file F]          a dashboard per operator
  changes  --ids FILE --count N --rate R                       N PATCHes, R per second

Common: --url http://127.0.0.1:PORT --token T (viewer for reads) --admin-token T (writes).
Bounded: every loop ends at its count or its duration; errors are counted, not retried.
"""
import argparse
import http.client
import json
import os
import random
import sys
import threading
import time
import urllib.parse


def connect(url):
    u = urllib.parse.urlparse(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=10)


class Client:
    """One keep-alive connection; reconnects once after a dropped connection."""

    def __init__(self, url):
        self.url = url
        self.conn = connect(url)

    def request(self, method, path, token, body=None, headers=None):
        h = {"Authorization": "Bearer " + token}
        if body is not None:
            h["Content-Type"] = "application/json"
        if headers:
            h.update(headers)
        data = json.dumps(body).encode() if body is not None else None
        for attempt in (0, 1):
            try:
                t0 = time.perf_counter()
                self.conn.request(method, path, body=data, headers=h)
                r = self.conn.getresponse()
                payload = r.read()
                return r.status, payload, time.perf_counter() - t0
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = connect(self.url)
                if attempt:
                    return 0, b"", 0.0
        return 0, b"", 0.0


def feed_body(name, max_in_flight=256):
    return {
        "name": name,
        "transport": "http2",
        "encoding": "json",
        "endpoints": [{"url": "http://127.0.0.1:9/ingest", "weight": 1}],
        "delivery": {"max_in_flight": max_in_flight, "timeout_ms": 5000},
    }


def pct(values, p):
    if not values:
        return None
    s = sorted(values)
    i = min(len(s) - 1, max(0, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[i]


def summary(lat):
    return {
        "count": len(lat),
        "p50_ms": round(pct(lat, 50) * 1000, 3) if lat else None,
        "p99_ms": round(pct(lat, 99) * 1000, 3) if lat else None,
        "max_ms": round(max(lat) * 1000, 3) if lat else None,
    }


def cmd_populate(a):
    ids = [None] * a.count
    errors = [0]
    lock = threading.Lock()
    nxt = [0]

    def work():
        c = Client(a.url)
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= a.count:
                return
            st, body, _ = c.request("POST", "/api/v1/feeds", a.admin_token,
                                    feed_body("%s-%05d" % (a.prefix, i)))
            if st == 201:
                ids[i] = json.loads(body)["id"]
            else:
                with lock:
                    errors[0] += 1
                    if errors[0] <= 3:
                        sys.stderr.write("populate: POST %d: %s\n" % (st, body[:200]))

    t0 = time.time()
    ts = [threading.Thread(target=work) for _ in range(a.threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    with open(a.ids_out, "w") as f:
        for i in ids:
            if i:
                f.write(i + "\n")
    print(json.dumps({"created": sum(1 for i in ids if i), "errors": errors[0],
                      "seconds": round(time.time() - t0, 2)}))
    return 0 if errors[0] == 0 else 1


def read_ids(path):
    with open(path) as f:
        return [l.strip() for l in f if l.strip()]


def cmd_mixed(a):
    ids = read_ids(a.ids)
    res = {"read": [], "write": [], "errors": 0}
    lock = threading.Lock()
    deadline = time.perf_counter() + a.duration

    def work(seed):
        rnd = random.Random(seed)
        c = Client(a.url)
        rl, wl, err = [], [], 0
        while time.perf_counter() < deadline:
            i = ids[rnd.randrange(len(ids))]
            if rnd.random() * 100 < a.write_pct:
                st, _, dt = c.request("PATCH", "/api/v1/feeds/" + i, a.admin_token,
                                      {"delivery": {"max_in_flight": rnd.randrange(1, 1024)}})
                (wl if st == 200 else []).append(dt)
            else:
                st, _, dt = c.request("GET", "/api/v1/feeds/" + i, a.token)
                (rl if st == 200 else []).append(dt)
            err += st not in (200,)
        with lock:
            res["read"] += rl
            res["write"] += wl
            res["errors"] += err

    t0 = time.perf_counter()
    ts = [threading.Thread(target=work, args=(k,)) for k in range(a.clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    el = time.perf_counter() - t0
    print(json.dumps({"seconds": round(el, 2), "clients": a.clients, "objects": len(ids),
                      "reads_per_s": round(len(res["read"]) / el, 1),
                      "writes_per_s": round(len(res["write"]) / el, 1),
                      "errors": res["errors"], "read": summary(res["read"]),
                      "write": summary(res["write"])}))
    return 0 if res["errors"] == 0 else 1


def cmd_poll(a):
    """Each operator's overview: /api/v1/status every second (the live figures) and the active
    alarms every 2 s (gui-api/web/src/overview.tsx), starting at a random phase."""
    res = {"status": [], "alarms": [], "errors": 0}
    lock = threading.Lock()
    start = time.perf_counter()
    deadline = start + a.duration

    def work(seed):
        rnd = random.Random(seed)
        c = Client(a.url)
        sl, al, err = [], [], 0
        t = start + rnd.random()
        k = 0
        while t < deadline and not (a.stop_file and os.path.exists(a.stop_file)):
            now = time.perf_counter()
            if t > now:
                time.sleep(t - now)
            st, _, dt = c.request("GET", "/api/v1/status", a.token)
            (sl if st == 200 else []).append(dt)
            err += st != 200
            if k % 2 == 0:
                st, _, dt = c.request("GET", "/api/v1/alarms?state=active&limit=50", a.token)
                (al if st == 200 else []).append(dt)
                err += st != 200
            k += 1
            t += 1.0
        with lock:
            res["status"] += sl
            res["alarms"] += al
            res["errors"] += err

    ts = [threading.Thread(target=work, args=(k,)) for k in range(a.operators)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    el = time.perf_counter() - start
    n = len(res["status"]) + len(res["alarms"])
    print(json.dumps({"seconds": round(el, 2), "operators": a.operators,
                      "requests_per_s": round(n / el, 1), "errors": res["errors"],
                      "status": summary(res["status"]), "alarms": summary(res["alarms"])}))
    return 0 if res["errors"] == 0 else 1


def cmd_changes(a):
    ids = read_ids(a.ids)
    c = Client(a.url)
    done, errors = [], 0
    t = time.perf_counter()
    for k in range(a.count):
        now = time.perf_counter()
        if t > now:
            time.sleep(t - now)
        t += 1.0 / a.rate
        i = ids[k % len(ids)]
        st, body, _ = c.request("PATCH", "/api/v1/feeds/" + i, a.admin_token,
                                {"delivery": {"max_in_flight": 1 + (k % 1000)}})
        if st == 200:
            done.append({"key": "feed/" + i, "version": json.loads(body)["version"]})
        else:
            errors += 1
    print(json.dumps({"changes": done, "errors": errors}))
    return 0 if errors == 0 else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("command", choices=["populate", "mixed", "poll", "changes"])
    p.add_argument("--url", required=True)
    p.add_argument("--token", default="")
    p.add_argument("--admin-token", default="")
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--prefix", default="bench")
    p.add_argument("--ids", default="")
    p.add_argument("--ids-out", default="")
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--duration", type=float, default=10)
    p.add_argument("--write-pct", type=float, default=5)
    p.add_argument("--operators", type=int, default=50)
    p.add_argument("--rate", type=float, default=20)
    p.add_argument("--stop-file", default="", help="poll: stop once this file exists")
    a = p.parse_args()
    return {"populate": cmd_populate, "mixed": cmd_mixed, "poll": cmd_poll,
            "changes": cmd_changes}[a.command](a)


if __name__ == "__main__":
    sys.exit(main())
