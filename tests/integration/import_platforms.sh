#!/usr/bin/env bash
# Issue 26: a recipe that carries some platforms of a multi-arch index, imported
# into Debian's docker-registry (distribution 2.8 checks every child an index
# names). The stand-in upstream (seed.py --lock) is shaped as nvcr.io is:
# amd64+arm64 indexes whatever the lock asks, OCI ones with a buildx
# attestation per child. Three recipes (examples/conventional.yaml, the lock cut
# to one image per component: small_lock) with target.platforms [linux/amd64],
# [linux/amd64, linux/arm64] and [linux/arm64] are mirrored, bundled, verified
# and imported, the arm64 one into a site over TLS with its own CA. For every
# image of the kit's manifest.json:
#   - the site holds manifest.json's digest under the destination tag, the
#     lock's siteDigest when it has one, else the upstream digest; the bundle's
#     gpubundle.json and values.yaml's digest pins say the same;
#   - the site index lists exactly the carried platforms (and the attestations
#     of those children), each child with upstream's digest for that platform;
#     carrying every platform gives upstream's own index;
#   - containerd (ctr --hosts-dir KIT/containerd/certs.d --platform), podman
#     (the kit's CRI-O drop-in, --arch) and skopeo (--override-arch) pull it by
#     the pinned digest for the carried platform, and get that platform's layers;
#     skopeo finds no platform the recipe leaves out.
# Then `mirror --platforms all` of the amd64 recipe gives upstream's digests
# (no siteDigest), and a delta from the amd64 site's inventory carries no config
# or layer the site has, and importing it pushes no blob.
# Usage: import_platforms.sh GPUBUNDLE
GB=$1
source "$(dirname "$0")/mirror_lib.sh"
need_runtimes
"$PY" -c 'import yaml' 2>/dev/null || { echo "SKIP: python3-yaml not installed"; exit 77; }
EX=$(cd "$(dirname "$0")/../../examples" && pwd)
start=$SECONDS
start_containerd
podman_works

up=$(start_registry upstream)
site_amd64=$(start_registry site-amd64)
site_both=$(start_registry site-both)
"$PY" "$TOOLS/registry.py" start --dir "$W/reg" --name site-arm64 --tls > "$W/site-arm64.json"
site_arm64=$(jget "$W/site-arm64.json" 'd["host"]')
printf 'hosts:\n  "%s":\n    caFile: %s\n' "$site_arm64" "$(jget "$W/site-arm64.json" 'd["ca"]')" > "$W/site-arm64.yaml"
"$PY" "$TOOLS/helmrepo.py" pack --release v26.7.0 --out "$W/charts" >/dev/null
upstream_config "$W/upstream.yaml" "$up"
"$GB" keys generate --out "$W/release" >/dev/null

# recipe NAME PLATFORMS: $W/NAME.yaml and its lock cut to a few images, $W/NAME.lock.json.
recipe() {
  sed -e "s|^  version: v26.7.0|  version: v26.7.0\n  chart: $W/charts/gpu-operator-v26.7.0.tgz|" \
    -e "s|^metadata: .*|metadata: {name: platforms-$1}|" \
    -e "s|^  platforms: .*|  platforms: [$2]|" "$EX/conventional.yaml" > "$W/$1.yaml"
  grep -q "^  platforms: \[$2\]$" "$W/$1.yaml" || fail "$1.yaml: the platforms line was not replaced"
  "$GB" -q resolve "$W/$1.yaml" -o "$W/$1.full.lock.json" || fail "resolve $1"
  small_lock "$W/$1.full.lock.json" "$W/$1.lock.json"
}
recipe amd64 "linux/amd64"
recipe both "linux/amd64, linux/arm64"
recipe arm64 "linux/arm64"
cp "$W/amd64.lock.json" "$W/all.lock.json"  # for --platforms all, below
# One upstream for the three: the same images, so one seeding (the shapes
# alternate by position in the lock).
for n in both arm64; do
  [[ $(jget "$W/$n.lock.json" '[i["source"] for i in d["images"]]') == "$(jget "$W/amd64.lock.json" '[i["source"] for i in d["images"]]')" ]] ||
    fail "the $n recipe resolves to other images than the amd64 one"
done
"$PY" "$TOOLS/seed.py" --registry "$up" --plain-http --lock "$W/amd64.lock.json" --layer-kb 8 > "$W/seed.json"
[[ $(jget "$W/seed.json" 'sorted({i["mediaType"].rsplit(".", 2)[1] for i in d["images"]})') == "['index', 'list']" ]] ||
  fail "the stand-in should hold both a Docker list and an OCI index: $(jget "$W/seed.json" '[i["mediaType"] for i in d["images"]]')"
pass "upstream $up: $(jget "$W/seed.json" 'len(d["images"])') amd64+arm64 images ($((SECONDS - start)) s)"

# site_args HOST: skopeo's TLS arguments for a site in ${sargs[@]}: the CA the
# kit carries for the TLS one.
site_args() {
  if [[ $1 == "$site_arm64" ]]; then sargs=(--cert-dir "$W/kit-arm64/crio/certs.d/$1"); else sargs=(--tls-verify=false); fi
}

# ship NAME SITE REGISTRY [MIRROR_ARGS...]: mirror, bundle create, bundle
# verify, import into REGISTRY (kit in $W/kit-NAME).
ship() {
  local n=$1 site=$2 registry=$3
  shift 3
  local reg_args=()
  [[ $site != "$site_arm64" ]] || reg_args=(--registry-config "$W/site-arm64.yaml")
  "$GB" --store "$W/store-$n" -q mirror "$W/$n.lock.json" --registry-config "$W/upstream.yaml" "$@" || fail "mirror ($n)"
  "$GB" --store "$W/store-$n" -q bundle create "$W/$n.lock.json" -o "$W/$n.bundle" --key "$W/release.key" ||
    fail "bundle create ($n)"
  "$GB" -q bundle verify "$W/$n.bundle" --pubkey "$W/release.pub" || fail "bundle verify ($n)"
  "$GB" --json import "$W/$n.bundle" --registry "$registry" "${reg_args[@]}" --pubkey "$W/release.pub" -o "$W/kit-$n" \
    > "$W/import-$n.json" 2> "$W/import-$n.err" || { cat "$W/import-$n.err" >&2; fail "import ($n) into $registry"; }
  tar -xOf "$W/$n.bundle" gpubundle.json > "$W/$n.gpubundle.json"
}

# check NAME SITE: the site against upstream, the lock, the kit and the bundle
# manifest (above). Writes $W/pulls-NAME: "SITE_REF@DIGEST PLATFORM LAYERS...",
# one line per image and carried platform, LAYERS being upstream's for it.
check() {
  site_args "$2"
  "$PY" - "$W" "$1" "$up" "$2" "${sargs[@]}" <<'PYEOF' || fail "$1: the site does not hold what the lock, kit and bundle say"
import hashlib, json, subprocess, sys, yaml
W, name, up, site, *site_args = sys.argv[1:]
lock = json.load(open(f"{W}/{name}.lock.json"))
kit = json.load(open(f"{W}/kit-{name}/manifest.json"))
bundle = {i["ref"]: i for i in json.load(open(f"{W}/{name}.gpubundle.json"))["images"]}
values = yaml.safe_load(open(f"{W}/kit-{name}/values.yaml"))
problems = []
def raw(ref, args):
    r = subprocess.run(["skopeo", "inspect", "--raw", *args, "docker://" + ref], capture_output=True)
    if r.returncode:
        return None, None
    return "sha256:" + hashlib.sha256(r.stdout).hexdigest(), json.loads(r.stdout)
def plat(e):
    p = e.get("platform") or {}
    return "/".join(x for x in (p.get("os"), p.get("architecture"), p.get("variant")) if x)
def attests(e):
    a = e.get("annotations") or {}
    return a.get("vnd.docker.reference.digest") if a.get("vnd.docker.reference.type") == "attestation-manifest" else None
locked = {i["source"]: i for i in lock["images"]}
assert sorted(locked) == sorted(i["source"] for i in kit["images"]), "manifest.json and the lock list other images"
pulls, absent = [], []
for im in kit["images"]:
    src, dest = im["source"], im["destination"]
    li = locked[src]
    upstream, site_digest = li["digest"], li.get("siteDigest", li["digest"])
    carried = li["platforms"]
    if im["digest"] != site_digest:
        problems.append(f"{src}: manifest.json digest {im['digest']}, the lock's site digest {site_digest}")
    if im.get("upstreamDigest", im["digest"]) != upstream:
        problems.append(f"{src}: manifest.json upstreamDigest {im.get('upstreamDigest')}, the lock's digest {upstream}")
    b = bundle.get(src)
    if b is None or b["digest"] != site_digest or b.get("upstreamDigest", b["digest"]) != upstream:
        problems.append(f"{src}: gpubundle.json says {b and (b['digest'], b.get('upstreamDigest'))}, "
                        f"the lock {site_digest} (upstream {upstream})")
    for key in li["components"]:  # values.yaml's digest pins name what the site holds
        node = values
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and str(node.get("version", "")).startswith("sha256:") and node["version"] != im["digest"]:
            problems.append(f"{src}: values.yaml {key}.version pins {node['version']}, the site holds {im['digest']}")
    path = src.split("/", 1)[1]
    up_digest, up_m = raw(f"{up}/{path}", ["--tls-verify=false"])
    site_got, site_m = raw(dest, site_args)
    if up_digest != upstream:
        problems.append(f"{src}: upstream holds {up_digest}, the lock's digest is {upstream}")
        continue
    if site_got != im["digest"]:
        problems.append(f"{dest}: the site holds {site_got}, manifest.json says {im['digest']}")
        continue
    repo = dest.rsplit(":", 1)[0]
    if "manifests" not in up_m:  # a single manifest: the same bytes
        if site_got != upstream:
            problems.append(f"{dest}: a single manifest changed digest at the site ({upstream} -> {site_got})")
        layers = [l["digest"] for l in up_m["layers"]]
        pulls.append(f"{repo}@{im['digest']} {carried[0]} {' '.join(layers)}")
        continue
    up_children = {plat(e): e for e in up_m["manifests"] if not attests(e)}
    if not set(carried) <= set(up_children):
        problems.append(f"{src}: upstream has {sorted(up_children)}, the lock carries {carried}")
        continue
    kept = {up_children[p]["digest"] for p in carried}
    want = [e for e in up_m["manifests"] if e["digest"] in kept or attests(e) in kept]
    got = site_m.get("manifests")
    if site_m.get("mediaType") != up_m.get("mediaType"):
        problems.append(f"{dest}: media type {site_m.get('mediaType')}, upstream's is {up_m.get('mediaType')}")
    key = lambda e: json.dumps(e, sort_keys=True)
    if sorted(map(key, got or [])) != sorted(map(key, want)):
        problems.append(f"{dest}: the site index lists {[(plat(e), e['digest'][:19]) for e in got or []]}, "
                        f"want the carried platforms {carried} and their attestations: {[(plat(e), e['digest'][:19]) for e in want]}")
    if set(carried) >= set(up_children):
        if site_got != upstream:
            problems.append(f"{dest}: every platform is carried, yet the site holds {site_got}, not upstream's {upstream}")
    elif site_got == upstream or "siteDigest" not in li:
        problems.append(f"{dest}: {carried} of {sorted(up_children)} carried, yet the site index is upstream's {upstream} "
                        f"(lock siteDigest: {li.get('siteDigest')})")
    absent += [f"{repo}@{im['digest']} {p}" for p in sorted(set(up_children) - set(carried))]
    for p in carried:
        child = up_children[p]["digest"]
        c_digest, c_m = raw(f"{repo}@{child}", site_args)
        if c_digest != child:
            problems.append(f"{dest}: the site does not hold the {p} child {child}")
            continue
        pulls.append(f"{repo}@{im['digest']} {p} {' '.join(l['digest'] for l in c_m['layers'])}")
open(f"{W}/pulls-{name}", "w").write("".join(l + "\n" for l in pulls))
open(f"{W}/absent-{name}", "w").write("".join(l + "\n" for l in absent))
for p in problems:
    print("  " + p, file=sys.stderr)
sys.exit(1 if problems else 0)
PYEOF
}

# pull NAME SITE: containerd, podman and skopeo pull every line of
# $W/pulls-NAME through the kit, by digest, for its platform.
pull() {
  local n=$1 kit=$W/kit-$1 ref p layers h got k=0
  site_args "$2"
  # shellcheck disable=SC2086 # $layers: digests, one word each
  while read -r ref p layers; do
    ctr_ -n "$n" images pull --platform "$p" --snapshotter native --hosts-dir "$kit/containerd/certs.d" "$ref" \
      > "$W/ctr.out" 2>&1 || fail "containerd ($n) could not pull $ref for $p: $(tail -n 3 "$W/ctr.out")"
    # (stderr: ctr ls logs that it cannot size an image without the host's platform)
    got=$(ctr_ -n "$n" images ls 2>/dev/null | awk -v r="$ref" '$1 == r {print $3}')
    [[ $got == "${ref#*@}" ]] || fail "containerd ($n): $ref has digest '$got'"
    ctr_ -n "$n" content ls > "$W/ctr-content"
    for l in $layers; do
      awk -v l="$l" '$1 == l {found = 1} END {exit !found}' "$W/ctr-content" || fail "containerd ($n) pulled $ref for $p without its layer $l"
    done
    k=$((k + 1))
    h=$(podman_kit "$n$k" "$kit")  # one store per pull; podman wants its runroot under 50 characters
    podman_ "$h" pull -q --os linux --arch "${p#linux/}" "$ref" > "$W/podman.out" 2>&1 ||
      fail "podman ($n) could not pull $ref for $p: $(tail -n 5 "$W/podman.out")"
    got=$(podman_ "$h" image inspect --format '{{.Digest}} {{.Architecture}}' "$ref") || fail "podman ($n): $ref not in its store"
    [[ $got == "${ref#*@} ${p#linux/}" ]] || fail "podman ($n): $ref is '$got', want ${ref#*@} ${p#linux/}"
    skopeo inspect "${sargs[@]}" --override-arch "${p#linux/}" "docker://$ref" > "$W/skopeo.json" ||
      fail "skopeo ($n) could not inspect $ref for $p"
    [[ $(jget "$W/skopeo.json" 'd["Architecture"] + " " + " ".join(d["Layers"])') == "${p#linux/} $layers" ]] ||
      fail "skopeo ($n): $ref for $p has $(jget "$W/skopeo.json" 'd["Architecture"], d["Layers"]'), want upstream's $layers"
  done < "$W/pulls-$n"
  # A platform the recipe leaves out is not there.
  while read -r ref p; do
    if skopeo inspect "${sargs[@]}" --override-arch "${p#linux/}" "docker://$ref" > /dev/null 2>&1; then
      fail "skopeo ($n): $ref resolves $p, which the recipe leaves out"
    fi
  done < "$W/absent-$n"
}

declare -A sites=([amd64]=$site_amd64 [both]=$site_both [arm64]=$site_arm64)
for n in amd64 both arm64; do
  site=${sites[$n]}
  registry=http://$site/gpu
  [[ $n != arm64 ]] || registry=$site/gpu
  ship "$n" "$site" "$registry"
  pass "$n: mirrored, bundled, verified and imported into $registry ($((SECONDS - start)) s)"
  check "$n" "$site"
  pass "$n: the site holds the kit's digests; its indexes list exactly the carried platforms with upstream's children"
  pull "$n" "$site"
  pass "$n: containerd, podman and skopeo pulled $(wc -l < "$W/pulls-$n") image platform(s) by digest through the kit ($((SECONDS - start)) s)"
done

# --platforms all: every manifest of every index travels, so the site holds upstream's digests.
ship all "$site_amd64" "http://$site_amd64/all" --platforms all
[[ $(jget "$W/all.lock.json" '[i["source"] for i in d["images"] if "siteDigest" in i]') == "[]" ]] ||
  fail "--platforms all: the lock has siteDigest for $(jget "$W/all.lock.json" '[i["source"] for i in d["images"] if "siteDigest" in i]')"
"$PY" - "$W" "$up" <<'PYEOF' || fail "--platforms all: the site does not hold upstream's digests"
import hashlib, json, subprocess, sys
W, up = sys.argv[1:]
bad = []
for im in json.load(open(f"{W}/kit-all/manifest.json"))["images"]:
    got = []
    for ref in (im["destination"], up + "/" + im["source"].split("/", 1)[1]):
        out = subprocess.run(["skopeo", "inspect", "--raw", "--tls-verify=false", "docker://" + ref], capture_output=True).stdout
        got.append("sha256:" + hashlib.sha256(out).hexdigest())
    if not (got[0] == got[1] == im["digest"] == im.get("upstreamDigest", im["digest"])):
        bad.append(f"{im['source']}: site {got[0]}, upstream {got[1]}, manifest.json {im['digest']} / {im.get('upstreamDigest')}")
print("".join(f"  {b}\n" for b in bad), file=sys.stderr, end="")
sys.exit(1 if bad else 0)
PYEOF
pass "--platforms all: the site holds upstream's digests, and the lock has no siteDigest"

# A delta from the amd64 site's inventory: no config or layer it has travels,
# and importing it pushes no blob.
"$GB" -q inventory --registry "http://$site_amd64/gpu" --bundle "$W/amd64.bundle" -o "$W/inv.json" || fail "inventory"
[[ $(jget "$W/inv.json" 'len(d["blobs"]) > 0') == True ]] || fail "empty inventory"
"$GB" --store "$W/store-amd64" -q bundle create "$W/amd64.lock.json" -o "$W/delta.bundle" --key "$W/release.key" --since "$W/inv.json" ||
  fail "bundle create --since"
"$GB" -q bundle verify "$W/delta.bundle" --pubkey "$W/release.pub" || fail "bundle verify (delta)"
tar -xOf "$W/delta.bundle" gpubundle.json > "$W/delta.gpubundle.json"
"$PY" - "$W" "$up" "$W/reg/site-amd64/storage/docker/registry/v2/blobs/sha256" <<'PYEOF' || fail "the delta carries what the site has"
import json, os, subprocess, sys
W, up, storage = sys.argv[1:]
def raw(ref):
    out = subprocess.run(["skopeo", "inspect", "--raw", "--tls-verify=false", "docker://" + ref], capture_output=True, check=True).stdout
    return json.loads(out)
# Every config and layer upstream has for these images, any platform, attestations too.
blobs = set()
for im in json.load(open(f"{W}/amd64.lock.json"))["images"]:
    ref = up + "/" + im["source"].split("/", 1)[1]
    top = raw(ref)
    for m in [raw(ref.rsplit(":", 1)[0] + "@" + e["digest"]) for e in top["manifests"]] if "manifests" in top else [top]:
        blobs |= {m["config"]["digest"], *(l["digest"] for l in m["layers"])}
has = lambda d: os.path.exists(os.path.join(storage, d[7:9], d[7:], "data"))
carried = {f["blob"] for f in json.load(open(f"{W}/delta.gpubundle.json"))["files"] if f.get("blob")}
bad = sorted(d for d in carried & blobs if has(d))
print("".join(f"  {d}: a config or layer the site has\n" for d in bad), file=sys.stderr, end="")
sys.exit(1 if bad else 0)
PYEOF
"$GB" --json import "$W/delta.bundle" --registry "http://$site_amd64/gpu" --pubkey "$W/release.pub" --no-kit > "$W/import-delta.json" ||
  fail "delta import"
[[ $(jget "$W/import-delta.json" 'd["blobsPushed"] + d["blobsMounted"]') == 0 ]] ||
  { cat "$W/import-delta.json"; fail "the delta import pushed blobs the site has"; }
pass "delta from the site's inventory: no config or layer the site has, and its import pushes no blob"
echo "import-platforms: ok ($((SECONDS - start)) s)"
