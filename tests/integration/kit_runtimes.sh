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
# for linux/amd64, and the digests must be what the lock says the site holds
# (siteDigest: the stand-in's indexes are amd64+arm64). The same for the kit
# that bundle create carries for the recipe's destination http://SITE, and
# import with plainHttp in --registry-config must write the http:// kit.
# Usage: kit_runtimes.sh GPUBUNDLE
GB=$1
source "$(dirname "$0")/mirror_lib.sh"
need_runtimes
"$PY" -c 'import yaml' 2>/dev/null || { echo "SKIP: python3-yaml not installed"; exit 77; }
EX=$(cd "$(dirname "$0")/../../examples" && pwd)
start=$SECONDS

start_containerd
podman_works

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
small_lock "$W/full.lock.json" "$W/site.lock.json"
"$PY" "$TOOLS/seed.py" --registry "$up" --plain-http --lock "$W/site.lock.json" --layer-kb 16 > /dev/null
upstream_config "$W/upstream.yaml" "$up"
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
    source, digest = image["source"], image.get("siteDigest", image["digest"])
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
      [[ $got == "${f[2]}" ]] || fail "containerd ($kind site): $ref has digest '$got', the lock's site digest is ${f[2]}"
    done < "$W/refs-$kind"
  done
  pass "containerd pulled every image through the $kind kit by upstream and by site name, with the lock's site digests"

  # podman: the kit's drop-in and CA where a node has them, under a private HOME.
  for col in 1 2; do
    h=$(podman_kit "$kind-$col" "$kit")
    mapfile -t names < <(cut -d' ' -f"$col" "$W/refs-$kind" | sort -u)
    podman_ "$h" pull -q --os linux --arch amd64 "${names[@]}" > "$W/podman.out" 2>&1 ||
      fail "podman ($kind site) could not pull ${names[*]}: $(tail -n 5 "$W/podman.out")"
    while read -r -a f; do
      ref=${f[$((col - 1))]}
      got=$(podman_ "$h" image inspect --format '{{.Digest}}' "$ref") || fail "podman ($kind site): $ref not in its store"
      [[ $got == "${f[2]}" ]] || fail "podman ($kind site): $ref has digest '$got', the lock's site digest is ${f[2]}"
    done < "$W/refs-$kind"
  done
  pass "podman pulled every image through the $kind kit by upstream and by site name, with the lock's site digests"
done
echo "kit-runtimes: ok ($((SECONDS - start)) s)"
