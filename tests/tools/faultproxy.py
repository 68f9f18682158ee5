#!/usr/bin/env python3
"""An HTTP reverse proxy on 127.0.0.1 that breaks the first K matching requests.

  faultproxy.py start --dir DIR --upstream http://127.0.0.1:PORT --fault MODE --times K
                      [--match blobs|manifests|tags|uploads|index|any] [--name NAME] [--stall-seconds S]
                      [--retry-after S] [--trickle-bps N] [--oversize-bytes N]
      -> {"url": "http://127.0.0.1:PORT", "foreign": "http://127.0.0.1:PORT2", "pid": N}
  faultproxy.py stats --dir DIR [--name NAME]
      -> {"injected": N, "requests": N, "leaked": N, "foreign": N, "traversal": N,
          "fault": MODE, "times": K, "match": M}
  faultproxy.py stop  --dir DIR

Modes, applied to the first K requests that match, then everything passes:
  503       answer 503 without asking upstream
  429       answer 429 with Retry-After: --retry-after (default 1)
  drop      forward, send the status, headers and part of the body, then reset
            the connection (a request without a response body is dropped
            before any answer)
  truncate  forward, send fewer body bytes than Content-Length, then close
  corrupt   forward, flip one byte in the middle of the body
  stall     forward, send about half the body, then nothing for --stall-seconds
            (default 60), then close
  redirect  answer 307 to the same path on the foreign listener (another origin,
            as a storage backend or CDN would be)
  foreign-upload  forward, and point the Location of a started upload (202 to
            POST .../blobs/uploads/) at the foreign listener
  foreign-link    forward, and add a Link rel="next" to a tag list that points at
            the foreign listener
  trickle   forward, sending the body at --trickle-bps bytes a second (default 2)
  oversize  answer a GET with 200 and --oversize-bytes bytes of body (HEAD passes)
  hostile-digest  answer a manifest GET/HEAD by tag with an OCI index whose child
            digest is "sha512:../../../etc/hostname"

The foreign listener ("foreign" in start's output; another port, so another
origin) forwards everything upstream without its Authorization and Host headers;
stats count its requests as "foreign" and those that carried Authorization as
"leaked" (a client must not send credentials across origins). Requests to
/_storage<path> on the main port are treated the same way (another host name,
for clients that reach the proxy as "localhost"). Any request whose path holds
".." or "/etc/" counts as "traversal".
truncate, corrupt, stall and trickle only count requests whose response has a body.
--match: blobs = /v2/<name>/blobs/<digest> (not uploads), manifests =
/v2/<name>/manifests/<ref>, tags = /v2/<name>/tags/list, uploads =
/v2/<name>/blobs/uploads/, index = .../index.yaml, any = every request (default).

Everything else is passed through as is: any method, request bodies (by length
or chunked), Range, redirects (never followed), streaming in 64 KiB pieces. The
client's Host header is forwarded so the registry builds Location URLs that
point back at the proxy. Pid file DIR/.pids/faultproxy-NAME.pid, log
DIR/faultproxy-NAME.log, counters DIR/faultproxy-NAME.stats.json.
"""

import argparse
import hashlib
import http.client
import http.server
import json
import os
import re
import socket
import struct
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

PIECE = 64 * 1024
HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
       "transfer-encoding", "upgrade", "expect"}
MATCH = {
    "blobs": re.compile(r"^/v2/.+/blobs/[a-z0-9]+:[A-Za-z0-9=_-]+$"),
    "manifests": re.compile(r"^/v2/.+/manifests/[^/]+$"),
    "tags": re.compile(r"^/v2/.+/tags/list$"),
    "uploads": re.compile(r"^/v2/.+/blobs/uploads/$"),
    "index": re.compile(r"/index\.yaml$"),
    "any": re.compile(r""),
}


class State:
    cfg = None
    lock = threading.Lock()
    injected = 0
    requests = 0
    leaked = 0
    foreign = 0
    traversal = 0

    @classmethod
    def save(cls):
        tmp = cls.cfg["stats"] + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"injected": cls.injected, "requests": cls.requests, "leaked": cls.leaked,
                       "foreign": cls.foreign, "traversal": cls.traversal,
                       "fault": cls.cfg["fault"],
                       "times": cls.cfg["times"], "match": cls.cfg["match"]}, f)
        os.replace(tmp, cls.cfg["stats"])

    @classmethod
    def take(cls, path, has_body):
        """Decide whether this request gets the fault; counts it when it does."""
        with cls.lock:
            cls.requests += 1
            hit = (cls.injected < cls.cfg["times"] and MATCH[cls.cfg["match"]].search(path) is not None
                   and (has_body or cls.cfg["fault"] not in ("truncate", "corrupt", "stall", "trickle")))
            if hit:
                cls.injected += 1
            cls.save()
            return hit


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        sys.stderr.write("faultproxy: %s\n" % (fmt % a))

    def _request_body(self):
        """Yield the client's request body in pieces (Content-Length or chunked)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return
                left = size
                while left:
                    piece = self.rfile.read(min(PIECE, left))
                    if not piece:
                        raise ConnectionError("client closed mid-body")
                    left -= len(piece)
                    yield piece
                self.rfile.readline()
        left = int(self.headers.get("Content-Length") or 0)
        while left > 0:
            piece = self.rfile.read(min(PIECE, left))
            if not piece:
                raise ConnectionError("client closed mid-body")
            left -= len(piece)
            yield piece

    def _refuse(self, code):
        for _ in self._request_body():  # keep the connection in a sane state
            pass
        body = json.dumps({"errors": [{"code": "UNAVAILABLE" if code == 503 else "TOOMANYREQUESTS",
                                       "message": "injected by faultproxy"}]}).encode()
        self.send_response(code)
        if code == 429:
            self.send_header("Retry-After", str(State.cfg.get("retry_after", 1)))
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _reset(self):
        """Abort the connection with RST (SO_LINGER 0), not a clean close."""
        try:
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.close_connection = True
        self.connection.close()

    def _proxy(self):
        cfg = State.cfg
        path = self.path
        fault = cfg["fault"]
        bare = urllib.parse.urlsplit(path).path
        if ".." in path or "/etc/" in path:
            with State.lock:
                State.traversal += 1
                State.save()
        foreign = self.server.server_port == cfg["foreign_port"]
        storage = foreign or bare.startswith("/_storage/")
        if storage:
            if not foreign:
                path = path[len("/_storage"):]
            with State.lock:
                if "Authorization" in self.headers:
                    State.leaked += 1
                State.foreign += 1
                State.requests += 1
                State.save()
        elif fault in ("503", "429") and State.take(bare, True):
            return self._refuse(int(fault))
        elif fault == "redirect" and State.take(bare, True):
            return self._redirect(path)
        elif fault == "hostile-digest" and self.command in ("GET", "HEAD") and not re.search(
                r"/manifests/sha\d+:", bare) and State.take(bare, True):
            return self._hostile_index()
        elif fault == "oversize" and self.command == "GET" and State.take(bare, True):
            return self._oversize()

        up = http.client.HTTPConnection(cfg["upstream_host"], timeout=120)
        headers = [(k, v) for k, v in self.headers.items()
                   if k.lower() not in HOP and not (storage and k.lower() in ("authorization", "host"))]
        if storage:
            headers.append(("Host", cfg["upstream_host"]))
        chunked = self.headers.get("Transfer-Encoding", "").lower() == "chunked"
        try:
            up.putrequest(self.command, path, skip_host=True, skip_accept_encoding=True)
            for k, v in headers:
                up.putheader(k, v)
            if chunked:
                up.putheader("Transfer-Encoding", "chunked")
            up.endheaders()
        except OSError as e:  # upstream down: say so, as a gateway would
            self.log_message("upstream: %s", e)
            self.close_connection = True
            return self.send_error(502, "upstream unreachable")
        for piece in self._request_body():
            up.send(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
        if chunked:
            up.send(b"0\r\n\r\n")
        resp = up.getresponse()
        length = resp.getheader("Content-Length")
        has_body = self.command != "HEAD" and resp.status not in (204, 304) and (
            length is None or int(length) > 0)
        inject = not storage and fault in ("drop", "truncate", "corrupt", "stall", "trickle") and State.take(bare, has_body)
        rewrite_upload = (not storage and fault == "foreign-upload" and self.command == "POST" and resp.status == 202
                          and State.take(bare, True))
        add_link = not storage and fault == "foreign-link" and resp.status == 200 and State.take(bare, True)
        if inject and fault == "drop" and not has_body:
            up.close()
            return self._reset()

        body = None
        if inject and fault == "corrupt":
            body = bytearray(resp.read())
            if body:
                body[len(body) // 2] ^= 0xFF
            length = str(len(body))

        self.send_response_only(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() in HOP or k.lower() == "content-length":
                continue
            if k.lower() == "location" and rewrite_upload:
                u = urllib.parse.urlsplit(v)
                v = self._foreign_url() + urllib.parse.urlunsplit(("", "", u.path, u.query, ""))
            elif k.lower() == "location" and v.startswith(cfg["upstream"]):
                v = self._self_url() + v[len(cfg["upstream"]):]
            self.send_header(k, v)
        if add_link:
            self.send_header("Link", '<%s%s?n=1000>; rel="next"' % (self._foreign_url(), bare))
        if length is not None:
            self.send_header("Content-Length", length)
        else:
            self.send_header("Connection", "close")  # body runs until close
            self.close_connection = True
        self.end_headers()
        if self.command == "HEAD":
            up.close()
            return
        if body is not None:
            self.wfile.write(body)
            up.close()
            return
        if inject and fault == "trickle":
            try:
                while True:
                    piece = resp.read(cfg["trickle_bps"])
                    if not piece:
                        break
                    self.wfile.write(piece)
                    self.wfile.flush()
                    time.sleep(1.0)
            finally:
                up.close()
            return
        total = int(length) if length is not None else None
        budget = None
        if inject:  # drop: a little, truncate and stall: about half
            budget = min(4096, (total or 8192) // 4) if fault == "drop" else (total or 2) // 2
        sent = 0
        while True:
            piece = resp.read(PIECE)
            if not piece:
                break
            if budget is not None and sent + len(piece) >= budget:
                self.wfile.write(piece[:budget - sent])
                up.close()
                if fault == "drop":
                    return self._reset()
                self.wfile.flush()
                if fault == "stall":
                    time.sleep(cfg["stall_seconds"])
                self.close_connection = True
                return
            self.wfile.write(piece)
            sent += len(piece)
        up.close()

    def _redirect(self, path):
        for _ in self._request_body():
            pass
        self.send_response(307)
        self.send_header("Location", self._foreign_url() + path)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _foreign_url(self):
        return "http://127.0.0.1:%d" % State.cfg["foreign_port"]

    def _hostile_index(self):
        body = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                           "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                                          "digest": "sha512:../../../etc/hostname", "size": 2,
                                          "platform": {"os": "linux", "architecture": "amd64"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.oci.image.index.v1+json")
        self.send_header("Docker-Content-Digest", "sha256:" + hashlib.sha256(body).hexdigest())
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _oversize(self):
        n = State.cfg["oversize_bytes"]
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
        self.send_header("Content-Length", str(n))
        self.end_headers()
        piece = b" " * PIECE
        sent = 0
        while sent < n:
            k = min(PIECE, n - sent)
            self.wfile.write(piece[:k])
            sent += k

    def _self_url(self):
        return "http://" + (self.headers.get("Host") or "127.0.0.1:%d" % self.server.server_port)

    def handle_one_request(self):
        try:
            super().handle_one_request()
        except (ConnectionError, socket.timeout, http.client.HTTPException) as e:
            self.log_message("connection ended: %s", e)
            self.close_connection = True

    do_GET = do_HEAD = do_PUT = do_PATCH = do_POST = do_DELETE = do_OPTIONS = _proxy


def run_proxy(args):
    with open(args.config) as f:
        State.cfg = json.load(f)
    State.save()
    foreign = http.server.ThreadingHTTPServer(("127.0.0.1", State.cfg["foreign_port"]), ProxyHandler)
    foreign.daemon_threads = True
    threading.Thread(target=foreign.serve_forever, daemon=True).start()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", State.cfg["port"]), ProxyHandler)
    srv.daemon_threads = True
    srv.serve_forever()


def start(args):
    d = os.path.abspath(args.dir)
    os.makedirs(d, exist_ok=True)
    if harness.running(d, "faultproxy", args.name):
        harness.die(f"fault proxy {args.name} is already running under {d}; stop it first")
    u = urllib.parse.urlsplit(args.upstream)
    if u.scheme != "http" or not u.netloc:
        harness.die(f"--upstream {args.upstream!r}: want http://HOST:PORT (plain-http registries only)")
    if args.times < 0:
        harness.die("--times must be >= 0")
    log = os.path.join(d, f"faultproxy-{args.name}.log")
    cfg_path = os.path.join(d, f"faultproxy-{args.name}.json")
    for _ in range(5):
        port, foreign_port = harness.free_port(), harness.free_port()
        if foreign_port == port:
            continue
        cfg = {"port": port, "foreign_port": foreign_port, "upstream": f"http://{u.netloc}", "upstream_host": u.netloc,
               "fault": args.fault, "times": args.times, "match": args.match,
               "stall_seconds": args.stall_seconds, "retry_after": args.retry_after,
               "trickle_bps": args.trickle_bps, "oversize_bytes": args.oversize_bytes,
               "stats": os.path.join(d, f"faultproxy-{args.name}.stats.json")}
        with open(cfg_path, "w") as f:
            json.dump(cfg, f)
        proc = harness.spawn(d, "faultproxy", args.name,
                             [sys.executable, os.path.abspath(__file__), "run", "--config", cfg_path], log)
        # Probe a path that is not a registry path, so the probe never counts
        # against --match blobs|manifests; with "any" it is a passed-through 404 or so.
        if wait_listening(port, proc) and wait_listening(foreign_port, proc):
            return harness.print_json({"url": f"http://127.0.0.1:{port}", "foreign": f"http://127.0.0.1:{foreign_port}",
                                       "pid": proc.pid})
        harness.stop(d, {"faultproxy"}, args.name)
    harness.die(f"fault proxy did not start: {harness.log_tail(log)}")


def wait_listening(port, proc, timeout=10.0):
    """TCP connect only: an HTTP probe would use up an injected fault."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def stats(args):
    path = os.path.join(os.path.abspath(args.dir), f"faultproxy-{args.name}.stats.json")
    try:
        print(open(path).read().strip())
    except OSError:
        harness.die(f"no fault proxy {args.name} under {args.dir}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start")
    s.add_argument("--dir", required=True)
    s.add_argument("--name", default="proxy")
    s.add_argument("--upstream", required=True)
    s.add_argument("--fault", required=True, choices=["503", "429", "drop", "truncate", "corrupt", "stall", "redirect",
                                                      "foreign-upload", "foreign-link", "trickle", "oversize",
                                                      "hostile-digest"])
    s.add_argument("--stall-seconds", type=float, default=60.0)
    s.add_argument("--retry-after", type=int, default=1)
    s.add_argument("--trickle-bps", type=int, default=2)
    s.add_argument("--oversize-bytes", type=int, default=17 << 20)
    s.add_argument("--times", type=int, required=True)
    s.add_argument("--match", default="any", choices=sorted(MATCH))
    s.set_defaults(fn=start)
    t = sub.add_parser("stats")
    t.add_argument("--dir", required=True)
    t.add_argument("--name", default="proxy")
    t.set_defaults(fn=stats)
    k = sub.add_parser("stop")
    k.add_argument("--dir", required=True)
    k.set_defaults(fn=lambda a: harness.stop(os.path.abspath(a.dir), {"faultproxy"}))
    r = sub.add_parser("run", help="internal: the proxy process")
    r.add_argument("--config", required=True)
    r.set_defaults(fn=run_proxy)
    args = p.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
