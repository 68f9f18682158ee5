#!/usr/bin/env python3
"""A loopback stand-in for the Kubernetes API server, for real kubectl and helm.

  kube_api.py start --dir DIR [--tls] [--seed FILE]... [--no-settle]
                    -> {"url", "pid", "kubeconfig", "requests", "ca"}   (also DIR/kube-api.json)
  kube_api.py seed  --dir DIR FILE...    objects into the running server (JSON or YAML, one
                                         object, a v1 List, or a YAML stream)
  kube_api.py objects --dir DIR          every stored object as one JSON list
  kube_api.py forbid --dir DIR PATH [MESSAGE]
                                         kubectl's GETs of PATH are refused 403 Forbidden with
                                         MESSAGE (as RBAC refuses a user); no MESSAGE: allowed again
  kube_api.py stop  --dir DIR

It answers what kubectl v1.31 and helm v3.17 ask of a cluster, no more:

- Discovery, the legacy (unaggregated) kind: /version, /api, /apis, /api/v1,
  /apis/GROUP/VERSION for the kinds in RESOURCES below (the kit's kinds plus
  what a chart or the MPI Operator manifest carries). A kind outside
  BUILTIN_GROUPS is served only while its CRD (PLURAL.GROUP) exists, as on a
  real cluster (the CRD's own versions are not read: RESOURCES names them).
  Aggregated discovery is not offered: client-go falls back to the legacy
  documents by their Content-Type.
- OpenAPI v3: /openapi/v3 and one document per group-version whose PATCH
  operations carry x-kubernetes-group-version-kind and the query parameter
  fieldValidation, so kubectl's validation (strict by default) is server-side;
  /openapi/v2 is an empty document. No schemas: client-side apply of a
  built-in kind falls back to kubectl's compiled-in types.
- Objects: GET (one, or a list with labelSelector a=b,a!=b,a,!a and
  fieldSelector metadata.name/metadata.namespace), POST, PUT, PATCH, DELETE,
  on namespaced and cluster-scoped resources; ?watch=true streams ADDED,
  MODIFIED and DELETED events until timeoutSeconds (at most 60) passes.
  PATCH takes application/merge-patch+json, application/json-patch+json,
  application/strategic-merge-patch+json (applied as a merge patch: lists are
  replaced, $-directives dropped) and application/apply-patch+yaml (server-side
  apply: creates a missing object, else merges like a merge patch; no field
  ownership or conflicts; fieldManager is required, as the real server wants).
  dryRun=All answers as if done and stores nothing. A namespaced object needs
  its namespace to exist (default, kube-system and kube-public do), a body's
  metadata.namespace must match the path's, an update's resourceVersion must
  be current (409 otherwise), a create of an existing name is 409
  AlreadyExists, a missing one 404 NotFound: Status objects as the real server
  writes them.
- Settling (unless --no-settle): objects come back as their controllers would
  leave them on an idle cluster: a CRD Established and NamesAccepted, a
  Deployment rolled out with a ready ReplicaSet (helm --wait looks for it), a
  DaemonSet with nothing to schedule, a Job Complete.
  Nothing else moves by itself; seed the state a script waits for (a
  DaemonSet's ControllerRevisions and pods too: a test playing its controller
  writes them, owned by the DaemonSet's uid). A pod's
  log (GET .../pods/NAME/log, kubectl logs) is its annotation
  kube-api-standin/log.

Every request but the stand-in's own (/_standin/...) is appended to
DIR/requests.jsonl as one JSON object: method, path, query (name -> list of
values), contentType, accept, userAgent, body (parsed JSON or YAML when it
parses, else text, else null) and the status answered. DIR/kubeconfig points
kubectl and helm at it (context "kube-api-standin", a bearer token, the CA
with --tls). Python 3 standard library plus python3-yaml; detached and
stopped like the other servers here (harness.py).
"""

import argparse
import base64
import copy
import datetime
import hashlib
import http.server
import json
import os
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

KUBE_VERSION = {"major": "1", "minor": "31", "gitVersion": "v1.31.0+gpubundle-standin",
                "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.22.0", "compiler": "gc",
                "platform": "linux/amd64"}

# (group, version, kind, plural, namespaced, short names)
RESOURCES = [
    ("", "v1", "Namespace", "namespaces", False, ["ns"]),
    ("", "v1", "ConfigMap", "configmaps", True, ["cm"]),
    ("", "v1", "Secret", "secrets", True, []),
    ("", "v1", "Service", "services", True, ["svc"]),
    ("", "v1", "ServiceAccount", "serviceaccounts", True, ["sa"]),
    ("", "v1", "Pod", "pods", True, ["po"]),
    ("", "v1", "Node", "nodes", False, ["no"]),
    ("", "v1", "Event", "events", True, ["ev"]),
    ("apps", "v1", "Deployment", "deployments", True, ["deploy"]),
    ("apps", "v1", "DaemonSet", "daemonsets", True, ["ds"]),
    ("apps", "v1", "ReplicaSet", "replicasets", True, ["rs"]),
    ("apps", "v1", "ControllerRevision", "controllerrevisions", True, []),
    ("batch", "v1", "Job", "jobs", True, []),
    ("rbac.authorization.k8s.io", "v1", "Role", "roles", True, []),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True, []),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False, []),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False, []),
    ("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, ["pc"]),
    ("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", False, []),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False, ["crd", "crds"]),
    ("monitoring.coreos.com", "v1", "PrometheusRule", "prometheusrules", True, ["promrule"]),
    ("monitoring.coreos.com", "v1", "ServiceMonitor", "servicemonitors", True, ["smon"]),
    ("kubeflow.org", "v2beta1", "MPIJob", "mpijobs", True, []),
    ("argoproj.io", "v1alpha1", "Workflow", "workflows", True, ["wf"]),
    ("mellanox.com", "v1alpha1", "NicClusterPolicy", "nicclusterpolicies", False, ["ncp"]),
    ("nfd.k8s-sigs.io", "v1alpha1", "NodeFeatureRule", "nodefeaturerules", False, ["nfr"]),
    ("nvidia.com", "v1", "ClusterPolicy", "clusterpolicies", False, []),
    ("nvidia.com", "v1alpha1", "NVIDIADriver", "nvidiadrivers", False, ["nvd"]),
    ("resource.k8s.io", "v1beta1", "ResourceSlice", "resourceslices", False, []),
]
SUBRESOURCES = {"pods": ["log", "status"], "deployments": ["status", "scale"], "daemonsets": ["status"],
                "jobs": ["status"], "mpijobs": ["status"], "clusterpolicies": ["status"], "nicclusterpolicies": ["status"],
                "customresourcedefinitions": ["status"], "nodes": ["status"], "namespaces": ["status"]}
# Groups the API server itself serves; a kind of any other group is served only
# while its CustomResourceDefinition (PLURAL.GROUP) exists, as on a real cluster.
BUILTIN_GROUPS = {"", "apps", "batch", "rbac.authorization.k8s.io", "scheduling.k8s.io", "node.k8s.io",
                  "apiextensions.k8s.io", "resource.k8s.io"}
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
BUILTIN_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def gv_string(group, version):
    return f"{group}/{version}" if group else version


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details or {}

    def status(self):
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "details": self.details, "code": self.code}


def not_found(plural, name, group=""):
    res = f"{plural}.{group}" if group else plural
    return ApiError(404, "NotFound", f'{res} "{name}" not found', {"name": name, "group": group, "kind": plural})


def merge_patch(target, patch):
    """RFC 7386, with strategic-merge $-directives dropped."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k.startswith("$"):
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict):
            out[k] = merge_patch(out.get(k), v)
        elif isinstance(v, list):
            out[k] = [strip_directives(x) for x in v]
        else:
            out[k] = v
    return out


def strip_directives(v):
    if isinstance(v, dict):
        return {k: strip_directives(x) for k, x in v.items() if not k.startswith("$")}
    if isinstance(v, list):
        return [strip_directives(x) for x in v]
    return v


def json_patch(target, ops):
    doc = copy.deepcopy(target)

    def walk(path):
        parts = [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]
        parent = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent[p]
        return parent, parts[-1]

    for op in ops:
        try:
            parent, key = walk(op["path"])
            kind = op["op"]
            if isinstance(parent, list):
                idx = len(parent) if key == "-" else int(key)
                if kind == "add":
                    parent.insert(idx, op["value"])
                elif kind == "remove":
                    del parent[idx]
                elif kind == "replace":
                    parent[idx] = op["value"]
                elif kind == "test" and parent[idx] != op["value"]:
                    raise ApiError(422, "Invalid", f"test failed at {op['path']}")
            else:
                if kind in ("add", "replace"):
                    if kind == "replace" and key not in parent:
                        raise KeyError(key)
                    parent[key] = op["value"]
                elif kind == "remove":
                    del parent[key]
                elif kind == "test" and parent.get(key) != op["value"]:
                    raise ApiError(422, "Invalid", f"test failed at {op['path']}")
        except (KeyError, IndexError, ValueError, TypeError) as e:
            raise ApiError(422, "Invalid", f"the server rejected our request due to an error in our request: "
                                           f"json patch {op.get('op')} {op.get('path')}: {e}")
    return doc


def parse_selector(text):
    """[(key, op, value)] for a label selector: a=b, a==b, a!=b, a, !a, a in (x,y), a notin (x,y)."""
    out, depth, cur = [], 0, ""
    for ch in text or "":
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    if cur:
        out.append(cur)
    terms = []
    for t in (x.strip() for x in out):
        if not t:
            continue
        if " notin " in t or " in " in t:
            k, op, rest = t.partition(" notin ") if " notin " in t else t.partition(" in ")
            terms.append((k.strip(), op.strip(), {v.strip() for v in rest.strip().strip("()").split(",")}))
        elif "!=" in t:
            k, _, v = t.partition("!=")
            terms.append((k.strip(), "!=", v.strip()))
        elif "=" in t:
            k, _, v = t.replace("==", "=").partition("=")
            terms.append((k.strip(), "=", v.strip()))
        elif t.startswith("!"):
            terms.append((t[1:].strip(), "!", None))
        else:
            terms.append((t, "exists", None))
    return terms


def field_value(obj, path):
    cur = obj
    for p in path.split("."):
        cur = cur.get(p) if isinstance(cur, dict) else None
    return "" if cur is None else str(cur)


def matches(obj, label_sel, field_sel):
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for k, op, v in label_sel:
        have = k in labels
        if ((op == "=" and labels.get(k) != v) or (op == "!=" and labels.get(k) == v) or (op == "!" and have)
                or (op == "exists" and not have) or (op == "in" and labels.get(k) not in v)
                or (op == "notin" and labels.get(k) in v)):
            return False
    for k, op, v in field_sel:
        got = field_value(obj, k)
        if (op == "=" and got != v) or (op == "!=" and got == v):
            return False
    return True


class Store:
    def __init__(self, settle):
        self.lock = threading.Condition()
        self.objects = {}  # (group, plural, namespace, name) -> object
        self.rv = 1000
        self.events = []  # (rv, type, key, object)
        self.settle = settle
        with self.lock:
            for ns in BUILTIN_NAMESPACES:
                self.put_raw(self.resource_for("", "v1", "namespaces"), None,
                             {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    @staticmethod
    def resource_for(group, version, plural):
        for r in RESOURCES:
            if r[0] == group and r[1] == version and r[3] == plural:
                return r
        return None

    @staticmethod
    def resource_of(obj):
        api = obj.get("apiVersion", "")
        group, _, version = api.rpartition("/")
        for r in RESOURCES:
            if r[0] == group and r[1] == version and r[2] == obj.get("kind"):
                return r
        return None

    def served(self):
        """The RESOURCES entries served now: the built-in groups', and a custom
        kind's while its CRD exists."""
        with self.lock:
            return [r for r in RESOURCES if r[0] in BUILTIN_GROUPS or
                    ("apiextensions.k8s.io", "customresourcedefinitions", None, f"{r[3]}.{r[0]}") in self.objects]

    def next_rv(self):
        self.rv += 1
        return str(self.rv)

    def stamp(self, res, namespace, obj, old=None):
        obj["apiVersion"], obj["kind"] = gv_string(res[0], res[1]), res[2]
        md = obj.setdefault("metadata", {})
        if res[4]:
            md["namespace"] = namespace
        else:
            md.pop("namespace", None)
        if old is None:
            md["uid"] = str(uuid.uuid4())
            md["creationTimestamp"] = now()
            md["generation"] = 1
        else:
            omd = old["metadata"]
            md["uid"], md["creationTimestamp"] = omd["uid"], omd["creationTimestamp"]
            changed = {k: v for k, v in obj.items() if k not in ("metadata", "status")} != \
                      {k: v for k, v in old.items() if k not in ("metadata", "status")}
            md["generation"] = omd.get("generation", 1) + (1 if changed else 0)
        md["resourceVersion"] = self.next_rv()
        if self.settle:
            settle(res, obj)
        return obj

    def put_raw(self, res, namespace, obj, dry=False):
        """Create or replace without checks (seeding); returns the stored object."""
        key = (res[0], res[3], namespace if res[4] else None, obj["metadata"]["name"])
        old = self.objects.get(key)
        obj = self.stamp(res, namespace, copy.deepcopy(obj), old)
        if not dry:
            self.objects[key] = obj
            self.events.append((int(obj["metadata"]["resourceVersion"]), "MODIFIED" if old else "ADDED", key, obj))
            self.lock.notify_all()
            if self.settle and res[2] == "Deployment":
                self.replica_set(obj)
        return obj

    def replica_set(self, dep):
        """The Deployment's current ReplicaSet, ready, as its controller would
        leave it (helm --wait and kubectl rollout status look for it)."""
        spec = dep.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        h = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]
        template.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = h
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})["pod-template-hash"] = h
        md = dep["metadata"]
        n = spec.get("replicas", 1)
        rs = {"metadata": {"name": f"{md['name']}-{h}", "labels": template["metadata"]["labels"],
                           "annotations": {"deployment.kubernetes.io/revision": "1"},
                           "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": md["name"],
                                                "uid": md["uid"], "controller": True, "blockOwnerDeletion": True}]},
              "spec": {"replicas": n, "selector": selector, "template": template},
              "status": {"replicas": n, "readyReplicas": n, "availableReplicas": n, "fullyLabeledReplicas": n}}
        res = self.resource_for("apps", "v1", "replicasets")
        stored = self.put_raw(res, md.get("namespace"), rs)
        stored["status"] = dict(rs["status"], observedGeneration=stored["metadata"]["generation"])

    def delete_raw(self, key):
        obj = self.objects.pop(key)
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = self.next_rv()
        self.events.append((int(obj["metadata"]["resourceVersion"]), "DELETED", key, obj))
        self.lock.notify_all()
        return obj

    def seed(self, docs):
        with self.lock:
            for obj in docs:
                res = self.resource_of(obj)
                if res is None:
                    raise ApiError(400, "BadRequest", f"seed: no resource for {obj.get('apiVersion')} {obj.get('kind')}")
                if res not in self.served():
                    raise ApiError(400, "BadRequest", f"seed: {obj.get('kind')} needs its CRD {res[3]}.{res[0]} seeded first")
                ns = (obj.get("metadata") or {}).get("namespace") or "default"
                status = obj.get("status")
                stored = self.put_raw(res, ns, obj)
                if status is not None:  # seeded status wins over settling
                    stored["status"] = copy.deepcopy(status)


def settle(res, obj):
    """The state an idle cluster's controllers would leave the object in."""
    kind, gen = res[2], obj["metadata"].get("generation", 1)
    spec = obj.get("spec") or {}
    if kind == "CustomResourceDefinition":
        t = now()
        obj["status"] = {"conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "lastTransitionTime": t,
             "message": "no conflicts found"},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "lastTransitionTime": t,
             "message": "the initial names have been accepted"}],
            "acceptedNames": (spec.get("names") or {}), "storedVersions": [v.get("name") for v in spec.get("versions", [])
                                                                            if v.get("storage")]}
    elif kind == "Deployment":
        n = spec.get("replicas", 1)
        obj["status"] = {"observedGeneration": gen, "replicas": n, "updatedReplicas": n, "readyReplicas": n,
                         "availableReplicas": n, "conditions": [
                             {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                             {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]}
    elif kind == "DaemonSet":
        obj["status"] = {"observedGeneration": gen, "currentNumberScheduled": 0, "desiredNumberScheduled": 0,
                         "numberMisscheduled": 0, "numberReady": 0, "updatedNumberScheduled": 0,
                         "numberAvailable": 0}
    elif kind == "Job":
        obj["status"] = {"succeeded": 1, "startTime": now(), "completionTime": now(),
                         "conditions": [{"type": "Complete", "status": "True"}]}
    elif kind == "Namespace":
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}


def discovery_resources(group, version, served):
    out = []
    for g, v, kind, plural, namespaced, short in served:
        if g != group or v != version:
            continue
        out.append({"name": plural, "singularName": kind.lower(), "namespaced": namespaced, "kind": kind,
                    "verbs": VERBS, **({"shortNames": short} if short else {})})
        for sub in SUBRESOURCES.get(plural, []):
            out.append({"name": f"{plural}/{sub}", "singularName": "", "namespaced": namespaced,
                        "kind": "Scale" if sub == "scale" else kind,
                        "verbs": ["get"] if sub == "log" else ["get", "patch", "update"]})
    return out


def group_versions(served):
    gvs = []
    for r in served:
        if (r[0], r[1]) not in gvs:
            gvs.append((r[0], r[1]))
    return gvs


def openapi_v3_doc(group, version, served):
    params = [{"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
              for n in ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")]
    paths = {}
    for g, v, kind, plural, namespaced, _ in served:
        if g != group or v != version:
            continue
        base = f"/api/{v}" if not g else f"/apis/{g}/{v}"
        item = f"{base}/namespaces/{{namespace}}/{plural}/{{name}}" if namespaced else f"{base}/{plural}/{{name}}"
        gvk = {"group": g, "version": v, "kind": kind}
        ok = {"200": {"description": "OK"}}
        paths[item] = {
            "get": {"operationId": f"read{kind}", "x-kubernetes-action": "get",
                    "x-kubernetes-group-version-kind": gvk, "responses": ok},
            "patch": {"operationId": f"patch{kind}", "x-kubernetes-action": "patch",
                      "x-kubernetes-group-version-kind": gvk, "parameters": params, "responses": ok},
            "put": {"operationId": f"replace{kind}", "x-kubernetes-action": "put",
                    "x-kubernetes-group-version-kind": gvk, "parameters": params, "responses": ok},
        }
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes (gpubundle stand-in)", "version": KUBE_VERSION["gitVersion"]},
            "paths": paths, "components": {"schemas": {}}}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    store = None
    forbidden = {}  # path -> message: kubectl's GETs of it answered 403 (forbid)
    record = None
    record_lock = threading.Lock()
    address = ""
    logged = True  # until handle_any: an error answered while parsing the request line is not recorded

    def log_message(self, fmt, *args):  # quiet: requests.jsonl is the log
        pass

    # --- plumbing ---------------------------------------------------------
    def send_json(self, code, obj, ctype="application/json"):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            return self.rfile.read(n)
        if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return b""

    # The request is recorded before its response can complete: a client that
    # has its answer must find the request in requests.jsonl.
    def send_response(self, code, message=None):
        self.answered = code
        super().send_response(code, message)

    def end_headers(self):
        self.log_request_line()
        super().end_headers()

    def log_request_line(self):
        if self.logged or self.path.startswith("/_standin/"):
            return
        self.logged = True
        body_raw, parsed_body = self.raw_body, self.parsed_body
        url = urllib.parse.urlsplit(self.path)
        entry = {"method": self.command, "path": url.path, "query": urllib.parse.parse_qs(url.query, keep_blank_values=True),
                 "contentType": self.headers.get("Content-Type"), "accept": self.headers.get("Accept"),
                 "userAgent": self.headers.get("User-Agent"), "status": getattr(self, "answered", None),
                 "body": parsed_body if parsed_body is not None else (body_raw.decode("utf-8", "replace") if body_raw else None)}
        with self.record_lock:
            with open(self.record, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry, sort_keys=True) + "\n")

    def handle_any(self):
        self.answered, self.logged = None, False
        raw = self.read_body() if self.command in ("POST", "PUT", "PATCH", "DELETE") else b""
        self.raw_body, self.parsed_body = raw, None
        body = None
        if raw:
            body = self.parsed_body = parse_doc(raw)
        try:
            if raw and "protobuf" in (self.headers.get("Content-Type") or ""):
                # helm's release storage writes Secrets with client-go's typed client, in protobuf
                body = self.parsed_body = protobuf_object(raw)
            self.route(body, raw)
        except ApiError as e:
            self.send_json(e.code, e.status())
        except BrokenPipeError:
            pass
        finally:
            self.log_request_line()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = handle_any

    # --- routes -----------------------------------------------------------
    def route(self, body, raw):
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        parts = [p for p in url.path.split("/") if p]
        if parts[:1] == ["_standin"]:
            return self.admin(parts[1:], body)
        served = self.store.served()
        # RBAC as the tests need it: kubectl's user may not read this path.
        if (self.command == "GET" and url.path in Handler.forbidden
                and (self.headers.get("User-Agent") or "").startswith("kubectl")):
            raise ApiError(403, "Forbidden", Handler.forbidden[url.path], {"kind": parts[-1]})
        if self.command == "GET":
            if url.path == "/version":
                return self.send_json(200, KUBE_VERSION)
            if url.path in ("/healthz", "/readyz", "/livez"):
                body = b"ok"
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(body)
                return
            if url.path == "/api":
                return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": self.address}]})
            if url.path == "/apis":
                groups = []
                for g, v in group_versions(served):
                    if not g:
                        continue
                    gv = {"groupVersion": gv_string(g, v), "version": v}
                    for grp in groups:
                        if grp["name"] == g:
                            grp["versions"].append(gv)
                            break
                    else:
                        groups.append({"name": g, "versions": [gv], "preferredVersion": gv})
                return self.send_json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
            if parts[:2] == ["openapi", "v3"]:
                return self.openapi(parts[2:], served)
            if url.path == "/openapi/v2":
                # An empty OpenAPI v2 document (protobuf, which kubectl asks
                # for): no schemas, so kubectl's client-side validation of a
                # kind the server does not serve gets as far as its real
                # error, "no matches for kind".
                self.send_response(200)
                self.send_header("Content-Type", "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        # /api/v1/... or /apis/GROUP/VERSION/...
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if (group, version) not in group_versions(served):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            if self.command != "GET":
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            return self.send_json(200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv_string(group, version),
                                        "resources": discovery_resources(group, version, served)})
        watch = q.get("watch", ["false"])[0] in ("1", "true")
        if rest[0] == "watch":
            watch, rest = True, rest[1:]
        namespace = None
        find = lambda plural: next((r for r in served if r[0] == group and r[1] == version and r[3] == plural), None)
        if len(rest) >= 3 and rest[0] == "namespaces" and find(rest[2]):
            namespace, rest = rest[1], rest[2:]
        res = find(rest[0]) if rest else None
        if res is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if res[4] and namespace is None and len(rest) > 1:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub and sub not in SUBRESOURCES.get(res[3], []):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        dry = "All" in q.get("dryRun", [])
        if name is None:
            if self.command == "GET":
                return self.watch(res, namespace, q) if watch else self.list(res, namespace, q)
            if self.command == "POST":
                return self.create(res, namespace, body, dry)
            if self.command == "DELETE":
                return self.delete_collection(res, namespace, q, dry)
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        if sub == "log":
            return self.pod_log(res, namespace, name)
        if self.command == "GET":
            return self.send_json(200, self.get(res, namespace, name))
        if self.command == "PUT":
            return self.update(res, namespace, name, body, dry, sub)
        if self.command == "PATCH":
            return self.patch(res, namespace, name, body, raw, q, dry, sub)
        if self.command == "DELETE":
            return self.delete(res, namespace, name, dry)
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def openapi(self, rest, served):
        if not rest:
            paths = {}
            for g, v in group_versions(served):
                key = f"api/{v}" if not g else f"apis/{g}/{v}"
                digest = hashlib.sha256(json.dumps(openapi_v3_doc(g, v, served), sort_keys=True).encode()).hexdigest().upper()
                paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
            return self.send_json(200, {"paths": paths})
        if rest[0] == "api" and len(rest) == 2:
            return self.send_json(200, openapi_v3_doc("", rest[1], served))
        if rest[0] == "apis" and len(rest) == 3 and (rest[1], rest[2]) in group_versions(served):
            return self.send_json(200, openapi_v3_doc(rest[1], rest[2], served))
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    def admin(self, rest, body):
        st = self.store
        if rest == ["seed"] and self.command == "POST":
            st.seed(docs_of(body))
            return self.send_json(200, {"seeded": len(docs_of(body))})
        if rest == ["objects"] and self.command == "GET":
            with st.lock:
                objs = [st.objects[k] for k in sorted(st.objects, key=lambda k: tuple(x or "" for x in k))]
            return self.send_json(200, objs)
        if rest == ["forbid"] and self.command == "POST":
            if body.get("message") is None:
                Handler.forbidden.pop(body["path"], None)
            else:
                Handler.forbidden[body["path"]] = body["message"]
            return self.send_json(200, {"forbidden": sorted(Handler.forbidden)})
        raise ApiError(404, "NotFound", "no such stand-in endpoint")

    # --- object operations ----------------------------------------------
    def key(self, res, namespace, name):
        return (res[0], res[3], namespace if res[4] else None, name)

    def need_namespace(self, res, namespace):
        if res[4] and ("", "namespaces", None, namespace) not in self.store.objects:
            raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found',
                           {"name": namespace, "kind": "namespaces"})

    def check_body(self, res, namespace, body, name=None):
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the body of the request was in an unknown format")
        if body.get("kind") and body.get("kind") != res[2]:
            raise ApiError(400, "BadRequest", f"the kind of the provided object ({body.get('kind')}) does not match "
                                              f"the resource ({res[2]})")
        md = body.get("metadata") or {}
        if res[4] and md.get("namespace") and md["namespace"] != namespace:
            raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the namespace "
                                              "sent on the request")
        if name is not None and md.get("name") and md["name"] != name:
            raise ApiError(400, "BadRequest", "the name of the object (%s) does not match the name on the URL (%s)"
                           % (md["name"], name))
        if not md.get("name") and not md.get("generateName") and name is None:
            raise ApiError(422, "Invalid", f"{res[2]} \"\" is invalid: metadata.name: Required value: name or "
                                           f"generateName is required")

    def get(self, res, namespace, name):
        with self.store.lock:
            obj = self.store.objects.get(self.key(res, namespace, name))
            if obj is None:
                raise not_found(res[3], name, res[0])
            return copy.deepcopy(obj)

    def list(self, res, namespace, q):
        label_sel = parse_selector(q.get("labelSelector", [""])[0])
        field_sel = [t for t in parse_selector(q.get("fieldSelector", [""])[0]) if t[1] in ("=", "!=")]
        with self.store.lock:
            items = [copy.deepcopy(o) for k, o in sorted(self.store.objects.items(), key=lambda kv: tuple(x or "" for x in kv[0]))
                     if k[0] == res[0] and k[1] == res[3] and (namespace is None or k[2] == namespace)
                     and matches(o, label_sel, field_sel)]
            rv = str(self.store.rv)
        self.send_json(200, {"kind": res[2] + "List", "apiVersion": gv_string(res[0], res[1]),
                             "metadata": {"resourceVersion": rv}, "items": items})

    def watch(self, res, namespace, q):
        label_sel = parse_selector(q.get("labelSelector", [""])[0])
        field_sel = [t for t in parse_selector(q.get("fieldSelector", [""])[0]) if t[1] in ("=", "!=")]
        timeout = min(int(q.get("timeoutSeconds", ["60"])[0] or 60), 60)
        since = q.get("resourceVersion", [""])[0]
        st = self.store
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def want(key, obj):
            return (key[0] == res[0] and key[1] == res[3] and (namespace is None or key[2] == namespace)
                    and matches(obj, label_sel, field_sel))

        with st.lock:
            if since in ("", "0"):
                pending = [("ADDED", o) for k, o in st.objects.items() if want(k, o)]
                last = st.rv
            else:
                last = int(since)
                pending = [(t, o) for rv, t, k, o in st.events if rv > last and want(k, o)]
                last = st.rv
        deadline = time.monotonic() + timeout
        try:
            while True:
                for t, o in pending:
                    self.wfile.write((json.dumps({"type": t, "object": o}) + "\n").encode())
                self.wfile.flush()
                with st.lock:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return
                    st.lock.wait(min(left, 1.0))
                    pending = [(t, o) for rv, t, k, o in st.events if rv > last and want(k, o)]
                    last = st.rv
        except (BrokenPipeError, ConnectionResetError):
            return

    def create(self, res, namespace, body, dry):
        self.check_body(res, namespace, body)
        md = body.setdefault("metadata", {})
        with self.store.lock:
            self.need_namespace(res, namespace)
            if not md.get("name"):
                md["name"] = md["generateName"] + uuid.uuid4().hex[:5]
            if self.key(res, namespace, md["name"]) in self.store.objects:
                group = f".{res[0]}" if res[0] else ""
                raise ApiError(409, "AlreadyExists", f'{res[3]}{group} "{md["name"]}" already exists',
                               {"name": md["name"], "group": res[0], "kind": res[3]})
            md.pop("resourceVersion", None)
            obj = self.store.put_raw(res, namespace, body, dry)
        self.send_json(201, obj)

    def update(self, res, namespace, name, body, dry, sub):
        self.check_body(res, namespace, body, name)
        with self.store.lock:
            old = self.store.objects.get(self.key(res, namespace, name))
            if old is None:
                raise not_found(res[3], name, res[0])
            rv = (body.get("metadata") or {}).get("resourceVersion")
            if rv and rv != old["metadata"]["resourceVersion"]:
                group = f".{res[0]}" if res[0] else ""
                raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {res[3]}{group} "{name}": the object '
                                                f'has been modified; please apply your changes to the latest version and '
                                                f'try again', {"name": name, "group": res[0], "kind": res[3]})
            if sub == "status":
                new = copy.deepcopy(old)
                new["status"] = body.get("status")
            else:
                new = body
                if "status" in old and "status" not in new:
                    new["status"] = old["status"]
            obj = self.store.put_raw(res, namespace, new, dry)
        self.send_json(200, obj)

    def patch(self, res, namespace, name, body, raw, q, dry, sub):
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        with self.store.lock:
            key = self.key(res, namespace, name)
            old = self.store.objects.get(key)
            if ctype == "application/apply-patch+yaml":
                if not q.get("fieldManager", [""])[0]:
                    raise ApiError(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
                                                   'is required for apply patch')
                self.check_body(res, namespace, body, name)
                if old is None:
                    self.need_namespace(res, namespace)
                    new = copy.deepcopy(body)
                    new.setdefault("metadata", {})["name"] = name
                    code = 201
                else:
                    new = merge_patch(old, body)
                    code = 200
                md = new.setdefault("metadata", {})
                md["managedFields"] = [{"manager": q["fieldManager"][0], "operation": "Apply",
                                        "apiVersion": gv_string(res[0], res[1]), "time": now(), "fieldsType": "FieldsV1",
                                        "fieldsV1": {}}]
                obj = self.store.put_raw(res, namespace, new, dry)
                return self.send_json(code, obj)
            if old is None:
                raise not_found(res[3], name, res[0])
            if ctype == "application/json-patch+json":
                new = json_patch(old, body if isinstance(body, list) else [])
            elif ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
                if not isinstance(body, dict):
                    raise ApiError(400, "BadRequest", "the body of the request was in an unknown format")
                new = merge_patch(old, body)
            else:
                raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - "
                                                            "accepted media types include: application/json-patch+json, "
                                                            "application/merge-patch+json, application/apply-patch+yaml, "
                                                            "application/strategic-merge-patch+json")
            if sub != "status":
                nmd = new.get("metadata") or {}
                if nmd.get("name", name) != name:
                    raise ApiError(400, "BadRequest", "the name of the object does not match the name on the URL")
            obj = self.store.put_raw(res, namespace, new, dry)
        self.send_json(200, obj)

    def delete(self, res, namespace, name, dry):
        with self.store.lock:
            key = self.key(res, namespace, name)
            if key not in self.store.objects:
                raise not_found(res[3], name, res[0])
            obj = copy.deepcopy(self.store.objects[key]) if dry else self.store.delete_raw(key)
            if res[2] == "Namespace" and not dry:
                for k in [k for k in self.store.objects if k[2] == name]:
                    self.store.delete_raw(k)
            if res[2] == "CustomResourceDefinition" and not dry:  # its objects go with it
                plural, _, group = name.partition(".")
                for k in [k for k in self.store.objects if k[0] == group and k[1] == plural]:
                    self.store.delete_raw(k)
        if res[2] == "Namespace":
            obj.setdefault("status", {})["phase"] = "Terminating"
            return self.send_json(200, obj)
        self.send_json(200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                             "details": {"name": name, "group": res[0], "kind": res[3], "uid": obj["metadata"]["uid"]}})

    def delete_collection(self, res, namespace, q, dry):
        label_sel = parse_selector(q.get("labelSelector", [""])[0])
        with self.store.lock:
            keys = [k for k, o in self.store.objects.items() if k[0] == res[0] and k[1] == res[3]
                    and (namespace is None or k[2] == namespace) and matches(o, label_sel, [])]
            items = [copy.deepcopy(self.store.objects[k]) if dry else self.store.delete_raw(k) for k in keys]
        self.send_json(200, {"kind": res[2] + "List", "apiVersion": gv_string(res[0], res[1]),
                             "metadata": {"resourceVersion": str(self.store.rv)}, "items": items})

    def pod_log(self, res, namespace, name):
        obj = self.get(res, namespace, name)
        text = ((obj.get("metadata") or {}).get("annotations") or {}).get("kube-api-standin/log", "").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)


def pb_fields(data):
    """[(field number, value)] of one protobuf message: varints as int, length-delimited as bytes."""
    out, i = [], 0

    def varint():
        nonlocal i
        shift = n = 0
        while True:
            b = data[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return n
    while i < len(data):
        tag = varint()
        num, wire = tag >> 3, tag & 7
        if wire == 0:
            out.append((num, varint()))
        elif wire == 2:
            n = varint()
            out.append((num, data[i:i + n]))
            i += n
        elif wire == 1:
            out.append((num, data[i:i + 8]))
            i += 8
        elif wire == 5:
            out.append((num, data[i:i + 4]))
            i += 4
        else:
            raise ValueError(f"protobuf wire type {wire}")
    return out


def pb_map(entries, text=True):
    out = {}
    for e in entries:
        f = dict(pb_fields(e))
        v = f.get(2, b"")
        out[f.get(1, b"").decode()] = v.decode() if text else base64.b64encode(v).decode()
    return out


def protobuf_object(raw):
    """A Secret sent in Kubernetes' protobuf envelope, as its JSON object (the
    only kind a client here sends that way: helm's release storage)."""
    if not raw.startswith(b"k8s\x00"):
        raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format")
    unknown = pb_fields(raw[4:])
    type_meta = dict(pb_fields(dict(unknown).get(1, b"")))
    api, kind = type_meta.get(1, b"").decode(), type_meta.get(2, b"").decode()
    if (api, kind) != ("v1", "Secret"):
        raise ApiError(415, "UnsupportedMediaType", f"the stand-in reads protobuf for v1 Secret only, not {api} {kind}")
    fields = pb_fields(dict(unknown).get(2, b""))
    obj = {"apiVersion": api, "kind": kind, "metadata": {}}
    for num, v in fields:
        if num == 1:
            md = pb_fields(v)
            m = obj["metadata"]
            for n, x in md:
                if n in (1, 2, 3, 5, 6):
                    m[{1: "name", 2: "generateName", 3: "namespace", 5: "uid", 6: "resourceVersion"}[n]] = x.decode()
            labels = pb_map([x for n, x in md if n == 11])
            annotations = pb_map([x for n, x in md if n == 12])
            if labels:
                m["labels"] = labels
            if annotations:
                m["annotations"] = annotations
        elif num == 2:
            obj.setdefault("data", {}).update(pb_map([v], text=False))
        elif num == 3:
            obj["type"] = v.decode()
        elif num == 4:
            obj.setdefault("stringData", {}).update(pb_map([v]))
        elif num == 5:
            obj["immutable"] = bool(v)
    return obj


def parse_doc(raw):
    try:
        return json.loads(raw)
    except ValueError:
        pass
    try:
        import yaml
        docs = [d for d in yaml.safe_load_all(raw.decode("utf-8")) if d is not None]
        return docs[0] if len(docs) == 1 else docs
    except Exception:  # noqa: BLE001 - anything else is text, recorded as such
        return None


def docs_of(body):
    if isinstance(body, dict) and body.get("kind", "").endswith("List") and "items" in body:
        return body["items"]
    if isinstance(body, dict):
        return [body]
    return [d for d in body or [] if isinstance(d, dict)]


def read_docs(path):
    with open(path, "rb") as f:
        return docs_of(parse_doc(f.read()))


def serve_forever(args):
    d = os.path.abspath(args.dir)
    store = Store(settle=not args.no_settle)
    for path in args.seed or []:
        store.seed(read_docs(path))
    Handler.store, Handler.record = store, os.path.join(d, "requests.jsonl")
    Handler.address = f"127.0.0.1:{args.port}"
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    srv.daemon_threads = True
    if args.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(d, "tls", "server.pem"), os.path.join(d, "tls", "server.key"))
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.serve_forever()


def kubeconfig(url, ca):
    cluster = {"server": url}
    if ca:
        cluster["certificate-authority-data"] = base64.b64encode(open(ca, "rb").read()).decode()
    return json.dumps({"apiVersion": "v1", "kind": "Config", "current-context": "kube-api-standin",
                       "clusters": [{"name": "kube-api-standin", "cluster": cluster}],
                       "users": [{"name": "standin-admin", "user": {"token": "kube-api-standin-token"}}],
                       "contexts": [{"name": "kube-api-standin", "context": {"cluster": "kube-api-standin",
                                                                             "user": "standin-admin"}}]}, indent=2) + "\n"


def start(args):
    d = os.path.abspath(args.dir)
    os.makedirs(d, exist_ok=True)
    if harness.running(d, "kubeapi", "api"):
        harness.die(f"a kube-api stand-in already runs in {d}; stop it first")
    for s in args.seed or []:
        read_docs(s)  # a bad seed file fails here, with its name
    ca = None
    ctx = None
    if args.tls:
        import registry  # its make_tls: a throw-away CA and a cert for 127.0.0.1
        os.makedirs(os.path.join(d, "tls"), exist_ok=True)
        ca = registry.make_tls(os.path.join(d, "tls"))[0]
        ctx = ssl.create_default_context(cafile=ca)
    scheme = "https" if args.tls else "http"
    log = os.path.join(d, "kube-api.log")
    open(os.path.join(d, "requests.jsonl"), "a").close()
    for _ in range(5):
        port = harness.free_port()
        argv = [sys.executable, os.path.abspath(__file__), "serve-forever", "--dir", d, "--port", str(port)]
        argv += ["--tls"] if args.tls else []
        argv += ["--no-settle"] if args.no_settle else []
        for s in args.seed or []:
            argv += ["--seed", os.path.abspath(s)]
        proc = harness.spawn(d, "kubeapi", "api", argv, log)
        url = f"{scheme}://127.0.0.1:{port}"
        if harness.wait_http(url + "/_standin/objects", proc, ok=(200,), ssl_context=ctx):
            kc = os.path.join(d, "kubeconfig")
            with open(kc + ".tmp", "w") as f:
                f.write(kubeconfig(url, ca))
            os.replace(kc + ".tmp", kc)
            return harness.print_json({"url": url, "pid": proc.pid, "kubeconfig": kc,
                                       "requests": os.path.join(d, "requests.jsonl"), "ca": ca},
                                      os.path.join(d, "kube-api.json"))
        harness.stop(d, {"kubeapi"}, "api")
    harness.die(f"kube-api stand-in did not start: {harness.log_tail(log)}")


def admin_call(d, method, path, body=None):
    info = json.load(open(os.path.join(os.path.abspath(d), "kube-api.json")))
    ctx = ssl.create_default_context(cafile=info["ca"]) if info.get("ca") else None
    req = urllib.request.Request(info["url"] + path, data=body, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
        return r.read()


def seed_cmd(args):
    docs = []
    for path in args.files:
        docs += read_docs(path)
    try:
        print(admin_call(args.dir, "POST", "/_standin/seed", json.dumps(docs).encode()).decode())
    except urllib.error.HTTPError as e:
        harness.die(f"seed: {e.read().decode(errors='replace')}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start")
    s.add_argument("--dir", required=True)
    s.add_argument("--tls", action="store_true")
    s.add_argument("--seed", action="append", help="objects to start with (JSON or YAML); repeatable")
    s.add_argument("--no-settle", action="store_true", help="store objects as written, no controller-like status")
    s.set_defaults(fn=start)
    f = sub.add_parser("serve-forever", help="internal: the server process")
    f.add_argument("--dir", required=True)
    f.add_argument("--port", type=int, required=True)
    f.add_argument("--tls", action="store_true")
    f.add_argument("--seed", action="append")
    f.add_argument("--no-settle", action="store_true")
    f.set_defaults(fn=serve_forever)
    e = sub.add_parser("seed")
    e.add_argument("--dir", required=True)
    e.add_argument("files", nargs="+")
    e.set_defaults(fn=seed_cmd)
    o = sub.add_parser("objects")
    o.add_argument("--dir", required=True)
    o.set_defaults(fn=lambda a: print(admin_call(a.dir, "GET", "/_standin/objects").decode()))
    b = sub.add_parser("forbid")
    b.add_argument("--dir", required=True)
    b.add_argument("path")
    b.add_argument("message", nargs="?")
    b.set_defaults(fn=lambda a: print(admin_call(a.dir, "POST", "/_standin/forbid",
                                                 json.dumps({"path": a.path, "message": a.message}).encode()).decode()))
    t = sub.add_parser("stop")
    t.add_argument("--dir", required=True)
    t.set_defaults(fn=lambda a: harness.stop(os.path.abspath(a.dir), {"kubeapi"}))
    args = p.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
