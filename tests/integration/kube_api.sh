#!/usr/bin/env bash
# Self-test of the Kubernetes API stand-in (tests/tools/kube_api.py) with the
# real kubectl and helm: discovery, client-side and server-side apply, dry runs,
# the real server's refusals, seeded nodes, a watch that sees a seeded change,
# helm's release storage, TLS, and the request log.
# Usage: kube_api.sh SOURCE_DIR    Skips (77) without the real clients.
set -euo pipefail
SRC=$1
# shellcheck source=tests/integration/kube_lib.sh
source "$SRC/tests/integration/kube_lib.sh"
kube_suite

cat >"$work/seed.yaml" <<'EOF'
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: gpu-a, labels: {nvidia.com/gpu.present: "true", kubernetes.io/hostname: gpu-a}}
  status: {allocatable: {nvidia.com/gpu: "8", cpu: "64"}}
- apiVersion: v1
  kind: Node
  metadata: {name: cpu-a, labels: {kubernetes.io/hostname: cpu-a}}
EOF
kube_start api --seed "$work/seed.yaml"
k() { "$KUBECTL" "$@"; }

# Discovery: every built-in kind the kit uses, from the legacy documents; a
# custom kind only while its CRD is there.
k api-resources -o name >"$work/resources" || fail "kubectl api-resources"
for r in namespaces configmaps secrets services pods nodes deployments.apps daemonsets.apps jobs.batch \
         customresourcedefinitions.apiextensions.k8s.io; do
  grep -qx "$r" "$work/resources" || fail "api-resources lacks $r: $(cat "$work/resources")"
done
if grep -q 'monitoring.coreos.com\|kubeflow.org\|nvidia.com' "$work/resources"; then fail "custom kinds served without their CRDs"; fi
printf 'apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: r, namespace: default}\nspec: {groups: []}\n' >"$work/rule.yaml"
if k apply -f "$work/rule.yaml" 2>"$work/err"; then fail "a PrometheusRule applied without its CRD"; fi
grep -q 'no matches for kind "PrometheusRule"' "$work/err" || fail "no CRD: $(cat "$work/err")"
for crd in prometheusrules.monitoring.coreos.com mpijobs.kubeflow.org clusterpolicies.nvidia.com nicclusterpolicies.mellanox.com; do
  printf 'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: %s}\nspec: {group: %s, scope: Namespaced, names: {plural: %s, kind: X}, versions: [{name: v1, served: true, storage: true}]}\n' \
    "$crd" "${crd#*.}" "${crd%%.*}" >"$work/crd.yaml"
  k apply -f "$work/crd.yaml" >/dev/null || fail "CRD $crd"
done
k wait --for=condition=Established crd/mpijobs.kubeflow.org --timeout=10s >/dev/null || fail "CRD not Established"
k apply -f "$work/rule.yaml" >/dev/null || fail "a PrometheusRule with its CRD"
k api-resources -o name >"$work/resources" || fail "kubectl api-resources"
for r in prometheusrules.monitoring.coreos.com mpijobs.kubeflow.org nicclusterpolicies.mellanox.com clusterpolicies.nvidia.com; do
  grep -qx "$r" "$work/resources" || fail "api-resources lacks $r with its CRD: $(cat "$work/resources")"
done
k delete crd prometheusrules.monitoring.coreos.com >/dev/null || fail "delete CRD"
[ -z "$(kube_objects | "$PY" -c 'import json,sys; print(" ".join(o["kind"] for o in json.load(sys.stdin) if o["kind"] == "PrometheusRule"))')" ] ||
  fail "a PrometheusRule outlived its CRD"
[ "$(k get --raw /version | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["minor"])')" = 31 ] || fail "/version"

# Seeded nodes, selected by label.
[ "$(k get nodes -l nvidia.com/gpu.present=true -o jsonpath='{.items[*].metadata.name}')" = gpu-a ] || fail "label selector on nodes"
[ "$(k get node gpu-a -o jsonpath='{.status.allocatable.nvidia\.com/gpu}')" = 8 ] || fail "seeded status"

# Client-side apply: created, unchanged, configured; the real server's refusals.
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: team}\ndata: {a: "1"}\n' >"$work/cm.yaml"
if k apply -f "$work/cm.yaml" 2>"$work/err"; then fail "apply into a missing namespace"; fi
grep -qF 'namespaces "team" not found' "$work/err" || fail "missing namespace: $(cat "$work/err")"
k create namespace team >/dev/null
kube_reset_requests
[ "$(k apply -f "$work/cm.yaml")" = "configmap/cm created" ] || fail "apply create"
[ "$(k apply -f "$work/cm.yaml")" = "configmap/cm unchanged" ] || fail "apply unchanged"
sed -i 's/"1"/"2"/' "$work/cm.yaml"
[ "$(k apply -f "$work/cm.yaml")" = "configmap/cm configured" ] || fail "apply configure"
[ "$(k -n team get cm cm -o jsonpath='{.data.a}')" = 2 ] || fail "the patch did not land"
kube_requests 'r["method"] in ("POST", "PATCH")' >"$work/writes"
"$PY" - "$work/writes" <<'EOF' || fail "recorded writes: $(cat "$work/writes")"
import json, sys
w = [json.loads(l) for l in open(sys.argv[1])]
assert [(r["method"], r["path"], r["status"]) for r in w] == [
    ("POST", "/api/v1/namespaces/team/configmaps", 201),
    ("PATCH", "/api/v1/namespaces/team/configmaps/cm", 200)], w
assert w[0]["body"]["data"] == {"a": "1"} and w[0]["query"]["fieldValidation"] == ["Strict"], w[0]
assert w[1]["contentType"] == "application/strategic-merge-patch+json" and w[1]["body"]["data"] == {"a": "2"}, w[1]
EOF
if k apply -n other -f "$work/cm.yaml" 2>"$work/err"; then fail "kubectl applied across namespaces"; fi
grep -q 'the namespace from the provided object "team" does not match the namespace "other"' "$work/err" || fail "$(cat "$work/err")"
# What kubectl checks itself never reaches the server; what it leaves to the server does.
code=$(curl -s -o "$work/body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  --data '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"team"}}' "$KUBE_URL/api/v1/namespaces/default/configmaps")
[ "$code" = 400 ] && grep -q 'does not match the namespace sent on the request' "$work/body" || fail "namespace mismatch: $code $(cat "$work/body")"
code=$(curl -s -o "$work/body" -w '%{http_code}' -X PATCH -H 'Content-Type: application/apply-patch+yaml' \
  --data 'apiVersion: v1
kind: ConfigMap
metadata: {name: y}' "$KUBE_URL/api/v1/namespaces/default/configmaps/y")
[ "$code" = 422 ] && grep -q 'fieldManager: Required value' "$work/body" || fail "apply without fieldManager: $code $(cat "$work/body")"

# Server-side apply: a dry run stores nothing, the real one does.
printf 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: team}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: registry.site/web:1}]}\n' >"$work/deploy.yaml"
if k apply --server-side -f "$work/deploy.yaml" --dry-run=client 2>"$work/err"; then fail "kubectl took --server-side with --dry-run=client"; fi
grep -qF -- "--dry-run=client doesn't work with --server-side" "$work/err" || fail "$(cat "$work/err")"
kube_reset_requests
k apply --server-side -f "$work/deploy.yaml" --dry-run=server | grep -qx 'deployment.apps/web serverside-applied (server dry run)' || fail "server dry run"
if k -n team get deployment web >/dev/null 2>&1; then fail "a server dry run stored the Deployment"; fi
k apply --server-side -f "$work/deploy.yaml" | grep -qx 'deployment.apps/web serverside-applied' || fail "server-side apply"
[ "$(k -n team get deployment web -o jsonpath='{.status.readyReplicas}')" = 2 ] || fail "the Deployment did not settle"
k -n team rollout status deployment/web --timeout=10s >/dev/null || fail "rollout status"
kube_requests 'r["method"] == "PATCH"' >"$work/writes"
"$PY" - "$work/writes" <<'EOF' || fail "server-side apply requests: $(cat "$work/writes")"
import json, sys
w = [json.loads(l) for l in open(sys.argv[1])]
assert len(w) == 2 and all(r["contentType"] == "application/apply-patch+yaml" and r["path"] == "/apis/apps/v1/namespaces/team/deployments/web" for r in w), w
assert w[0]["query"]["dryRun"] == ["All"] and "dryRun" not in w[1]["query"], w
assert w[0]["query"]["fieldManager"] == ["kubectl"] and w[1]["body"]["spec"]["replicas"] == 2, w
EOF

# A watch sees a later change: kubectl wait for a condition seeded after it started.
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team}\nspec: {containers: [{name: c, image: i}]}\n' >"$work/pod.yaml"
k apply -f "$work/pod.yaml" >/dev/null
k -n team wait --for=condition=Ready pod/p --timeout=20s >"$work/wait.out" 2>&1 &
waiter=$!
sleep 1
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team}\nspec: {containers: [{name: c, image: i}]}\nstatus: {phase: Running, conditions: [{type: Ready, status: "True"}]}\n' >"$work/pod-ready.yaml"
"$PY" "$KUBE_TOOLS/kube_api.py" seed --dir "$KUBE_DIR" "$work/pod-ready.yaml" >/dev/null
wait "$waiter" || fail "kubectl wait did not see the seeded condition: $(cat "$work/wait.out")"
k -n team delete pod p >/dev/null || fail "delete"
if k -n team get pod p >/dev/null 2>&1; then fail "the pod is still there"; fi

# helm: install and upgrade store their releases as Secrets (protobuf, helm's typed client).
"$PY" "$KUBE_TOOLS/helmrepo.py" pack --release v26.7.0 --out "$work/charts" >/dev/null
"$HELM" upgrade --install gpu-operator "$work/charts/gpu-operator-v26.7.0.tgz" -n team --wait --timeout 1m >/dev/null || fail "helm install"
"$HELM" upgrade --install gpu-operator "$work/charts/gpu-operator-v26.7.0.tgz" -n team --wait --timeout 1m --set foo=bar >/dev/null || fail "helm upgrade"
[ "$("$HELM" -n team get values gpu-operator -o json)" = '{"foo":"bar"}' ] || fail "helm get values"
[ "$(k -n team get secrets -l owner=helm,name=gpu-operator -o jsonpath='{.items[*].metadata.labels.status}')" = "superseded deployed" ] ||
  fail "helm release secrets: $(k -n team get secrets -o name)"

# TLS: kubectl trusts the stand-in's CA through the kubeconfig.
kube_start tls --tls
"$KUBECTL" get --raw /api >/dev/null || fail "kubectl over TLS"
grep -q '^ *"certificate-authority-data"' "$KUBECONFIG" || fail "the TLS kubeconfig has no CA"
case $KUBE_URL in https://127.0.0.1:*) ;; *) fail "TLS url $KUBE_URL" ;; esac

# stop stops, and twice is fine.
kube_stop_all
if curl -sk -o /dev/null "$KUBE_URL/version"; then fail "stop left the stand-in running"; fi
kube_stop_all
echo "PASS: kube-api stand-in"
