#!/usr/bin/env bash
# `gpubundle node` and the lean gpubundle-node: glibc is their only shared
# library; on this GPU-less machine every check is SKIP with a reason (exit
# 3); against a fake node tree with the stand-in NVML/CUDA libraries
# (tests/fakes) the same binary passes, and fails on a broken GPU.
set -euo pipefail
gpubundle=$(realpath "$1")
lean=$(realpath "$2")
fakes=$(realpath "$3")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. Only glibc is linked dynamically: the binary runs on a node image that
#    has none of gpubundle's libraries.
needed=$(readelf -d "$lean" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p')
for lib in $needed; do
  case $lib in
    libc.so.6 | libm.so.6 | libdl.so.2 | libpthread.so.0 | ld-linux-x86-64.so.2 | ld-linux-aarch64.so.1) ;;
    *) fail "gpubundle-node needs $lib" ;;
  esac
done
echo "ok: gpubundle-node needs only: $(echo $needed)"

# 2. This machine: no GPU, no driver. Every check SKIP with a reason, exit 3.
if [[ -e /proc/driver/nvidia/version ]]; then
  echo "note: this machine has an NVIDIA driver; the no-GPU part is not run"
else
  rc=0; env -i "$lean" check >out.txt 2>err.txt || rc=$?
  [[ $rc == 3 ]] || { cat out.txt err.txt; fail "no-GPU check exited $rc, want 3"; }
  grep -E '^(PASS|FAIL)' out.txt && fail "a check other than SKIP on a machine without GPU"
  while read -r status check reason; do
    [[ $status == node ]] && continue
    [[ $status == SKIP && -n $reason ]] || fail "line without a reason: $status $check"
  done <out.txt
  grep 'libnvidia-ml.so.1 not found (searched' out.txt >/dev/null || fail "NVML skip does not say where it looked"
  grep '/usr/local/nvidia/lib64' out.txt >/dev/null || fail "the driver install folders are not searched"
  rc=0; "$gpubundle" node check >main.txt 2>&1 || rc=$?
  [[ $rc == 3 ]] || fail "gpubundle node check exited $rc"
  diff out.txt main.txt || fail "gpubundle node check and gpubundle-node differ"
  # A recipe that lists GPUs turns the empty bus into a failure.
  cat >b200.yaml <<'YAML'
apiVersion: gpubundle/v1
kind: Recipe
metadata: {name: b200-host}
operator: {version: v26.7.0}
target: {gpus: [B200], os: ubuntu24.04, kernels: [6.8.0-1015-nvidia], platforms: [linux/amd64]}
driver: {mode: host, version: "580.105.08", kernelModuleType: open}
YAML
  rc=0; "$lean" check --recipe b200.yaml >out.txt 2>&1 || rc=$?
  [[ $rc == 1 ]] || fail "missing B200 exited $rc, want 1"
  grep -E '^FAIL  gpus +no NVIDIA GPU on the PCI bus; b200.yaml lists B200' out.txt >/dev/null || { cat out.txt; fail "gpus line"; }
  echo "ok: no GPU here: SKIP lines with reasons, exit 3; with a recipe, exit 1"
fi

# 3. A fake node: sysfs/proc/dev tree plus the stand-in libraries.
root=$work/node
mk() { mkdir -p "$(dirname "$root/$1")"; printf '%s\n' "$2" >"$root/$1"; }
pci=sys/bus/pci/devices/0000:3b:00.0
mk $pci/vendor 0x10de; mk $pci/device 0x2335; mk $pci/class 0x030200
mk proc/driver/nvidia/version "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build"
mk sys/module/nvidia/version 580.159.04
mk proc/sys/kernel/osrelease 6.8.0-45-generic
mk proc/sys/kernel/arch x86_64
mk etc/os-release $'ID=ubuntu\nVERSION_ID="24.04"'
mk proc/1/comm nvidia-persiste
for d in nvidia0 nvidiactl nvidia-uvm nvidia-uvm-tools; do mk dev/$d ""; done

# detect writes a target section that the recipe parser takes as it is.
"$lean" detect --root "$root" -o target.yaml
grep -- '- H200-SXM-141GB  # 1 on this node' target.yaml >/dev/null || fail "detect: $(cat target.yaml)"
{ printf 'apiVersion: gpubundle/v1\nkind: Recipe\nmetadata: {name: detected}\noperator: {version: v26.7.0}\n'
  grep -v '^#' target.yaml
  printf 'driver: {mode: host, version: "580.159.04", kernelModuleType: open}\nmig: {strategy: single, config: all-disabled}\n'
} >detected.yaml
rc=0; "$lean" --json check --recipe detected.yaml --root "$root" --lib-dir "$fakes" --xid-wait-ms 10 >check.json || rc=$?
[[ $rc == 0 ]] || { cat check.json; fail "fake node against its detected recipe exited $rc"; }
python3 - check.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = {c["check"]: c["status"] for c in r["checks"]}
for c in ("gpus", "os", "kernel", "driver", "devices", "nvml", "mig", "ecc", "signals", "cuda", "persistenced"):
    assert s[c] == "PASS", (c, s[c], r["checks"])
assert r["expected"]["driverVersion"] == "580.159.04" and r["exitCode"] == 0
PY
echo "ok: detect -> recipe -> check passes on a fake node (JSON)"

rc=0; FAKE_CUDA_CORRUPT=5 "$lean" check --recipe detected.yaml --root "$root" --lib-dir "$fakes" --xid-wait-ms 10 >out.txt || rc=$?
[[ $rc == 1 ]] || fail "broken GPU exited $rc"
grep -E '^FAIL  cuda +GPU0: 5 of [0-9]+ results wrong' out.txt >/dev/null || { cat out.txt; fail "cuda line"; }
echo "ok: wrong CUDA results fail, exit 1"

# 4. Bad input: one line naming the file, exit 2.
rc=0; "$lean" check --lock missing.lock.json 2>err.txt || rc=$?
[[ $rc == 2 && $(wc -l <err.txt) == 1 ]] || fail "missing lock: exit $rc, $(cat err.txt)"
grep missing.lock.json err.txt >/dev/null || fail "missing lock not named"
printf 'apiVersion: gpubundle/v1\nkind: Recipe\nmetadata: {name: x}\ntarget: {gpuz: [H200]}\n' >bad.yaml
rc=0; "$lean" check --recipe bad.yaml 2>err.txt || rc=$?
[[ $rc == 2 ]] || fail "bad recipe exited $rc"
grep 'bad.yaml' err.txt >/dev/null || fail "bad recipe not named: $(cat err.txt)"
rc=0; "$lean" check --lock a --recipe b 2>err.txt || rc=$?
[[ $rc == 2 ]] || fail "--lock with --recipe exited $rc"
echo "ok: bad input exits 2 naming the file"
