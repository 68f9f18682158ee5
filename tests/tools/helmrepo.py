#!/usr/bin/env python3
"""Pack a chart folder (chart.py's stand-in, or a real one) and serve charts as a Helm HTTP repo.

  helmrepo.py pack  --from CHART_DIR --version V --out DIR   -> DIR/<name>-<V>.tgz
  helmrepo.py pack  --release V --out DIR                    -> DIR/gpu-operator-<V>.tgz (chart.py's stand-in)
  helmrepo.py serve --dir DIR [--port P]   -> {"url": "http://127.0.0.1:PORT", "pid": N}
  helmrepo.py stop  --dir DIR
  helmrepo.py push-oci --registry HOST:PORT --chart FILE.tgz --repo PATH [--plain-http]
                    -> {"ref": "oci://HOST:PORT/PATH", "digest": "sha256:..."}

push-oci pushes the .tgz the way `helm push` does: an OCI manifest tagged with
the chart version ("+" -> "_"), config application/vnd.cncf.helm.config.v1+json
(name, version, appVersion) and one layer of type
application/vnd.cncf.helm.chart.content.v1.tar+gzip, at PATH/<chart name>.

pack writes a Helm-style chart archive: every file of the folder under <name>/
(Chart.yaml with version and appVersion set to V, as the published chart has;
the git tags carry placeholders), sorted entries, mtime 0, uid/gid 0, gzip
mtime 0: the same input gives the same bytes.

serve answers GET/HEAD for /index.yaml (generated from the *.tgz in DIR on each
request, and written to DIR/index.yaml at start: apiVersion v1,
entries.<name>[] with version, appVersion, urls [file name], digest sha256)
and for /<file>.tgz; everything else is 404. Detached like registry.py; its pid
file is DIR/.pids/helmrepo-repo.pid and its log DIR/helmrepo.log.
"""

import argparse
import gzip
import hashlib
import http.server
import io
import os
import re
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def chart_fields(text):
    """Top-level scalar fields of a Chart.yaml (enough for name/version/appVersion)."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z][A-Za-z0-9]*):\s*(.*?)\s*$", line)
        if m and m.group(2) and not m.group(2).startswith(("|", ">")):
            v = m.group(2)
            if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
                v = v[1:-1]
            out[m.group(1)] = v
    return out


def set_field(text, key, value):
    new, n = re.subn(rf"(?m)^{key}:.*$", f'{key}: "{value}"' if key == "appVersion" else f"{key}: {value}", text)
    if n == 0:
        new = text.rstrip("\n") + f"\n{key}: {value}\n"
    return new


def pack(args):
    if args.release:
        if args.src or args.version:
            harness.die("pack: --release makes the stand-in chart; it takes neither --from nor --version")
        import chart  # needs python3-yaml; only this path does
        with tempfile.TemporaryDirectory() as tmp:
            chart.make(args.release, tmp)
            args.src, args.version, args.release = tmp, args.release, None
            return pack(args)
    if not (args.src and args.version):
        harness.die("pack: give --from DIR and --version V, or --release V")
    src = os.path.abspath(args.src)
    chart_yaml = os.path.join(src, "Chart.yaml")
    try:
        text = open(chart_yaml, encoding="utf-8").read()
    except OSError as e:
        harness.die(f"{chart_yaml}: {e.strerror}")
    name = chart_fields(text).get("name")
    if not name:
        harness.die(f"{chart_yaml}: no name field")
    text = set_field(set_field(text, "version", args.version), "appVersion", args.version)
    files = {}
    for root, dirs, names in os.walk(src):
        dirs.sort()
        for n in names:
            full = os.path.join(root, n)
            rel = os.path.relpath(full, src)
            if os.path.islink(full) or not os.path.isfile(full):
                continue
            files[rel] = text.encode() if rel == "Chart.yaml" else open(full, "rb").read()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for rel in sorted(files):
            ti = tarfile.TarInfo(f"{name}/{rel}")
            ti.size, ti.mtime, ti.mode = len(files[rel]), 0, 0o644
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = ""
            tar.addfile(ti, io.BytesIO(files[rel]))
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(os.path.abspath(args.out), f"{name}-{args.version}.tgz")
    tmp = out + ".tmp"
    with open(tmp, "wb") as f:
        with gzip.GzipFile(filename="", fileobj=f, mode="wb", mtime=0, compresslevel=9) as g:
            g.write(raw.getvalue())
    os.replace(tmp, out)
    print(out)


def read_chart_from_tgz(path):
    with tarfile.open(path, "r:gz") as tar:
        for m in tar.getmembers():
            parts = m.name.split("/")
            if len(parts) == 2 and parts[1] == "Chart.yaml" and m.isfile():
                return chart_fields(tar.extractfile(m).read().decode("utf-8", "replace"))
    return None


def version_key(v):
    """Newest first, as helm lists them: numeric parts compare as numbers."""
    return [(0, int(x), "") if x.isdigit() else (1, 0, x) for x in re.split(r"[.\-+]", v.lstrip("v"))]


def index_yaml(d):
    entries = {}
    for n in sorted(os.listdir(d)):
        if not n.endswith(".tgz"):
            continue
        path = os.path.join(d, n)
        try:
            meta = read_chart_from_tgz(path)
        except (tarfile.TarError, OSError, EOFError):
            continue
        if not meta or "name" not in meta or "version" not in meta:
            continue
        digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
        entries.setdefault(meta["name"], []).append((meta, n, digest))
    q = lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    lines = ["apiVersion: v1", "entries:" if entries else "entries: {}"]
    for name in sorted(entries):
        lines.append(f"  {name}:")
        for meta, fname, digest in sorted(entries[name], key=lambda e: version_key(e[0]["version"]), reverse=True):
            lines += [f"  - apiVersion: {meta.get('apiVersion', 'v2')}",
                      f"    name: {name}",
                      f"    version: {q(meta['version'])}",
                      f"    appVersion: {q(meta.get('appVersion', ''))}",
                      f"    description: {q(meta.get('description', ''))}",
                      "    created: \"1970-01-01T00:00:00Z\"",
                      f"    digest: {digest}",
                      "    urls:",
                      f"    - {fname}"]
    lines.append('generated: "1970-01-01T00:00:00Z"')
    return ("\n".join(lines) + "\n").encode()


class RepoHandler(http.server.BaseHTTPRequestHandler):
    root = None
    protocol_version = "HTTP/1.1"

    def send_body(self, code, body, ctype, head=False):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def do_GET(self, head=False):
        path = self.path.split("?", 1)[0]
        name = path.lstrip("/")
        if name == "index.yaml":
            return self.send_body(200, index_yaml(self.root), "application/x-yaml", head)
        if "/" in name or not name.endswith(".tgz") or name.startswith("."):
            return self.send_body(404, b"not found\n", "text/plain", head)
        try:
            data = open(os.path.join(self.root, name), "rb").read()
        except OSError:
            return self.send_body(404, b"not found\n", "text/plain", head)
        self.send_body(200, data, "application/gzip", head)

    def do_HEAD(self):
        self.do_GET(head=True)


def serve_forever(args):
    RepoHandler.root = os.path.abspath(args.dir)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), RepoHandler)
    srv.daemon_threads = True
    srv.serve_forever()


def serve(args):
    d = os.path.abspath(args.dir)
    if not os.path.isdir(d):
        harness.die(f"--dir {d}: no such folder")
    if harness.running(d, "helmrepo", "repo"):
        harness.die(f"a helm repo is already served from {d}; stop it first")
    with open(os.path.join(d, "index.yaml"), "wb") as f:
        f.write(index_yaml(d))
    log = os.path.join(d, "helmrepo.log")
    for _ in range(1 if args.port else 5):
        port = args.port or harness.free_port()
        proc = harness.spawn(d, "helmrepo", "repo", [sys.executable, os.path.abspath(__file__),
                                                     "serve-forever", "--dir", d, "--port", str(port)], log)
        if harness.wait_http(f"http://127.0.0.1:{port}/index.yaml", proc, ok=(200,)):
            return harness.print_json({"url": f"http://127.0.0.1:{port}", "pid": proc.pid})
        harness.stop(d, {"helmrepo"}, "repo")
    harness.die(f"helm repo did not start: {harness.log_tail(log)}")


def push_oci(args):
    import json
    import seed  # noqa: E402 (same folder)
    meta = read_chart_from_tgz(args.chart)
    if not meta or "name" not in meta or "version" not in meta:
        harness.die(f"{args.chart}: no Chart.yaml with name and version")
    data = open(args.chart, "rb").read()
    cfg = seed.Blob(json.dumps({k: meta[k] for k in ("name", "version", "appVersion") if k in meta}).encode())
    layer = seed.Blob(data)
    man = json.dumps({"schemaVersion": 2, "mediaType": seed.OCI_MANIFEST,
                      "config": seed.descriptor("application/vnd.cncf.helm.config.v1+json", cfg.digest, cfg.size),
                      "layers": [seed.descriptor("application/vnd.cncf.helm.chart.content.v1.tar+gzip", layer.digest, layer.size)]}).encode()
    repo = args.repo.strip("/") + "/" + meta["name"]
    reg = seed.Registry(args.registry, args.plain_http, None, None, None)
    for b in (cfg, layer):
        reg.push_blob(repo, b)
    reg.push_manifest(repo, meta["version"].replace("+", "_"), man, seed.OCI_MANIFEST)
    harness.print_json({"ref": f"oci://{args.registry}/{args.repo.strip('/')}", "digest": seed.sha256_digest(man)})


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("pack")
    a.add_argument("--from", dest="src")
    a.add_argument("--version")
    a.add_argument("--release", help="pack the stand-in chart chart.py makes for this release")
    a.add_argument("--out", required=True)
    a.set_defaults(fn=pack)
    s = sub.add_parser("serve")
    s.add_argument("--dir", required=True)
    s.add_argument("--port", type=int, default=0)
    s.set_defaults(fn=serve)
    f = sub.add_parser("serve-forever", help="internal: the server process")
    f.add_argument("--dir", required=True)
    f.add_argument("--port", type=int, required=True)
    f.set_defaults(fn=serve_forever)
    t = sub.add_parser("stop")
    t.add_argument("--dir", required=True)
    t.set_defaults(fn=lambda a: harness.stop(os.path.abspath(a.dir), {"helmrepo"}))
    o = sub.add_parser("push-oci")
    o.add_argument("--registry", required=True)
    o.add_argument("--chart", required=True)
    o.add_argument("--repo", required=True)
    o.add_argument("--plain-http", action="store_true")
    o.set_defaults(fn=push_oci)
    args = p.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
