#!/bin/bash
# Benchmark (not a test): gpubundle mirror vs skopeo copy --all vs a parallel
# curl (one process, --parallel), all from one loopback docker-registry; then a
# no-change re-mirror and peak RSS while mirroring one big layer. curl runs two
# ways: the same requests a mirror makes (every manifest, then every blob: the
# transfer limit, and the goals' peer), and the blobs alone, as earlier runs
# of this script did. The cold mirror and both curls run RUNS times each,
# interleaved, each from an empty output folder and after a sync (both outside
# the clock); for each run the registry's CPU time (/proc/PID/stat) and what
# was asked of it (its log: connections, requests by kind, bytes) are kept,
# and the medians are compared.
# Usage: bench/mirror.sh PATH/TO/gpubundle   (env: BIG_MB=1024, JOBS=8, RUNS=7,
#        RUNS_JSON=FILE appends each run's figures as JSON lines)
set -euo pipefail
GB=$(realpath "$1")
BIG_MB=${BIG_MB:-1024}
JOBS=${JOBS:-8}
RUNS=${RUNS:-7}
PY=/usr/bin/python3
TOOLS=$(cd "$(dirname "$0")/../tests/tools" && pwd)
source "$(dirname "$0")/../tests/integration/mirror_lib.sh"
source "$(dirname "$0")/measure.sh"
now() { date +%s.%N; }
secs() { "$PY" -c "print(f'{$2 - $1:.2f}')"; }

SRC=$(start_registry bench)
echo "seeding --set bench ..." >&2
"$PY" "$TOOLS/seed.py" --registry "$SRC" --plain-http --set bench > "$W/seed.json"
make_lock "$W/bench.lock.json" "$W/seed.json" linux/amd64,linux/arm64
registry_config "$W/reg.yaml" "$SRC" "http://$SRC"
total=$(jget "$W/seed.json" 'd["totalBytes"]')
n=$(jget "$W/seed.json" 'len(d["images"])')

# The transfer limit: every manifest and every blob URL once, by curl (listed
# here, outside the runs): "M URL" for a manifest, "B URL" for a blob.
"$PY" - "$W/seed.json" "$SRC" > "$W/listed" <<'PYEOF'
import json, sys, urllib.request
seed, host = json.load(open(sys.argv[1])), sys.argv[2]
acc = ", ".join(["application/vnd.oci.image.index.v1+json", "application/vnd.oci.image.manifest.v1+json",
                 "application/vnd.docker.distribution.manifest.list.v2+json", "application/vnd.docker.distribution.manifest.v2+json"])
def get(repo, ref):
    r = urllib.request.urlopen(urllib.request.Request(f"http://{host}/v2/{repo}/manifests/{ref}", headers={"Accept": acc}))
    return json.load(r)
seen = set()
for img in seed["images"]:
    repo, tag = img["ref"].split("/", 1)[1].rsplit(":", 1)
    m = get(repo, tag)
    print(f"M http://{host}/v2/{repo}/manifests/{tag}")
    children = [c["digest"] for c in m.get("manifests", [])]
    for c in children:
        print(f"M http://{host}/v2/{repo}/manifests/{c}")
    for k in [get(repo, c) for c in children] or [m]:
        for d in [k["config"]] + k["layers"]:
            if d["digest"] not in seen:
                seen.add(d["digest"])
                print(f"B http://{host}/v2/{repo}/blobs/{d['digest']}")
PYEOF
awk '$1 == "B" {print $2}' "$W/listed" > "$W/urls"
manifests=$(grep -c '^M ' "$W/listed")
# One curl process, JOBS transfers at once, each manifest and blob to its own
# file (as a store does); it reuses its connections (--parallel keeps up to
# JOBS open). curl_get: the same requests as a mirror, manifests first (with the
# Accept header a mirror sends); curl_blobs: the blobs alone.
accept="application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json"
{ printf 'header = "Accept: %s"\n' "$accept"
  { grep '^M ' "$W/listed"; grep '^B ' "$W/listed"; } | awk '{printf "url = \"%s\"\noutput = \"%s%d\"\n", $2, $1, NR}'; } > "$W/curl.cfg"
awk '{printf "url = \"%s\"\noutput = \"B%d\"\n", $0, NR}' "$W/urls" > "$W/curl-blobs.cfg"
curl_run() { rm -rf "$W/curl" && mkdir "$W/curl" && (cd "$W/curl" && curl -sSf --no-progress-meter --parallel --parallel-max "$JOBS" -K "$W/$1"); }
curl_get() { curl_run curl.cfg; }
curl_blobs() { curl_run curl-blobs.cfg; }
# What each run made the registry do: its CPU time, and from its log the
# connections, requests by kind and bytes (tests/tools/registry_log.py).
REG_PID=$(jget "$W/bench.json" 'd["pid"]')
REG_LOG=$W/reg/bench/registry.log
reg_ticks() { awk '{print $14 + $15}' "/proc/$REG_PID/stat"; }
# served NAME CMD...: runs CMD; one line for $W/runs.jsonl
served() {
  local name=$1 off c0 c1 t0 t1
  shift
  # Each run starts with no dirty pages from the runs before: curl leaves its
  # files to the kernel's writeback, which would otherwise run during
  # whichever run comes next (often ours). Outside the clock, for every client.
  sync
  sleep 0.5
  off=$(stat -c %s "$REG_LOG"); c0=$(reg_ticks); t0=$(now)
  "$@"
  t1=$(now); c1=$(reg_ticks)
  sleep 0.2  # the registry logs a request once its last byte is out
  "$PY" "$TOOLS/registry_log.py" run "$name" "$REG_LOG" "$off" $((c1 - c0)) "$(secs "$t0" "$t1")" >> "$W/runs.jsonl"
}
med() { "$PY" "$TOOLS/registry_log.py" medians "$W/runs.jsonl" "$1" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$2"; }

# 1. our cold mirror and curl (the transfer limit), RUNS times each, interleaved
ours_cold() { "$GB" -q --store "$W/ours" mirror "$W/bench.lock.json" --registry-config "$W/reg.yaml" -j "$JOBS"; }
for _ in $(seq "$RUNS"); do
  # The last run's output goes first, outside the clock (curl_run's own rm then finds nothing).
  rm -rf "$W/ours" && served ours ours_cold
  rm -rf "$W/curl" && served curl curl_get
  rm -rf "$W/curl" && served curl-blobs curl_blobs
done
ours=$(med ours wall_s)
curl_s=$(med curl wall_s)
blobs_s=$(med curl-blobs wall_s)
if [[ -n ${RUNS_JSON:-} ]]; then cat "$W/runs.jsonl" >> "$RUNS_JSON"; fi

# 2. skopeo copy --all, one image after the other (how people script it)
t0=$(now)
for ref in $(jget "$W/seed.json" '" ".join(i["ref"] for i in d["images"])'); do
  skopeo copy -q --all --src-tls-verify=false "docker://$ref" "oci:$W/skopeo:$ref" > /dev/null
done
t1=$(now)
sko=$(secs "$t0" "$t1")

# 3. curl once more, then sync(1) of its files, since a mirror makes its blobs durable
t0=$(now)
curl_get && sync "$W/curl"/*
t1=$(now)
curl_sync=$(secs "$t0" "$t1")

# 4. no-change re-mirror
t0=$(now)
"$GB" -q --store "$W/ours" mirror "$W/bench.lock.json" --registry-config "$W/reg.yaml" -j "$JOBS"
t1=$(now)
again=$(secs "$t0" "$t1")

echo "set: $n images, $(( total / 1048576 )) MiB distinct blobs, $(wc -l < "$W/urls") blobs, -j $JOBS"
printf '%-40s %8s s\n' "gpubundle mirror (cold, median)" "$ours" "skopeo copy --all (each)" "$sko" \
  "curl --parallel-max $JOBS, same requests" "$curl_s" "curl --parallel-max $JOBS, blobs only" "$blobs_s" \
  "curl, same requests, then sync" "$curl_sync" "gpubundle re-mirror" "$again"
goal "mirror: skopeo / gpubundle" "$(ratio "$sko / $ours")" ">=" 3 x
echo "what the registry did, for the same $(( total / 1048576 )) MiB:"
"$PY" "$TOOLS/registry_log.py" report "$W/runs.jsonl" ours curl curl-blobs
goal "mirror: gpubundle / curl" "$(ratio "$ours / $curl_s")" "<=" 1.2 x
echo "      gpubundle / (curl + sync): $(ratio "$ours / $curl_sync")x"
goal "mirror: registry CPU/byte vs curl" "$(ratio "$(med ours cpu_ns_per_byte) / $(med curl cpu_ns_per_byte)")" "<=" 1.1 x
echo "      against curl of the blobs alone (no $manifests manifest GETs): wall $(ratio "$ours / $blobs_s")x," \
  "registry CPU/byte $(ratio "$(med ours cpu_ns_per_byte) / $(med curl-blobs cpu_ns_per_byte)")x"
goal "re-mirror, nothing changed" "$again" "<" 0.3 " s"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"

# 5. peak RSS while mirroring one BIG_MB layer
if [ "$BIG_MB" -gt 0 ]; then
  echo "seeding a $BIG_MB MiB layer ..." >&2
  "$PY" "$TOOLS/seed.py" --registry "$SRC" --plain-http --set small --big-layer-mb "$BIG_MB" > "$W/big.json"
  big=$(jget "$W/big.json" '[i["ref"] for i in d["images"] if "/test/big:" in i["ref"]][0]')
  echo '{"images":[]}' > "$W/none.json"
  make_lock "$W/big.lock.json" "$W/none.json" linux/amd64 "$big"
  /usr/bin/time -v "$GB" -q --store "$W/big" mirror "$W/big.lock.json" --registry-config "$W/reg.yaml" 2> "$W/time.txt"
  rss=$(awk -F: '/Maximum resident/ {gsub(/ /, "", $2); print $2}' "$W/time.txt")
  el=$(awk '/Elapsed \(wall/ {print $NF}' "$W/time.txt")
  echo "big layer: $BIG_MB MiB mirrored in $el"
  goal "mirror: peak RSS, $BIG_MB MiB layer" "$(( rss / 1024 ))" "<" 100 " MiB"
fi
