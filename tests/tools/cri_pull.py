#!/usr/bin/env python3
"""Pulls an image through containerd's CRI plugin, as the kubelet does: the
CRI ImageService's PullImage over gRPC (k8s.io/cri-api runtime.v1), then
ImageStatus for what it stored. The plugin resolves the registry through its
registry.config_path (the kit's hosts.toml). Debian 12 has no crictl, so the
two requests are encoded here by hand (protobuf wire format).

  cri_pull.py SOCKET REF [--user USER:PASSWORD]
prints the image id and its repo digests as JSON; exits 1 with the error."""
import argparse
import json
import sys

import grpc

from kube_api import pb_fields  # the protobuf reader the API stand-in already has


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def field(number, payload):  # length-delimited (wire type 2)
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("ref")
    ap.add_argument("--user")
    a = ap.parse_args()
    channel = grpc.insecure_channel("unix://" + a.socket)
    call = lambda method: channel.unary_unary(f"/runtime.v1.ImageService/{method}", request_serializer=None,
                                              response_deserializer=None)
    spec = field(1, field(1, a.ref.encode()))  # PullImageRequest.image = ImageSpec{image}
    if a.user:
        user, password = a.user.split(":", 1)
        spec += field(2, field(1, user.encode()) + field(2, password.encode()))  # AuthConfig{username, password}
    try:
        pulled = call("PullImage")(spec, timeout=120)
        status = call("ImageStatus")(field(1, field(1, a.ref.encode())), timeout=30)
    except grpc.RpcError as e:
        print(f"cri_pull: {a.ref}: {e.code().name}: {e.details()}", file=sys.stderr)
        return 1
    image_ref = dict(pb_fields(pulled)).get(1, b"").decode()
    image = dict(pb_fields(status)).get(1, b"")  # ImageStatusResponse.image
    parts = pb_fields(image)
    print(json.dumps({"imageRef": image_ref, "id": dict(parts).get(1, b"").decode(),
                      "repoDigests": [v.decode() for n, v in parts if n == 3]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
