#!/usr/bin/env bash
# Self-test of the real-peer harness in tests/tools: registries in every auth
# mode, seeded images checked with skopeo, the Helm repo, the fault proxy.
# Usage: tools.sh   (the Helm repo serves the stand-in chart from chart.py)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tools=$here/../tools

# Debian's interpreter: a pyenv shim in PATH costs ~0.5 s of CPU per call.
py=/usr/bin/python3
[[ -x $py ]] || py=$(command -v python3 || echo python3)
for t in docker-registry skopeo openssl htpasswd curl "$py"; do
  if ! command -v "$t" >/dev/null; then
    echo "SKIP: $t is not installed (scripts/install-deps.sh installs it)"
    exit 77
  fi
done

work=$(mktemp -d)
cleanup() {
  "$py" "$tools/helmrepo.py" stop --dir "$work/charts" || true
  "$py" "$tools/registry.py" stop --dir "$work/reg" || true # registries, token server, fault proxy
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# field FILE KEY: a top-level field of a JSON file
field() { "$py" -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print("" if v is None else v)' "$1" "$2"; }

start=$SECONDS
mkdir -p "$work/reg" "$work/charts"
# Start the four in parallel; each start waits for its own /v2/.
pids=()
"$py" "$tools/registry.py" start --dir "$work/reg" --name plain >/dev/null & pids+=($!)
"$py" "$tools/registry.py" start --dir "$work/reg" --name tls --tls >/dev/null & pids+=($!)
"$py" "$tools/registry.py" start --dir "$work/reg" --name basic --htpasswd alice:s3cret >/dev/null & pids+=($!)
"$py" "$tools/registry.py" start --dir "$work/reg" --name token --token bob:t0ken --tls >/dev/null & pids+=($!)
for p in "${pids[@]}"; do wait "$p" || fail "registry.py start failed"; done
echo "4 registries up after $((SECONDS - start)) s"

# Per registry: seed.py and skopeo arguments, from DIR/NAME.json (one python each).
declare -A seed_args skopeo_args creds
for mode in plain tls basic token; do
  j=$work/reg/$mode.json
  [[ -f $j ]] || fail "registry.py did not write $j"
  { read -r host; read -r ca; read -r certs; read -r user; read -r pass; } < <("$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("host", "ca", "cert_dir", "username", "password"):
    print("" if d[k] is None else d[k])' "$j")
  seed_args[$mode]="--registry $host --set small --seed 7"
  if [[ -z $ca ]]; then
    seed_args[$mode]+=" --plain-http"
    skopeo_args[$mode]="--tls-verify=false"
  else
    seed_args[$mode]+=" --ca $ca"
    skopeo_args[$mode]="--cert-dir $certs"
  fi
  creds[$mode]=${user:+$user:$pass}
done

# Seed all four at once; where auth is on, a wrong password must fail
# (htpasswd: the registry refuses it; token mode: the token server does).
pids=()
bad=()
for mode in plain tls basic token; do
  # shellcheck disable=SC2206 # the stored args are space-free paths and words
  args=(${seed_args[$mode]})
  if [[ -n ${creds[$mode]} ]]; then
    "$py" "$tools/seed.py" "${args[@]}" --user "${creds[$mode]%%:*}" --password wrong >/dev/null 2>&1 & bad+=("$mode:$!")
    args+=(--user "${creds[$mode]%%:*}" --password "${creds[$mode]#*:}")
  fi
  "$py" "$tools/seed.py" "${args[@]}" >"$work/$mode.seed.json" & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "seed.py failed"; done
for mp in "${bad[@]}"; do
  if wait "${mp#*:}"; then fail "${mp%%:*}: seed.py pushed with a wrong password"; fi
done
echo "seeded after $((SECONDS - start)) s"

# Check one registry's seed output against plain's and against skopeo:
# same images and digests for the same seed, every shape present, and the
# bytes skopeo reads hash to the printed digest with the printed mediaType.
# skopeo reads every image of plain and the index-shaped ones elsewhere.
# shellcheck disable=SC2016 # python source
check='
import hashlib, json, subprocess, sys
mode, plain_file, mine_file, creds = sys.argv[1:5]
skopeo_args = sys.argv[5:] + (["--creds", creds] if creds else [])
plain = json.load(open(plain_file))["images"]
mine = json.load(open(mine_file))["images"]
strip = lambda imgs: [(i["ref"].split("/", 1)[1], i["digest"], i["bytes"]) for i in imgs]
if len(mine) < 6 or strip(plain) != strip(mine):
    sys.exit(f"{mode}: seed.py output differs from the plain registry for the same seed")
types = {i["mediaType"] for i in mine}
for want in ("application/vnd.docker.distribution.manifest.list.v2+json", "application/vnd.oci.image.index.v1+json",
             "application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.v2+json"):
    if want not in types:
        sys.exit(f"{mode}: no image of type {want} in the small set")
n = 0
for i in mine:
    ref, digest, media = i["ref"], i["digest"], i["mediaType"]
    if mode != "plain" and not media.endswith(("list.v2+json", "index.v1+json")):
        continue
    r = subprocess.run(["skopeo", "inspect", "--raw", *skopeo_args, "docker://" + ref], capture_output=True)
    if r.returncode != 0:
        sys.exit(f"{mode}: skopeo cannot read {ref}: {r.stderr.decode().strip()}")
    got = "sha256:" + hashlib.sha256(r.stdout).hexdigest()
    if got != digest:
        sys.exit(f"{mode}: {ref} is {got}, seed.py said {digest}")
    inner = json.loads(r.stdout).get("mediaType")
    if inner != media:
        sys.exit(f"{mode}: {ref} has mediaType {inner}, seed.py said {media}")
    n += 1
print(f"{mode}: {n} images read back by skopeo with the digests and media types seed.py printed")
'
for mode in plain tls basic token; do
  # shellcheck disable=SC2086 # space-free words
  "$py" -c "$check" "$mode" "$work/plain.seed.json" "$work/$mode.seed.json" "${creds[$mode]}" ${skopeo_args[$mode]} ||
    fail "$mode: seeded images do not read back"
done

# Anonymous access is refused where auth is on.
basic_host=$(field "$work/reg/basic.json" host)
if skopeo inspect --raw --cert-dir "$work/reg/basic/certs.d" "docker://$basic_host/test/oci-multi:1.0" >/dev/null 2>&1; then
  fail "basic: anonymous skopeo read succeeded"
fi
# A Docker list stays a Docker list, children included (skopeo resolves the amd64 child).
plain_host=$(field "$work/reg/plain.json" host)
skopeo inspect --raw --tls-verify=false "docker://$plain_host/test/docker-multi:1.0" |
  "$py" -c 'import json,sys; d=json.load(sys.stdin); assert d["mediaType"].endswith("manifest.list.v2+json"); assert all(m["mediaType"].endswith("manifest.v2+json") for m in d["manifests"])' ||
  fail "plain: test/docker-multi:1.0 is not a Docker list of schema2 manifests"
[[ $(skopeo inspect --tls-verify=false --override-arch arm64 "docker://$plain_host/test/docker-multi:1.0" |
  "$py" -c 'import json,sys; print(json.load(sys.stdin)["Architecture"])') == arm64 ]] || fail "plain: arm64 child has the wrong config"

# --lock: the stand-in upstream is shaped as nvcr.io is, not as the lock asks:
# a linux/amd64 lock still meets amd64+arm64 indexes (OCI ones with a buildx
# attestation per child), and a tag ending in -arm64 is one arm64 manifest.
cat >"$work/standin.lock.json" <<'EOF'
{"target": {"platforms": ["linux/amd64"]}, "images": [
  {"source": "nvcr.io/nvidia/a:v1", "platforms": ["linux/amd64"]},
  {"source": "nvcr.io/nvidia/b:v1", "platforms": ["linux/amd64"]},
  {"source": "nvcr.io/nvidia/c:1.0-ubuntu22.04-amd64", "platforms": ["linux/amd64"]},
  {"source": "nvcr.io/nvidia/d:1.0-ubuntu22.04-arm64", "platforms": ["linux/arm64"]}]}
EOF
"$py" "$tools/seed.py" --registry "$plain_host" --plain-http --lock "$work/standin.lock.json" --layer-kb 1 >"$work/standin.seed.json" ||
  fail "seed.py --lock"
"$py" - "$plain_host" "$work/standin.seed.json" <<'EOF' || fail "seed.py --lock does not stand in for upstream's shapes"
import hashlib, json, subprocess, sys
host, seeded = sys.argv[1], json.load(open(sys.argv[2]))["images"]
def raw(ref):
    out = subprocess.run(["skopeo", "inspect", "--raw", "--tls-verify=false", "docker://" + ref],
                         check=True, capture_output=True).stdout
    return "sha256:" + hashlib.sha256(out).hexdigest(), json.loads(out)
def arch(ref, a):
    out = subprocess.run(["skopeo", "inspect", "--tls-verify=false", "--override-arch", a, "docker://" + ref],
                         check=True, capture_output=True).stdout
    return json.loads(out)["Architecture"]
got = {i["source"].split("/")[-1]: i for i in seeded}
assert sorted(got) == ["a:v1", "b:v1", "c:1.0-ubuntu22.04-amd64", "d:1.0-ubuntu22.04-arm64"], got
for name, img in got.items():
    digest, m = raw(img["ref"])
    assert digest == img["digest"] and m["mediaType"] == img["mediaType"], (name, digest, img)
    if name.startswith(("c", "d")):
        want = "amd64" if name.startswith("c") else "arm64"
        assert "manifests" not in m and arch(img["ref"], want) == want, (name, m)
        continue
    plats = [e["platform"]["os"] + "/" + e["platform"]["architecture"] for e in m["manifests"]]
    children = {e["digest"] for e in m["manifests"] if e["platform"]["os"] != "unknown"}
    assert [e["digest"] for e in m["manifests"]] == [e["digest"] for e in img["manifests"]], (name, img)
    assert arch(img["ref"], "arm64") == "arm64" and arch(img["ref"], "amd64") == "amd64", name
    if m["mediaType"].endswith("list.v2+json"):
        assert plats == ["linux/amd64", "linux/arm64"], (name, plats)
        continue
    assert plats == ["linux/amd64", "linux/arm64", "unknown/unknown", "unknown/unknown"], (name, plats)
    for e in m["manifests"][2:]:
        ann = e["annotations"]
        assert ann["vnd.docker.reference.type"] == "attestation-manifest", e
        assert ann["vnd.docker.reference.digest"] in children, e
        children.discard(ann["vnd.docker.reference.digest"])
        _, att = raw(img["ref"].rsplit(":", 1)[0] + "@" + e["digest"])
        assert att["mediaType"] == "application/vnd.oci.image.manifest.v1+json", att
        assert att["config"]["mediaType"] == "application/vnd.oci.image.config.v1+json", att
        [layer] = att["layers"]
        assert layer["mediaType"] == "application/vnd.in-toto+json", layer
        assert layer["annotations"]["in-toto.io/predicate-type"].startswith("https://slsa.dev/provenance/"), layer
    assert not children, (name, "children without an attestation", children)
EOF
echo "seed.py --lock: amd64+arm64 indexes whatever the lock says, attestations on the OCI ones, -amd64/-arm64 tags single"

# Helm repo: pack (deterministic), serve, fetch index.yaml and the tgz.
chart_src=$work/chart-src  # the stand-in chart (chart.py), packed from its folder
"$py" "$tools/chart.py" --release v26.7.0 --out "$chart_src" >/dev/null || fail "chart.py"
"$py" "$tools/helmrepo.py" pack --from "$chart_src" --version v24.9.2 --out "$work/charts" >/dev/null
"$py" "$tools/helmrepo.py" pack --from "$chart_src" --version v24.9.2 --out "$work/again" >/dev/null
cmp -s "$work/charts/gpu-operator-v24.9.2.tgz" "$work/again/gpu-operator-v24.9.2.tgz" || fail "helmrepo pack is not deterministic"
# (whole outputs captured: grep -q closing a pipe early trips pipefail)
chart_yaml=$(tar -xzOf "$work/charts/gpu-operator-v24.9.2.tgz" gpu-operator/Chart.yaml)
grep -qx 'version: v24.9.2' <<<"$chart_yaml" || fail "packed Chart.yaml does not carry version v24.9.2"
listing=$(tar -tzf "$work/charts/gpu-operator-v24.9.2.tgz")
grep -qx 'gpu-operator/charts/node-feature-discovery/values.yaml' <<<"$listing" ||
  fail "packed chart lacks the node-feature-discovery subchart"
"$py" "$tools/helmrepo.py" serve --dir "$work/charts" >"$work/helm.json"
helm_url=$(field "$work/helm.json" url)
curl -fsS "$helm_url/index.yaml" -o "$work/index.yaml" || fail "GET index.yaml"
curl -fsS "$helm_url/gpu-operator-v24.9.2.tgz" -o "$work/fetched.tgz" || fail "GET chart tgz"
cmp -s "$work/fetched.tgz" "$work/charts/gpu-operator-v24.9.2.tgz" || fail "served tgz differs from the packed one"
grep -q "digest: $(sha256sum <"$work/fetched.tgz" | cut -c1-64)" "$work/index.yaml" || fail "index.yaml digest does not match the tgz"
grep -q -- '- gpu-operator-v24.9.2.tgz' "$work/index.yaml" || fail "index.yaml lacks the relative url"
grep -q 'appVersion: "v24.9.2"' "$work/index.yaml" || fail "index.yaml lacks appVersion v24.9.2"
echo "helm repo: index.yaml and tgz served"

# Fault proxy: two injected 503s on blobs, then the real blob.
plain_url=$(field "$work/reg/plain.json" url)
"$py" "$tools/faultproxy.py" start --dir "$work/reg" --upstream "$plain_url" --fault 503 --times 2 --match blobs >"$work/proxy.json"
proxy=$(field "$work/proxy.json" url)
blob=$(skopeo inspect --raw --tls-verify=false "docker://$plain_host/test/oci-single:1.0" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["layers"][-1]["digest"])')
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
  "$proxy/v2/test/oci-single/manifests/1.0")
[[ $code == 200 ]] || fail "proxy: a manifest (not matched) got $code"
for want in 503 503 200; do
  code=$(curl -s -o "$work/blob" -w '%{http_code}' "$proxy/v2/test/oci-single/blobs/$blob")
  [[ $code == "$want" ]] || fail "proxy: expected $want, got $code"
done
[[ sha256:$(sha256sum <"$work/blob" | cut -c1-64) == "$blob" ]] || fail "proxy: blob passed through with the wrong content"
injected=$("$py" "$tools/faultproxy.py" stats --dir "$work/reg" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["injected"])')
[[ $injected == 2 ]] || fail "proxy: stats say $injected faults, want 2"
echo "fault proxy: 503, 503, then 200 with the right bytes"

# stop really stops everything recorded in the folder: registry and fault proxy.
"$py" "$tools/registry.py" stop --dir "$work/reg"
if curl -s -o /dev/null "$plain_url/v2/"; then
  fail "registry.py stop left the plain registry running"
fi
if curl -s -o /dev/null "$proxy/v2/"; then
  fail "registry.py stop left the fault proxy running"
fi
"$py" "$tools/registry.py" stop --dir "$work/reg" # idempotent
echo "PASS in $((SECONDS - start)) s"
