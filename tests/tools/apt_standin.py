#!/usr/bin/python3
"""A stand-in apt repository made from real Debian packages, signed and served on 127.0.0.1.

    apt_standin.py start --dir DIR [--cache DIR] [--with NAME ...]
    apt_standin.py index --dir DIR [--key repo|stranger] [--valid-until DATE] [--no-inrelease]
    apt_standin.py stop  --dir DIR

`start` makes DIR/repo once (a second start reuses it and only serves it),
serves it and prints shell lines (also written to DIR/standin.env):

    APT_URL=http://127.0.0.1:PORT     archive root: dists/bookworm/{InRelease,Release,Release.gpg}, pool/
    APT_SUITE=bookworm                Suite: stable, Codename: bookworm
    APT_COMPONENT=main
    APT_KEYRING=DIR/key.gpg           the repository's public key (key.asc: armoured)
    APT_STRANGER_KEYRING=DIR/stranger.gpg  another key, for signatures that must be refused
    APT_KERNEL=6.1.0-57-amd64         the kernel release that linux-headers-amd64 depends on here
    APT_PACKAGES='...'                the packages the repository holds, sorted

The packages: linux-headers-$APT_KERNEL and its closure as this machine's apt
sees it, `apt-cache depends --recurse` without recommends, suggests and
conflicts (~36 packages, ~68 MB). --with adds packages (and their closure)
the same way. The .deb files come from /var/cache/apt/archives when
they are there, else `apt-get download`, and are kept in the cache folder
(--cache, default $GB_CACHE_DIR/apt-debs, else DIR/../apt-debs), checked
against apt's sha256. With GPUBUNDLE_OFFLINE_TESTS=1 and a file missing,
start exits 77.

Indexed by apt-ftparchive (Packages, .gz, .xz; Release with SHA256), signed
by gpg with a throw-away Ed25519 key made on the first start (InRelease
clearsigned, Release.gpg detached, binary). `index` writes the index and the
signatures again: after tampering with the pool, to restore a clean state,
to sign with the stranger key, to set Valid-Until (an RFC 2822 date) or to
leave InRelease out (clients then read Release + Release.gpg).
Pool files are pool/main/<package>/<file>.deb, named as the Debian archive
names them (no epoch). Needs apt-utils, gnupg, xz-utils. Tests tamper by
editing files in DIR/repo; pool files are copies, never links into the cache.
"""

import argparse
import gzip
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

SUITE = "bookworm"
COMPONENT = "main"
ARCH = "amd64"
APT_ARCHIVES = "/var/cache/apt/archives"


def run(argv, **kw):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if r.returncode != 0:
        harness.die(f"{' '.join(argv[:4])}: exit {r.returncode}: {r.stderr.strip()[-800:]}")
    return r.stdout


def kernel_release():
    for line in run(["apt-cache", "depends", "linux-headers-amd64"]).splitlines():
        line = line.strip()
        if line.startswith("Depends: linux-headers-"):
            return line[len("Depends: linux-headers-"):]
    harness.die("apt-cache: linux-headers-amd64 depends on no linux-headers-<kernel> here")


APT_DEPENDS = ["--no-recommends", "--no-suggests", "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"]


def closure(names):
    """The packages apt installs for names on an empty root (Depends and Pre-Depends)."""
    out = run(["apt-cache", "depends", "--recurse"] + APT_DEPENDS + list(names))
    return sorted({l for l in out.splitlines() if l and not l.startswith((" ", "<"))})


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch_debs(names, cache):
    """Paths in the cache, every file checked against apt's sha256. Files
    arrive in a private folder and are renamed in, so tests running at once
    can share the cache."""
    os.makedirs(cache, exist_ok=True)
    uris = []
    for line in run(["apt-get", "download", "--print-uris"] + names).splitlines():
        _, fname, size, digest = line.split()
        uris.append((fname, int(size), digest.split(":", 1)[1].lower()))

    def good(path, size, digest):
        return os.path.exists(path) and os.path.getsize(path) == size and sha256_file(path) == digest

    with tempfile.TemporaryDirectory(dir=cache, prefix=".partial.") as part:
        missing = []
        for fname, size, digest in uris:
            local = os.path.join(APT_ARCHIVES, fname)
            if good(os.path.join(cache, fname), size, digest):
                continue
            if good(local, size, digest):
                shutil.copyfile(local, os.path.join(part, fname))
                os.replace(os.path.join(part, fname), os.path.join(cache, fname))
                continue
            missing.append(fname)
        if missing:
            if os.environ.get("GPUBUNDLE_OFFLINE_TESTS") == "1":
                print(f"SKIP: GPUBUNDLE_OFFLINE_TESTS=1 and {len(missing)} .deb files not cached in {cache}", file=sys.stderr)
                sys.exit(77)
            want = [n for n in names if any(f.startswith(n + "_") for f in missing)]
            r = subprocess.run(["apt-get", "download"] + want, cwd=part, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
            if r.returncode != 0:
                harness.die(f"apt-get download (no network? GPUBUNDLE_OFFLINE_TESTS=1 skips): {r.stdout.strip()[-800:]}")
            for fname in missing:
                if os.path.exists(os.path.join(part, fname)):
                    os.replace(os.path.join(part, fname), os.path.join(cache, fname))
    files = []
    for fname, size, digest in uris:
        path = os.path.join(cache, fname)
        if not good(path, size, digest):
            harness.die(f"{path}: missing or not the file apt lists (sha256 {digest})")
        files.append(path)
    return files


def gpg(home, *args, **kw):
    return run(["gpg", "--homedir", home, "--batch", "--quiet", "--no-tty", "--pinentry-mode", "loopback",
                "--passphrase", ""] + list(args), **kw)


class GnupgHome:
    """A short-lived GNUPGHOME in /tmp (agent socket paths must stay short), agent stopped on exit."""

    def __enter__(self):
        self.path = tempfile.mkdtemp(prefix="gbapt.", dir="/tmp")
        return self.path

    def __exit__(self, *exc):
        subprocess.run(["gpgconf", "--homedir", self.path, "--kill", "all"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        shutil.rmtree(self.path, ignore_errors=True)


def make_key(d, name, uid):
    """DIR/<name>.secret.asc, DIR/<name>.gpg (public, binary), DIR/<name>.asc (public, armoured)."""
    if os.path.exists(os.path.join(d, name + ".gpg")):
        return
    with GnupgHome() as home:
        gpg(home, "--quick-generate-key", uid, "ed25519", "sign", "never")
        with open(os.path.join(d, name + ".secret.asc"), "w") as f:
            f.write(gpg(home, "--armor", "--export-secret-keys"))
        os.chmod(os.path.join(d, name + ".secret.asc"), 0o600)
        with open(os.path.join(d, name + ".asc"), "w") as f:
            f.write(gpg(home, "--armor", "--export"))
        pub = subprocess.run(["gpg", "--homedir", home, "--batch", "--export"], stdout=subprocess.PIPE, check=True).stdout
        with open(os.path.join(d, name + ".gpg"), "wb") as f:
            f.write(pub)


def index(d, key="key", valid_until=None, inrelease=True):
    repo = os.path.join(d, "repo")
    dist = os.path.join(repo, "dists", SUITE)
    bdir = os.path.join(dist, COMPONENT, f"binary-{ARCH}")
    shutil.rmtree(dist, ignore_errors=True)
    os.makedirs(bdir)
    packages = run(["apt-ftparchive", "packages", "pool"], cwd=repo).encode()
    with open(os.path.join(bdir, "Packages"), "wb") as f:
        f.write(packages)
    with open(os.path.join(bdir, "Packages.gz"), "wb") as f:
        f.write(gzip.compress(packages, 9, mtime=0))
    with open(os.path.join(bdir, "Packages.xz"), "wb") as f:
        f.write(subprocess.run(["xz", "-9", "-c"], input=packages, stdout=subprocess.PIPE, check=True).stdout)
    opts = [f"APT::FTPArchive::Release::{k}={v}" for k, v in
            (("Origin", "gpubundle-test"), ("Label", "gpubundle-test"), ("Suite", "stable"), ("Codename", SUITE),
             ("Architectures", ARCH), ("Components", COMPONENT))]
    argv = ["apt-ftparchive"]
    for o in opts:
        argv += ["-o", o]
    release = run(argv + ["release", "."], cwd=dist)
    if valid_until:  # apt-ftparchive only sets it relative to now (ValidTime)
        release = release.replace("\nMD5Sum:", f"\nValid-Until: {valid_until}\nMD5Sum:", 1)
    with open(os.path.join(dist, "Release"), "w") as f:
        f.write(release)
    with GnupgHome() as home:
        gpg(home, "--import", os.path.join(d, key + ".secret.asc"))
        if inrelease:
            gpg(home, "--yes", "--clearsign", "-o", os.path.join(dist, "InRelease"), os.path.join(dist, "Release"))
        gpg(home, "--yes", "--detach-sign", "-o", os.path.join(dist, "Release.gpg"), os.path.join(dist, "Release"))


def build(args, d):
    kernel = kernel_release()
    names = closure([f"linux-headers-{kernel}"] + (args.with_ or []))
    cache = args.cache or (os.path.join(os.environ["GB_CACHE_DIR"], "apt-debs") if os.environ.get("GB_CACHE_DIR")
                           else os.path.join(os.path.dirname(d), "apt-debs"))
    files = fetch_debs(names, os.path.abspath(cache))
    tmp = os.path.join(d, "repo.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for path in files:
        base = os.path.basename(path)
        pool = os.path.join(tmp, "pool", COMPONENT, base.split("_")[0])
        os.makedirs(pool, exist_ok=True)
        # A copy (tests edit pool files), named as the Debian archive names it: no epoch.
        shutil.copyfile(path, os.path.join(pool, re.sub(r"_[0-9]+%3a", "_", base)))
    shutil.rmtree(os.path.join(d, "repo"), ignore_errors=True)
    os.replace(tmp, os.path.join(d, "repo"))
    make_key(d, "key", "gpubundle stand-in apt repository <apt-standin@example.invalid>")
    make_key(d, "stranger", "someone else <stranger@example.invalid>")
    index(d)
    with open(os.path.join(d, "meta.env"), "w") as f:
        f.write(f"APT_KERNEL={kernel}\nAPT_PACKAGES='{' '.join(names)}'\n")


def start(args):
    d = os.path.abspath(args.dir)
    os.makedirs(d, exist_ok=True)
    if harness.running(d, "aptrepo", "repo"):
        harness.die(f"a stand-in apt repository is already served from {d}; stop it first")
    if not os.path.exists(os.path.join(d, "meta.env")):
        build(args, d)
    log = os.path.join(d, "http.log")
    for _ in range(5):
        port = harness.free_port()
        proc = harness.spawn(d, "aptrepo", "repo", ["/usr/bin/python3", "-m", "http.server", str(port), "--bind",
                                                    "127.0.0.1", "--directory", os.path.join(d, "repo")], log)
        url = f"http://127.0.0.1:{port}"
        if harness.wait_http(f"{url}/dists/{SUITE}/Release", proc, ok=(200,)):
            lines = [f"APT_URL={url}", f"APT_SUITE={SUITE}", f"APT_COMPONENT={COMPONENT}",
                     f"APT_KEYRING={d}/key.gpg", f"APT_STRANGER_KEYRING={d}/stranger.gpg"]
            lines += open(os.path.join(d, "meta.env")).read().splitlines()
            text = "\n".join(lines) + "\n"
            with open(os.path.join(d, "standin.env"), "w") as f:
                f.write(text)
            sys.stdout.write(text)
            return
        harness.stop(d, {"aptrepo"}, "repo")
    harness.die(f"the stand-in apt repository did not start: {harness.log_tail(log)}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start")
    s.add_argument("--dir", required=True)
    s.add_argument("--cache")
    s.add_argument("--with", dest="with_", action="append", metavar="NAME")
    s.set_defaults(fn=start)
    i = sub.add_parser("index")
    i.add_argument("--dir", required=True)
    i.add_argument("--key", choices=("repo", "stranger"), default="repo")
    i.add_argument("--valid-until")
    i.add_argument("--no-inrelease", action="store_true")
    i.set_defaults(fn=lambda a: index(os.path.abspath(a.dir), "key" if a.key == "repo" else "stranger", a.valid_until,
                                      not a.no_inrelease))
    t = sub.add_parser("stop")
    t.add_argument("--dir", required=True)
    t.set_defaults(fn=lambda a: harness.stop(os.path.abspath(a.dir), {"aptrepo"}))
    args = p.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
