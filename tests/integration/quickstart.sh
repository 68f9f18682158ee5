#!/usr/bin/env bash
# The README's Quick start, exactly as README.md shows it, so the documentation
# cannot drift from the tool. The commands are read from README.md itself
# (the indented lines of its "## Quick start" section) and run in order in one
# folder, against the stand-in upstream (scripts/standin.sh). The only changes:
#   - optional parts in [brackets] are given (the stand-in needs registries.yaml);
#   - site-a.yaml is the demo's recipe (examples/precompiled.yaml, chart from
#     the stand-in Helm repo), registries.yaml maps nvcr.io and registry.k8s.io
#     to the stand-ins, and registry.site.internal:5000 is a loopback registry
#     (http://127.0.0.1:PORT);
#   - helm and kubectl are the real ones (GB_CLIENTS_BIN) against the Kubernetes
#     API stand-in (tests/tools/kube_api.py) with one GPU node; the test plays
#     the operator (a ready pod once install.sh is done) and the kubelet (the
#     smoke pod Succeeded).
# Then checks what each step should have left: the bundle, the images at the
# site with the lock's site digests, the helm release (one: the dry run
# installed nothing), the time-slicing ConfigMap and the smoke pod's image from
# the site, the inventory, and a delta bundle that carries no blob the site has.
# Without the real clients the install.sh and verify.sh commands are left out,
# the rest is run and checked, and it skips (77).
# Usage: quickstart.sh GPUBUNDLE   (GB_SOURCE_DIR: the repository)
set -euo pipefail
GB=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=${GB_SOURCE_DIR:?}
TOOLS=$src/tests/tools
source "$src/scripts/standin.sh"
command -v docker-registry skopeo >/dev/null || { echo "SKIP: docker-registry or skopeo missing"; exit 77; }
W=$(mktemp -d -t gb-quickstart.XXXXXX)
SRC=$src work=$W
# shellcheck source=tests/integration/kube_lib.sh
source "$src/tests/integration/kube_lib.sh"
trap 'kube_stop_all; standin_stop "$W/up"; rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The commands, from README.md.
"$PY" - "$src/README.md" > "$W/commands" <<'PYEOF' || fail "README.md: no Quick start commands"
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"(?ms)^## Quick start\n(.*?)^## ", text)
assert m, "no '## Quick start' section"
cmds = [re.sub(r"\s+#.*$", "", l[4:]).strip() for l in m.group(1).splitlines() if l.startswith("    ")]
cmds = [c for c in cmds if c]
assert len(cmds) >= 8, cmds
print("\n".join(cmds))
PYEOF
grep -q '^gpubundle build site-a.yaml .*--since ' "$W/commands" || fail "README Quick start has no delta build"
grep -q 'install.sh' "$W/commands" || fail "README Quick start has no install.sh"
grep -q 'verify.sh' "$W/commands" || fail "README Quick start has no verify.sh"

standin_start "$W/up" v26.7.0 "$src/examples/precompiled.yaml"
mkdir -p "$W/run" "$W/bin"
cp "$W/up/recipe.yaml" "$W/run/site-a.yaml"
cp "$W/up/registries.yaml" "$W/run/registries.yaml"
ln -s "$GB" "$W/bin/gpubundle"

# The cluster: one GPU node (the precompiled recipe sets no MIG layout).
clients=1
if kube_clients_present; then
  cat >"$W/cluster.yaml" <<'EOF'
apiVersion: v1
kind: Node
metadata: {name: node-a, labels: {nvidia.com/gpu.present: "true"}}
status: {allocatable: {cpu: "64", nvidia.com/gpu: "8", pods: "110"}}
EOF
  kube_start api --seed "$W/cluster.yaml"
  PATH="$CLIENTS_BIN:$PATH"
else
  clients=""
fi
operator_pod='{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpu-operator-6f7d-x", "namespace": "gpu-operator"},
  "spec": {"containers": [{"name": "c", "image": "x"}]}, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}'

n=0
while IFS= read -r line; do
  cmd=${line//registry.site.internal:5000/http://$SITE}
  cmd=${cmd//[\[\]]/}
  n=$((n + 1))
  case $cmd in
    *install.sh*|*verify.sh*)
      if [ -z "$clients" ]; then echo "quickstart $n: left out: $cmd"; continue; fi ;;
  esac
  echo "quickstart $n: $cmd"
  player=""
  case $cmd in
    *verify.sh*) kube_play_status Pod gpu-operator gpubundle-cuda-smoke '{"phase": "Succeeded"}' 60 & player=$! ;;
  esac
  (cd "$W/run" && PATH="$W/bin:$PATH" GPUBUNDLE_STORE="$W/store" VERIFY_TIMEOUT=60 bash -euo pipefail -c "$cmd") ||
    fail "README Quick start, command $n failed: $line"
  [ -z "$player" ] || wait "$player" || fail "README Quick start, command $n made no smoke pod"
  case $cmd in  # the operator's pods, ready
    *install.sh*) printf '%s\n' "$operator_pod" >"$W/operator-pod.json"; "$PY" "$KUBE_TOOLS/kube_api.py" seed --dir "$KUBE_DIR" "$W/operator-pod.json" >/dev/null ;;
  esac
done < "$W/commands"

cd "$W/run"
# What the steps left behind.
locks=(./*.lock.json)
[[ ${#locks[@]} == 1 && -f ${locks[0]} ]] || fail "build wrote no lock, or several: ${locks[*]}"
lock=${locks[0]}
while read -r source digest; do
  dst=$SITE/gpu/${source#*/}
  got=$(skopeo inspect --raw --tls-verify=false "docker://$dst" | sha256sum | cut -d' ' -f1)
  [[ "sha256:$got" == "$digest" ]] || fail "$dst: sha256:$got, the lock's site digest is $digest"
done < <("$PY" -c 'import json,sys; [print(i["source"], i.get("siteDigest", i["digest"])) for i in json.load(open(sys.argv[1]))["images"]]' "$lock")
if [ -n "$clients" ]; then
  # One release, deployed (a dry run that installed would have made a v2), the
  # time-slicing ConfigMap, and the smoke pod pulling the CUDA image from the site.
  kube_requests 'r["method"] == "POST"' >"$W/posts"
  "$PY" - "$W/posts" "$SITE" <<'PYEOF' || fail "what reached the cluster (above)"
import json, sys
posts = [json.loads(l) for l in open(sys.argv[1])]
releases = [r["body"]["metadata"]["name"] for r in posts if r["path"] == "/api/v1/namespaces/gpu-operator/secrets"]
assert releases == ["sh.helm.release.v1.gpu-operator.v1"], releases
cms = [r["body"]["metadata"]["name"] for r in posts if r["path"] == "/api/v1/namespaces/gpu-operator/configmaps"]
assert len(cms) == 1, cms
pods = [r["body"] for r in posts if r["path"] == "/api/v1/namespaces/gpu-operator/pods"]
assert [p["metadata"]["name"] for p in pods] == ["gpubundle-cuda-smoke"], pods
image = pods[0]["spec"]["containers"][0]["image"]
assert image.startswith(sys.argv[2] + "/gpu/nvidia/cuda:"), image
PYEOF
fi
[[ -s site.inventory.json ]] || fail "inventory wrote nothing"
"$GB" --json bundle inspect update.bundle > update.json || fail "bundle inspect update.bundle"
[[ $("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["delta"])' update.json) == True ]] || fail "update.bundle is not a delta"
# Image bytes, not file sizes: the kit and the lock ride in every bundle.
blob_bytes() { "$PY" -c 'import sys, tarfile; print(sum(m.size for m in tarfile.open(sys.argv[1]) if m.name.startswith("oci/blobs/")))' "$1"; }
full=$(blob_bytes site-a.bundle) delta=$(blob_bytes update.bundle)
(( full > 0 )) || fail "site-a.bundle carries no blobs"
(( delta * 10 < full )) || fail "the delta bundle carries what the site has: $delta blob bytes, the full one $full"
echo "ok: site-a.bundle $full blob bytes, update.bundle (nothing changed since the inventory) $delta blob bytes"
if [ -z "$clients" ]; then
  echo "SKIP: the other README commands passed; install.sh and verify.sh need the real clients: $KUBE_SKIP"
  exit 77
fi
echo "quickstart: ok ($n README commands)"
