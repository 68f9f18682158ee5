#!/usr/bin/env bash
# gpubundle import against real docker-registry instances: a lock resolved from
# the stand-in chart (tests/tools/chart.py), mirrored from a stand-in nvcr.io/registry.k8s.io, bundled, then
# imported into site registries; skopeo cross-checks digests and blobs.
GB=$1
source "$(dirname "$0")/mirror_lib.sh"
EX=$(cd "$(dirname "$0")/../../examples" && pwd)

up=$(start_registry upstream)
site=$(start_registry site)
"$PY" "$TOOLS/helmrepo.py" pack --release v26.7.0 --out "$W/charts" >/dev/null
sed -e "s|^  version: v26.7.0|  version: v26.7.0\n  chart: $W/charts/gpu-operator-v26.7.0.tgz|" "$EX/precompiled.yaml" > "$W/site.yaml"
"$GB" -q resolve "$W/site.yaml" -o "$W/resolved.lock.json"
"$PY" "$TOOLS/seed.py" --registry "$up" --plain-http --lock "$W/resolved.lock.json" --layer-kb 48 > "$W/seed.json"
printf 'hosts:\n  nvcr.io:\n    mirrors: ["http://%s"]\n    fallback: false\n  registry.k8s.io:\n    mirrors: ["http://%s"]\n    fallback: false\n' \
  "$up" "$up" > "$W/reg.yaml"
store=$W/store
"$GB" --store "$store" -q mirror "$W/site.yaml" --registry-config "$W/reg.yaml" -o "$W/site.lock.json" || fail "mirror"
"$GB" keys generate --out "$W/release" >/dev/null
"$GB" keys generate --out "$W/other" >/dev/null
"$GB" --store "$store" -q bundle create "$W/site.lock.json" -o "$W/site.bundle" --key "$W/release.key" || fail "bundle create"

# Import into the empty site registry.
"$GB" --json import "$W/site.bundle" --registry "http://$site/gpu" --pubkey "$W/release.pub" -o "$W/kit" > "$W/import1.json" ||
  fail "import"
[[ $(jget "$W/import1.json" 'd["blobsPushed"] > 0') == True ]] || fail "nothing pushed"
n=0
while read -r src dst digest; do
  got=$(skopeo inspect --raw --tls-verify=false "docker://$dst" | sha256sum | cut -d' ' -f1)
  [[ "sha256:$got" == "$digest" ]] || fail "$dst: digest sha256:$got, the lock's site digest is $digest"
  n=$((n + 1))
done < <(jget "$W/site.lock.json" '"\n".join(i["source"]+" "+i["source"].replace(i["source"].split("/")[0], "'"$site"'/gpu", 1)+" "+i.get("siteDigest", i["digest"]) for i in d["images"])')
pass "$n images at the site with the lock's site digests (siteDigest where only some platforms travel)"

# Copy two images back out and compare their blobs with the store's.
for ref in $(jget "$W/site.lock.json" '" ".join(i["source"] for i in d["images"][:2])'); do
  dst=${ref/#${ref%%/*}/$site/gpu}
  rm -rf "$W/out"
  skopeo copy -q --all --preserve-digests --src-tls-verify=false "docker://$dst" "oci:$W/out:x" 2>/dev/null ||
    skopeo copy -q --src-tls-verify=false "docker://$dst" "oci:$W/out:x" || fail "skopeo copy $dst"
  for b in "$W"/out/blobs/sha256/*; do
    [[ -f $store/blobs/sha256/$(basename "$b") ]] && { cmp -s "$b" "$store/blobs/sha256/$(basename "$b")" || fail "blob $(basename "$b") differs"; }
  done
done
pass "blobs copied back out match the store"

# The install kit points only at the site registry.
for f in values.yaml install.sh verify.sh manifest.json gpu-operator-v26.7.0.tgz; do [[ -f $W/kit/$f ]] || fail "kit lacks $f"; done
if grep -E 'nvcr\.io|registry\.k8s\.io' "$W/kit/values.yaml"; then fail "values.yaml still names an upstream registry"; fi
pass "install kit"

# Importing again pushes nothing, and asks about no blob: every image's top
# manifest is there, so the registry had all it names.
log=$W/reg/site/registry.log
blob_heads() { grep -c '"HEAD /v2/[^"]*/blobs/' || true; }
seen=$(wc -l < "$log")
(($(head -n "$seen" "$log" | blob_heads) > 0)) || fail "the first import asked about no blob (is the access log on?)"
"$GB" --json import "$W/site.bundle" --registry "http://$site/gpu" --pubkey "$W/release.pub" --no-kit > "$W/import2.json"
[[ $(jget "$W/import2.json" 'd["blobsPushed"] + d["blobsMounted"] + d["manifestsPushed"]') == 0 ]] || { cat "$W/import2.json"; fail "re-import pushed"; }
(($(tail -n +"$((seen + 1))" "$log" | blob_heads) == 0)) || fail "re-import asked about blobs of complete images"
pass "re-import pushes nothing and asks about no blob"

# A blob lost behind the registry's back (deleted from its repository through
# the API): a plain re-import takes the image as complete; --check-blobs asks
# about every blob and puts it back.
lost=$("$PY" - "$site" "$(jget "$W/import1.json" 'd["images"][0]')" <<'PYEOF'
import json, sys, urllib.request
site, ref = sys.argv[1], sys.argv[2]
repo, tag = ref.split("/", 1)[1].rsplit(":", 1)
acc = "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, " \
      "application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json"
get = lambda r: json.load(urllib.request.urlopen(urllib.request.Request(f"http://{site}/v2/{repo}/manifests/{r}", headers={"Accept": acc})))
m = get(tag)
m = get(m["manifests"][0]["digest"]) if "manifests" in m else m
url = f"http://{site}/v2/{repo}/blobs/{m['layers'][0]['digest']}"
urllib.request.urlopen(urllib.request.Request(url, method="DELETE"))
print(url)
PYEOF
)
[[ $(curl -s -o /dev/null -w '%{http_code}' -I "$lost") == 404 ]] || fail "the deleted blob is still there: $lost"
"$GB" --json import "$W/site.bundle" --registry "http://$site/gpu" --pubkey "$W/release.pub" --no-kit > "$W/import-lost.json"
[[ $(jget "$W/import-lost.json" 'd["blobsPushed"]') == 0 ]] || fail "a plain re-import asked about blobs of a complete image"
"$GB" --json import "$W/site.bundle" --registry "http://$site/gpu" --pubkey "$W/release.pub" --no-kit --check-blobs > "$W/import-check.json"
[[ $(jget "$W/import-check.json" 'd["blobsPushed"] + d["blobsMounted"]') == 1 && $(curl -s -o /dev/null -w '%{http_code}' -I "$lost") == 200 ]] ||
  { cat "$W/import-check.json"; fail "--check-blobs did not put the lost blob back"; }
pass "--check-blobs puts back a blob the registry lost"

# A partly populated registry: one image already there.
part=$(start_registry partly)
first=$(jget "$W/site.lock.json" 'd["images"][0]["source"]')
skopeo copy -q --all --preserve-digests --src-tls-verify=false --dest-tls-verify=false \
  "docker://${first/#${first%%/*}/$site/gpu}" "docker://${first/#${first%%/*}/$part/gpu}" 2>/dev/null ||
  skopeo copy -q --all --src-tls-verify=false --dest-tls-verify=false "docker://${first/#${first%%/*}/$site/gpu}" "docker://${first/#${first%%/*}/$part/gpu}"
"$GB" --json import "$W/site.bundle" --registry "http://$part/gpu" --pubkey "$W/release.pub" --no-kit > "$W/import3.json"
[[ $(jget "$W/import3.json" 'd["blobsPresent"] > 0 and d["blobsPushed"] < '"$(jget "$W/import1.json" 'd["blobsPushed"]')") == True ]] ||
  { cat "$W/import3.json"; fail "partly populated import"; }
pass "partly populated registry"

# A tampered bundle pushes nothing.
empty=$(start_registry empty)
cp "$W/site.bundle" "$W/t.bundle"
size=$(stat -c %s "$W/t.bundle")
printf '\x5a' | dd of="$W/t.bundle" bs=1 seek=$((size - 3000)) conv=notrunc status=none
set +e; "$GB" import "$W/t.bundle" --registry "http://$empty/gpu" --pubkey "$W/release.pub" --no-kit 2>"$W/err"; rc=$?; set -e
[[ $rc == 1 ]] && grep -q "nothing was pushed" "$W/err" || { cat "$W/err"; fail "tampered import"; }
[[ $(curl -s "http://$empty/v2/_catalog" | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["repositories"]))') == 0 ]] ||
  fail "a tampered bundle left repositories behind"
set +e; "$GB" import "$W/site.bundle" --registry "http://$empty/gpu" --pubkey "$W/other.pub" --no-kit 2>/dev/null; rc=$?; set -e
[[ $rc != 0 ]] || fail "an untrusted key must be refused"
pass "tampered bundle pushes nothing"

# Import hashes only the blobs it pushes: a layer damaged in the bundle after
# the site got it is never read (nothing to push, so the import succeeds), and
# where the site lacks it the import is refused before the first byte leaves.
bad_blob=$("$PY" - "$W/site.bundle" "$W/bad.bundle" "$first" <<'PYEOF'
import json, shutil, sys, tarfile
src, dst, ref = sys.argv[1:]
shutil.copyfile(src, dst)
with tarfile.open(src) as t:
    m = json.load(t.extractfile("gpubundle.json"))
    first = set(next(i for i in m["images"] if i["ref"] == ref)["blobs"])  # the image the half-filled registry below gets
    f = max((f for f in m["files"] if f["blob"] and f["blob"] not in first), key=lambda f: f["size"])
    member = t.getmember(f["path"])
with open(dst, "r+b") as out:
    out.seek(member.offset_data + member.size // 2)
    b = out.read(1)
    out.seek(-1, 1)
    out.write(bytes([b[0] ^ 1]))
print(f["blob"])
PYEOF
)
"$GB" --json import "$W/bad.bundle" --registry "http://$site/gpu" --pubkey "$W/release.pub" --no-kit > "$W/import-bad.json" ||
  fail "re-import where the site has the damaged layer: it must not be read"
[[ $(jget "$W/import-bad.json" 'd["blobsPushed"] + d["blobsMounted"] + d["manifestsPushed"]') == 0 ]] || fail "re-import pushed"
[[ $(jget "$W/import-bad.json" 'd["bytesHashed"] * 4 < '"$(jget "$W/import1.json" 'd["bytesHashed"]')") == True ]] ||
  fail "re-import hashed $(jget "$W/import-bad.json" 'd["bytesHashed"]') bytes, the first import $(jget "$W/import1.json" 'd["bytesHashed"]')"
set +e; "$GB" import "$W/bad.bundle" --registry "http://$empty/gpu" --pubkey "$W/release.pub" --no-kit 2>"$W/err"; rc=$?; set -e
[[ $rc == 1 ]] && grep -q "${bad_blob#sha256:}.*: sha256" "$W/err" && grep -q "nothing was pushed" "$W/err" || { cat "$W/err"; fail "damaged layer into an empty site"; }
[[ $(curl -s "http://$empty/v2/_catalog" | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["repositories"]))') == 0 ]] ||
  fail "a damaged layer left repositories behind"
half=$(start_registry half)
skopeo copy -q --all --preserve-digests --src-tls-verify=false --dest-tls-verify=false \
  "docker://${first/#${first%%/*}/$site/gpu}" "docker://${first/#${first%%/*}/$half/gpu}" 2>/dev/null ||
  skopeo copy -q --all --src-tls-verify=false --dest-tls-verify=false "docker://${first/#${first%%/*}/$site/gpu}" "docker://${first/#${first%%/*}/$half/gpu}"
half_files() { (cd "$W/reg/half/storage" && find . -type f | sort); }
half_files > "$W/half.before"
set +e; "$GB" import "$W/bad.bundle" --registry "http://$half/gpu" --pubkey "$W/release.pub" --no-kit 2>"$W/err"; rc=$?; set -e
[[ $rc == 1 ]] && grep -q "${bad_blob#sha256:}.*: sha256" "$W/err" || { cat "$W/err"; fail "damaged layer into a half-filled site"; }
half_files | cmp -s - "$W/half.before" || fail "a damaged layer changed the half-filled site registry"
pass "import hashes only what it pushes: a damaged layer the site has is not read; one it lacks pushes nothing"

# Killed mid-import, then re-run: completes.
killed=$(start_registry killed)
"$GB" -q import "$W/site.bundle" --registry "http://$killed/gpu" --pubkey "$W/release.pub" --no-kit -j 1 &
pid=$!
sleep 0.4
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
"$GB" --json import "$W/site.bundle" --registry "http://$killed/gpu" --pubkey "$W/release.pub" --no-kit > "$W/import4.json" || fail "re-run after kill"
"$GB" --json import "$W/site.bundle" --registry "http://$killed/gpu" --pubkey "$W/release.pub" --no-kit > "$W/import5.json"
[[ $(jget "$W/import5.json" 'd["blobsPushed"] + d["manifestsPushed"]') == 0 ]] || fail "after the re-run, everything is there"
pass "kill -9 mid-import, re-run completes"

# A delta against the first bundle imports into the site that has it, and is
# refused, naming the missing blobs, by a registry that does not.
"$GB" --store "$store" -q bundle create "$W/site.lock.json" -o "$W/delta.bundle" --key "$W/release.key" --since "$W/site.bundle"
"$GB" -q import "$W/delta.bundle" --registry "http://$site/gpu" --pubkey "$W/release.pub" --no-kit || fail "delta import"
fresh=$(start_registry fresh)
set +e; "$GB" import "$W/delta.bundle" --registry "http://$fresh/gpu" --pubkey "$W/release.pub" --no-kit 2>"$W/err"; rc=$?; set -e
[[ $rc == 1 ]] && grep -q "leaves out .* blob(s) the site registry does not have: sha256:" "$W/err" || { cat "$W/err"; fail "delta into a bare site"; }
pass "delta import"

# The site inventory feeds a delta: nothing changed, so no layer travels.
"$GB" -q inventory --registry "http://$site/gpu" --bundle "$W/site.bundle" -o "$W/inventory.json"
[[ $(jget "$W/inventory.json" 'len(d["blobs"]) > 0') == True ]] || fail "empty inventory"
"$GB" --store "$store" -q bundle create "$W/site.lock.json" -o "$W/inv.bundle" --key "$W/release.key" --since "$W/inventory.json"
(( $(stat -c %s "$W/inv.bundle") * 4 < $(stat -c %s "$W/site.bundle") )) || fail "inventory delta is not small"
pass "inventory-based delta"
echo "import: ok"
