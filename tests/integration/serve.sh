#!/usr/bin/env bash
# gpubundle serve as a site without a registry runs it: a bundle made from a
# real docker-registry's images (multi-arch indexes) served read-only, and real
# clients pulling through it with the bundle's digests: skopeo (copy --all
# --preserve-digests), containerd (ctr through the kit's hosts.toml), podman
# (through the kit's CRI-O drop-in) and gpubundle mirror (serve as an
# upstream: the bundle made again from what it pulled is the same bundle).
# Over plain HTTP and TLS, with and without basic auth; split volumes; a
# delta with its base; a tampered blob; write methods; SIGTERM.
# Hostile clients are in serve_hostile.sh.
GB=$1
source "$(dirname "$0")/mirror_lib.sh"
source "$(dirname "$0")/serve_lib.sh"

EX=$(cd "$(dirname "$0")/../../examples" && pwd)

# A lock resolved from the stand-in chart, cut to four images of both source
# hosts (small_lock), seeded into a stand-in upstream and mirrored.
up=$(start_registry up)
"$PY" "$TOOLS/helmrepo.py" pack --release v26.7.0 --out "$W/charts" >/dev/null
sed -e "s|^  version: v26.7.0|  version: v26.7.0\n  chart: $W/charts/gpu-operator-v26.7.0.tgz|" "$EX/conventional.yaml" > "$W/site.yaml"
"$GB" -q resolve "$W/site.yaml" -o "$W/full.lock.json"
small_lock "$W/full.lock.json" "$W/site.lock.json"
"$PY" "$TOOLS/seed.py" --registry "$up" --plain-http --lock "$W/site.lock.json" --layer-kb 300 > "$W/seed.json"
upstream_config "$W/reg.yaml" "$up"
store=$W/store
"$GB" --store "$store" -q mirror "$W/site.lock.json" --registry-config "$W/reg.yaml" || fail "mirror"
"$GB" keys generate --out "$W/release" >/dev/null
export SOURCE_DATE_EPOCH=1764460800
create -o "$W/a.bundle"
create -o "$W/s.bundle" --split 256K
create -o "$W/d.bundle" --since "$W/a.bundle"
# Nothing upstream from here on: a pull that reached it would not be serve's.
"$PY" "$TOOLS/registry.py" stop --dir "$W/reg" >/dev/null
"$GB" --json bundle inspect "$W/a.bundle" > "$W/inspect.json"
mapfile -t images < <(jget "$W/inspect.json" '"\n".join(i["ref"] + " " + i["digest"] for i in d["images"])')
((${#images[@]} >= 2)) || fail "the bundle should carry several images"

# pull_all BASE CLIENT_ARGS...: every image with skopeo, copy --all keeping digests; each top manifest must be the bundle's.
pull_all() {
  local base=$1 n=0 ref digest got
  shift
  for line in "${images[@]}"; do
    read -r ref digest <<<"$line"
    rm -rf "$W/copy"
    skopeo copy -q --all --preserve-digests "$@" "docker://$base/${ref#*/}" "dir:$W/copy" 2> "$W/skopeo.err" || fail "skopeo copy $base/${ref#*/}: $(tail -n 3 "$W/skopeo.err")"
    got=sha256:$(sha256sum < "$W/copy/manifest.json" | cut -d' ' -f1)
    [[ $got == "$digest" ]] || fail "$base/${ref#*/}: skopeo got $got, the bundle carries $digest"
    n=$((n + 1))
  done
  echo "$n"
}

# Plain HTTP, no auth, prefix gpu.
start_serve plain "$W/a.bundle" --pubkey "$W/release.pub" --prefix gpu
n=$(pull_all "127.0.0.1:$serve_port/gpu" --src-tls-verify=false)
pass "skopeo: $n images over plain HTTP with the bundle's digests"
[[ $(curl -s "http://127.0.0.1:$serve_port/v2/_catalog" | jget /dev/stdin 'all(r.startswith("gpu/") for r in d["repositories"])') == True ]] ||
  fail "the catalog lists repositories outside the prefix"
python3 - "$serve_log_dir/plain.access" <<'PYEOF' || fail "access log"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines, "no access lines"
for l in lines:
    assert {"time", "client", "method", "path", "status", "bytes", "seconds", "completed"} <= set(l), l
assert any(l["path"].endswith("/manifests/" + l["path"].rsplit("/", 1)[1]) for l in lines)
PYEOF
pass "access log: one JSON line per request"

# Write methods are refused, whatever the path.
for m in PUT POST PATCH DELETE; do
  code=$(curl -s -o "$W/body" -w '%{http_code}' -X "$m" "http://127.0.0.1:$serve_port/v2/gpu/x/blobs/uploads/")
  [[ $code == 405 ]] && grep -q '"UNSUPPORTED"' "$W/body" || fail "$m answered $code: $(cat "$W/body")"
done
pass "push, delete and upload sessions refused with 405 UNSUPPORTED"

# containerd and podman through the kit's runtime config for this address.
if command -v containerd >/dev/null && command -v podman >/dev/null; then
  start_containerd
  podman_works
  # The kit for a site served by serve: import --serve verifies, pushes nothing.
  "$GB" -q import "$W/a.bundle" --serve "http://127.0.0.1:$serve_port/gpu" --pubkey "$W/release.pub" -o "$W/kit" ||
    fail "import --serve"
  [[ -f $W/kit/serve/gpubundle-serve.service ]] || fail "the serve kit lacks serve/gpubundle-serve.service"
  h=$(podman_kit plain "$W/kit")
  for line in "${images[@]}"; do
    read -r ref digest <<<"$line"
    ctr_ images pull --platform linux/amd64 --snapshotter native --hosts-dir "$W/kit/containerd/certs.d" "$ref" > "$W/ctr.out" 2>&1 ||
      { cat "$W/ctr.out"; fail "ctr pull $ref through the kit's hosts.toml"; }
    got=$(ctr_ images ls 2>/dev/null | awk -v r="$ref" '$1 == r {print $3}')
    [[ $got == "$digest" ]] || fail "ctr: $ref is $got, the bundle carries $digest"
    podman_ "$h" pull -q --arch amd64 "$ref" > "$W/podman.out" 2>&1 || { cat "$W/podman.out"; fail "podman pull $ref through the kit's CRI-O drop-in"; }
    got=$(podman_ "$h" image inspect --format '{{.Digest}}' "$ref")
    [[ $got == "$digest" ]] || fail "podman: $ref is $got, the bundle carries $digest"
  done
  pass "containerd (ctr, the kit's hosts.toml) and podman (the kit's CRI-O drop-in) pull every image by its upstream name"
  if "$PY" -c 'import grpc' 2>/dev/null && start_cri_containerd "$W/kit/containerd/certs.d"; then
    for line in "${images[@]}"; do
      read -r ref digest <<<"$line"
      cri_pull "$ref" > "$W/cri.json" || fail "CRI PullImage of $ref through the kit's hosts.toml"
      [[ $(jget "$W/cri.json" 'd["repoDigests"]') == *"@$digest'"* ]] || fail "CRI: $ref stored as $(cat "$W/cri.json"), the bundle carries $digest"
    done
    pass "containerd's CRI plugin (PullImage over gRPC, as the kubelet) pulls every image through the kit's hosts.toml"
  else
    echo "note: python3-grpcio is missing or containerd's CRI plugin does not start here; the kubelet's path is not checked"
  fi
else
  echo "note: containerd or podman not installed; their pulls are not checked here"
fi
stop_serve plain

# A store instead of a bundle: every image of its index.json, under the same names.
start_serve store --store "$store" --prefix gpu
n=$(pull_all "127.0.0.1:$serve_port/gpu" --src-tls-verify=false)
set +e
"$GB" --store "$store" -q mirror "$W/site.lock.json" --registry-config "$W/reg.yaml" 2> "$W/err"
rc=$?
set -e
[[ $rc != 0 ]] && grep -q "lock" "$W/err" || fail "mirror wrote the store while serve held it (exit $rc)"
stop_serve store
pass "serve --store: $n images; the store is held against writers while served"

# Split volumes, and a delta over its base; a delta alone is refused.
mapfile -t vols < <(ls "$W"/s.bundle.* | shuf)
start_serve split "${vols[@]}" --pubkey "$W/release.pub" --prefix gpu
n=$(pull_all "127.0.0.1:$serve_port/gpu" --src-tls-verify=false)
stop_serve split
pass "split bundle (${#vols[@]} volumes, blobs in parts): $n images"
set +e
"$GB" serve "$W/d.bundle" --pubkey "$W/release.pub" --listen 127.0.0.1:0 2> "$W/err"
rc=$?
set -e
[[ $rc == 2 ]] && grep -q "give its base bundle too" "$W/err" || fail "a delta alone: exit $rc: $(cat "$W/err")"
start_serve delta "$W/d.bundle" "$W/a.bundle" --pubkey "$W/release.pub" --prefix gpu
n=$(pull_all "127.0.0.1:$serve_port/gpu" --src-tls-verify=false)
stop_serve delta
pass "a delta served with its base: $n images; alone it is refused"

# TLS and basic auth, every client: the kit for the serving host (its CA
# carried for the nodes), credentials given each client's own way.
"$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); import registry; registry.make_tls(sys.argv[2])' "$TOOLS" "$W" >/dev/null
htpasswd -Bbn site 's3cret pass' > "$W/htpasswd"
kport=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'hosts:\n  "127.0.0.1:%s":\n    caFile: %s\n' "$kport" "$W/ca.pem" > "$W/site-tls.yaml"
"$GB" -q import "$W/a.bundle" --serve "127.0.0.1:$kport/gpu" --registry-config "$W/site-tls.yaml" --pubkey "$W/release.pub" -o "$W/kit-tls"
cmp -s "$W/ca.pem" "$W/kit-tls/containerd/certs.d/127.0.0.1:$kport/ca.crt" || fail "the TLS serve kit does not carry the CA for containerd"
SERVE_LISTEN=127.0.0.1:$kport start_serve tls "$W/a.bundle" --pubkey "$W/release.pub" --prefix gpu --tls-cert "$W/server.pem" \
  --tls-key "$W/server.key" --htpasswd "$W/htpasswd"
[[ $(curl -s -o /dev/null -w '%{http_code}' --cacert "$W/ca.pem" "https://127.0.0.1:$serve_port/v2/") == 401 ]] ||
  fail "no credentials must get 401"
[[ $(curl -s -o /dev/null -w '%{http_code}' --cacert "$W/ca.pem" -u site:wrong "https://127.0.0.1:$serve_port/v2/") == 401 ]] ||
  fail "a wrong password must get 401"
if curl -s -o /dev/null "https://127.0.0.1:$serve_port/v2/"; then fail "TLS verification should refuse a server no CA vouches for"; fi
n=$(pull_all "127.0.0.1:$serve_port/gpu" --src-cert-dir "$W/certs.d" --src-creds 'site:s3cret pass')
clients="skopeo"
if command -v containerd >/dev/null && command -v podman >/dev/null; then
  h=$(podman_kit tls "$W/kit-tls")
  # containers/image keys credentials by the host it talks to: the mirror's, as a node's auth file holds them.
  printf '{"auths": {"127.0.0.1:%s": {"auth": "%s"}}}\n' "$kport" "$(printf 'site:s3cret pass' | base64 -w0)" > "$W/auth.json"
  for line in "${images[@]}"; do
    read -r ref digest <<<"$line"
    ctr_ -n tls images pull --platform linux/amd64 --snapshotter native --hosts-dir "$W/kit-tls/containerd/certs.d" \
      --user 'site:s3cret pass' "$ref" > "$W/ctr.out" 2>&1 || { cat "$W/ctr.out"; fail "ctr pull $ref over TLS with basic auth"; }
    got=$(ctr_ -n tls images ls 2>/dev/null | awk -v r="$ref" '$1 == r {print $3}')
    [[ $got == "$digest" ]] || fail "ctr (TLS): $ref is $got, the bundle carries $digest"
    podman_ "$h" pull -q --arch amd64 --authfile "$W/auth.json" "$ref" > "$W/podman.out" 2>&1 ||
      { cat "$W/podman.out" >&2; fail "podman pull $ref over TLS with basic auth (the kit's drop-in and CA)"; }
    got=$(podman_ "$h" image inspect --format '{{.Digest}}' "$ref")
    [[ $got == "$digest" ]] || fail "podman (TLS): $ref is $got, the bundle carries $digest"
  done
  clients+=", ctr, podman"
  if "$PY" -c 'import grpc' 2>/dev/null && start_cri_containerd "$W/kit-tls/containerd/certs.d" cri-tls; then
    for line in "${images[@]}"; do
      read -r ref digest <<<"$line"
      CRI=cri-tls cri_pull "$ref" --user 'site:s3cret pass' > "$W/cri.json" || fail "CRI PullImage of $ref over TLS with basic auth"
      [[ $(jget "$W/cri.json" 'd["repoDigests"]') == *"@$digest'"* ]] || fail "CRI (TLS): $ref stored as $(cat "$W/cri.json")"
    done
    clients+=", containerd's CRI plugin"
  fi
fi
stop_serve tls
pass "TLS (the kit's CA) and basic auth (bcrypt htpasswd): $n images to $clients"

# The kit's systemd unit: systemd-analyze verify accepts it, and its command
# line, run with the files where the unit says they are, serves over TLS.
unit=$W/kit-tls/serve/gpubundle-serve.service
if command -v systemd-analyze >/dev/null; then
  root=$W/sdroot
  mkdir -p "$root/usr/local/bin" "$root/etc/systemd/system" "$root/usr/lib/systemd"
  cp -r /usr/lib/systemd/system "$root/usr/lib/systemd/"
  cp "$GB" "$root/usr/local/bin/gpubundle"
  cp "$unit" "$root/etc/systemd/system/"
  out=$(systemd-analyze verify --man=no --root="$root" gpubundle-serve.service 2>&1) || fail "systemd-analyze verify: $out"
  if grep "gpubundle-serve.service" <<<"$out"; then fail "systemd-analyze verify warns about the unit"; fi
else
  echo "note: systemd-analyze not installed; the unit is only run below"
fi
mkdir -p "$W/varlib" "$W/etc" "$W/run"
cp "$W/a.bundle" "$W/varlib/"
cp "$W/release.pub" "$W/etc/release.pub"
cp "$W/server.pem" "$W/etc/serve.crt"
cp "$W/server.key" "$W/etc/serve.key"
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[[ $exec_start == "/usr/local/bin/gpubundle serve /var/lib/gpubundle/a.bundle "* ]] || fail "ExecStart: $exec_start"
exec_start=${exec_start//'${CREDENTIALS_DIRECTORY}'/$W/etc}
exec_start=${exec_start//\/var\/lib\/gpubundle/$W/varlib}
exec_start=${exec_start//\/etc\/gpubundle/$W/etc}
# start_serve gives its own address (any free port) and ready file.
[[ $exec_start == *" --listen :$kport "* ]] || fail "the unit does not listen on the kit's port: $exec_start"
exec_start=${exec_start//--listen :$kport/}
exec_start=${exec_start//--ready-file \/run\/gpubundle-serve\/ready/}
read -ra argv <<<"${exec_start#/usr/local/bin/gpubundle serve }"
start_serve unit "${argv[@]}"
n=$(pull_all "127.0.0.1:$serve_port/gpu" --src-cert-dir "$W/certs.d")
stop_serve unit
pass "the kit's systemd unit: systemd-analyze verify accepts it; its command serves $n images over TLS"

# The kit's DaemonSet, run as the kubelet would: in a root with nothing but
# the pod's mounts (the node's /usr, bundles and keys), its command through
# the node's loader, on the host network.
if unshare -m true 2>/dev/null; then
  cp "$GB" "$W/bin-gpubundle"
  mapfile -t command < <("$PY" - "$W/kit-tls/serve/gpubundle-serve.yaml" <<'PYEOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
ds = next(d for d in docs if d["spec"]["template"]["spec"]["nodeSelector"]["kubernetes.io/arch"] == "amd64")
spec = ds["spec"]["template"]["spec"]
assert spec["hostNetwork"] is True and spec["containers"][0]["imagePullPolicy"] == "Never", spec
mounts = {m["mountPath"]: v["hostPath"]["path"] for m in spec["containers"][0]["volumeMounts"] for v in spec["volumes"] if v["name"] == m["name"]}
assert mounts == {"/host/usr": "/usr", "/host/var/lib/gpubundle": "/var/lib/gpubundle", "/host/etc/gpubundle": "/etc/gpubundle"}, mounts
print("\n".join(spec["containers"][0]["command"]))
PYEOF
  )
  root=$W/podroot
  mkdir -p "$root/host/usr" "$root/host/var/lib/gpubundle" "$root/host/etc/gpubundle"
  cat > "$W/pod.sh" <<'SH'
set -e
root=$1 w=$2
shift 2
mount --bind /usr "$root/host/usr"
mount -o remount,bind,ro "$root/host/usr"
mount -t tmpfs tmpfs "$root/host/usr/local/bin"
cp "$w/bin-gpubundle" "$root/host/usr/local/bin/gpubundle"
mount --bind -o ro "$w/varlib" "$root/host/var/lib/gpubundle"
mount --bind -o ro "$w/etc" "$root/host/etc/gpubundle"
exec chroot "$root" "$@"
SH
  "$PY" - "$TOOLS" "$W/reg" "$serve_log_dir/pod.log" unshare -m sh "$W/pod.sh" "$root" "$W" "${command[@]}" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[1])
import harness
harness.spawn(sys.argv[2], "serve", "pod", sys.argv[4:], sys.argv[3])
PYEOF
  for _ in $(seq 300); do curl -s -o /dev/null --cacert "$W/ca.pem" "https://127.0.0.1:$kport/v2/" && break; sleep 0.1; done
  n=$(pull_all "127.0.0.1:$kport/gpu" --src-cert-dir "$W/certs.d") || fail "the DaemonSet's serve: $(tail -n 5 "$serve_log_dir/pod.log")"
  "$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); import harness; harness.stop(sys.argv[2], kinds=["serve"], name="pod")' "$TOOLS" "$W/reg"
  pass "the kit's DaemonSet command, in a root of only its mounts: $n images over TLS"
else
  echo "note: unshare -m is not permitted here; the kit's DaemonSet is only checked by kit-schemas"
fi

# gpubundle mirror with serve as the upstream: no prefix, so the upstream
# paths are served as they are; the bundle made again is the same bundle.
start_serve upstream "$W/a.bundle" --pubkey "$W/release.pub" --tls-cert "$W/server.pem" --tls-key "$W/server.key" \
  --htpasswd "$W/htpasswd"
printf 's3cret pass\n' > "$W/serve.pw"
cat > "$W/via-serve.yaml" <<YAML
hosts:
  nvcr.io: {mirrors: ["https://127.0.0.1:$serve_port"], fallback: false}
  registry.k8s.io: {mirrors: ["https://127.0.0.1:$serve_port"], fallback: false}
  "127.0.0.1:$serve_port": {caFile: $W/ca.pem, username: site, passwordFile: $W/serve.pw}
YAML
"$GB" --store "$W/store2" -q mirror "$W/site.lock.json" --registry-config "$W/via-serve.yaml" -o "$W/again.lock.json" ||
  fail "mirror from serve"
"$GB" --store "$W/store2" -q bundle create "$W/again.lock.json" -o "$W/again.bundle" --key "$W/release.key"
# Every image and blob again, byte for byte. Serve gives the site's view: an
# index of which the bundle carries some platforms is served filtered, so the
# upstream index that travels beside it (upstreamDigest) is not pulled again.
blobs_of() {
  "$PY" - "$1" <<'PYEOF'
import json, sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    m = json.load(t.extractfile("gpubundle.json"))
upstream = {i.get("upstreamDigest") for i in m["images"]}
print(json.dumps(sorted([i["ref"], i["digest"], sorted(set(i["blobs"]) - upstream)] for i in m["images"])))
print(json.dumps(sorted({(f["blob"], f["sha256"]) for f in m["files"] if f["blob"] and f["blob"] not in upstream})))
PYEOF
}
blobs_of "$W/a.bundle" > "$W/served.blobs"
blobs_of "$W/again.bundle" > "$W/again.blobs"
cmp -s "$W/served.blobs" "$W/again.blobs" || { diff "$W/served.blobs" "$W/again.blobs" | cut -c1-300; fail "the bundle made from what serve gave differs from the one served"; }
stop_serve upstream
pass "gpubundle mirror from serve as its upstream (TLS, basic auth): the same images and blobs, byte for byte, in the bundle made again"

# A tampered layer: serve starts (blobs are hashed on first read), the blob's
# pull is an error with no bytes of it, the rest is served; --verify-all refuses at start.
cp "$W/a.bundle" "$W/t.bundle"
victim=$("$PY" - "$W/t.bundle" <<'PYEOF'
import json, sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    m = json.load(t.extractfile("gpubundle.json"))
    layers = [f for f in m["files"] if f["blob"] and not f.get("encoding") and f["size"] > 4096]
    f = max(layers, key=lambda f: f["size"])
    member = t.getmember(f["path"])
    ref = next(i["ref"] for i in m["images"] if f["blob"] in i["blobs"])
    repo = ref.split("/", 1)[1].split("@")[0]
    repo = repo.rsplit(":", 1)[0] if ":" in repo else repo
    print(f["blob"], member.offset_data + f["size"] // 2, "gpu/" + repo)
PYEOF
)
read -r blob at repo <<<"$victim"
printf '\x5a' | dd of="$W/t.bundle" bs=1 seek="$at" conv=notrunc status=none
start_serve tampered "$W/t.bundle" --pubkey "$W/release.pub" --prefix gpu
code=$(curl -s -o "$W/got" -w '%{http_code}' "http://127.0.0.1:$serve_port/v2/$repo/blobs/$blob") || true
[[ $code != 200 && $code != 206 ]] || fail "a tampered blob was served ($code)"
if [[ -s $W/got ]] && ! grep -q '"errors"' "$W/got"; then fail "bytes of a tampered blob left the server"; fi
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$serve_port/v2/$repo/blobs/$blob") || true
[[ $code == 500 ]] || fail "the second read of a tampered blob: $code"
grep -q "does not hash\|sha256" "$serve_log_dir/tampered.log" || fail "serve did not say why: $(cat "$serve_log_dir/tampered.log")"
stop_serve tampered
set +e
"$GB" serve "$W/t.bundle" --pubkey "$W/release.pub" --listen 127.0.0.1:0 --verify-all 2> "$W/err"
rc=$?
set -e
[[ $rc == 1 ]] || fail "--verify-all over a tampered bundle: exit $rc: $(cat "$W/err")"
pass "a tampered blob: an error at first read, never its bytes; --verify-all refuses the bundle"
echo "serve: ok"
