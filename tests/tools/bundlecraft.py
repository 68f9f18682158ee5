#!/usr/bin/env python3
"""Crafts hostile variants of a real gpubundle bundle (tests/integration/hostile_bundle.sh).

    bundlecraft.py mutate --key KEY.key --case CASE --out DIR VOLUME...

Reads every given volume, edits the signed manifest (the same edit in every
volume, as they all carry the whole manifest) and the payload as CASE says,
re-signs the manifest with KEY (an unencrypted Ed25519 PEM from `gpubundle
keys generate`, so the signature itself stays valid and only the reader's
own checks can refuse the result), and writes DIR/<volume name>.

    bundlecraft.py cases    lists the cases.

Standard library plus python3-cryptography (Debian) for Ed25519.
"""

import argparse
import base64
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile

from cryptography.hazmat.primitives.serialization import load_pem_private_key

OCI_INDEX = "application/vnd.oci.image.index.v1+json"


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def blob_files(m):
    return [f for f in m["files"] if f["blob"] and f["part"] is None]


def set_part(value):
    def edit(m, payload):
        blob_files(m)[0]["part"] = value
    return edit


def huge_count(m, payload):
    m["volume"]["count"] = 2**31 - 1


def format_version(m, payload):
    m["formatVersion"] = 2**40


def unknown_encoding(m, payload):
    blob_files(m)[0]["encoding"] = "gzip"


def lock_schema(m, payload):
    m["lock"]["schemaVersion"] = 99


def lock_array(m, payload):
    m["lock"] = [m["lock"]]


def chart_dotdot(m, payload):
    m["lock"]["chart"]["name"] = "../../../tmp/evil"


def path_dotdot(m, payload):
    f = blob_files(m)[0]
    payload[f["path"]] = ("../../evil", payload[f["path"]][1])
    f["path"] = "../../evil"


def deep_index(depth):
    """Wraps the first image in `depth` nested indexes, each a blob in the bundle."""
    def edit(m, payload):
        img = m["images"][0]
        child, child_type, child_size = img["digest"], img["mediaType"], None
        for f in m["files"]:
            if f["blob"] == child:
                child_size = f["size"]  # close enough: readers never check an index child's size here
        for _ in range(depth):
            body = json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX,
                               "manifests": [{"mediaType": child_type, "digest": child, "size": child_size or 1}]},
                              separators=(",", ":")).encode()
            digest = "sha256:" + sha256(body)
            path = "oci/blobs/sha256/" + sha256(body)
            payload[path] = (path, body)
            m["files"].append({"path": path, "size": len(body), "sha256": sha256(body), "volume": 1,
                               "blob": digest, "encoding": None, "part": None})
            img["blobs"].append(digest)
            child, child_type, child_size = digest, OCI_INDEX, len(body)
        img["digest"], img["mediaType"] = child, OCI_INDEX
        m["files"].sort(key=lambda f: f["path"])
    return edit


def zstd_bomb(declare_size):
    """Replaces the first blob by a zstd frame of 1 GiB of zeros (about 33 KB stored)."""
    def edit(m, payload):
        with tempfile.TemporaryDirectory() as d:
            zeros = os.path.join(d, "zeros")
            with open(zeros, "wb") as f:
                f.truncate(1 << 30)
            if declare_size:  # from a file zstd knows the size and writes it into the frame
                subprocess.run(["zstd", "-q", "-19", zeros, "-o", zeros + ".zst"], check=True)
                stored = open(zeros + ".zst", "rb").read()
            else:  # from a pipe it cannot
                with open(zeros, "rb") as src:
                    stored = subprocess.run(["zstd", "-q", "-19", "-c"], stdin=src, stdout=subprocess.PIPE, check=True).stdout
        h = hashlib.sha256()
        block = bytes(1 << 20)
        for _ in range(1024):
            h.update(block)
        f = blob_files(m)[0]
        old = f["path"]
        f["path"] = "oci/blobs/sha256/" + h.hexdigest() + ".zst"
        f["blob"] = "sha256:" + h.hexdigest()
        f["encoding"] = "zstd"
        f["size"], f["sha256"] = len(stored), sha256(stored)
        payload[old] = (f["path"], stored)
        m["files"].sort(key=lambda x: x["path"])
    return edit


def split_files(m):
    parts = {}
    for f in m["files"]:
        if f["part"] is not None:
            parts.setdefault(f["blob"] or f["path"].rsplit(".part", 1)[0], []).append(f)
    if not parts:
        sys.exit("error: no blob in parts: make the bundle with a smaller --split")
    return sorted(parts.values(), key=len)[-1]


def swap_parts(m, payload):
    """Parts 1 and 2 of a blob swap numbers (and names): each part still hashes right."""
    fs = sorted(split_files(m), key=lambda f: f["part"][0])
    a, b = fs[0], fs[1]
    a["part"][0], b["part"][0] = b["part"][0], a["part"][0]
    pa, pb = a["path"], b["path"]
    a["path"], b["path"] = pb, pa
    payload[pa], payload[pb] = (pb, payload[pa][1]), (pa, payload[pb][1])
    m["files"].sort(key=lambda f: f["path"])


def duplicate_part(m, payload):
    """Part 1's entry listed again in place of part 2's."""
    fs = sorted(split_files(m), key=lambda f: f["part"][0])
    i = m["files"].index(fs[1])
    m["files"][i] = json.loads(json.dumps(fs[0]))


CASES = {
    "part-zero": set_part([0, 1]),
    "part-negative": set_part([-1, 1]),
    "part-past-count": set_part([5, 1]),
    "huge-volume-count": huge_count,
    "format-version-2^40": format_version,
    "unknown-encoding": unknown_encoding,
    "lock-schema-99": lock_schema,
    "lock-not-object": lock_array,
    "chart-name-dotdot": chart_dotdot,
    "path-dotdot": path_dotdot,
    "deep-index": deep_index(13000),
    "zstd-bomb": zstd_bomb(True),
    "zstd-bomb-undeclared": zstd_bomb(False),
    "swap-parts": swap_parts,
    "duplicate-part": duplicate_part,
}


def sign(key, data, key_id):
    sig = key.sign(data)
    doc = {"algorithm": "ed25519", "format": "gpubundle-signature", "keyId": key_id,
           "signature": base64.b64encode(sig).decode(), "version": 1}
    return (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode()


def read_volume(path):
    with tarfile.open(path, "r:") as t:
        members = t.getmembers()
        data = [(mem.name, t.extractfile(mem).read()) for mem in members]
    names = [n for n, _ in data[:2]]
    if names != ["gpubundle.json", "gpubundle.json.sig"]:
        sys.exit(f"error: {path}: not a gpubundle volume")
    return data


def add(t, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    t.addfile(info, io.BytesIO(data))


def mutate(args):
    key = load_pem_private_key(open(args.key, "rb").read(), password=None)
    edit = CASES[args.case]
    os.makedirs(args.out, exist_ok=True)
    manifest = None
    volumes = []
    for path in args.volumes:
        data = read_volume(path)
        m = json.loads(data[0][1])
        key_id = json.loads(data[1][1])["keyId"]
        volumes.append((path, m["volume"]["index"], data, key_id))
        if manifest is None:
            manifest = m
    # payload: original entry name -> (new name, bytes); added entries go to volume 1.
    payload = {}
    for _, _, data, _ in volumes:
        for name, body in data[2:]:
            payload[name] = (name, body)
    before = set(payload)
    edit(manifest, payload)
    added = set(payload) - before
    for path, index, data, key_id in volumes:
        m = json.loads(json.dumps(manifest))
        m["volume"]["index"] = index
        text = (json.dumps(m, indent=1, sort_keys=True) + "\n").encode()
        out = os.path.join(args.out, os.path.basename(path))
        with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
            add(t, "gpubundle.json", text)
            add(t, "gpubundle.json.sig", sign(key, text, key_id))
            for name, _ in data[2:]:
                new_name, body = payload[name]
                add(t, new_name, body)
            if index == 1:
                for name in sorted(added):
                    add(t, payload[name][0], payload[name][1])
        print(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("mutate")
    m.add_argument("--key", required=True)
    m.add_argument("--case", required=True, choices=sorted(CASES))
    m.add_argument("--out", required=True)
    m.add_argument("volumes", nargs="+")
    sub.add_parser("cases")
    args = ap.parse_args()
    if args.cmd == "cases":
        print("\n".join(sorted(CASES)))
    else:
        mutate(args)


if __name__ == "__main__":
    main()
