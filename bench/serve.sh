#!/usr/bin/env bash
# gpubundle serve under load, in one run (not a test): 64 concurrent pulls of
# every blob of the bench bundle (14 images, ~280 MiB) on loopback, by one
# curl process (--parallel-max 64, so the client is the same for all), from
#   - gpubundle serve of the bundle (blobs read in place from the tar),
#   - python3 -m http.server serving the same blob files (the store's),
#   - docker-registry with the same images imported.
# Reports throughput, the server's peak RSS and its peak open descriptors.
# Goals: throughput >= docker-registry's, RSS < 100 MB, descriptors bounded
# by the pool (64 connections and the bundle). Env PULLS (default 64).
# Usage: bench/serve.sh [BUILD_DIR]
source "$(dirname "$0")/lib.sh" "$@"
PULLS=${PULLS:-64}
"$GB" --store "$W/store" -q bundle create "$W/site.lock.json" -o "$W/b.bundle" --key "$W/k.key"

ACCEPT="application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json"
# load BASE PID: PULLS pulls of every path at once (manifests through
# /manifests/ with an Accept header, blobs through /blobs/), in shuffled
# order, by one curl; prints "seconds peak_fds".
load() {
  local base=$1 pid=$2 t0 t1 peak=0 n
  "$PY" - "$W/paths" "$base" "$PULLS" "$ACCEPT" > "$W/load.cfg" <<'PYEOF'
import random, sys
paths, base, pulls, accept = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
groups = []
for line in open(paths):
    p = line.strip()
    g = f'url = "{base}/{p}"\noutput = "/dev/null"\nwrite-out = "%{{http_code}} %{{url}}\\n"\n'
    if "/manifests/" in p:
        g += f'header = "Accept: {accept}"\n'
    groups += [g] * pulls
random.shuffle(groups)
print("next\n".join(groups), end="")
PYEOF
  t0=$(date +%s.%N)
  curl -sS --parallel --parallel-max "$PULLS" -K "$W/load.cfg" > "$W/codes" 2> "$W/curl.err" &
  local cpid=$!
  while kill -0 "$cpid" 2>/dev/null; do
    n=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
    ((n > peak)) && peak=$n
    sleep 0.05
  done
  wait "$cpid" || { echo "curl failed against $base: $(tail -n 3 "$W/curl.err")" >&2; exit 1; }
  t1=$(date +%s.%N)
  if grep -v '^200 ' "$W/codes" | head -n 3 | grep .; then echo "not every pull succeeded against $base" >&2; exit 1; fi
  (($(wc -l < "$W/codes") == $(wc -l < "$W/paths") * PULLS)) || { echo "curl made $(wc -l < "$W/codes") requests" >&2; exit 1; }
  awk -v a="$t0" -v b="$t1" -v p="$peak" 'BEGIN{printf "%.3f %d\n", b-a, p}'
}
hwm() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }

# gpubundle serve
"$GB" serve "$W/b.bundle" --pubkey "$W/k.pub" --prefix site --listen 127.0.0.1:0 --verify-all \
  --ready-file "$W/serve.ready" --access-log /dev/null 2> "$W/serve.log" &
serve_pid=$!
for _ in $(seq 600); do [[ -s $W/serve.ready ]] && break; sleep 0.1; done
port=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["port"])' "$W/serve.ready")
# What a pull of every image reads, walked through serve once: the manifests
# from each tag down, then the configs and layers; and the same bytes as
# files, for the file-server peer.
"$PY" - "$W/b.bundle" "http://127.0.0.1:$port/v2" "$ACCEPT" "$W/files" > "$W/paths" <<'PYEOF'
import json, os, sys, tarfile, urllib.request
bundle, base, accept, files = sys.argv[1:5]
with tarfile.open(bundle) as t:
    m = json.load(t.extractfile("gpubundle.json"))
def get(path, headers={}):
    return urllib.request.urlopen(urllib.request.Request(f"{base}/{path}", headers=headers)).read()
def keep(path, data):
    os.makedirs(os.path.join(files, os.path.dirname(path)), exist_ok=True)
    open(os.path.join(files, path), "wb").write(data)
    print(path)
seen = set()
for i in m["images"]:
    name = i["ref"].split("/", 1)[1]
    repo, tag = (name.split("@")[0].rsplit(":", 1) + [""])[:2] if "@" not in name else (name.split("@")[0], "")
    todo = [i["digest"]]
    while todo:
        d = todo.pop()
        if (repo, d) in seen:
            continue
        seen.add((repo, d))
        body = get(f"site/{repo}/manifests/{d}", {"Accept": accept})
        keep(f"site/{repo}/manifests/{d}", body)
        doc = json.loads(body)
        todo += [c["digest"] for c in doc.get("manifests", [])]
        for b in [doc["config"]] + doc["layers"] if "config" in doc else []:
            if (repo, b["digest"]) not in seen:
                seen.add((repo, b["digest"]))
                keep(f"site/{repo}/blobs/{b['digest']}", get(f"site/{repo}/blobs/{b['digest']}"))
PYEOF
bytes_one=$(find "$W/files" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
read -r t_serve fds_serve < <(load "http://127.0.0.1:$port/v2" "$serve_pid")
rss_serve=$(hwm "$serve_pid")
kill -TERM "$serve_pid"
wait "$serve_pid" || true

# python3 -m http.server over the same bytes as files (no registry API: the bare file peer)
hport=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "$W/files" && exec "$PY" -m http.server --bind 127.0.0.1 "$hport" >/dev/null 2>&1) &
http_pid=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$hport/" && break; sleep 0.1; done
read -r t_http fds_http < <(load "http://127.0.0.1:$hport" "$http_pid")
rss_http=$(hwm "$http_pid")
kill "$http_pid"
wait "$http_pid" 2>/dev/null || true

# docker-registry with the images imported
site=$("$PY" "$TOOLS/registry.py" start --dir "$W/reg" --name site | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["host"])')
"$GB" -q import "$W/b.bundle" --registry "http://$site/site" --pubkey "$W/k.pub" --no-kit
reg_pid=$(pgrep -f "docker-registry.*$W/reg/site" | head -1 || true)
[[ -n $reg_pid ]] || reg_pid=$(pgrep -n docker-registry)
read -r t_reg fds_reg < <(load "http://$site/v2" "$reg_pid")
rss_reg=$(hwm "$reg_pid")

total=$((bytes_one * PULLS))
printf '\n%s pulls of %s manifests and blobs each (%s MiB a pull, %s MiB in all), one curl --parallel-max %s\n' \
  "$PULLS" "$(wc -l < "$W/paths")" "$((bytes_one >> 20))" "$((total >> 20))" "$PULLS"
printf '%-34s %8s s %7s MiB/s %7s MiB RSS %6s fds\n' \
  "gpubundle serve (bundle in place)" "$t_serve" "$(mbps "$total" "$t_serve")" "$((rss_serve / 1024))" "$fds_serve" \
  "python3 -m http.server (files)" "$t_http" "$(mbps "$total" "$t_http")" "$((rss_http / 1024))" "$fds_http" \
  "docker-registry (imported)" "$t_reg" "$(mbps "$total" "$t_reg")" "$((rss_reg / 1024))" "$fds_reg"
echo
goal "serve / docker-registry throughput" "$(ratio "$t_reg / $t_serve")" ">=" 1 x
printf 'ratio: serve / http.server throughput %s x (no goal: a bare file server, no registry API or checks)\n' "$(ratio "$t_http / $t_serve")"
goal "serve peak RSS" "$((rss_serve / 1024))" "<" 100 " MiB"
goal "serve peak descriptors" "$fds_serve" "<=" "$((PULLS + 64))" ""
