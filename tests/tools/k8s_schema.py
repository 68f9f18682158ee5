#!/usr/bin/env python3
"""Validates Kubernetes manifests against their real schemas, unknown fields refused.

  k8s_schema.py [--crd FILE]... [--skip APIVERSION/KIND]... FILE...

Every document of every FILE (a YAML stream) must be an object of a known kind:
- a custom kind whose CRD is given with --crd: the openAPIV3Schema of the served
  version named by the object's apiVersion, made strict (see strict_schema) and
  checked with jsonschema (Draft 4: the CRD dialect has boolean
  exclusiveMinimum); metadata is checked as ObjectMeta, as the API server does;
- a built-in kind: the models of the official Kubernetes Python client
  (python3-kubernetes), which are generated from the Kubernetes OpenAPI spec:
  each key must be in the model's attribute_map, each value of the model's
  type, and each field the model's setter refuses as None present.
A kind that is neither is an error; --skip names one that is reported as
skipped instead (a CRD the caller does not have). One line per problem:
FILE: document N (Kind/name): JSON-PATH: what is wrong. Exit 0 when every
document validates, 1 when not, 2 on bad usage or an unreadable CRD.
"""
import argparse
import datetime
import inspect
import re
import sys

import jsonschema
import kubernetes.client
import kubernetes.client.models as models
import yaml
from kubernetes.client.configuration import Configuration


# --- YAML -------------------------------------------------------------------

class StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """SafeLoader that refuses a key given twice in one mapping, as kubectl does."""


def _mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def path_str(parts):
    out = "$"
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(p)):
            out += "." + str(p)
        else:
            out += "[" + repr(str(p)) + "]"
    return out


def type_name(v):
    if v is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", dict: "object", list: "array"}.get(
        type(v), type(v).__name__)


# --- built-in kinds: the Python client's models ------------------------------

# Where the Python client's model type is wider or narrower than what the API
# server reads. The client maps resource.Quantity to str and IntOrString to
# object; the server takes a number or a string for both (these are the
# fields whose OpenAPI type is one of the two in the Kubernetes 1.22 spec the
# client is generated from).
QUANTITY_FIELDS = {
    ("V1ResourceRequirements", "limits"), ("V1ResourceRequirements", "requests"),
    ("V1EmptyDirVolumeSource", "size_limit"), ("V1ResourceFieldSelector", "divisor"),
    ("V1PodSpec", "overhead"), ("V1Overhead", "pod_fixed"),
    ("V1LimitRangeItem", "default"), ("V1LimitRangeItem", "default_request"), ("V1LimitRangeItem", "max"),
    ("V1LimitRangeItem", "min"), ("V1LimitRangeItem", "max_limit_request_ratio"),
    ("V1NodeStatus", "allocatable"), ("V1NodeStatus", "capacity"),
    ("V1PersistentVolumeSpec", "capacity"), ("V1PersistentVolumeClaimStatus", "capacity"),
    ("V1ResourceQuotaSpec", "hard"), ("V1ResourceQuotaStatus", "hard"), ("V1ResourceQuotaStatus", "used"),
}
INT_OR_STRING_FIELDS = {
    ("V1HTTPGetAction", "port"), ("V1TCPSocketAction", "port"), ("V1ServicePort", "target_port"),
    ("V1NetworkPolicyPort", "port"), ("V1PodDisruptionBudgetSpec", "max_unavailable"),
    ("V1PodDisruptionBudgetSpec", "min_available"), ("V1RollingUpdateDaemonSet", "max_surge"),
    ("V1RollingUpdateDaemonSet", "max_unavailable"), ("V1RollingUpdateDeployment", "max_surge"),
    ("V1RollingUpdateDeployment", "max_unavailable"),
}
# k8s.io/apimachinery/pkg/api/resource: a signed decimal with an SI or binary suffix or an exponent.
QUANTITY = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?[0-9]+))?$")
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def builtin_kinds():
    """{(apiVersion, kind): model class} for every kind the client can create.

    Read from the client's API modules: each create_* method names its body's
    model in its docstring and its URL (/api/v1/... or /apis/GROUP/VERSION/...)
    in its _with_http_info twin, so group and version come from the client,
    not from here."""
    kinds = {}
    for api_name in dir(kubernetes.client):
        api = getattr(kubernetes.client, api_name)
        if not (inspect.isclass(api) and api_name.endswith("Api")):
            continue
        with open(inspect.getsourcefile(api)) as fh:
            methods = dict(re.findall(r"\n    def (create_\w+)\(self[^)]*\):(.*?)(?=\n    def |\Z)", fh.read(), re.S))
        for name, text in methods.items():
            body = re.search(r":param (\w+) body:", text)
            url = re.search(r"'(/apis?/[^']*)'", methods.get(name + "_with_http_info", ""))
            if name.endswith("_with_http_info") or not body or not url or "{name}" in url.group(1):
                continue  # no body, or a subresource (pods/{name}/binding), not a kind of its own
            m = re.match(r"/api/(v1)/|/apis/([^/]+)/([^/]+)/", url.group(1))
            version = m.group(1) or m.group(3)
            api_version = version if m.group(1) else f"{m.group(2)}/{version}"
            model = body.group(1)
            prefix = version[0].upper() + version[1:]
            if model.startswith(prefix) and hasattr(models, model):
                kinds[(api_version, model[len(prefix):])] = getattr(models, model)
    return kinds


_required_cache = {}


def required_fields(cls):
    """The attributes whose setter refuses None (client_side_validation), the model's required ones."""
    if cls not in _required_cache:
        probe = cls.__new__(cls)
        probe.local_vars_configuration = Configuration()
        req = set()
        for attr in cls.openapi_types:
            try:
                getattr(cls, attr).fset(probe, None)
            except ValueError:
                req.add(attr)
        _required_cache[cls] = req
    return _required_cache[cls]


def check_value(value, typ, path, report, owner=None):
    """Checks VALUE against the client's type string TYP ('str', 'list[V1Container]', ...)."""
    if value is None:
        return  # absent, as the API server reads a null
    if owner in QUANTITY_FIELDS:
        if typ.startswith("dict("):
            if not isinstance(value, dict):
                report(path, f"expected an object of quantities, got {type_name(value)}")
                return
            items = [(path + [k], k, v) for k, v in value.items()]
        else:
            items = [(path, "", value)]
        for p, k, v in items:
            if not isinstance(k, str):
                report(p, f"key {k!r} is a {type_name(k)}, not a string")
            if isinstance(v, bool) or not isinstance(v, (int, float, str)) or (isinstance(v, str) and not QUANTITY.match(v)):
                report(p, f"{v!r} is not a quantity")
        return
    if owner in INT_OR_STRING_FIELDS:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            report(path, f"expected an integer or a string, got {type_name(value)}")
        return
    m = re.fullmatch(r"list\[(.+)\]", typ)
    if m:
        if not isinstance(value, list):
            report(path, f"expected an array, got {type_name(value)}")
            return
        for i, v in enumerate(value):
            check_value(v, m.group(1), path + [i], report)
        return
    m = re.fullmatch(r"dict\(str, (.+)\)", typ)
    if m:
        if not isinstance(value, dict):
            report(path, f"expected an object, got {type_name(value)}")
            return
        for k, v in value.items():
            if not isinstance(k, str):
                report(path + [k], f"key {k!r} is a {type_name(k)}, not a string")
            check_value(v, m.group(1), path + [k], report)
        return
    if typ == "str":
        if not isinstance(value, str):
            report(path, f"expected a string, got {type_name(value)} {value!r}")
    elif typ == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            report(path, f"expected an integer, got {type_name(value)} {value!r}")
    elif typ == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            report(path, f"expected a number, got {type_name(value)} {value!r}")
    elif typ == "bool":
        if not isinstance(value, bool):
            report(path, f"expected a boolean, got {type_name(value)} {value!r}")
    elif typ in ("datetime", "date"):
        if not (isinstance(value, (datetime.datetime, datetime.date)) or (isinstance(value, str) and RFC3339.match(value))):
            report(path, f"expected an RFC 3339 time, got {value!r}")
    elif typ == "object":
        pass  # any JSON value (RawExtension, JSON schema parts)
    elif hasattr(models, typ):
        check_model(value, getattr(models, typ), path, report)
    else:
        report(path, f"the client's type {typ} is not understood here")


def check_model(value, cls, path, report):
    if not isinstance(value, dict):
        report(path, f"expected an object ({cls.__name__}), got {type_name(value)}")
        return
    by_json = {j: a for a, j in cls.attribute_map.items()}
    for key, v in value.items():
        attr = by_json.get(key)
        if attr is None:
            report(path + [key], f"unknown field (not in {cls.__name__})")
            continue
        check_value(v, cls.openapi_types[attr], path + [key], report, owner=(cls.__name__, attr))
    for attr in sorted(required_fields(cls)):
        if value.get(cls.attribute_map[attr]) is None:
            report(path + [cls.attribute_map[attr]], f"required field missing ({cls.__name__})")


# --- custom kinds: CRD schemas ----------------------------------------------

def strict_schema(s, root=False):
    """A CRD's structural schema as JSON Schema that refuses what the API server would prune.

    The server drops fields a structural schema does not name (pruning), so an
    object schema without x-kubernetes-preserve-unknown-fields or an
    additionalProperties of its own gets additionalProperties: false; with no
    properties at all it allows no field. x-kubernetes-int-or-string is an
    integer or a string, nullable allows null. The root's metadata is left to
    check_model (ObjectMeta)."""
    if not isinstance(s, dict):
        return s
    out = {}
    for k, v in s.items():
        if k in ("properties", "patternProperties", "definitions", "dependencies"):
            out[k] = {name: strict_schema(sub) for name, sub in v.items()}
        elif k in ("items", "additionalProperties", "not", "additionalItems"):
            out[k] = [strict_schema(x) for x in v] if isinstance(v, list) else strict_schema(v)
        elif k in ("allOf", "anyOf", "oneOf"):
            out[k] = [strict_schema(x) for x in v]
        elif k.startswith("x-kubernetes-") or k in ("description", "example", "externalDocs", "default", "nullable", "format"):
            continue  # annotations for the server, no constraint jsonschema can check (CEL rules are not evaluated)
        else:
            out[k] = v
    if s.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
    if s.get("type") == "object" and not preserve and "additionalProperties" not in s:
        out["additionalProperties"] = False
    if s.get("x-kubernetes-embedded-resource"):
        props = out.setdefault("properties", {})
        for k in ("apiVersion", "kind"):
            props.setdefault(k, {"type": "string"})
        props["metadata"] = {"type": "object"}  # an embedded object's own ObjectMeta: not checked deeper here
    if root:
        out.setdefault("properties", {})["metadata"] = {}
    if s.get("nullable") is True:
        if "type" in out:
            out["type"] = [out["type"], "null"] if isinstance(out["type"], str) else list(out["type"]) + ["null"]
        if "enum" in out:
            out["enum"] = list(out["enum"]) + [None]
    return out


def die(msg):
    print(f"k8s_schema.py: {msg}", file=sys.stderr)
    sys.exit(2)


def load_crds(files):
    """{(apiVersion, kind): (validator, served?, file)} from CRD files."""
    kinds = {}
    for f in files:
        try:
            with open(f) as fh:
                docs = [d for d in yaml.load_all(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if d]
        except (OSError, yaml.YAMLError) as e:
            die(f"{f}: {e}")
        crds = [d for d in docs if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]
        if not crds:
            die(f"{f}: no CustomResourceDefinition in it")
        for crd in crds:
            if crd.get("apiVersion") != "apiextensions.k8s.io/v1":
                die(f"{f}: CRD {crd['metadata']['name']} is {crd.get('apiVersion')}, not apiextensions.k8s.io/v1")
            spec = crd["spec"]
            for v in spec["versions"]:
                schema = ((v.get("schema") or {}).get("openAPIV3Schema"))
                if schema is None:
                    die(f"{f}: {spec['names']['kind']} {v['name']} has no openAPIV3Schema")
                strict = strict_schema(schema, root=True)
                jsonschema.Draft4Validator.check_schema(strict)
                kinds[(f"{spec['group']}/{v['name']}", spec["names"]["kind"])] = (jsonschema.Draft4Validator(strict), v.get("served", False), f)
    return kinds


def check_custom(obj, validator, report):
    for err in sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path]):
        path = list(err.absolute_path)
        if err.validator == "additionalProperties" and err.validator_value is False and isinstance(err.instance, dict):
            known = set(err.schema.get("properties", {}))
            pats = [re.compile(p) for p in err.schema.get("patternProperties", {})]
            for key in err.instance:
                if key not in known and not any(p.search(key) for p in pats):
                    report(path + [key], "unknown field (not in the CRD schema)")
        else:
            report(path, err.message)
    if "metadata" in obj:
        check_model(obj["metadata"], models.V1ObjectMeta, ["metadata"], report)


# --- main ---------------------------------------------------------------------

def check_document(obj, crds, builtins, skip):
    """(label, problems as (path, message), skipped?) of one document."""
    problems = []

    def report(path, msg):
        problems.append((path, msg))
    if not isinstance(obj, dict):
        report([], f"expected an object, got {type_name(obj)}")
        return "", problems, False
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    label = f" ({kind}/{name})"
    key = (api_version, kind)
    if key in skip:
        return label, problems, True
    if not isinstance(api_version, str) or not isinstance(kind, str):
        report([], "apiVersion and kind must be strings")
    elif key in crds:
        validator, served, _ = crds[key]
        if not served:
            report(["apiVersion"], f"{api_version} of {kind} is not served by its CRD")
        check_custom(obj, validator, report)
    elif key in builtins:
        check_model(obj, builtins[key], [], report)
    else:
        report(["kind"], f"unknown kind {api_version} {kind}: no CRD given for it and no such built-in kind")
    if not name:
        report(["metadata", "name"], "required field missing (kubectl apply needs a name)")
    return label, problems, False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--crd", action="append", default=[], help="a CRD file (YAML, one or more CRDs)")
    ap.add_argument("--skip", action="append", default=[], metavar="APIVERSION/KIND",
                    help="report objects of this kind as skipped, not as unknown")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    crds = load_crds(args.crd)
    builtins = builtin_kinds()
    skip = {tuple(s.rsplit("/", 1)) for s in args.skip}
    problems = 0
    checked = {}
    for f in args.files:
        try:
            with open(f) as fh:
                docs = list(yaml.load_all(fh, Loader=StrictLoader))
        except (OSError, yaml.YAMLError) as e:
            print(f"{f}: not readable as YAML: {e}".replace("\n", " "))
            problems += 1
            continue
        if all(d is None for d in docs):
            print(f"{f}: no Kubernetes object in it")
            problems += 1
        for n, obj in enumerate(docs, 1):
            if obj is None:
                continue
            label, found, skipped = check_document(obj, crds, builtins, skip)
            if skipped:
                print(f"{f}: document {n}{label}: skipped: no schema for {obj['apiVersion']} {obj['kind']} given")
                continue
            if isinstance(obj, dict):
                k = f"{obj.get('apiVersion')}/{obj.get('kind')}"
                checked[k] = checked.get(k, 0) + 1
            for path, msg in found:
                print(f"{f}: document {n}{label}: {path_str(path)}: {msg}")
            problems += len(found)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(checked.items()))
    print(f"k8s_schema.py: {problems} problem(s) in {len(args.files)} file(s); checked: {summary or 'nothing'}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
