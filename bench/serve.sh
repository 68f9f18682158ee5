#!/usr/bin/env bash
# gpubundle serve under load, in one run (not a test): 64 concurrent pulls of
# every blob of the bench bundle (14 images, ~280 MiB) on loopback, by one
# curl process (--parallel-max 64, so the client is the same for all), from
#   - gpubundle serve of the bundle (blobs read in place from the tar),
#   - python3 -m http.server serving the same blob files (the store's),
#   - docker-registry with the same images imported.
# Reports throughput, the server's peak RSS and its peak open descriptors.
# Goals: throughput >= docker-registry's, RSS < 100 MB, descriptors bounded
# by the pool. Usage: bench/serve.sh [BUILD_DIR]
source "$(dirname "$0")/lib.sh" "$@"
PULLS=${PULLS:-64}
"$GB" --store "$W/store" -q bundle create "$W/site.lock.json" -o "$W/b.bundle" --key "$W/k.key"

# The blob paths of every image (manifests, configs, layers) below /v2/site/.
"$PY" - "$W/b.bundle" > "$W/paths" <<'PYEOF'
import json, sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    m = json.load(t.extractfile("gpubundle.json"))
for i in m["images"]:
    repo = i["ref"].split("/", 1)[1].split("@")[0]
    repo = repo.rsplit(":", 1)[0] if ":" in repo else repo
    for b in i["blobs"]:
        print(f"site/{repo}/blobs/{b}")
PYEOF
bytes_one=$("$PY" - "$W/b.bundle" <<'PYEOF'
import json, sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    m = json.load(t.extractfile("gpubundle.json"))
size = {}
for f in m["files"]:
    if f["blob"] and not f.get("encoding"):
        size[f["blob"]] = size.get(f["blob"], 0) + f["size"]
print(sum(size.get(b, 0) for i in m["images"] for b in i["blobs"]))
PYEOF
)

# load URL_OF_PATH_CMD PID: PULLS pulls of every path at once; prints "seconds peak_fds".
load() {
  local base=$1 pid=$2 t0 t1 peak=0 n
  awk -v b="$base" -v k="$PULLS" '{ for (i = 0; i < k; i++) print "url = \"" b "/" $0 "\"\noutput = \"/dev/null\"" }' "$W/paths" |
    shuf > "$W/load.cfg"
  t0=$(date +%s.%N)
  curl -sSf --parallel --parallel-max "$PULLS" -K "$W/load.cfg" 2> "$W/curl.err" &
  local cpid=$!
  while kill -0 "$cpid" 2>/dev/null; do
    n=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
    ((n > peak)) && peak=$n
    sleep 0.05
  done
  wait "$cpid" || { echo "curl failed against $base: $(tail -n 3 "$W/curl.err")" >&2; exit 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v p="$peak" 'BEGIN{printf "%.3f %d\n", b-a, p}'
}
hwm() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }

# gpubundle serve
"$GB" serve "$W/b.bundle" --pubkey "$W/k.pub" --prefix site --listen 127.0.0.1:0 --verify-all \
  --ready-file "$W/serve.ready" --access-log /dev/null 2> "$W/serve.log" &
serve_pid=$!
for _ in $(seq 600); do [[ -s $W/serve.ready ]] && break; sleep 0.1; done
port=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["port"])' "$W/serve.ready")
read -r t_serve fds_serve < <(load "http://127.0.0.1:$port/v2" "$serve_pid")
rss_serve=$(hwm "$serve_pid")
kill -TERM "$serve_pid"
wait "$serve_pid" || true

# python3 -m http.server over the store's blob files (no registry API: the bare file peer)
mkdir -p "$W/files"
while read -r p; do
  mkdir -p "$W/files/$(dirname "$p")"
  ln -sf "$W/store/blobs/sha256/${p##*sha256:}" "$W/files/$p"
done < "$W/paths"
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
printf '\n%s pulls of %s blobs each (%s MiB a pull, %s MiB in all), one curl --parallel-max %s\n' \
  "$PULLS" "$(wc -l < "$W/paths")" "$((bytes_one >> 20))" "$((total >> 20))" "$PULLS"
printf '%-34s %8s s %7s MiB/s %7s MiB RSS %6s fds\n' \
  "gpubundle serve (bundle in place)" "$t_serve" "$(mbps "$total" "$t_serve")" "$((rss_serve / 1024))" "$fds_serve" \
  "python3 -m http.server (files)" "$t_http" "$(mbps "$total" "$t_http")" "$((rss_http / 1024))" "$fds_http" \
  "docker-registry (imported)" "$t_reg" "$(mbps "$total" "$t_reg")" "$((rss_reg / 1024))" "$fds_reg"
echo
goal "serve / docker-registry throughput" "$(ratio "$t_reg / $t_serve")" ">=" 1 x
goal "serve / http.server throughput" "$(ratio "$t_http / $t_serve")" ">=" 1 x
goal "serve peak RSS" "$((rss_serve / 1024))" "<" 100 " MiB"
goal "serve peak descriptors" "$fds_serve" "<=" "$((PULLS + 64))" ""
