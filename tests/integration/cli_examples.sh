#!/usr/bin/env bash
# Every command's `--help` example runs as written (issue 27.8), in a scratch
# folder holding the files the examples name (site-a.yaml, registries.yaml,
# release.key, site-a.bundle, ...), against stand-ins: a docker-registry
# seeded as nvcr.io and registry.k8s.io (reached through registries.yaml, as a
# site would), a second one as the site registry, the stand-in GPU Operator
# chart (tests/tools/chart.py), a stand-in NVIDIA installer
# (fixtures/make-installer.sh) and this machine's kernel build tree.
#
# Mapped, as text, before an example runs (nothing else is changed):
#   registry.site.internal:5000  -> http://127.0.0.1:PORT of the site stand-in
#   /srv/gpubundle               -> the scratch store (the same one the
#                                   examples with --store gpubundle-store use)
#   /media/usb/                  -> a scratch folder
#   /lib/modules/6.1.0-57-amd64/build -> this machine's kernel build tree
#   --listen :5000               -> a free loopback port (serve, run in the
#                                   background and stopped with SIGTERM)
# The examples run in the order below, so that one's output is the next one's
# input, as on a real build machine. Each must exit 0, or the code its command
# documents (node check: 0 ok, 1 a check failed, 3 nothing checked: there is
# no GPU here). A failure names the command and its example.
# Usage: cli_examples.sh PATH/TO/gpubundle   (GB_SOURCE_DIR: the source tree)
GB=$(realpath "$1")
src=${GB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
source "$(dirname "$0")/mirror_lib.sh"
kbuild=/lib/modules/6.1.0-57-amd64/build
[[ -f $kbuild/include/generated/utsrelease.h ]] || kbuild=$(ls -d /lib/modules/*/build 2>/dev/null | head -n1 || true)
[[ -n $kbuild && -f $kbuild/include/generated/utsrelease.h ]] || { echo "SKIP: no kernel build tree (linux-headers)"; exit 77; }
for tool in make gcc openssl makeself; do command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }; done
kver=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$kbuild/include/generated/utsrelease.h")

S=$W/run
mkdir -p "$S/bin" "$S/media-usb"
ln -s "$GB" "$S/bin/gpubundle"
export PATH=$S/bin:$PATH GB_KEY_PASS=example-passphrase SOURCE_DATE_EPOCH=1764460800 GPUBUNDLE_LOCK_WAIT_S=10
unset GPUBUNDLE_STORE
cd "$S" || exit 1

# --- the stand-ins and the files the examples name ---------------------------
up=$(start_registry up)
site=$(start_registry site)
"$PY" "$TOOLS/helmrepo.py" pack --release v26.7.0 --out "$S" >/dev/null   # gpu-operator-v26.7.0.tgz
cp -rL "$src/examples" "$S/examples"
gpubundle -q resolve examples/precompiled.yaml --chart gpu-operator-v26.7.0.tgz -o "$W/seed.lock.json" || fail "resolve for the seed"
"$PY" "$TOOLS/seed.py" --registry "$up" --plain-http --lock "$W/seed.lock.json" --layer-kb 16 > "$W/seed.json" || fail "seed"
upstream_config registries.yaml "$up"
# site-a.yaml: the precompiled example as site "site-a", with the stand-in chart.
sed -e 's/^metadata: {name: site-precompiled}/metadata: {name: site-a}/' \
    -e 's|^  version: v26.7.0|  version: v26.7.0\n  chart: gpu-operator-v26.7.0.tgz|' examples/precompiled.yaml > site-a.yaml
grep -q 'name: site-a}' site-a.yaml && grep -q 'chart: gpu-operator' site-a.yaml || fail "site-a.yaml"
gpubundle keys generate --out release >/dev/null
mkdir results && cp examples/acceptance-results/*.json results/
openssl req -x509 -newkey rsa:2048 -nodes -keyout mok.key -out mok.crt -days 30 -subj "/CN=gpubundle example MOK" 2>/dev/null
mkdir mod
printf '%s\n' '#include <linux/module.h>' 'static int __init ex_init(void) { return 0; }' 'static void __exit ex_exit(void) {}' \
  'module_init(ex_init);' 'module_exit(ex_exit);' 'MODULE_LICENSE("GPL");' > mod/nvidia.c
echo 'obj-m := nvidia.o' > mod/Kbuild
make -s -C "$kbuild" M="$S/mod" modules > "$W/kbuild.log" 2>&1 || { tail -n 20 "$W/kbuild.log"; fail "kbuild of a stand-in nvidia.ko"; }
cp mod/nvidia.ko nvidia.ko
bash "$src/tests/integration/fixtures/make-installer.sh" "$W/inst" 580.95.05 >/dev/null || fail "stand-in installer"
cp "$W/inst/NVIDIA-Linux-x86_64-580.95.05.run" .
# site.yaml: a host-driver recipe for this kernel (node-image bake); site.lock.json its lock.
cat > site.yaml <<R
apiVersion: gpubundle/v1
kind: Recipe
metadata: {name: site}
operator: {version: v26.7.0, chart: gpu-operator-v26.7.0.tgz}
target:
  gpus: [H200-SXM-141GB]
  os: ubuntu22.04
  kernels: [$kver]
  platforms: [linux/amd64]
driver: {mode: host, version: "580.95.05", kernelModuleType: open}
destination: {registry: registry.site.internal:5000, prefix: gpu}
R
gpubundle -q resolve site.yaml -o site.lock.json || fail "resolve site.yaml"
# precompiled.yaml: precompiled drivers for this kernel (driver build); its
# base, the conventional driver image, comes from upstream like the rest.
cat > precompiled.yaml <<R
apiVersion: gpubundle/v1
kind: Recipe
metadata: {name: precompiled}
operator: {version: v26.7.0, chart: gpu-operator-v26.7.0.tgz}
target:
  gpus: [H200-SXM-141GB]
  os: ubuntu22.04
  kernels: [$kver]
  platforms: [linux/amd64]
driver: {mode: precompiled, branch: "580", kernelModuleType: open}
extraImages: [nvcr.io/nvidia/driver:580.95.05-ubuntu22.04]
R
gpubundle -q resolve precompiled.yaml -o "$W/precompiled.seed.lock.json" || fail "resolve precompiled.yaml"
"$PY" "$TOOLS/seed.py" --registry "$up" --plain-http --lock "$W/precompiled.seed.lock.json" --layer-kb 16 > /dev/null ||
  fail "seed precompiled"
gpubundle -q mirror precompiled.yaml --registry-config registries.yaml -o precompiled.lock.json || fail "mirror precompiled.yaml"

# --- the examples -------------------------------------------------------------
# example PATH [CODES]: runs `gpubundle PATH --help`'s example; CODES (default
# "0") are the exit codes its command documents for this machine.
n=0
declare -A ran  # example text -> the command whose example it is
example() {
  local path=$1 codes=${2:-0} text cmd rc=0
  # shellcheck disable=SC2086  # a path is several words
  text=$(gpubundle $path --help | awk '/^Example:/ { getline; sub(/^  /, ""); print; exit }')
  [[ -n $text ]] || fail "gpubundle $path --help has no example"
  if [[ -n ${ran[$text]:-} ]]; then  # a parent shows its first command's example
    n=$((n + 1))
    pass "gpubundle $path: the example of gpubundle ${ran[$text]}, which ran"
    return
  fi
  ran[$text]=$path
  cmd=${text//registry.site.internal:5000/http://$site}
  cmd=${cmd//\/srv\/gpubundle/$S/gpubundle-store}
  cmd=${cmd//\/media\/usb\//$S/media-usb/}
  cmd=${cmd//\/lib\/modules\/6.1.0-57-amd64\/build/$kbuild}
  cmd=${cmd//6.1.0-57-amd64/$kver}
  bash -c "$cmd" > "$W/ex.out" 2> "$W/ex.err" || rc=$?
  if [[ " $codes " != *" $rc "* ]]; then
    tail -n 15 "$W/ex.err" >&2
    fail "the example of 'gpubundle $path' exited $rc (wanted $codes): $text"
  fi
  n=$((n + 1))
  pass "gpubundle $path: $text (exit $rc)"
}

example "keys generate"            # the passphrase from GB_KEY_PASS
example "keys"
[[ -f site-a.key && -f site-a.pub ]] || fail "keys generate wrote no site-a.key/.pub"
example "keys id"
example "resolve"
example "mirror"                   # writes site-a.lock.json beside site-a.yaml, with digests
example "store ls"
example "store fsck"
example "store"
example "store gc"
example "keys sign"
example "keys verify"
example "keys sign-module"
example "keys verify-module"
example "bundle"                   # create site-a.bundle && verify it
example "bundle inspect"
example "bundle create"            # --split 4G to /media/usb
# bundle verify names two volumes: split site-a.bundle in two first.
for pct in 60 70 80 90 50; do
  rm -f site-a-split.bundle*
  gpubundle -q bundle create site-a.lock.json -o site-a-split.bundle --key release.key \
    --split $(($(stat -c %s site-a.bundle) * pct / 100)) || fail "split bundle"
  [[ -f site-a-split.bundle.002 && ! -e site-a-split.bundle.003 ]] && break
done
[[ -f site-a-split.bundle.002 && ! -e site-a-split.bundle.003 ]] || { ls site-a-split.bundle*; fail "no split of site-a.bundle in two volumes"; }
mv site-a-split.bundle.001 site-a.bundle.001
mv site-a-split.bundle.002 site-a.bundle.002
example "bundle verify"
example "import"                   # into the site stand-in; the kit goes to site-a-install-kit
# serve runs until SIGTERM: its example runs in the background on a free
# port (":5000" mapped, as text, like the registry above), answers the pull
# API over TLS with its certificate, and stops cleanly.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout serve.key -out serve.crt -days 2 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
text=$(gpubundle serve --help | awk '/^Example:/ { getline; sub(/^  /, ""); print; exit }')
ran[$text]=serve
sport=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cmd=${text//--listen :5000/--listen 127.0.0.1:$sport}
[[ $cmd != "$text" ]] || fail "the serve example no longer listens on :5000: $text"
bash -c "exec $cmd" > "$W/serve.out" 2> "$W/serve.err" &
serve_pid=$!
for _ in $(seq 300); do curl -sf -o /dev/null --cacert serve.crt "https://127.0.0.1:$sport/v2/" && break; sleep 0.1; done
curl -sf --cacert serve.crt "https://127.0.0.1:$sport/v2/_catalog" | grep -q '"repositories"' ||
  { tail -n 5 "$W/serve.err" >&2; fail "the example of 'gpubundle serve' does not answer: $text"; }
kill -TERM "$serve_pid"
rc=0
wait "$serve_pid" || rc=$?
[[ $rc == 0 ]] || fail "the example of 'gpubundle serve' exited $rc on SIGTERM: $text"
n=$((n + 1))
pass "gpubundle serve: $text (answered, then exit 0 on SIGTERM)"
example "inventory"
# diff: the next lock leaves out one image and moves another to a new digest.
"$PY" - <<'PYEOF'
import json
lock = json.load(open("site-a.lock.json"))
lock["images"] = lock["images"][1:]
lock["images"][0]["digest"] = "sha256:" + "0" * 64
json.dump(lock, open("site-a-next.lock.json", "w"), indent=2)
PYEOF
example "diff"
example "overrides"
example "report"
example "build"                    # examples/precompiled.yaml: its chart from the store, where mirror put it
example "node detect"
example "node check" "0 1 3"
example "node" "0 1 3"
example "node-image bake"          # site.yaml ... --lock site.lock.json; the overlay goes into the store
example "node-image"
example "node-image export"        # the only overlay in the store
example "driver build"             # precompiled.yaml ... --lock precompiled.lock.json
example "store push"               # the driver image just built, to the site registry
example "driver plan"              # precompiled.lock.json's one kernel
example "driver"
# driver tool-image: precompiled.yaml gets an apt source, a stand-in of real
# Debian packages (tests/tools/apt_standin.py) serving what the image starts
# from and this kernel's headers; without them at hand offline it is skipped,
# saying so.
mapfile -t tool_names < <(gpubundle driver tool-image precompiled.yaml --list)
tool_with=(--with "linux-headers-$kver")
for p in "${tool_names[@]}"; do tool_with+=(--with "$p"); done
trap '"$PY" "$TOOLS/apt_standin.py" stop --dir "$W/apt" >/dev/null 2>&1 || true; cleanup' EXIT
rc=0
"$PY" "$TOOLS/apt_standin.py" start --dir "$W/apt" "${tool_with[@]}" > "$W/apt.env" || rc=$?
if [[ $rc == 77 ]]; then
  echo "skipped: the example of gpubundle driver tool-image (the Debian packages are not at hand offline)"
else
  [[ $rc == 0 ]] || fail "apt stand-in for driver tool-image: rc $rc"
  source "$W/apt.env"
  cat >> precompiled.yaml <<YAML
packages:
  sources:
    - {name: debian, type: apt, url: "$APT_URL", suites: [$APT_SUITE], components: [$APT_COMPONENT], keyring: "$APT_KEYRING"}
YAML
  example "driver tool-image"      # precompiled.yaml --lock precompiled.lock.json
  grep -q '"toolImage"' precompiled.lock.json || fail "driver tool-image --lock left precompiled.lock.json without it"
fi
example "completion"

# Every command and nested command ran its own example.
mapfile -t paths < <(gpubundle completion --list)
for p in "${paths[@]}"; do
  # shellcheck disable=SC2086
  gpubundle $p --help | awk '/^Example:/ { getline; print; exit }' | grep -q "gpubundle \(--store [^ ]* \)\?$p\b" ||
    fail "the example of 'gpubundle $p' does not run 'gpubundle $p'"
done
echo "cli-examples: $n examples ran as written"
