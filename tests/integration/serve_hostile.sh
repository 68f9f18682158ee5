#!/usr/bin/env bash
# gpubundle serve against hostile clients: path traversal and odd names,
# digests of other algorithms, ranges beyond the end and many ranges, a huge
# header, HTTP/1.0 and pipelining, slowloris and 10,000 idle connections.
# Each gets a clean refusal; the server's memory and descriptors stay
# bounded, and it keeps serving others (a full skopeo pull after each).
GB=$1
source "$(dirname "$0")/mirror_lib.sh"
source "$(dirname "$0")/serve_lib.sh"

small_bundle_store
create -o "$W/a.bundle"
"$PY" "$TOOLS/registry.py" stop --dir "$W/reg" >/dev/null
"$GB" --json bundle inspect "$W/a.bundle" > "$W/inspect.json"
read -r ref digest < <(jget "$W/inspect.json" 'd["images"][0]["ref"] + " " + d["images"][0]["digest"]')
start_serve hostile "$W/a.bundle" --pubkey "$W/release.pub" --prefix gpu --idle-timeout 3 --max-connections 512 \
  --max-connections-per-client 64 --threads 4
base=http://127.0.0.1:$serve_port
# The largest layer and a repository that holds it.
read -r layer repo < <("$PY" - "$W/a.bundle" <<'PYEOF'
import json, sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    m = json.load(t.extractfile("gpubundle.json"))
f = max((f for f in m["files"] if f["blob"] and not f.get("encoding")), key=lambda f: f["size"])
ref = next(i["ref"] for i in m["images"] if f["blob"] in i["blobs"])
repo = ref.split("/", 1)[1].split("@")[0]
print(f["blob"], "gpu/" + (repo.rsplit(":", 1)[0] if ":" in repo else repo))
PYEOF
)
top=gpu/${ref#*/}
top=${top%@*}
top=${top%:*}
size=$(curl -s -o /dev/null -w '%{size_download}' "$base/v2/$repo/blobs/$layer")
((size > 0)) || fail "no layer to read"

still_serving() {
  rm -rf "$W/copy"
  skopeo copy -q --all --preserve-digests --src-tls-verify=false "docker://127.0.0.1:$serve_port/$top@$digest" "dir:$W/copy" ||
    fail "serve stopped serving after: $1"
}
status() { curl -s -o "$W/body" -w '%{http_code}' "$@"; }
code_is() { grep -q "\"$1\"" "$W/body" || fail "expected error code $1, got: $(head -c 300 "$W/body")"; }

# Names: traversal, encoded dots, upper case, empty components, a NUL.
for p in "/v2/../../etc/passwd" "/v2/gpu/../../etc/passwd/manifests/x" "/v2/gpu/%2e%2e/%2e%2e/etc/manifests/x" \
  "/v2/GPU/x/manifests/latest" "/v2/gpu//x/manifests/latest" "/v2/gpu/x%2fy/manifests/latest" "/v2/gpu/x%00y/manifests/latest"; do
  c=$(status --path-as-is "$base$p")
  [[ $c == 400 || $c == 404 ]] || fail "$p answered $c"
  if grep -q "root:" "$W/body"; then fail "$p leaked a file"; fi
done
c=$(status --path-as-is "$base/v2/gpu/../$top/manifests/$digest")
[[ $c == 400 ]] && code_is NAME_INVALID || fail "a name with .. must be NAME_INVALID ($c)"
still_serving "odd names"
pass "traversal, encoded dots, upper case, empty components and NUL in names refused"

for d in "sha512:$(printf 'a%.0s' {1..128})" "md5:d41d8cd98f00b204e9800998ecf8427e" "sha256:${layer#sha256:}x" "SHA256:${layer#sha256:}"; do
  c=$(status "$base/v2/$repo/blobs/$d")
  [[ $c == 400 ]] && code_is DIGEST_INVALID || fail "digest $d answered $c"
done
pass "digests of other algorithms or shapes: 400 DIGEST_INVALID"

c=$(status -H "Range: bytes=$size-" "$base/v2/$repo/blobs/$layer")
[[ $c == 416 ]] && code_is RANGE_INVALID || fail "a range beyond the end answered $c"
many=$(seq 0 2 1500 | awk '{printf "%s%d-%d", (NR>1?",":""), $1, $1}')
c=$(status -H "Range: bytes=$many" "$base/v2/$repo/blobs/$layer")
[[ $c == 416 ]] || fail "751 ranges answered $c"
c=$(status -H "Range: bytes=1-2" "$base/v2/$repo/blobs/$layer")
[[ $c == 206 && $(stat -c %s "$W/body") == 2 ]] || fail "one range answered $c"
still_serving "ranges"
pass "a range beyond the end and 751 ranges: 416 with bytes */size; one range: 206"

# A huge header, HTTP/1.0, pipelining.
answered=$("$PY" - "$serve_port" "$top" "$digest" <<'PYEOF' || fail "raw HTTP"
import socket, sys
port, repo, digest = int(sys.argv[1]), sys.argv[2], sys.argv[3]

def exchange(data, bind="127.0.0.1"):
    s = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(bind, 0))
    s.sendall(data)
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except socket.timeout:
        pass
    s.close()
    return out

huge = b"GET /v2/ HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (256 << 10) + b"\r\n\r\n"
got = exchange(huge)
assert got == b"" or got.split(b" ", 2)[1] in (b"413", b"414", b"431", b"400"), got[:200]

got = exchange(b"GET /v2/ HTTP/1.0\r\n\r\n")
assert got.startswith(b"HTTP/1.") and b" 200 " in got.split(b"\r\n")[0], got[:200]

acc = b"Accept: */*\r\n"
req = b"GET /v2/" + repo.encode() + b"/manifests/" + digest.encode() + b" HTTP/1.1\r\nHost: x\r\n" + acc + b"\r\n"
last = b"GET /v2/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
# libmicrohttpd answers the first of pipelined requests and closes (Connection:
# close), which HTTP/1.1 allows; whatever it answers is whole, in order.
got = exchange(req + req + last)
heads = [h for h in got.split(b"\r\n\r\n") if h.startswith(b"HTTP/1.1 ")]
assert heads and all(h.startswith(b"HTTP/1.1 200") for h in heads), got[:400]
assert len(heads) == 3 or b"Connection: close" in heads[-1], got[:400]
print(len(heads))
PYEOF
)
still_serving "a huge header, HTTP/1.0 and pipelining"
pass "a 256 KiB header refused; HTTP/1.0 answered; of three pipelined requests $answered answered whole, then Connection: close"

# Slowloris and 10,000 idle connections from 127.0.0.2, while 127.0.0.1 pulls.
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$serve_pid/status"; }
fds() { ls "/proc/$serve_pid/fd" | wc -l; }
"$PY" - "$serve_port" "$W/attack.ready" "$W/attack.stop" <<'PYEOF' &
import os, resource, socket, sys, time
port, ready, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
n = min(10000, hard - 100)
held = []
for i in range(n):
    s = socket.socket()
    s.setblocking(False)
    s.bind(("127.0.0.2", 0))
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    held.append(s)
slow = held[:64]
open(ready, "w").write(str(n))
# Slowloris: a byte of a request line every second on the first 64.
line = b"GET /v2/ HTTP/1.1\r\nHost: x\r\n"
t = 0
while not os.path.exists(stop) and t < 60:
    for s in slow:
        try:
            s.send(line[t % len(line):t % len(line) + 1])
        except OSError:
            pass
    time.sleep(1)
    t += 1
PYEOF
attacker=$!
for _ in $(seq 300); do [[ -s $W/attack.ready ]] && break; sleep 0.1; done
sleep 2
peak_fds=$(fds)
peak_rss=$(rss_kb)
still_serving "10,000 idle connections"
touch "$W/attack.stop"
wait "$attacker" || true
((peak_fds < 512 + 64)) || fail "serve held $peak_fds descriptors under 10,000 connections (pool: 512)"
((peak_rss < 100 * 1024)) || fail "serve's RSS was $peak_rss KiB under 10,000 connections"
sleep 4  # past the idle timeout: every connection of the attacker is gone
after=$(fds)
((after < 64)) || fail "serve still holds $after descriptors after the idle timeout"
pass "$(cat "$W/attack.ready") idle connections and 64 slowloris: $peak_fds descriptors, $((peak_rss / 1024)) MiB RSS at peak; others served; idle ones closed"
stop_serve hostile
echo "serve-hostile: ok"
