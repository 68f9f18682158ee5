#!/usr/bin/env bash
# gpubundle resolve as a user runs it: exit codes, one-line errors, --json,
# -o, and the examples against the stand-in v26.7.0 chart (tests/tools/chart.py);
# with the real chart values in ../shared (GB_SHARED_DIR), against those for
# v26.7.0 and v24.9.2, and B200 with driver 550 on v24.9.2; kernelModuleType
# auto pinned from the GPUs and the driver's installer; and the Kata
# manager and DRA driver, resolve and overrides, over every shipped chart.
set -euo pipefail
gpubundle=$1
src=${GB_SOURCE_DIR:?}
shared=${GB_SHARED_DIR:-$src/../shared}/upstream/gpu-operator
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$src/tests/tools/chart.py" --release v26.7.0 --out "$work/standin" >/dev/null
declare -A chart=([v26.7.0]=$work/standin)
if [[ -d $shared ]]; then
  chart=([v26.7.0]=$shared/v26.7.0 [v24.9.2]=$shared/v24.9.2)
else
  echo "note: $shared is absent: the stand-in v26.7.0 chart only; the v24.9.2 and B200 checks against the real chart values are skipped"
fi
fail() { echo "FAIL: $*"; exit 1; }
expect_rc() {  # expect_rc CODE CMD...: run, capture stdout/stderr, check the exit code
  local want=$1; shift
  set +e; "$@" >"$work/out" 2>"$work/err"; local rc=$?; set -e
  [[ $rc == "$want" ]] || { cat "$work/out" "$work/err"; fail "exit $rc, wanted $want: $*"; }
}

# Help exits 0 and shows resolve's example (cli-docs checks every command).
expect_rc 0 "$gpubundle" --help
expect_rc 0 "$gpubundle" resolve --help
grep -q '^Example' "$work/out" || fail "resolve --help has no example"
expect_rc 2 "$gpubundle" no-such-command
expect_rc 2 "$gpubundle" resolve

# All three driver modes on both releases, as JSON.
for tag in "${!chart[@]}"; do
  dir=$src/examples; [[ $tag == v24.9.2 ]] && dir=$src/examples/v24.9.2
  for mode in conventional precompiled host; do
    expect_rc 0 "$gpubundle" resolve "$dir/$mode.yaml" --chart "${chart[$tag]}" --json
    python3 - "$work/out" "$mode" "$tag" <<'PY' || fail "$tag $mode: wrong images"
import json, sys
lock = json.load(open(sys.argv[1])); mode, tag = sys.argv[2], sys.argv[3]
src = {i["source"] for i in lock["images"]}
drivers = sorted(s for s in src if s.startswith("nvcr.io/nvidia/driver:"))
assert lock["operator"]["version"] == tag
assert f"nvcr.io/nvidia/gpu-operator:{tag}" in src, src
branch = "580" if tag == "v26.7.0" else "550"
if mode == "conventional":
    assert drivers == [f"nvcr.io/nvidia/driver:{lock['driver']['version']}-ubuntu22.04"], drivers
elif mode == "precompiled":
    assert drivers == [f"nvcr.io/nvidia/driver:{branch}-{k}-ubuntu22.04" for k in sorted(lock["target"]["kernels"])], drivers
else:
    assert drivers == [] and not any("k8s-driver-manager" in s for s in src), src
for i in lock["images"]:
    assert i["digest"] == "" and i["destination"].startswith("registry.site.internal:5000/gpu/"), i
PY
  done
done

# The table view, and -o writing the lock atomically.
expect_rc 0 "$gpubundle" resolve "$src/examples/precompiled.yaml" --chart "${chart[v26.7.0]}" -o "$work/site.lock.json"
grep -q 'nvcr.io/nvidia/driver:580-5.15.0-1065-nvidia-ubuntu22.04' "$work/out" || fail "table lacks the precompiled driver"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/site.lock.json" || fail "lock is not JSON"
ls "$work" | grep '\.tmp\.' >/dev/null && fail "temp file left behind"

# B200 with driver 550: refused, naming both, exit 2.
if [[ -n ${chart[v24.9.2]:-} ]]; then
  expect_rc 2 "$gpubundle" resolve "$src/examples/b200-driver-550.yaml" --chart "${chart[v24.9.2]}"
  grep -q '^error: b200-driver-550.yaml:12: driver.version 550.127.08 does not support B200 (needs >= 570' "$work/err" ||
    { cat "$work/err"; fail "B200 message"; }
fi

# A driver branch newer than the release's component matrix lists: refused for
# a driver container with the release that lists it; a warning for a host driver.
printf 'apiVersion: gpubundle/v1\nkind: Recipe\noperator: {version: v26.7.0}\ntarget: {gpus: [L4], os: ubuntu22.04}\ndriver: {version: "620.10.01"}\n' >"$work/new.yaml"
expect_rc 2 "$gpubundle" resolve "$work/new.yaml" --chart "${chart[v26.7.0]}" -o "$work/new.lock.json"
[[ $(cat "$work/err") == 'error: new.yaml:5: driver.version 620.10.01 is newer than GPU Operator v26.7.0 supports: its component matrix lists driver branches 535, 580, 595, 610; pin driver.branch: "610" or older' ]] ||
  { cat "$work/err"; fail "newer branch message"; }
[[ ! -e $work/new.lock.json ]] || fail "lock written for a refused branch"
sed -i 's/^driver: {/driver: {mode: host, /' "$work/new.yaml"
expect_rc 0 "$gpubundle" resolve "$work/new.yaml" --chart "${chart[v26.7.0]}" -o "$work/new.lock.json"
grep -q 'driver.version 620.10.01 is newer than GPU Operator v26.7.0 supports.*(a host driver meets the operator only through NVML)' "$work/err" ||
  { cat "$work/err"; fail "host driver: no warning"; }

# kernelModuleType auto is pinned as the driver container resolves it on the
# nodes: nvidia-installer 580 recommends proprietary when a V100 is present;
# GH200 (open only) with V100 (no open modules) fits no one type.
printf 'apiVersion: gpubundle/v1\nkind: Recipe\noperator: {version: v26.7.0}\ntarget: {gpus: [V100-SXM2-16GB, H100-SXM5-80GB], os: ubuntu22.04}\ndriver: {version: "580.105.08"}\n' >"$work/kmt.yaml"
expect_rc 0 "$gpubundle" resolve "$work/kmt.yaml" --chart "${chart[v26.7.0]}" -o "$work/kmt.lock.json"
[[ $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["driver"]["kernelModuleType"])' "$work/kmt.lock.json") == proprietary ]] ||
  fail "V100 + H100 with 580: auto not pinned to proprietary"
grep -q 'auto pinned to proprietary: nvidia-installer 580.105.08 recommends proprietary for V100-SXM2-16GB + H100-SXM5-80GB' "$work/err" ||
  { cat "$work/err"; fail "auto pin: no reason given"; }
# GH200 nodes and V100 nodes: each node's container picks, so auto stays auto;
# asked for one type, it is refused.
sed -i 's/V100-SXM2-16GB, H100-SXM5-80GB/GH200, V100-SXM2-16GB/' "$work/kmt.yaml"
expect_rc 0 "$gpubundle" resolve "$work/kmt.yaml" --chart "${chart[v26.7.0]}" -o "$work/kmt.lock.json"
[[ $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["driver"]["kernelModuleType"])' "$work/kmt.lock.json") == auto ]] &&
  grep -q 'driver.kernelModuleType stays auto: GH200-480GB needs open kernel modules and V100-SXM2-16GB has none' "$work/err" ||
  { cat "$work/err"; fail "GH200 + V100: auto does not stay auto"; }
sed -i 's/version: "580.105.08"/version: "580.105.08", kernelModuleType: open/' "$work/kmt.yaml"
expect_rc 2 "$gpubundle" resolve "$work/kmt.yaml" --chart "${chart[v26.7.0]}"
[[ $(wc -l <"$work/err") == 1 ]] && grep -q '^error: kmt.yaml:4: target.gpus: GH200-480GB (grace-hopper) needs open kernel modules and V100-SXM2-16GB (volta) has none' "$work/err" ||
  { cat "$work/err"; fail "GH200 + V100 refusal"; }

# Bad input: one line naming the file and field, exit 2, no lock written.
printf 'apiVersion: gpubundle/v1\nkind: Recipe\noperator: {version: v24.9.2}\ntarget: {gpus: [L4], os: ubuntu22.04}\ndriver: {mode: compiled}\n' >"$work/bad.yaml"
expect_rc 2 "$gpubundle" resolve "$work/bad.yaml" --chart "${chart[v26.7.0]}" -o "$work/bad.lock.json"
[[ $(cat "$work/err") == "error: bad.yaml:5: driver.mode: 'compiled' is not one of: conventional, precompiled, host" ]] || { cat "$work/err"; fail "bad mode message"; }
[[ ! -e $work/bad.lock.json ]] || fail "lock written for a bad recipe"
expect_rc 2 "$gpubundle" resolve "$work/missing.yaml"
grep -q 'missing.yaml' "$work/err" || fail "missing file not named"

# A remote chart not yet mirrored: says what to do.
sed 's/^operator:.*/operator: {version: v24.9.2, chart: "https:\/\/helm.example.invalid\/nvidia"}/' "$work/bad.yaml" | sed '/^driver:/d' >"$work/remote.yaml"
expect_rc 2 "$gpubundle" --store "$work/store" resolve "$work/remote.yaml"
grep -q 'is remote and not in the store yet: run `gpubundle mirror`' "$work/err" || { cat "$work/err"; fail "remote chart hint"; }
# Kata manager and DRA driver over every shipped chart: what resolve accepts,
# overrides expresses; where a release lacks one, exit 2 with one line naming
# the recipe line and what to do.
if [[ -d $shared ]]; then
  for dir in "$shared"/v*/; do
    tag=$(basename "$dir")
    read -r kata dra < <(python3 -c 'import sys, yaml; v = yaml.safe_load(open(sys.argv[1]))
print(int("repository" in (v.get("kataManager") or {})), int("draDriver" in v))' "$dir/values.yaml")
    head="apiVersion: gpubundle/v1\nkind: Recipe\nmetadata: {name: modes}\noperator: {version: $tag}\n"
    printf "${head}target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04, workloads: [vm-passthrough]}\ncomponents: {kataManager: true}\n" >"$work/kata.yaml"
    # The DRA driver needs branch 580; a release without it keeps its chart's driver
    # (580 is newer than v23.9-v24.6 support, which resolve would refuse too).
    driver='driver: {version: \"580.105.08\"}'
    [[ $dra == 1 ]] || driver='driver: {kernelModuleType: auto}'
    printf "${head}target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04}\n${driver}\ncomponents: {draDriver: true}\n" >"$work/dra.yaml"
    for what in kata dra; do
      if [[ ${!what} == 1 ]]; then
        expect_rc 0 "$gpubundle" -q resolve "$work/$what.yaml" --chart "$dir" -o "$work/$what.lock.json"
        expect_rc 0 "$gpubundle" -q overrides "$work/$what.lock.json" --registry registry.site:5000/gpu --chart "$dir" -o "$work/$what.$tag.kit"
        values=$work/$what.$tag.kit/values.yaml
        if [[ $what == kata ]]; then
          grep -q 'url: "registry.site:5000/gpu/nvidia/cloud-native/kata-gpu-artifacts:' "$values" || fail "$tag: kata artifacts not at the site"
          grep -q 'nvcr.io' "$values" && fail "$tag: values.yaml still names nvcr.io: $(grep nvcr.io "$values")"
        else
          python3 - "$values" <<'PY' || fail "$tag: DRA values"
import sys, yaml
v = yaml.safe_load(open(sys.argv[1]))
assert v["gpuCluster"]["deployCR"] is True and v["clusterPolicy"]["deployCR"] is False, v
assert v["driver"]["nvidiaDriverCRD"]["enabled"] is True, v["driver"]
assert v["draDriver"]["repository"] == "registry.site:5000/gpu/nvidia", v["draDriver"]
PY
        fi
      else
        expect_rc 2 "$gpubundle" resolve "$work/$what.yaml" --chart "$dir"
        want="error: $what.yaml:7: components.draDriver: chart gpu-operator $tag has no such component; remove components.draDriver"
        [[ $what == kata ]] && want="error: $what.yaml:6: components.kataManager is on, but GPU Operator $tag never deploys the Kata manager"
        [[ $(wc -l <"$work/err") == 1 && $(cat "$work/err") == "$want"* ]] || { cat "$work/err"; fail "$tag: $what refusal"; }
      fi
    done
  done
fi
echo "cli-resolve: ok"
