#!/usr/bin/env python3
"""What a client made a docker-registry do, from the registry's own log and
its CPU time; for bench/mirror.sh and the mirror suites.

  registry_log.py run NAME LOG FROM_BYTE [CPU_TICKS WALL_S] >> RUNS.jsonl
  registry_log.py medians RUNS.jsonl NAME...
  registry_log.py report RUNS.jsonl NAME...

`run` reads the lines that docker-registry (distribution 2.8) wrote past
FROM_BYTE of LOG: one "response completed" per answered request, naming the
client's address and port (http.request.remoteaddr), the method, the URI, the
status and the body bytes written; a request refused for want of credentials
has an "error authorizing context" line instead (the 401). It prints one
JSON line:

  name, wall_s, cpu_s  the run's wall time and the registry's CPU time in it
                       (utime + stime ticks of /proc/PID/stat, by the caller)
  connections          distinct client address:port pairs: TCP connections that
                       carried a request (a kernel does not hand the same
                       ephemeral port out again within a run)
  requests, kinds      all requests, and by kind: "GET manifest", "HEAD
                       manifest", "GET blob", "HEAD blob", "ranged blob" (206),
                       "401" (a challenge: the client fetches a token next, from
                       the token service, which logs elsewhere), "other"
  bytes                body bytes written
  cpu_ns_per_byte      cpu_s over bytes

`medians` prints, for each NAME, the median of each figure over its runs as
one JSON object per line (kinds from the median run by CPU per byte);
`report` says the same in words, one line per NAME.
"""

import json
import re
import statistics
import sys

FIELD = re.compile(r'(\S+?)=("(?:[^"\\]|\\.)*"|\S*)')


def fields(line):
    out = {}
    for k, v in FIELD.findall(line):
        out[k] = v[1:-1] if v.startswith('"') else v
    return out


def kind(f):
    method, uri, status = f.get("http.request.method", ""), f.get("http.request.uri", ""), f.get("http.response.status", "")
    if status == "401":
        return "401"
    path = uri.split("?", 1)[0]
    if "/manifests/" in path:
        return f"{method} manifest"
    if "/blobs/" in path and "/blobs/uploads" not in path:
        if method == "GET" and status == "206":
            return "ranged blob"
        return f"{method} blob"
    return "other"


def run(name, path, start, ticks=0, wall=0.0):
    with open(path, "rb") as fh:
        fh.seek(start)
        data = fh.read().decode(errors="replace")
    conns, kinds = set(), {}
    requests = nbytes = 0
    for line in data.splitlines():
        challenged = 'msg="error authorizing context' in line
        if not challenged and 'msg="response completed"' not in line:
            continue
        f = fields(line)
        requests += 1
        conns.add(f.get("http.request.remoteaddr", ""))
        k = "401" if challenged else kind(f)
        kinds[k] = kinds.get(k, 0) + 1
        nbytes += int(f.get("http.response.written", "0") or 0)
    cpu = ticks / 100.0
    print(json.dumps({"name": name, "wall_s": wall, "cpu_s": cpu, "connections": len(conns), "requests": requests,
                      "kinds": dict(sorted(kinds.items())), "bytes": nbytes,
                      "cpu_ns_per_byte": cpu * 1e9 / nbytes if nbytes else 0}))


def median_runs(path, names):
    runs = [json.loads(line) for line in open(path) if line.strip()]
    for name in names:
        mine = [r for r in runs if r["name"] == name]
        if not mine:
            continue
        out = {"name": name, "runs": len(mine)}
        for k in ("wall_s", "cpu_s", "connections", "requests", "bytes", "cpu_ns_per_byte"):
            out[k] = statistics.median(r[k] for r in mine)
        by_cpu = sorted(mine, key=lambda r: r["cpu_ns_per_byte"])
        out["kinds"] = by_cpu[len(by_cpu) // 2]["kinds"]
        yield out


def report(path, names):
    for m in median_runs(path, names):
        kinds = ", ".join(f"{k} {n}" for k, n in m["kinds"].items())
        per = m["bytes"] / m["requests"] / 1048576 if m["requests"] else 0
        print(f"  {m['name']:<6} median of {m['runs']}: {m['wall_s']:.2f} s, registry CPU {m['cpu_s']:.2f} s "
              f"({m['cpu_ns_per_byte']:.2f} ns/byte), {m['connections']:g} connections, {m['requests']:g} requests "
              f"({kinds}), {per:.2f} MiB per request")


def main():
    if len(sys.argv) == 7 and sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]))
    elif len(sys.argv) == 5 and sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif len(sys.argv) >= 3 and sys.argv[1] == "medians":
        for m in median_runs(sys.argv[2], sys.argv[3:]):
            print(json.dumps(m))
    elif len(sys.argv) >= 3 and sys.argv[1] == "report":
        report(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
