#!/usr/bin/env python3
"""Push deterministic synthetic images into a registry through its HTTP API.

  seed.py --registry 127.0.0.1:PORT [--plain-http] [--ca CA] [--user U --password P]
          (--set small | --set bench | --set scale [--scale-gb G] | --lock LOCK.json)
          [--platforms linux/amd64,linux/arm64] [--layer-kb N] [--big-layer-mb N] [--seed S]
          [--source-host HOST ...] [-j N]

Prints one JSON document:
  {"images": [{"ref": "127.0.0.1:PORT/repo:tag", "source": str|null, "digest": "sha256:...",
               "mediaType": str, "bytes": N,
               "manifests": [{"platform": "linux/amd64", "digest", "mediaType"[, "attests"]}]}],
   "totalBytes": N}
"bytes" is the sum of the distinct blobs (configs and layers, attestations' too) an
image reaches, for every platform; "totalBytes" the same over all images (a blob
shared by images counts once). Manifests are not counted. "manifests" (indexes and
lists only) are the index's entries in order; an attestation entry
("platform": "unknown/unknown") names the child it "attests".

Content depends only on --seed and the image/platform/layer names, so the same
seed gives the same digests on any registry. Shapes: OCI index of OCI manifests,
Docker manifest list of Docker schema2 manifests, single OCI and single Docker
manifests. Layers are gzip tars (a few files, mtime 0) or incompressible
pseudo-random blobs; a base layer per platform is shared by every image.
Blobs already in the repository (HEAD 200) are not pushed again.

--lock stands in for nvcr.io and registry.k8s.io, so images are shaped as
upstream publishes them, not as the lock asks: an index (or list) of every
--platforms platform (default linux/amd64 and linux/arm64) whatever the lock's
platforms are, except a tag ending in -amd64 or -arm64 (DOCA driver images),
which is a single manifest of that arch. Each OCI index also lists, after its
platform children, a buildx-style attestation manifest per child (platform
unknown/unknown, annotated vnd.docker.reference.type: attestation-manifest and
vnd.docker.reference.digest: <child>): an OCI manifest with a small OCI config
and one application/vnd.in-toto+json layer (a SLSA provenance statement)
annotated with in-toto.io/predicate-type. Docker lists carry no attestations
(they cannot carry annotations), as with `docker buildx` and Docker media types.
"""

import argparse
import base64
import concurrent.futures
import functools
import gzip
import hashlib
import http.client
import io
import json
import os
import random
import ssl
import sys
import tarfile
import threading
import urllib.parse

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
IN_TOTO = "application/vnd.in-toto+json"
SLSA_PROVENANCE = "https://slsa.dev/provenance/v0.2"

SHAPES = {
    # shape: (index media type or None, manifest, config, layer)
    "oci-index": (OCI_INDEX, OCI_MANIFEST, OCI_CONFIG, OCI_LAYER),
    "docker-list": (DOCKER_LIST, DOCKER_MANIFEST, DOCKER_CONFIG, DOCKER_LAYER),
    "oci-single": (None, OCI_MANIFEST, OCI_CONFIG, OCI_LAYER),
    "docker-single": (None, DOCKER_MANIFEST, DOCKER_CONFIG, DOCKER_LAYER),
}

CHUNK = 8 << 20  # streamed blobs: generate, hash and PATCH 8 MiB at a time
EPOCH = "1970-01-01T00:00:00Z"


class SeedError(Exception):
    pass


def die(msg):
    raise SeedError(msg)


def sha256_digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


# ------------------------------------------------------------------ content

def rng(seed, *key):
    # Seeding with a str hashes it (sha512): stable across runs and processes.
    return random.Random("/".join([str(seed), *map(str, key)]))


def tar_layer(files):
    """A gzip tar with the given (path, bytes) files; byte-identical per input.
    Returns (blob, diff_id)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        dirs = set()
        for path, _ in files:
            parts = path.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                dirs.add("/".join(parts[:i]))
        entries = [(d, None) for d in dirs] + list(files)
        for path, data in sorted(entries, key=lambda e: e[0]):
            ti = tarfile.TarInfo(path)
            ti.mtime = 0
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = "root"
            if data is None:
                ti.type = tarfile.DIRTYPE
                ti.mode = 0o755
                tar.addfile(ti)
            else:
                ti.size = len(data)
                ti.mode = 0o755 if "/bin/" in path else 0o644
                tar.addfile(ti, io.BytesIO(data))
    tar_bytes = raw.getvalue()
    gz = io.BytesIO()
    with gzip.GzipFile(fileobj=gz, mode="wb", mtime=0, compresslevel=1, filename="") as g:
        g.write(tar_bytes)
    return gz.getvalue(), sha256_digest(tar_bytes)


class Blob:
    """A blob in memory, or streamed: stream is (size, make_chunks), where
    make_chunks() yields the same bytes on every call."""

    def __init__(self, data=None, media_type=None, diff_id=None, stream=None):
        self.data = data
        self.media_type = media_type
        self.stream = stream
        if data is not None:
            self.digest = sha256_digest(data)
            self.size = len(data)
            self.diff_id = diff_id or self.digest
        else:
            h = hashlib.sha256()
            for chunk in self.chunks():
                h.update(chunk)
            self.digest = "sha256:" + h.hexdigest()
            self.size = stream[0]
            self.diff_id = self.digest

    def chunks(self):
        if self.data is not None:
            yield self.data
            return
        yield from self.stream[1]()


def mt_chunks(key, size):
    r = rng(*key)
    left = size
    while left > 0:
        n = min(CHUNK, left)
        yield r.randbytes(n)
        left -= n


def aes_chunks(key, size):
    """The AES-128-CTR keystream under a key derived from KEY: deterministic and
    incompressible like mt_chunks, but about 100x faster (GB/s instead of 30 MB/s),
    which the multi-GB scale set needs. Needs python3-cryptography."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    k = hashlib.sha256("/".join(map(str, key)).encode()).digest()[:16]
    enc = Cipher(algorithms.AES(k), modes.CTR(bytes(16))).encryptor()
    zeros = bytes(min(CHUNK, size))
    left = size
    while left > 0:
        n = min(CHUNK, left)
        out = bytearray(n + 15)  # update_into wants room for a block; the keystream needs no padding
        enc.update_into(zeros[:n] if n < len(zeros) else zeros, out)
        yield memoryview(out)[:n]
        left -= n


def platform_parts(p):
    parts = p.split("/")
    if len(parts) not in (2, 3) or not all(parts):
        die(f"platform {p!r}: want os/arch[/variant]")
    return parts


def platform_json(p):
    parts = platform_parts(p)
    out = {"architecture": parts[1], "os": parts[0]}
    if len(parts) == 3:
        out["variant"] = parts[2]
    return out


@functools.lru_cache(maxsize=None)
def base_layer(seed, platform, layer_type, kb):
    """Shared by every image of this platform (the dedup case)."""
    arch = platform.replace("/", "-")
    r = rng(seed, "base", platform, kb)
    files = [
        ("etc/os-release", f'NAME="Synthetic Linux"\nID=synthetic\nVERSION_ID="12"\n'
                           f'ARCH="{arch}"\n'.encode()),
        ("usr/lib/synthetic/base.bin", r.randbytes(kb * 1024)),
        ("bin/sh", b"#!/bin/true\n"),
    ]
    data, diff_id = tar_layer(files)
    return Blob(data, layer_type, diff_id)


def app_layer(seed, image, platform, layer_type, kb, idx=0):
    r = rng(seed, "app", image, platform, idx)
    name = image.split("/")[-1].split(":")[0]
    files = [
        (f"usr/bin/{name}", f"#!/bin/sh\necho {image} {platform}\n".encode()),
        (f"etc/{name}/config.yaml", f"image: {image}\nplatform: {platform}\nlayer: {idx}\n".encode()),
        (f"usr/share/{name}/data-{idx}.bin", r.randbytes(kb * 1024)),
    ]
    data, diff_id = tar_layer(files)
    return Blob(data, layer_type, diff_id)


def random_layer(seed, key, layer_type, nbytes, streamed=False):
    """Incompressible bytes presented as a layer (registries don't look inside)."""
    if streamed:
        return Blob(media_type=layer_type, stream=(nbytes, lambda: mt_chunks((seed, "random", *key), nbytes)))
    return Blob(rng(seed, "random", *key).randbytes(nbytes), layer_type)


def config_blob(image, platform, layers, config_type):
    cfg = {
        "architecture": platform_json(platform)["architecture"],
        "os": platform_json(platform)["os"],
        "config": {
            "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
            "Entrypoint": [f"/usr/bin/{image.split('/')[-1].split(':')[0]}"],
            "Labels": {"org.opencontainers.image.title": image,
                       "io.gpubundle.test.synthetic": "true"},
            "WorkingDir": "/",
        },
        "created": EPOCH,
        "history": [{"created": EPOCH, "created_by": f"seed.py layer {i}"} for i in range(len(layers))],
        "rootfs": {"type": "layers", "diff_ids": [b.diff_id for b in layers]},
    }
    if "variant" in platform_json(platform):
        cfg["variant"] = platform_json(platform)["variant"]
    return Blob(json.dumps(cfg, indent=2, sort_keys=True).encode(), config_type)


def descriptor(media_type, digest, size, platform=None, annotations=None):
    d = {"mediaType": media_type, "digest": digest, "size": size}
    if annotations:
        d["annotations"] = annotations
    if platform:
        d["platform"] = platform_json(platform)
    return d


def attestation(seed, image, platform, child_digest):
    """A buildx-style attestation manifest for one platform child (moby/buildkit
    docs/attestations/attestation-storage.md): an OCI image manifest whose config
    is a small image config for unknown/unknown and whose one layer is an in-toto
    statement about the child, typed application/vnd.in-toto+json and annotated
    with its predicate type. Returns (manifest bytes, [config, layer])."""
    r = rng(seed, "attest", image, platform)
    statement = {
        "_type": "https://in-toto.io/Statement/v0.1",
        "predicateType": SLSA_PROVENANCE,
        "subject": [{"name": "pkg:docker/" + image + "?platform=" + urllib.parse.quote(platform, safe=""),
                     "digest": {"sha256": child_digest.split(":", 1)[1]}}],
        "predicate": {
            "builder": {"id": ""},
            "buildType": "https://mobyproject.org/buildkit@v1",
            "metadata": {"buildInvocationID": r.randbytes(16).hex(), "buildStartedOn": EPOCH,
                         "buildFinishedOn": EPOCH, "completeness": {"parameters": False, "environment": False,
                                                                    "materials": False},
                         "reproducible": False},
            "invocation": {"configSource": {}, "parameters": {"frontend": "dockerfile.v0"},
                           "environment": {"platform": platform}},
            "materials": [],
        },
    }
    layer = Blob(json.dumps(statement, sort_keys=True).encode(), IN_TOTO)
    cfg = Blob(json.dumps({"architecture": "unknown", "os": "unknown", "config": {},
                           "rootfs": {"type": "layers", "diff_ids": [layer.digest]}}, sort_keys=True).encode(),
               OCI_CONFIG)
    man = {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
           "config": descriptor(OCI_CONFIG, cfg.digest, cfg.size),
           "layers": [descriptor(IN_TOTO, layer.digest, layer.size,
                                 annotations={"in-toto.io/predicate-type": SLSA_PROVENANCE})]}
    return json.dumps(man).encode(), [cfg, layer]


class Image:
    """One image: per-platform manifests (+ an index for the index shapes; with
    attest, an OCI index also lists a buildx-style attestation manifest per
    platform child, after the children, as `docker buildx build` pushes them)."""

    def __init__(self, repo, tag, shape, platforms, layers_for, source=None, attest=False, seed="1"):
        self.repo, self.tag, self.shape, self.source = repo, tag, shape, source
        index_type, manifest_type, config_type, layer_type = SHAPES[shape]
        if index_type is None:
            platforms = platforms[:1]
        self.blobs = []        # (Blob) in push order, per repository
        self.manifests = []    # (bytes, media type, platform) children
        for p in platforms:
            layers = layers_for(p, layer_type)
            cfg = config_blob(f"{repo}:{tag}", p, layers, config_type)
            man = {"schemaVersion": 2, "mediaType": manifest_type,
                   "config": descriptor(config_type, cfg.digest, cfg.size),
                   "layers": [descriptor(layer_type, b.digest, b.size) for b in layers]}
            if shape.startswith("oci"):
                man["annotations"] = {"org.opencontainers.image.created": EPOCH}
            self.blobs += [cfg, *layers]
            self.manifests.append((json.dumps(man, indent=3).encode(), manifest_type, p))
        self.entries = []      # summary of the index's entries
        if index_type is None:
            self.top, self.media_type = self.manifests[0][0], manifest_type
            self.children = []
        else:
            descs = [descriptor(mt, sha256_digest(b), len(b), p) for b, mt, p in self.manifests]
            self.entries = [{"platform": p, "digest": sha256_digest(b), "mediaType": mt} for b, mt, p in self.manifests]
            self.children = list(self.manifests)
            if attest:
                if index_type != OCI_INDEX:
                    die(f"{repo}:{tag}: attestations need an OCI index (a Docker list cannot carry annotations)")
                for b, _, p in self.manifests:
                    child = sha256_digest(b)
                    att, att_blobs = attestation(seed, f"{repo}:{tag}", p, child)
                    self.blobs += att_blobs
                    self.children.append((att, OCI_MANIFEST, "unknown/unknown"))
                    descs.append(descriptor(OCI_MANIFEST, sha256_digest(att), len(att), "unknown/unknown", {
                        "vnd.docker.reference.digest": child,
                        "vnd.docker.reference.type": "attestation-manifest"}))
                    self.entries.append({"platform": "unknown/unknown", "digest": sha256_digest(att),
                                         "mediaType": OCI_MANIFEST, "attests": child})
            idx = {"schemaVersion": 2, "mediaType": index_type, "manifests": descs}
            self.top, self.media_type = json.dumps(idx, indent=3).encode(), index_type
        self.digest = sha256_digest(self.top)

    def summary(self):
        info = {"ref": f"{self.repo}:{self.tag}", "source": self.source, "digest": self.digest,
                "mediaType": self.media_type}
        if self.entries:
            info["manifests"] = self.entries
        return info, {b.digest: b.size for b in self.blobs}


# ------------------------------------------------------------------ client

class Registry:
    """Just enough of the distribution API to push: HEAD/POST/PATCH/PUT, with
    basic auth or the bearer-token dance. One keep-alive connection per thread."""

    def __init__(self, host, plain_http, ca, user, password, mount=False):
        self.host = host
        self.scheme = "http" if plain_http else "https"
        self.ctx = None if plain_http else ssl.create_default_context(cafile=ca)
        self.user, self.password = user, password
        self.local = threading.local()
        self.lock = threading.Lock()
        self.tokens = {}       # scope -> token
        self.basic = False     # registry asked for basic auth
        # Cross-repository mounts (POST ?mount=&from=) instead of uploading a
        # shared blob again; off by default (a token scoped to one repository
        # cannot mount from another).
        self.mount = mount
        self.blob_locks = {}   # digest -> Lock
        self.pushed_to = {}    # digest -> first repository it was uploaded to

    def _conn(self, host=None, scheme=None):
        host, scheme = host or self.host, scheme or self.scheme
        key = (scheme, host)
        conns = getattr(self.local, "conns", None)
        if conns is None:
            conns = self.local.conns = {}
        if key not in conns:
            if scheme == "https":
                conns[key] = http.client.HTTPSConnection(host, timeout=60, context=self.ctx)
            else:
                conns[key] = http.client.HTTPConnection(host, timeout=60)
        return conns[key]

    def _raw(self, method, url, body=None, headers=None):
        """One request; url is absolute or a path on the registry. Returns
        (status, headers, body bytes)."""
        u = urllib.parse.urlsplit(url)
        host = u.netloc or self.host
        scheme = u.scheme or self.scheme
        path = u.path + ("?" + u.query if u.query else "")
        hdrs = dict(headers or {})
        if body is not None:
            hdrs["Content-Length"] = str(len(body))
        for attempt in (0, 1):  # a kept-alive connection may have been closed
            conn = self._conn(host, scheme)
            try:
                conn.request(method, path, body=body, headers=hdrs)
                r = conn.getresponse()
                data = r.read()
                return r.status, r.headers, data
            except (http.client.HTTPException, ConnectionError, OSError):
                conn.close()
                self.local.conns.pop((scheme, host), None)
                if attempt:
                    raise

    def _auth_header(self, scope):
        if self.basic:
            return {"Authorization": "Basic " + base64.b64encode(
                f"{self.user}:{self.password}".encode()).decode()}
        with self.lock:
            tok = self.tokens.get(scope)
        return {"Authorization": "Bearer " + tok} if tok else {}

    def _challenge(self, hdr, scope):
        scheme, _, rest = (hdr or "").partition(" ")
        params = {}
        for part in rest.split(","):
            k, _, v = part.strip().partition("=")
            if k:
                params[k.strip().lower()] = v.strip().strip('"')
        if scheme.lower() == "basic":
            if self.user is None:
                die(f"{self.host} wants basic auth: pass --user and --password")
            self.basic = True
            return
        if scheme.lower() != "bearer" or "realm" not in params:
            die(f"{self.host}: unsupported auth challenge {hdr!r}")
        q = {"service": params.get("service", "")}
        q = urllib.parse.urlencode(q) + "&" + urllib.parse.urlencode({"scope": scope})
        realm = params["realm"]
        url = realm + ("&" if "?" in realm else "?") + q
        hdrs = {}
        if self.user is not None:
            hdrs["Authorization"] = "Basic " + base64.b64encode(
                f"{self.user}:{self.password}".encode()).decode()
        status, _, body = self._raw("GET", url, headers=hdrs)
        if status != 200:
            die(f"token server {realm} answered {status} for scope {scope}")
        doc = json.loads(body)
        tok = doc.get("token") or doc.get("access_token")
        if not tok:
            die(f"token server {realm} sent no token")
        with self.lock:
            self.tokens[scope] = tok

    def request(self, method, url, repo, body=None, headers=None, ok=(200, 201, 202, 204)):
        scope = f"repository:{repo}:pull,push"
        for _ in range(3):
            hdrs = dict(headers or {})
            hdrs.update(self._auth_header(scope))
            status, rh, data = self._raw(method, url, body, hdrs)
            if status == 401:
                self._challenge(rh.get("WWW-Authenticate"), scope)
                continue
            if status not in ok:
                detail = data[:300].decode(errors="replace").strip()
                die(f"{method} {self.host}{urllib.parse.urlsplit(url).path}: HTTP {status} {detail}")
            return status, rh, data
        die(f"{method} {self.host}/v2/{repo}: still 401 after authenticating (wrong credentials?)")

    def has_blob(self, repo, digest):
        st, _, _ = self.request("HEAD", f"/v2/{repo}/blobs/{digest}", repo, ok=(200, 404))
        return st == 200

    def push_blob(self, repo, blob):
        if not self.mount:
            return self._push_blob(repo, blob)
        with self.lock:
            blob_lock = self.blob_locks.setdefault(blob.digest, threading.Lock())
        with blob_lock:  # one upload per blob; the other repositories mount it
            return self._push_blob(repo, blob)

    def _push_blob(self, repo, blob):
        if self.has_blob(repo, blob.digest):
            return False
        url = f"/v2/{repo}/blobs/uploads/"
        if self.mount and blob.digest in self.pushed_to:
            url += "?" + urllib.parse.urlencode({"mount": blob.digest, "from": self.pushed_to[blob.digest]})
        status, h, _ = self.request("POST", url, repo, body=b"", ok=(201, 202))
        if status == 201:  # mounted
            return True
        self.pushed_to[blob.digest] = repo
        loc = h.get("Location")
        if blob.data is not None:
            self.request("PUT", self._with_digest(loc, blob.digest), repo, body=blob.data,
                         headers={"Content-Type": "application/octet-stream"}, ok=(201,))
            return True
        # Chunked upload, never holding more than one chunk.
        offset = 0
        for chunk in blob.chunks():
            _, h, _ = self.request("PATCH", loc, repo, body=chunk, ok=(202,), headers={
                "Content-Type": "application/octet-stream",
                "Content-Range": f"{offset}-{offset + len(chunk) - 1}"})
            loc = h.get("Location") or loc
            offset += len(chunk)
        self.request("PUT", self._with_digest(loc, blob.digest), repo, body=b"", ok=(201,))
        return True

    @staticmethod
    def _with_digest(loc, digest):
        return loc + ("&" if "?" in loc else "?") + urllib.parse.urlencode({"digest": digest})

    def push_manifest(self, repo, ref, data, media_type):
        _, h, _ = self.request("PUT", f"/v2/{repo}/manifests/{ref}", repo, body=data,
                               headers={"Content-Type": media_type}, ok=(201,))
        got = h.get("Docker-Content-Digest")
        if got and got != sha256_digest(data):
            die(f"{repo}:{ref}: registry says digest {got}, pushed {sha256_digest(data)}")

    def push_image(self, img):
        seen = set()
        for b in img.blobs:
            if b.digest not in seen:
                seen.add(b.digest)
                self.push_blob(img.repo, b)
        for data, mt, _ in img.children:
            self.push_manifest(img.repo, sha256_digest(data), data, mt)
        self.push_manifest(img.repo, img.tag, img.top, img.media_type)


# ------------------------------------------------------------------ image sets

def small_set(args, platforms):
    s, kb = args.seed, args.layer_kb or 64
    plain = lambda repo: (lambda p, lt: [base_layer(s, p, lt, 256), app_layer(s, repo, p, lt, kb)])
    specs = [
        ("test/oci-multi", "1.0", "oci-index", plain("test/oci-multi")),
        ("test/docker-multi", "1.0", "docker-list", plain("test/docker-multi")),
        ("test/oci-single", "1.0", "oci-single", plain("test/oci-single")),
        ("test/docker-single", "1.0", "docker-single", plain("test/docker-single")),
        # random blob layer, three layers, a nested repository path, a long tag
        ("test/nested/random", "v1.2.3-ubuntu22.04", "docker-list",
         lambda p, lt: [base_layer(s, p, lt, 256), app_layer(s, "test/nested/random", p, lt, kb),
                        random_layer(s, ("test/nested/random", p), lt, 512 * 1024)]),
        # shares every layer but the last with test/oci-multi (cross-image dedup)
        ("test/oci-shared", "2.0", "oci-index",
         lambda p, lt: [base_layer(s, p, lt, 256), app_layer(s, "test/oci-multi", p, lt, kb),
                        app_layer(s, "test/oci-shared", p, lt, kb, 1)]),
    ]
    return [functools.partial(Image, r, t, sh, platforms, lf) for r, t, sh, lf in specs]


def bench_set(args, platforms):
    """14 images, ~276 MB of unique blobs with two platforms: a 4 MiB base per
    platform, a 4 MiB runtime layer per platform shared by half the images, and
    one ~10 MiB incompressible layer per image and platform."""
    s = args.seed
    big = (args.layer_kb or 10 * 1024) * 1024
    shapes = ["oci-index", "docker-list"] * 6 + ["oci-single", "docker-single"]
    images = []
    for i, shape in enumerate(shapes):
        repo = f"bench/app-{i:02d}"

        def layers(p, lt, repo=repo, i=i):
            out = [base_layer(s, p, lt, 4096)]
            if i % 2 == 0:
                out.append(random_layer(s, ("runtime", p), lt, 4 << 20))
            out.append(app_layer(s, repo, p, lt, 64))
            out.append(random_layer(s, (repo, p), lt, big))
            return out
        images.append(functools.partial(Image, repo, f"1.{i}.0", shape, platforms, layers))
    return images


# The scale set at --scale-gb 10, sizes in MB (10^6 bytes); every size is
# scaled by GB / 10, so each point has the same images and blobs.
# Shared layers: (name, MB, per platform?). The CUDA layers and the driver
# layers are the multi-GB ones; bases and the small layers are shared widely.
SCALE_SHARED = {
    "ubuntu22.04": 30, "ubuntu22.04-apt": 5, "ubi9": 40, "ubi9-dnf": 6, "distroless": 2,
    "licenses": 0.016, "entrypoint": 0.004, "ca-certificates": 0.3,
    "cuda-12.6-runtime": 1800, "dcgm-3.3.9": 150,
    "driver-deps-ubuntu22.04": 120, "driver-deps-rhel9": 130,
}
UBUNTU = ["ubuntu22.04", "ubuntu22.04-apt", "ca-certificates", "licenses"]
UBI = ["ubi9", "ubi9-dnf", "ca-certificates", "licenses"]
# (repo, tag, shape, platforms, shared layers, own layer MB, entrypoint?)
BOTH = ("linux/amd64", "linux/arm64")
AMD = ("linux/amd64",)
SCALE_IMAGES = [
    ("nvidia/gpu-operator", "v24.9.2", "oci-index", BOTH, UBI, 60),
    ("nvidia/cloud-native/gpu-operator-validator", "v24.9.2", "oci-index", BOTH,
     UBI + ["cuda-12.6-runtime"], 20),
    ("nvidia/cloud-native/dcgm", "3.3.9-1-ubuntu22.04", "oci-index", BOTH,
     UBUNTU + ["cuda-12.6-runtime", "dcgm-3.3.9"], 8),
    ("nvidia/k8s/dcgm-exporter", "3.3.9-3.6.1-ubuntu22.04", "docker-list", BOTH,
     UBUNTU + ["cuda-12.6-runtime", "dcgm-3.3.9"], 20),
    ("nvidia/k8s-device-plugin", "v0.17.0", "oci-index", BOTH, UBI, 30),
    ("nvidia/k8s/container-toolkit", "v1.17.3-ubuntu20.04", "docker-list", BOTH, UBUNTU, 40),
    ("nvidia/cloud-native/k8s-driver-manager", "v0.7.0", "oci-index", BOTH, UBI, 15),
    ("nvidia/cloud-native/k8s-mig-manager", "v0.10.0-ubuntu20.04", "docker-list", BOTH, UBUNTU, 25),
    ("nvidia/cloud-native/vgpu-device-manager", "v0.2.8", "oci-index", BOTH, UBI, 10),
    ("nvidia/kubevirt-gpu-device-plugin", "v1.2.10", "docker-list", BOTH, ["distroless", "licenses"], 12),
    ("nvidia/cloud-native/gdrdrv", "v2.4.1-2-ubuntu22.04", "docker-list", BOTH, UBUNTU, 30),
    ("nvidia/cloud-native/nvidia-fs", "2.20.5-ubuntu22.04", "docker-list", BOTH, UBUNTU, 20),
    ("nvidia/cuda", "12.6.3-base-ubi9", "oci-index", BOTH, UBI, 80),
    ("nfd/node-feature-discovery", "v0.16.6", "oci-index", BOTH, ["distroless"], 45),
    ("nvidia/driver", "550.127.08-ubuntu22.04", "oci-index", BOTH,
     UBUNTU + ["driver-deps-ubuntu22.04"], 1200),
    ("nvidia/driver", "535.216.03-ubuntu22.04", "docker-single", AMD,
     UBUNTU + ["driver-deps-ubuntu22.04"], 1100),
    ("nvidia/driver", "550.127.08-rhel9.4", "oci-single", AMD, UBI + ["driver-deps-rhel9"], 1300),
    ("nvidia/cloud-native/k8s-cc-manager", "v0.1.1", "oci-index", BOTH, UBI, 10),
]


def scale_set(args, _platforms):
    """A GPU Operator-sized set: about GB of distinct blobs, all incompressible
    (AES keystream), streamed in 8 MiB chunks so memory stays flat."""
    s, f = args.seed, args.scale_gb / 10
    lock = threading.Lock()
    cache = {}  # key -> [lock, Blob]: a shared layer is hashed once, other layers in parallel

    def layer(name, mb, platform, lt):
        key = ("scale", name, platform, args.scale_gb)
        with lock:
            entry = cache.setdefault(key, [threading.Lock(), None])
        with entry[0]:
            if entry[1] is None:
                n = max(1024, int(mb * f * 1e6))
                entry[1] = Blob(media_type=lt, stream=(n, lambda: aes_chunks((s, *key), n)))
            return entry[1]

    images = []
    for repo, tag, shape, plats, shared, own_mb in SCALE_IMAGES:
        def layers(p, lt, repo=repo, tag=tag, shared=shared, own_mb=own_mb):
            out = [layer(n, SCALE_SHARED[n], p, lt) for n in shared]
            out.append(layer(f"{repo}:{tag}", own_mb, p, lt))
            out.append(layer("entrypoint", SCALE_SHARED["entrypoint"], p, lt))
            return out
        images.append(functools.partial(Image, repo, tag, shape, list(plats), layers))
    return images


def split_source(src):
    """nvcr.io/nvidia/driver:550 -> ("nvidia/driver", "550"). None when the
    reference carries no tag (digest-only references cannot be reproduced)."""
    ref = src.split("@", 1)[0]
    name, tag = ref, None
    last = ref.rsplit("/", 1)[-1]
    if ":" in last:
        name, tag = ref.rsplit(":", 1)
    if tag is None:
        return None
    parts = name.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]
    elif len(parts) == 1:
        parts = ["library"] + parts
    return "/".join(parts), tag


def source_host(src):
    first = src.split("/", 1)[0]
    if "/" in src and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


# A tag naming one architecture (the Network Operator's DOCA driver images,
# <version>-<os>-<arch>) is a single-platform manifest upstream.
ARCH_TAG = {"amd64": "linux/amd64", "arm64": "linux/arm64"}


def lock_set(args, upstream_platforms):
    """The images a lock names, shaped as upstream has them, whatever the lock
    asks for: nvcr.io and registry.k8s.io publish multi-arch indexes (so a lock
    for linux/amd64 alone meets an index with an arm64 child it must leave out),
    except tags ending in -amd64/-arm64, which are one manifest of that arch."""
    try:
        with open(args.lock) as f:
            lock = json.load(f)
    except (OSError, ValueError) as e:
        die(f"{args.lock}: {e}")
    imgs = lock.get("images")
    if not isinstance(imgs, list):
        die(f"{args.lock}: no images[] array")
    s, kb = args.seed, args.layer_kb or 64
    images = []
    for i, entry in enumerate(sorted(imgs, key=lambda e: e.get("source", ""))):
        src = entry.get("source")
        if not src:
            die(f"{args.lock}: images[{i}] has no source")
        if entry.get("origin", "upstream") != "upstream":
            # `gpubundle driver build` makes these; an upstream copy would hide a mirror bug.
            print(f"seed: note: {src}: origin {entry.get('origin')}, not seeded", file=sys.stderr)
            continue
        rt = split_source(src)
        if rt is None:
            print(f"seed: warning: {src}: no tag, cannot stand in for a digest; skipped", file=sys.stderr)
            continue
        repo, tag = rt
        if args.source_host and source_host(src) not in args.source_host:
            continue
        arch = tag.rsplit("-", 1)[-1] if "-" in tag else None
        if arch in ARCH_TAG:
            plats = [ARCH_TAG[arch]]
            shape = "docker-single" if i % 2 == 0 else "oci-single"  # stable under --source-host
        else:
            plats = upstream_platforms
            shape = "docker-list" if i % 2 == 0 else "oci-index"

        def layers(p, lt, repo=repo, tag=tag):
            return [base_layer(s, p, lt, 256), app_layer(s, f"{repo}:{tag}", p, lt, kb)]
        images.append(functools.partial(Image, repo, tag, shape, list(plats), layers, source=src,
                                        attest=shape == "oci-index", seed=s))
    return images


def big_image(args):
    s, mb = args.seed, args.big_layer_mb
    plat = args.platforms[0]
    return functools.partial(Image, "test/big", "1", "oci-single", [plat],
                 lambda p, lt: [random_layer(s, ("big", p, mb), lt, mb << 20, streamed=True)])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--registry", required=True, help="HOST:PORT")
    p.add_argument("--plain-http", action="store_true")
    p.add_argument("--ca")
    p.add_argument("--user")
    p.add_argument("--password")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--set", choices=["small", "bench", "scale"])
    g.add_argument("--lock")
    p.add_argument("--source-host", action="append", metavar="HOST",
                   help="with --lock: only images whose source is on HOST (repeatable)")
    p.add_argument("--platforms", default="linux/amd64,linux/arm64",
                   help="platforms of the multi-arch images (with --lock: what upstream has, "
                        "whatever the lock's platforms)")
    p.add_argument("--layer-kb", type=int)
    p.add_argument("--big-layer-mb", type=int)
    p.add_argument("--scale-gb", type=float, default=10.0,
                   help="with --set scale: distinct blobs in GB (10^9 bytes), about")
    p.add_argument("--seed", default="1")
    p.add_argument("-j", "--jobs", type=int, default=4, help="images pushed in parallel")
    args = p.parse_args()
    if (args.user is None) != (args.password is None):
        die("--user and --password go together")
    if "/" in args.registry or "://" in args.registry:
        die(f"--registry {args.registry!r}: want HOST:PORT (use --plain-http for http)")
    args.platforms = [x.strip() for x in args.platforms.split(",") if x.strip()]
    for pl in args.platforms:
        platform_parts(pl)

    reg = Registry(args.registry, args.plain_http, args.ca, args.user, args.password,
                   mount=args.set == "scale")
    if args.set == "small":
        images = small_set(args, args.platforms)
    elif args.set == "bench":
        images = bench_set(args, args.platforms)
    elif args.set == "scale":
        images = scale_set(args, args.platforms)
    else:
        images = lock_set(args, args.platforms)
    if args.big_layer_mb:
        images.append(big_image(args))

    def build_and_push(make):
        # Built in the worker and dropped after the push: memory stays at
        # about jobs x one image, whatever the set's size.
        img = make()
        reg.push_image(img)
        return img.summary()

    pool = concurrent.futures.ThreadPoolExecutor(max(1, args.jobs))
    try:
        results = [f.result() for f in [pool.submit(build_and_push, m) for m in images]]
    finally:
        pool.shutdown(cancel_futures=True)

    total = {}
    out = []
    for info, ub in results:
        total.update(ub)
        out.append(dict(info, ref=f"{args.registry}/{info['ref']}", bytes=sum(ub.values())))
    print(json.dumps({"images": out, "totalBytes": sum(total.values())}, indent=2))


if __name__ == "__main__":
    try:
        main()
    except SeedError as e:
        print(f"seed: error: {e}", file=sys.stderr)
        sys.exit(1)
