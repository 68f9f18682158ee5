#!/usr/bin/env bash
# upgrade.sh with the real kubectl and helm against the API stand-in
# (tests/tools/kube_api.py). The test plays the operator's upgrade controller
# through the same API (Python, told apart from kubectl and helm by its
# User-Agent): once the new release is deployed it moves each GPU node not
# labelled nvidia.com/gpu-driver-upgrade.skip=true through
# upgrade-required -> pod-restart-required -> upgrade-done, one at a time,
# and starts that node's validator pod.
#   - --dry-run: no label and no object written, helm's own dry run;
#   - the real run: the other GPU node held before helm upgrades, the canary
#     upgrade-done and validated before the other is released, the site's
#     skipped node never touched, every hold released at the end.
# kit-upgrade keeps its stubs for the failure paths (a failed node, no
# progress, a stale upgrade-done).
# Usage: upgrade_cluster.sh GPUBUNDLE SOURCE_DIR    Skips (77) without the real clients.
set -euo pipefail
gpubundle=$1
SRC=$2
work=$(mktemp -d)
# shellcheck source=tests/integration/kube_lib.sh
source "$SRC/tests/integration/kube_lib.sh"
operator=""
trap '[ -z "$operator" ] || kill "$operator" 2>/dev/null || true; kube_stop_all; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
kube_clients_or_skip

"$PY" "$SRC/tests/tools/helmrepo.py" pack --release v26.7.0 --out "$work" >/dev/null
"$gpubundle" -q resolve "$SRC/examples/conventional.yaml" --chart "$work/gpu-operator-v26.7.0.tgz" -o "$work/lock.json"
kit=$work/kit
"$gpubundle" -q overrides "$work/lock.json" --registry registry.site:5000/gpu --chart "$work/gpu-operator-v26.7.0.tgz" -o "$kit"
export PATH="$CLIENTS_BIN:$PATH"

cat >"$work/cluster.yaml" <<'EOF'
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: gpu-a, labels: {nvidia.com/gpu.present: "true"}}}
- {apiVersion: v1, kind: Node, metadata: {name: gpu-b, labels: {nvidia.com/gpu.present: "true"}}}
- {apiVersion: v1, kind: Node, metadata: {name: gpu-site, labels: {nvidia.com/gpu.present: "true", nvidia.com/gpu-driver-upgrade.skip: "true"}}}
- {apiVersion: v1, kind: Node, metadata: {name: cpu-a}}
- {apiVersion: v1, kind: Namespace, metadata: {name: gpu-operator}}
- apiVersion: v1
  kind: Secret
  metadata: {name: site-registry, namespace: gpu-operator}
  type: kubernetes.io/dockerconfigjson
  data: {.dockerconfigjson: e30=}
EOF
kube_start api --seed "$work/cluster.yaml"
"$kit/install.sh" >"$work/install.out" 2>&1 || fail "install.sh: $(cat "$work/install.out")"
clients='(r["userAgent"] or "").startswith(("kubectl/", "Helm/"))'
writes="$clients and r['method'] in ('POST', 'PUT', 'PATCH', 'DELETE')"

# --dry-run: helm's dry run, nothing written.
kube_reset_requests
"$kit/upgrade.sh" --canary gpu-a --dry-run >"$work/dry.out" 2>&1 || fail "upgrade.sh --dry-run: $(cat "$work/dry.out")"
grep -qx '+ kubectl label node gpu-b --overwrite nvidia.com/gpu-driver-upgrade.skip=true gpubundle.io/upgrade-held=true' "$work/dry.out" ||
  fail "--dry-run: $(cat "$work/dry.out")"
[ -z "$(kube_requests "$writes")" ] || fail "--dry-run wrote: $(kube_requests "$writes" | cut -c1-400)"

# The operator's upgrade controller, played through the API.
"$PY" - "$KUBE_URL" "$work/operator.log" <<'PYEOF' &
import json, sys, time, urllib.request
url, log = sys.argv[1], open(sys.argv[2], "w", buffering=1)
STATES = ["upgrade-required", "pod-restart-required", "upgrade-done"]
def call(method, path, body=None, ctype="application/merge-patch+json"):
    req = urllib.request.Request(url + path, method=method, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": ctype})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)
def release_deployed(rev):
    items = call("GET", "/api/v1/namespaces/gpu-operator/secrets?labelSelector=owner%3Dhelm")["items"]
    return any(s["metadata"]["labels"].get("version") == str(rev) and s["metadata"]["labels"].get("status") == "deployed" for s in items)
while not release_deployed(2):
    time.sleep(0.2)
log.write("release 2 deployed\n")
while True:
    nodes = call("GET", "/api/v1/nodes?labelSelector=nvidia.com%2Fgpu.present%3Dtrue")["items"]
    moving = [n for n in nodes if n["metadata"]["labels"].get("nvidia.com/gpu-driver-upgrade.skip") != "true"
              and n["metadata"]["labels"].get("nvidia.com/gpu-driver-upgrade-state") != "upgrade-done"]
    if moving:  # one node at a time (maxParallelUpgrades: 1), by name
        n = sorted(moving, key=lambda n: n["metadata"]["name"])[0]
        name, state = n["metadata"]["name"], n["metadata"]["labels"].get("nvidia.com/gpu-driver-upgrade-state")
        nxt = STATES[0] if state not in STATES else STATES[STATES.index(state) + 1]
        call("PATCH", f"/api/v1/nodes/{name}", {"metadata": {"labels": {"nvidia.com/gpu-driver-upgrade-state": nxt}}})
        log.write(f"{name} {nxt}\n")
        if nxt == "upgrade-done":
            call("POST", "/api/v1/namespaces/gpu-operator/pods", {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": f"nvidia-operator-validator-{name}", "namespace": "gpu-operator",
                              "labels": {"app": "nvidia-operator-validator"}},
                 "spec": {"nodeName": name, "containers": [{"name": "v", "image": "x"}]}, "status": {"phase": "Running"}},
                 "application/json")
    time.sleep(1.5)
PYEOF
operator=$!

kube_reset_requests
GPUBUNDLE_POLL=1 GPUBUNDLE_SETTLE=30 "$kit/upgrade.sh" --canary gpu-a --timeout 60 >"$work/up.out" 2>&1 ||
  fail "upgrade.sh: $(cat "$work/up.out"; echo "operator:"; cat "$work/operator.log")"
grep -q "^upgrade.sh: done: every GPU node's driver is upgraded and validated (left out: gpu-site)" "$work/up.out" || fail "upgrade.sh: $(cat "$work/up.out")"
kube_requests True >"$work/requests"
"$PY" - "$work/requests" <<'PYEOF' || fail "upgrade.sh's requests and the operator's (above)"
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
client = lambda r: (r["userAgent"] or "").startswith(("kubectl/", "Helm/"))
events = []
for r in reqs:
    if r["method"] not in ("POST", "PUT", "PATCH") or r["status"] >= 300:
        continue
    if r["path"].startswith("/api/v1/nodes/"):
        node = r["path"].rsplit("/", 1)[1]
        labels = r["body"]["metadata"]["labels"]
        who = "script" if client(r) else "operator"
        events.append((who, node, json.dumps(labels, sort_keys=True)))
    elif client(r) and "/secrets" in r["path"] and r["userAgent"].startswith("Helm/"):
        events.append(("helm", r["method"], r["body"]["metadata"]["labels"]["status"]))
for e in events:
    print(e)
held = '{"gpubundle.io/upgrade-held": "true", "nvidia.com/gpu-driver-upgrade.skip": "true"}'
released = '{"gpubundle.io/upgrade-held": null, "nvidia.com/gpu-driver-upgrade.skip": null}'
state = lambda s: '{"nvidia.com/gpu-driver-upgrade-state": "%s"}' % s
i = events.index(("script", "gpu-b", held))
assert events.index(("helm", "POST", "pending-upgrade")) > i, "helm upgraded before gpu-b was held"
canary_done = events.index(("operator", "gpu-a", state("upgrade-done")))
release = events.index(("script", "gpu-b", released))
assert canary_done < release, "gpu-b released before the canary was done"
assert not any(e[1] == "gpu-b" and e[0] == "operator" for e in events[:release]), "gpu-b moved while held"
assert ("operator", "gpu-b", state("upgrade-done")) in events[release:], "gpu-b never upgraded"
assert not any(e[1] in ("gpu-site", "cpu-a") for e in events), "a node the upgrade should leave alone was written"
PYEOF
[ "$("$KUBECTL" get nodes -l gpubundle.io/upgrade-held=true -o name)" = "" ] || fail "holds left behind"
[ "$("$KUBECTL" get node gpu-site -o jsonpath='{.metadata.labels.nvidia\.com/gpu-driver-upgrade\.skip}')" = true ] ||
  fail "the site's own skip label was removed"
echo "PASS: upgrade.sh against the API stand-in"
