#!/usr/bin/env python3
"""Start and stop real docker-registry (distribution 2.8) instances for tests.

  registry.py start --dir DIR --name NAME [--tls] [--htpasswd USER:PASS] [--token [USER:PASS]]
                    [--token-ttl SECONDS]
  registry.py stop  --dir DIR

start prints one JSON line (also written to DIR/NAME.json):
  {"name", "host": "127.0.0.1:PORT", "url", "ca": path|null, "cert_dir": path|null,
   "username", "password", "token_realm": url|null, "pid", "token_pid": N|null}
Files live in DIR/NAME/ (config, certs, logs; blobs in DIR/NAME/storage).

--htpasswd implies --tls. --token starts a token server (RS256 JWT, see
token_server below); with USER:PASS it answers 401 unless the request carries
exactly those basic-auth credentials, without it hands tokens to anyone.
stop ends every process recorded under DIR (registries, token servers, and the
helm repo and fault proxies of the sibling tools) and waits for them.
"""

import argparse
import base64
import http.server
import json
import os
import ssl
import subprocess
import sys
import time
import urllib.parse
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

SERVICE = "gpubundle-test-registry"
ISSUER = "gpubundle-test-token-issuer"


def run(argv, **kw):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    if r.returncode != 0:
        harness.die(f"{' '.join(argv[:3])} failed: {r.stderr.decode(errors='replace').strip()}")
    return r.stdout


def make_tls(d):
    """CA + server cert for 127.0.0.1 and localhost (SAN), EC P-256 for speed."""
    ca_key, ca = os.path.join(d, "ca.key"), os.path.join(d, "ca.pem")
    key, csr, cert = (os.path.join(d, n) for n in ("server.key", "server.csr", "server.pem"))
    ext = os.path.join(d, "server.ext")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run(["openssl", "req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "7",
         "-subj", "/CN=gpubundle test CA",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
    run(["openssl", "req", "-new", *ec, "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1"])
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                "extendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\n")
    run(["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
         "-out", cert, "-days", "7", "-sha256", "-extfile", ext])
    # skopeo/containers wants a folder of *.crt files (--cert-dir).
    cert_dir = os.path.join(d, "certs.d")
    os.makedirs(cert_dir, exist_ok=True)
    with open(ca, "rb") as src, open(os.path.join(cert_dir, "ca.crt"), "wb") as dst:
        dst.write(src.read())
    return ca, cert, key, cert_dir


def make_token_cert(d):
    key, cert = os.path.join(d, "token.key"), os.path.join(d, "token.pem")
    run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
         "-out", cert, "-days", "7", "-subj", "/CN=gpubundle test token signer"])
    return key, cert


def split_creds(s, flag):
    user, sep, password = s.partition(":")
    if not sep or not user:
        harness.die(f"{flag} wants USER:PASS, got {s!r}")
    return user, password


def config_yaml(storage, port, tls, htpasswd_file, token):
    # JSON is YAML: no hand-formatted indentation to get wrong.
    cfg = {
        "version": 0.1,
        "log": {"level": "info", "accesslog": {"disabled": False}},
        "storage": {"filesystem": {"rootdirectory": storage}, "delete": {"enabled": True},
                    "cache": {"blobdescriptor": "inmemory"}},
        "http": {"addr": f"127.0.0.1:{port}", "headers": {"X-Content-Type-Options": ["nosniff"]}},
        "health": {"storagedriver": {"enabled": False}},
    }
    if tls:
        cfg["http"]["tls"] = {"certificate": tls[1], "key": tls[2]}
    if htpasswd_file:
        cfg["auth"] = {"htpasswd": {"realm": "test", "path": htpasswd_file}}
    if token:
        cfg["auth"] = {"token": {"realm": token["realm"], "service": SERVICE, "issuer": ISSUER,
                                 "rootcertbundle": token["cert"]}}
    return json.dumps(cfg, indent=1)


def start(args):
    d_root = os.path.abspath(args.dir)
    name = args.name
    if not name or "/" in name or name.startswith("."):
        harness.die(f"--name {name!r}: want a plain file name")
    if harness.running(d_root, "registry", name):
        harness.die(f"registry {name} is already running under {d_root}; stop it first")
    d = os.path.join(d_root, name)
    os.makedirs(os.path.join(d, "storage"), exist_ok=True)
    tls_wanted = args.tls or args.htpasswd is not None
    tls = make_tls(d) if tls_wanted else None
    scheme = "https" if tls else "http"
    username = password = None
    htpasswd_file = None
    if args.htpasswd is not None:
        username, password = split_creds(args.htpasswd, "--htpasswd")
        entry = run(["htpasswd", "-Bbn", username, password])
        htpasswd_file = os.path.join(d, "htpasswd")
        with open(htpasswd_file, "wb") as f:
            f.write(entry.strip() + b"\n")

    token = None
    token_proc = None
    if args.token is not None:
        if args.token:
            username, password = split_creds(args.token, "--token")
        tkey, tcert = make_token_cert(d)
        tcfg = os.path.join(d, "token-server.json")
        log = os.path.join(d, "token.log")
        for _ in range(5):
            tport = harness.free_port()
            with open(tcfg, "w") as f:
                json.dump({"port": tport, "key": tkey, "cert": tcert, "username": username,
                           "password": password, "service": SERVICE, "issuer": ISSUER,
                           "ttl": args.token_ttl}, f)
            os.chmod(tcfg, 0o600)
            token_proc = harness.spawn(d_root, "token", name,
                                       [sys.executable, os.path.abspath(__file__), "token-server",
                                        "--config", tcfg], log)
            if harness.wait_http(f"http://127.0.0.1:{tport}/healthz", token_proc, ok=(200,)):
                break
            harness.stop(d_root, {"token"}, name)
        else:
            harness.die(f"token server for {name} did not start: {harness.log_tail(log)}")
        token = {"realm": f"http://127.0.0.1:{tport}/token", "cert": tcert, "pid": token_proc.pid}

    ssl_ctx = ssl.create_default_context(cafile=tls[0]) if tls else None
    log = os.path.join(d, "registry.log")
    cfg_path = os.path.join(d, "config.yml")
    for _ in range(5):  # a free port can be taken between probe and bind
        port = harness.free_port()
        with open(cfg_path, "w") as f:
            f.write(config_yaml(os.path.join(d, "storage"), port, tls, htpasswd_file, token))
        proc = harness.spawn(d_root, "registry", name, ["docker-registry", "serve", cfg_path], log)
        if harness.wait_http(f"{scheme}://127.0.0.1:{port}/v2/", proc, ssl_context=ssl_ctx):
            break
        if proc.poll() is None:
            harness.stop(d_root, {"registry"}, name)
            harness.die(f"registry {name} did not answer /v2/ in time: {harness.log_tail(log)}")
    else:
        harness.die(f"registry {name} did not start: {harness.log_tail(log)}")

    info = {
        "name": name,
        "host": f"127.0.0.1:{port}",
        "url": f"{scheme}://127.0.0.1:{port}",
        "ca": tls[0] if tls else None,
        "cert_dir": tls[3] if tls else None,
        "username": username,
        "password": password,
        "token_realm": token["realm"] if token else None,
        "token_pid": token["pid"] if token else None,
        "pid": proc.pid,
    }
    harness.print_json(info, os.path.join(d_root, f"{name}.json"))


# ---------------------------------------------------------------- token server

def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenHandler(http.server.BaseHTTPRequestHandler):
    cfg = None
    issued = 0
    refused = 0

    def log_message(self, fmt, *a):  # never log the Authorization header
        sys.stderr.write("token: %s %s\n" % (self.address_string(), fmt % a))

    def reply(self, code, obj, headers=()):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def basic_user(self):
        """(user, ok): ok is False when credentials are required and wrong/missing."""
        want_user, want_pass = self.cfg["username"], self.cfg["password"]
        auth = self.headers.get("Authorization", "")
        user, password = None, None
        if auth.lower().startswith("basic "):
            try:
                user, _, password = base64.b64decode(auth[6:].strip()).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                return None, False
        if want_user is None:
            return user or "anonymous", True
        return user, (user == want_user and password == want_pass)

    def issue(self, user, scopes, oauth):
        access = []
        for scope in scopes:
            for one in scope.split(" "):
                parts = one.split(":")
                if len(parts) < 3:
                    continue
                typ, actions = parts[0], parts[-1]
                rname = ":".join(parts[1:-1])
                acts = [a for a in actions.split(",") if a in ("pull", "push", "delete", "*")]
                access.append({"type": typ, "name": rname, "actions": acts})
        now = int(time.time())
        with open(self.cfg["cert"], "rb") as f:
            pem = f.read().decode()
        der_b64 = "".join(pem.split("-----")[2].split())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [der_b64]}
        claims = {"iss": self.cfg["issuer"], "aud": self.cfg["service"], "sub": user,
                  "exp": now + self.cfg["ttl"], "nbf": now - 10, "iat": now, "jti": uuid.uuid4().hex,
                  "access": access}
        signing_input = (b64url(json.dumps(header, separators=(",", ":")).encode()) + "." +
                         b64url(json.dumps(claims, separators=(",", ":")).encode()))
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.cfg["key"]],
                             input=signing_input.encode(), stdout=subprocess.PIPE,
                             check=True).stdout
        tok = signing_input + "." + b64url(sig)
        TokenHandler.issued += 1
        body = {"token": tok, "expires_in": self.cfg["ttl"],
                "issued_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))}
        if oauth:
            body["access_token"] = tok
        self.reply(200, body)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/healthz":
            return self.reply(200, {"ok": True})
        if url.path == "/stats":
            return self.reply(200, {"issued": TokenHandler.issued, "refused": TokenHandler.refused})
        if url.path != "/token":
            return self.reply(404, {"error": "not found"})
        q = urllib.parse.parse_qs(url.query)
        user, ok = self.basic_user()
        if not ok:
            TokenHandler.refused += 1
            return self.reply(401, {"errors": [{"code": "UNAUTHORIZED", "message": "bad credentials"}]},
                              [("WWW-Authenticate", 'Basic realm="gpubundle-test-token"')])
        self.issue(user, q.get("scope", []), oauth=False)

    def do_POST(self):  # OAuth2 password grant (docker/distribution token spec)
        url = urllib.parse.urlsplit(self.path)
        if url.path != "/token":
            return self.reply(404, {"error": "not found"})
        n = int(self.headers.get("Content-Length", "0"))
        form = urllib.parse.parse_qs(self.rfile.read(n).decode())
        want_user = self.cfg["username"]
        user = (form.get("username") or ["anonymous"])[0]
        if want_user is not None:
            if (form.get("grant_type") != ["password"] or user != want_user or
                    form.get("password") != [self.cfg["password"]]):
                TokenHandler.refused += 1
                return self.reply(401, {"error": "invalid_grant"})
        self.issue(user, form.get("scope", []), oauth=True)


def token_server(args):
    with open(args.config) as f:
        TokenHandler.cfg = json.load(f)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", TokenHandler.cfg["port"]), TokenHandler)
    srv.daemon_threads = True
    srv.serve_forever()


def stop_cmd(args):
    harness.stop(os.path.abspath(args.dir))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start")
    s.add_argument("--dir", required=True)
    s.add_argument("--name", required=True)
    s.add_argument("--tls", action="store_true")
    s.add_argument("--htpasswd", metavar="USER:PASS")
    s.add_argument("--token", metavar="USER:PASS", nargs="?", const="")
    s.add_argument("--token-ttl", type=int, default=300, metavar="SECONDS",
                   help="expires_in and exp of issued tokens (the registry allows 60 s of leeway)")
    s.set_defaults(fn=start)
    t = sub.add_parser("stop")
    t.add_argument("--dir", required=True)
    t.set_defaults(fn=stop_cmd)
    k = sub.add_parser("token-server", help="internal: the token server process")
    k.add_argument("--config", required=True)
    k.set_defaults(fn=token_server)
    args = p.parse_args()
    if args.cmd == "start" and args.htpasswd is not None and args.token is not None:
        harness.die("--htpasswd and --token are two different auth modes; pick one")
    args.fn(args)


if __name__ == "__main__":
    main()
