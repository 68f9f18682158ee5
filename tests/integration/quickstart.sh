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
#   - helm and kubectl are stubs playing a healthy cluster with one GPU node.
# Then checks what each step should have left: the bundle, the images at the
# site with the lock's site digests, the kit, the inventory, and a delta bundle that
# carries no blob the site has.
# Usage: quickstart.sh GPUBUNDLE   (GB_SOURCE_DIR: the repository)
set -euo pipefail
GB=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=${GB_SOURCE_DIR:?}
TOOLS=$src/tests/tools
source "$src/scripts/standin.sh"
command -v docker-registry skopeo >/dev/null || { echo "SKIP: docker-registry or skopeo missing"; exit 77; }
W=$(mktemp -d /tmp/gb-quickstart.XXXXXX)
trap 'standin_stop "$W/up"; rm -rf "$W"' EXIT
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

# Stub helm and kubectl: a reachable cluster with one healthy GPU node.
cat >"$W/bin/helm" <<'EOF'
#!/usr/bin/env bash
printf '%s\n' "$*" >>"$STUB_LOG/helm.args"
EOF
cat >"$W/bin/kubectl" <<'EOF'
#!/usr/bin/env bash
printf '%s\n' "$*" >>"$STUB_LOG/kubectl.args"
case "$*" in
  "config current-context") echo stub-context ;;
  "get namespace gpu-operator") [ -e "$STUB_LOG/installed" ] || exit 1 ;;
  "-n gpu-operator get pods -o jsonpath="*) printf 'gpu-operator-1 Running True\nnvidia-cuda-validator-x Succeeded False\n' ;;
  "get nodes -l nvidia.com/gpu.present=true -o go-template="*) printf 'node-a cpu=64 nvidia.com/gpu=8 pods=110\n' ;;
  "get nodes -l nvidia.com/gpu.present=true -o jsonpath="*) printf 'node-a all-disabled success\n' ;;
  "-n gpu-operator apply -f -") cat >"$STUB_LOG/smoke-pod.yaml" ;;
  "-n gpu-operator get pod gpubundle-cuda-smoke -o jsonpath={.status.phase}") echo Succeeded ;;
esac
exit 0
EOF
chmod +x "$W/bin/helm" "$W/bin/kubectl"
export STUB_LOG=$W/log
mkdir -p "$STUB_LOG"

n=0
while IFS= read -r line; do
  cmd=${line//registry.site.internal:5000/http://$SITE}
  cmd=${cmd//[\[\]]/}
  n=$((n + 1))
  echo "quickstart $n: $cmd"
  (cd "$W/run" && PATH="$W/bin:$PATH" GPUBUNDLE_STORE="$W/store" bash -euo pipefail -c "$cmd") ||
    fail "README Quick start, command $n failed: $line"
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
grep -q "^upgrade --install gpu-operator .*--dry-run" "$STUB_LOG/helm.args" || fail "install.sh --dry-run did not run helm with --dry-run"
(( $(grep -v -e '--dry-run' "$STUB_LOG/helm.args" | grep -c '^upgrade --install gpu-operator ') == 1 )) || fail "install.sh did not run helm upgrade --install once"
[[ -f $STUB_LOG/smoke-pod.yaml ]] || fail "verify.sh ran no smoke pod"
grep -q "image: \"$SITE/gpu/nvidia/cuda:" "$STUB_LOG/smoke-pod.yaml" || fail "smoke pod image is not at the site: $(cat "$STUB_LOG/smoke-pod.yaml")"
[[ -s site.inventory.json ]] || fail "inventory wrote nothing"
"$GB" --json bundle inspect update.bundle > update.json || fail "bundle inspect update.bundle"
[[ $("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["delta"])' update.json) == True ]] || fail "update.bundle is not a delta"
# Image bytes, not file sizes: the kit and the lock ride in every bundle.
blob_bytes() { "$PY" -c 'import sys, tarfile; print(sum(m.size for m in tarfile.open(sys.argv[1]) if m.name.startswith("oci/blobs/")))' "$1"; }
full=$(blob_bytes site-a.bundle) delta=$(blob_bytes update.bundle)
(( full > 0 )) || fail "site-a.bundle carries no blobs"
(( delta * 10 < full )) || fail "the delta bundle carries what the site has: $delta blob bytes, the full one $full"
echo "ok: site-a.bundle $full blob bytes, update.bundle (nothing changed since the inventory) $delta blob bytes"
echo "quickstart: ok ($n README commands)"
