#!/usr/bin/env bash
# Driver build matrix (issue 32; not a test): the six-entry precompiled matrix of
# tests/integration/driver_matrix.sh (two Debian ABIs x three flavours, headers
# from a signed apt stand-in, the stand-in installer, a real docker-registry as
# the build registry), run at 1, 2 and 6 entries at once, each entry in its own
# empty store as a Job's pod would be. For each width: the wall time, the CPU
# time, and where an entry's time goes (from its own log lines, stamped):
#   inputs   headers fetched from the apt source, the installer unpacked
#   kbuild   the kernel modules compiled and linked (make), signed when asked
#   image    the base image pulled, the layer written, the image stored
#   push     the image pushed to the build registry
# then the assembly (`build --driver-results`) of the six, and a projection to
# 100 entries on N nodes (printed with its assumptions).
# Usage: bench/driver_matrix.sh [BUILD_DIR]     Env: WIDTHS ("1 2 6")
set -euo pipefail
cd "$(dirname "$0")/.."
GB=$(realpath "${1:-build}")/builder/gpubundle
WIDTHS=${WIDTHS:-"1 2 6"}
HERE=$PWD/tests/integration
TOOLS=$PWD/tests/tools
# shellcheck source=scripts/standin.sh
source scripts/standin.sh
# shellcheck source=bench/measure.sh
source bench/measure.sh
[ -x "$GB" ] || { echo "no gpubundle at $GB (build first)" >&2; exit 2; }
W=$(mktemp -d /tmp/gb-bench-matrix.XXXXXX)
cleanup() {
  "$PY" "$TOOLS/apt_standin.py" stop --dir "$W/apt" >/dev/null 2>&1 || true
  standin_stop "$W"
  rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export TMPDIR=$W SOURCE_DATE_EPOCH=1764460800
# shellcheck source=tests/integration/driver_matrix_lib.sh
source "$HERE/driver_matrix_lib.sh"
matrix_setup
"$GB" -q resolve "$W/recipe.yaml" --chart "$W/helm/gpu-operator-v26.7.0.tgz" -o "$W/matrix.lock.json"
"$GB" driver plan "$W/matrix.lock.json" --recipe "$W/recipe.yaml" --push "$push" --installer "$run" --base "$base" \
  --registry-config "$W/build-registries.yaml" --format json > "$W/plan.json"
n=${#kernels[@]}

# One entry, its stderr lines stamped with seconds since it started.
entry() {  # entry WIDTH INDEX
  local d=$W/w$1
  "$PY" - "$d/$2.stamps" -- "$GB" --store "$d/store-$2" driver build --plan "$W/plan.json" --entry "$2" \
    --result "$d/results/$2.json" <<'PY'
import subprocess, sys, time
out = open(sys.argv[1], "w")
t0 = time.monotonic()
p = subprocess.Popen(sys.argv[3:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
for line in p.stderr:
    out.write("%.3f %s" % (time.monotonic() - t0, line))
out.write("%.3f end\n" % (time.monotonic() - t0))
sys.exit(p.wait())
PY
}
export -f entry
export GB W PY

# Phases from the stamps: the first "building ... modules" line starts kbuild,
# the first line after the last such build starts image, "push:" ends push.
phases() {  # phases WIDTH -> "inputs kbuild image push" summed over the entries
  "$PY" - "$W/w$1" "$n" <<'PY'
import re, sys
tot = [0.0, 0.0, 0.0, 0.0]
for i in range(int(sys.argv[2])):
    lines = [l.split(" ", 1) for l in open("%s/%d.stamps" % (sys.argv[1], i))]
    t = [float(a) for a, _ in lines]
    text = [b for _, b in lines]
    build = [k for k, s in enumerate(text) if re.match(r"building .* modules", s)]
    image_at = t[build[-1] + 1] if build and build[-1] + 1 < len(t) else t[-1]
    push_from = next((t[k] for k, s in enumerate(text) if s.startswith("push:") or "pushed" in s), t[-1])
    build_from = t[build[0]] if build else 0.0
    pushing = [k for k, s in enumerate(text) if s.startswith("push:")]
    end = t[-1]
    # push: from the end of the image step to the push summary line.
    image_end = next((t[k - 1] for k in pushing), end) if pushing else end
    tot[0] += build_from
    tot[1] += image_at - build_from
    tot[2] += max(0.0, image_end - image_at)
    tot[3] += max(0.0, end - image_end)
print(" ".join("%.1f" % x for x in tot))
PY
}

printf '%-7s %8s %8s %9s   %s\n' width wall cpu "entry avg" "where the entries' time went (s, summed): inputs kbuild image push"
declare -A wall
for w in $WIDTHS; do
  rm -rf "$W/w$w"
  mkdir -p "$W/w$w/results"
  t0=$(date +%s.%N)
  cpu=$( { /usr/bin/time -f '%U %S' bash -c "seq 0 $((n - 1)) | xargs -P $w -I{} bash -c 'entry $w {}'" >/dev/null; } 2>&1 | tail -1)
  t1=$(date +%s.%N)
  wall[$w]=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
  cpus=$(awk -v u="${cpu% *}" -v s="${cpu#* }" 'BEGIN{printf "%.1f", u+s}')
  avg=$(awk -v d="$W/w$w" -v n="$n" 'BEGIN{for(i=0;i<n;i++){f=d"/"i".stamps"; while((getline l < f)>0) last=l; split(last,a," "); s+=a[1]} printf "%.1f", s/n}')
  printf '%-7s %7ss %7ss %8ss   %s\n' "$w" "${wall[$w]}" "$cpus" "$avg" "$(phases "$w")"
done

# Assembly of the last width's results into a bundle.
last=${WIDTHS##* }
t0=$(date +%s.%N)
"$GB" --store "$W/assembly" -q build "$W/recipe.yaml" -o "$W/matrix.bundle" --key "$W/release.key" --lock "$W/assembled.lock.json" \
  --registry-config "$W/build-registries.yaml" --driver-results "$W/w$last"/results/*.json --json > "$W/assembly.json" 2>/dev/null
t1=$(date +%s.%N)
asm=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
drivers=$("$PY" -c 'import json,sys; print("%.1f" % json.load(open(sys.argv[1]))["phases"]["drivers"])' "$W/assembly.json")
echo "assembly of $n results: ${asm}s (of which pulling and checking the driver images: ${drivers}s), bundle $(du -h "$W/matrix.bundle" | cut -f1)"

# Projection: one entry per node at a time, each node like this machine.
one=$(awk -v a="${wall[1]:-0}" -v n="$n" 'BEGIN{printf "%.1f", a/n}')
[[ ${wall[1]:-} ]] || one=$(awk -v d="$W/w$last" -v n="$n" 'BEGIN{for(i=0;i<n;i++){f=d"/"i".stamps"; while((getline l < f)>0) last=l; split(last,a," "); s+=a[1]} printf "%.1f", s/n}')
per_pull=$(awk -v d="$drivers" -v n="$n" 'BEGIN{printf "%.2f", d/n}')
echo "projection to 100 entries: ceil(100/N) x ${one}s per entry + 100 x ${per_pull}s to assemble their images + the rest of the build"
for nodes in 1 10 25 50 100; do
  awk -v e="$one" -v p="$per_pull" -v N="$nodes" 'BEGIN{w=int((100+N-1)/N); printf "  N=%-4d %8.0fs matrix + %5.0fs assembly\n", N, w*e, 100*p}'
done
echo "assumptions: an entry costs what it costs here on a 2-core node (stand-in modules: a real open-module build is minutes,"
echo "the same on every width); every node has its own package mirror access and the registry keeps up (pushes are one"
echo "layer each); assembly pulls each image once, so it grows with the sum of the driver layers, not with N."
