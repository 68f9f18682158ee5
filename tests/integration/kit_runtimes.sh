#!/usr/bin/env bash
# The install kit's node runtime config, read by the real runtimes Debian ships:
#   - a private containerd (own root, state, socket and config) pulling with
#     `ctr images pull --hosts-dir KIT/containerd/certs.d`;
#   - podman (containers/image, the library and registries.conf.d format CRI-O
#     uses) with the kit's drop-in and CA in a private $HOME/.config/containers
#     and its own storage root; no system file is read or changed.
# A small lock (images from nvcr.io and registry.k8s.io, a digest-pinned
# operand, tag-only ones, the operator-composed driver tag) is seeded into a
# stand-in upstream, mirrored, bundled and imported into a plain-HTTP site and
# an HTTPS site with a self-signed CA. For each site, both runtimes pull every
# lock image by its upstream name (nothing resolves nvcr.io here: only the
# kit's mirror config can route it) and by the site name values.yaml gives it,
# for linux/amd64, and the digests must be the lock's. The same for the kit
# that bundle create carries for the recipe's destination http://SITE, and
# import with plainHttp in --registry-config must write the http:// kit.
# Usage: kit_runtimes.sh GPUBUNDLE
GB=$1
source "$(dirname "$0")/mirror_lib.sh"
for tool in containerd ctr podman; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed (scripts/install-deps.sh installs it)"; exit 77; }
done
"$PY" -c 'import yaml' 2>/dev/null || { echo "SKIP: python3-yaml not installed"; exit 77; }
EX=$(cd "$(dirname "$0")/../../examples" && pwd)
start=$SECONDS

# A private containerd, recorded with the registries so that the trap stops it.
ctd=$W/ctd
mkdir -p "$ctd"
cat > "$ctd/config.toml" <<EOF
version = 2
root = "$ctd/root"
state = "$ctd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$ctd/c.sock"
[ttrpc]
  address = "$ctd/c.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$ctd/opt"
EOF
"$PY" - "$TOOLS" "$W/reg" "$ctd" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[1])
import harness
harness.spawn(sys.argv[2], "containerd", "node", ["containerd", "--config", sys.argv[3] + "/config.toml"], sys.argv[3] + "/containerd.log")
PYEOF
ctr_() { ctr --address "$ctd/c.sock" "$@"; }
for _ in $(seq 100); do ctr_ version >/dev/null 2>&1 && break; sleep 0.2; done
ctr_ version >/dev/null 2>&1 || { echo "SKIP: a private containerd does not start here: $(tail -n 5 "$ctd/containerd.log")"; exit 77; }

# podman with everything private: config, registries, CA, policy, storage.
podman_for() {  # podman_for NAME -> sets up $W/podman/NAME, prints its HOME
  local h=$W/podman/$1
  mkdir -p "$h/.config/containers/registries.conf.d"
  echo 'unqualified-search-registries = []' > "$h/.config/containers/registries.conf"
  echo '{"default": [{"type": "insecureAcceptAnything"}]}' > "$h/.config/containers/policy.json"
  printf '[storage]\ndriver = "vfs"\nrunroot = "%s/run"\ngraphroot = "%s/root"\n' "$h" "$h" > "$h/storage.conf"
  : > "$h/containers.conf"
  echo "$h"
}
podman_() {  # podman_ HOME ARGS...
  local h=$1
  shift
  HOME=$h CONTAINERS_CONF=$h/containers.conf CONTAINERS_STORAGE_CONF=$h/storage.conf \
    podman --root "$h/root" --runroot "$h/run" --tmpdir "$h/tmp" --storage-driver vfs --events-backend none \
    --cgroup-manager cgroupfs "$@"
}
probe=$(podman_for probe)
podman_ "$probe" images >/dev/null 2>"$W/podman-probe.err" || { echo "SKIP: podman does not run here: $(tail -n 3 "$W/podman-probe.err")"; exit 77; }

# The site: a small lock from the stand-in chart (tests/tools/chart.py), seeded upstream, mirrored, bundled.
up=$(start_registry upstream)
http_site=$(start_registry site-http)
"$PY" "$TOOLS/registry.py" start --dir "$W/reg" --name site-tls --tls > "$W/site-tls.json"
tls_site=$(jget "$W/site-tls.json" 'd["host"]')
tls_ca=$(jget "$W/site-tls.json" 'd["ca"]')
"$PY" "$TOOLS/helmrepo.py" pack --release v26.7.0 --out "$W/charts" >/dev/null
# The recipe names the plain-HTTP site as its destination (http://), so the kit
# that bundle create carries in the bundle is one for that site too.
sed -e "s|^  version: v26.7.0|  version: v26.7.0\n  chart: $W/charts/gpu-operator-v26.7.0.tgz|" \
  -e "s|^destination: .*|destination: {registry: \"http://$http_site\", prefix: gpu}|" "$EX/precompiled.yaml" > "$W/site.yaml"
"$GB" -q resolve "$W/site.yaml" -o "$W/full.lock.json"
"$PY" - "$W/full.lock.json" "$W/site.lock.json" <<'PYEOF'
import json, sys
lock = json.load(open(sys.argv[1]))
# One image per component: tags and digest pins, both source hosts, the composed driver tag.
keep, images = ["operator", "devicePlugin", "driver", "node-feature-discovery"], []
for key in keep:
    image = next(i for i in lock["images"] if key in i["components"])
    if image not in images:
        images.append(image)
lock["images"] = sorted(images, key=lambda i: i["source"])
assert {i["source"].split("/")[0] for i in lock["images"]} == {"nvcr.io", "registry.k8s.io"}, lock["images"]
json.dump(lock, open(sys.argv[2], "w"), indent=2, sort_keys=True)
PYEOF
"$PY" "$TOOLS/seed.py" --registry "$up" --plain-http --lock "$W/site.lock.json" --layer-kb 16 > /dev/null
printf 'hosts:\n  nvcr.io:\n    mirrors: ["http://%s"]\n    fallback: false\n  registry.k8s.io:\n    mirrors: ["http://%s"]\n    fallback: false\n' \
  "$up" "$up" > "$W/upstream.yaml"
"$GB" --store "$W/store" -q mirror "$W/site.lock.json" --registry-config "$W/upstream.yaml" || fail "mirror"
"$GB" keys generate --out "$W/release" >/dev/null
"$GB" --store "$W/store" -q bundle create "$W/site.lock.json" -o "$W/site.bundle" --key "$W/release.key" || fail "bundle create"
n_images=$(jget "$W/site.lock.json" 'len(d["images"])')
printf 'hosts:\n  "%s":\n    caFile: %s\n' "$tls_site" "$tls_ca" > "$W/site-tls.yaml"
"$GB" -q import "$W/site.bundle" --registry "http://$http_site/gpu" --pubkey "$W/release.pub" -o "$W/kit-http" || fail "import (HTTP)"
"$GB" -q import "$W/site.bundle" --registry "$tls_site/gpu" --registry-config "$W/site-tls.yaml" --pubkey "$W/release.pub" \
  -o "$W/kit-tls" || fail "import (HTTPS)"
cmp -s "$tls_ca" "$W/kit-tls/containerd/certs.d/$tls_site/ca.crt" || fail "the HTTPS kit does not carry the site's CA for containerd"
# A plain-HTTP site given as plainHttp in --registry-config instead of http://: the same kit.
printf 'hosts:\n  "%s":\n    plainHttp: true\n' "$http_site" > "$W/site-http.yaml"
"$GB" -q import "$W/site.bundle" --registry "$http_site/gpu" --registry-config "$W/site-http.yaml" --pubkey "$W/release.pub" \
  -o "$W/kit-http-config" || fail "import (HTTP by --registry-config)"
diff -r "$W/kit-http" "$W/kit-http-config" || fail "import with plainHttp in --registry-config wrote another kit than with http://"
# The kit bundle create carried (kit/ in the bundle), for the recipe's http:// destination.
mkdir -p "$W/unpacked"
tar -xf "$W/site.bundle" -C "$W/unpacked" kit || fail "the bundle carries no kit/"
mv "$W/unpacked/kit" "$W/kit-bundle"
for f in values.yaml containerd crio; do
  diff -r "$W/kit-http/$f" "$W/kit-bundle/$f" || fail "the bundle's kit/$f differs from the one import wrote for http://$http_site/gpu"
done
cmp -s "$tls_ca" "$W/kit-tls/crio/certs.d/$tls_site/ca.crt" || fail "the HTTPS kit does not carry the site's CA for CRI-O"
pass "site set up: $n_images images, HTTP site $http_site, HTTPS site $tls_site ($((SECONDS - start)) s)"

# refs KIT -> lines "UPSTREAM SITE DIGEST", one per values key naming a lock
# image: the site name is what the chart makes of values.yaml:
# <repository>/<image> with the digest pin, else the lock's tag, which must be
# the values version or the operator's composition of it (<version>-<osTag>,
# <branch>-<kernel>-<osTag>); NFD has a full repository and a tag.
refs() {
  "$PY" - "$W/site.lock.json" "$1/values.yaml" <<'PYEOF'
import json, sys, yaml
lock, values = json.load(open(sys.argv[1])), yaml.safe_load(open(sys.argv[2]))
seen = set()
for image in lock["images"]:
    source, digest = image["source"], image["digest"]
    tag = source.rsplit(":", 1)[1]
    named = False
    for key in image["components"]:
        node = values
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if key == "node-feature-discovery":
            site = node["image"]["repository"] + ":" + node["image"]["tag"]
        elif isinstance(node, dict) and "repository" in node:
            version = str(node["version"])
            repo = node["repository"] + "/" + node["image"]
            if version.startswith("sha256:"):
                site = repo + "@" + version
            else:
                assert tag == version or tag.startswith(version + "-"), (source, key, version)
                site = repo + ":" + tag
        else:
            continue
        named = True
        if site not in seen:
            seen.add(site)
            print(source, site, digest)
    assert named, source + ": no values key names it"
PYEOF
}

for kind in http tls bundle; do
  kit=$W/kit-$kind
  refs "$kit" > "$W/refs-$kind"
  [[ $(cut -d' ' -f1 "$W/refs-$kind" | sort -u | wc -l) == "$n_images" ]] || fail "refs: $(cat "$W/refs-$kind")"
  site=$http_site
  [[ $kind == tls ]] && site=$tls_site
  if grep -v " $site/gpu/" "$W/refs-$kind"; then fail "values.yaml names a registry other than $site/gpu"; fi

  # containerd: the kit's certs.d as the hosts dir, one namespace per name kind.
  for col in 1 2; do
    ns=kit-$kind-$col
    while read -r ref; do
      ctr_ -n "$ns" images pull --platform linux/amd64 --snapshotter native --hosts-dir "$kit/containerd/certs.d" "$ref" \
        > "$W/ctr.out" 2>&1 || fail "containerd ($kind site) could not pull $ref: $(tail -n 3 "$W/ctr.out")"
    done < <(cut -d' ' -f"$col" "$W/refs-$kind" | sort -u)
    ctr_ -n "$ns" images ls > "$W/ctr-ls"
    while read -r -a f; do
      ref=${f[$((col - 1))]}
      got=$(awk -v r="$ref" '$1 == r {print $3}' "$W/ctr-ls")
      [[ $got == "${f[2]}" ]] || fail "containerd ($kind site): $ref has digest '$got', the lock says ${f[2]}"
    done < "$W/refs-$kind"
  done
  pass "containerd pulled every image through the $kind kit by upstream and by site name, with the lock's digests"

  # podman: the kit's drop-in and CA where a node has them, under a private HOME.
  for col in 1 2; do
    h=$(podman_for "$kind-$col")
    cp "$kit/crio/registries.conf.d/99-gpubundle.conf" "$h/.config/containers/registries.conf.d/"
    [[ ! -d $kit/crio/certs.d ]] || cp -r "$kit/crio/certs.d" "$h/.config/containers/certs.d"
    mapfile -t names < <(cut -d' ' -f"$col" "$W/refs-$kind" | sort -u)
    podman_ "$h" pull -q --os linux --arch amd64 "${names[@]}" > "$W/podman.out" 2>&1 ||
      fail "podman ($kind site) could not pull ${names[*]}: $(tail -n 5 "$W/podman.out")"
    while read -r -a f; do
      ref=${f[$((col - 1))]}
      got=$(podman_ "$h" image inspect --format '{{.Digest}}' "$ref") || fail "podman ($kind site): $ref not in its store"
      [[ $got == "${f[2]}" ]] || fail "podman ($kind site): $ref has digest '$got', the lock says ${f[2]}"
    done < "$W/refs-$kind"
  done
  pass "podman pulled every image through the $kind kit by upstream and by site name, with the lock's digests"
done
echo "kit-runtimes: ok ($((SECONDS - start)) s)"
