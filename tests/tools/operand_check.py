#!/usr/bin/env python3
"""What a rendered release would run, held against the kit's lock.

    operand_check.py gpu --rendered R.yaml --values KIT/values.yaml --lock LOCK --registry HOST/PREFIX
                         --tag vX.Y.Z --os-tag ubuntu22.04
    operand_check.py network --rendered R.yaml --policy KIT/nic-cluster-policy.yaml --lock LOCK
                         --registry HOST/PREFIX --os-tag ubuntu22.04

Every image that a rendered workload runs (containers, init containers, and
`*_IMAGE` environment values, which operators read as image references) and,
for the GPU Operator, every image that the operator would deploy from the
rendered ClusterPolicy, must be at the site registry and in the lock. Which
operands the operator deploys is its `isStateEnabled`
(controllers/state_manager.go) at each tag, with the defaults of each spec's
`IsEnabled` (api/nvidia/v1/clusterpolicy_types.go); the image is `imagePath`
there, and the driver, GDS, GDRCopy and vGPU manager tags are composed by
`resolveDriverTag` (`<version>-<osTag>`, precompiled
`<version>-<kernel>-<osTag>`). An operand whose images the lock does not
carry must be switched off explicitly in the kit's values.yaml. The
operator's own `*_IMAGE` environment (imagePath's fallback) is held to the
same rule when the operand it names is deployed; otherwise it is never pulled
(DRIVER_MANAGER_IMAGE with a preinstalled driver).

For the Network Operator, every operand image in the NicClusterPolicy is
checked; the DOCA driver's tag is composed by the operator
(`<version>-<os>-<arch>`, precompiled `<version>-<kernel>-<os>-<arch>`).

Prints one line per problem and exits 1; prints a summary and exits 0.
"""
import argparse
import json
import re
import sys

import yaml

POD_KINDS = {"Pod": (), "Deployment": ("spec", "template"), "DaemonSet": ("spec", "template"),
             "StatefulSet": ("spec", "template"), "ReplicaSet": ("spec", "template"),
             "Job": ("spec", "template"), "CronJob": ("spec", "jobTemplate", "spec", "template")}

# IsEnabled() of each spec when `enabled` is absent (clusterpolicy_types.go,
# the same from v23.9 to v26.7).
DEFAULT_ON = {"driver", "toolkit", "devicePlugin", "dcgm", "dcgmExporter", "gfd", "migManager"}


def version_key(tag):
    return tuple(int(x) for x in re.findall(r"\d+", tag)[:3])


def states(tag):
    """(state, operand keys whose images it runs, enabled(spec, sandbox, mode)) at TAG."""
    v = version_key(tag)
    on = lambda key: lambda s, sb, mode: enabled(s, key)
    sandbox = lambda key: lambda s, sb, mode: sb and enabled(s, key)
    in_mode = lambda key, want: lambda s, sb, mode: sb and enabled(s, key) and mode == want
    table = [
        ("state-driver", ["driver", "driver.manager"], on("driver")),
        ("state-container-toolkit", ["toolkit"], on("toolkit")),
        ("state-operator-validation", ["validator"], lambda s, sb, mode: True),
        ("state-device-plugin", ["devicePlugin"], on("devicePlugin")),
        ("state-dcgm", ["dcgm"], on("dcgm")),
        ("state-dcgm-exporter", ["dcgmExporter"], on("dcgmExporter")),
        ("gpu-feature-discovery", ["gfd"], on("gfd")),
        ("state-mig-manager", ["migManager"], on("migManager")),
        ("state-node-status-exporter", ["nodeStatusExporter"], on("nodeStatusExporter")),
        ("state-vgpu-manager", ["vgpuManager", "vgpuManager.driverManager"], sandbox("vgpuManager")),
        ("state-vgpu-device-manager", ["vgpuDeviceManager"], sandbox("vgpuDeviceManager")),
        ("state-sandbox-validation", ["validator"], lambda s, sb, mode: sb),
        ("state-vfio-manager", ["vfioManager", "vfioManager.driverManager"], sandbox("vfioManager")),
    ]
    if v >= (24, 3, 0):
        table.append(("state-mps-control-daemon", ["devicePlugin"], on("devicePlugin")))
    if v >= (26, 3, 0):
        table += [("state-sandbox-device-plugin", ["sandboxDevicePlugin"], in_mode("sandboxDevicePlugin", "kubevirt")),
                  ("state-kata-device-plugin", ["kataSandboxDevicePlugin"], in_mode("kataSandboxDevicePlugin", "kata")),
                  ("state-cc-manager", ["ccManager"], in_mode("ccManager", "kata"))]
    else:
        table += [("state-sandbox-device-plugin", ["sandboxDevicePlugin"], sandbox("sandboxDevicePlugin")),
                  ("state-cc-manager", ["ccManager"], sandbox("ccManager"))]
    if v >= (26, 7, 0):
        table.append(("state-kata-manager", ["kataManager"], lambda s, sb, mode: False))
    else:
        table.append(("state-kata-manager", ["kataManager"], sandbox("kataManager")))
    return table


def node(spec, key):
    n = spec
    for part in key.split("."):
        n = n.get(part) if isinstance(n, dict) else None
    return n if isinstance(n, dict) else {}


def enabled(spec, key):
    value = node(spec, key).get("enabled")
    return key in DEFAULT_ON if value is None else bool(value)


def image_path(n):
    """imagePath(): repository/image:version, @ for a digest, or image alone."""
    repo, image, version = n.get("repository") or "", n.get("image") or "", str(n.get("version") or "")
    if not repo and not version:
        return image or None
    if not (repo and image and version):
        return None
    return f"{repo}/{image}@{version}" if version.startswith("sha256:") else f"{repo}/{image}:{version}"


class Lock:
    def __init__(self, path, registry):
        lock = json.load(open(path, encoding="utf-8"))
        self.registry = registry.rstrip("/")
        self.kernels = lock.get("target", {}).get("kernels", [])
        self.platforms = lock.get("target", {}).get("platforms", ["linux/amd64"])
        self.by_repo = {}
        for img in lock["images"]:
            name, tag, digest = split(img["source"])
            repo = name.split("/", 1)[1]
            self.by_repo.setdefault(repo, []).append(
                (tag, {d for d in (digest, img.get("digest"), img.get("siteDigest")) if d}))

    def problem(self, ref):
        """Why REF is not a carried image at the site registry, or None."""
        if not ref.startswith(self.registry + "/"):
            return f"{ref} is not at the site registry {self.registry}"
        name, tag, digest = split(ref)
        repo = name[len(self.registry) + 1:]
        held = self.by_repo.get(repo)
        if not held:
            return f"{ref}: the lock has no image {repo}"
        if any((digest and digest in ds) or (not digest and tag == t) for t, ds in held):
            return None
        return f"{ref}: the lock has {repo} but not at {digest or tag}"

    def carries(self, ref):
        return self.problem(ref) is None


def split(ref):
    name, _, digest = ref.partition("@")
    tag = ""
    if ":" in name.rsplit("/", 1)[-1]:
        name, tag = name.rsplit(":", 1)
    return name, tag, digest


def workload_images(docs):
    """(where, image) for every container, init container and *_IMAGE value."""
    for d in docs:
        path = POD_KINDS.get(d.get("kind"))
        if path is None:
            continue
        pod = d
        for p in path:
            pod = pod.get(p) or {}
        pod = pod.get("spec") or {}
        where = f'{d["kind"]}/{d["metadata"]["name"]}'
        for field in ("initContainers", "containers", "ephemeralContainers"):
            for c in pod.get(field) or []:
                yield f'{where} {c["name"]}', c.get("image", "")
                for e in c.get("env") or []:
                    if e.get("name", "").endswith("_IMAGE") and e.get("value"):
                        yield f'{where} {c["name"]} env {e["name"]}', e["value"]


# The operator's image environment (imagePath's fallback when an operand's
# ClusterPolicy fields are empty): the operand each names.
FALLBACK_ENV = {"DRIVER_IMAGE": "driver", "DRIVER_MANAGER_IMAGE": "driver.manager", "VALIDATOR_IMAGE": "validator",
                "CONTAINER_TOOLKIT_IMAGE": "toolkit", "DEVICE_PLUGIN_IMAGE": "devicePlugin", "GFD_IMAGE": "gfd",
                "DCGM_IMAGE": "dcgm", "DCGM_EXPORTER_IMAGE": "dcgmExporter", "MIG_MANAGER_IMAGE": "migManager",
                "GDS_IMAGE": "gds", "GDRCOPY_IMAGE": "gdrcopy", "VGPU_MANAGER_IMAGE": "vgpuManager",
                "VGPU_DEVICE_MANAGER_IMAGE": "vgpuDeviceManager", "VFIO_MANAGER_IMAGE": "vfioManager",
                "SANDBOX_DEVICE_PLUGIN_IMAGE": "sandboxDevicePlugin", "KATA_MANAGER_IMAGE": "kataManager",
                "CC_MANAGER_IMAGE": "ccManager", "CUDA_BASE_IMAGE": "operator.initContainer"}


SRIOV_GATED_ENV = {"METRICS_EXPORTER_IMAGE": "metricsExporter", "METRICS_EXPORTER_KUBE_RBAC_PROXY_IMAGE": "metricsExporter"}


def check_workloads(docs, lock, problems, deployed=None, fallbacks=FALLBACK_ENV):
    """Every workload image; a fallback image in the environment only when the
    operator deploys its operand (deployed: operand keys, None: all)."""
    n = 0
    for where, ref in workload_images(docs):
        env = where.rsplit(" env ", 1)[1] if " env " in where else None
        if env in fallbacks and deployed is not None and fallbacks[env] not in deployed:
            continue  # e.g. DRIVER_MANAGER_IMAGE with a preinstalled driver: never pulled
        n += 1
        why = lock.problem(ref) if ref else "no image"
        if why:
            problems.append(f"rendered {where}: {why}")
    return n


def gpu(args):
    docs = [d for d in yaml.safe_load_all(open(args.rendered, encoding="utf-8")) if d]
    values = yaml.safe_load(open(args.values, encoding="utf-8")) or {}
    lock = Lock(args.lock, args.registry)
    problems = []
    policies = [d for d in docs if d.get("kind") == "ClusterPolicy"]
    operands = []
    deployed = None
    if policies:
        spec = policies[0]["spec"]
        sandbox = enabled(spec, "sandboxWorkloads")
        mode = node(spec, "sandboxWorkloads").get("mode") or "kubevirt"  # the CRD's default
        precompiled = bool(node(spec, "driver").get("usePrecompiled"))
        deployed = set()
        for state, keys, rule in states(args.tag):
            if rule(spec, sandbox, mode):
                deployed.update(keys)
        if "driver" in deployed:  # sidecars of the driver pod
            deployed.update(k for k in ("gds", "gdrcopy") if enabled(spec, k))
        if node(spec, "driver").get("useNvidiaDriverCRD"):  # NVIDIADriver CRs take the driver images
            deployed.update(("driver", "driver.manager"))
        for key in sorted(deployed):
            for ref in operand_refs(spec, key, precompiled, lock.kernels, args.os_tag):
                operands.append(key)
                why = lock.problem(ref) if ref else "no image (the operator would fall back to its environment)"
                if why:
                    problems.append(f"ClusterPolicy {key} (deployed): {why}")
        # What the lock does not carry is off in values.yaml itself, not left to a default.
        for key in sorted({k for _, keys, _ in states(args.tag) for k in keys} | {"gds", "gdrcopy"}):
            if "." in key or "enabled" not in node(spec, key):
                continue
            refs = operand_refs(spec, key, precompiled, lock.kernels, args.os_tag)
            if refs and all(r and lock.carries(r) for r in refs):
                continue
            if node(values, key).get("enabled") is not False:
                problems.append(f"values.yaml {key}.enabled: the lock does not carry {key} "
                                f"({', '.join(r or '?' for r in refs)}), so it must be false here")
    elif not args.no_policy:
        problems.append("the rendered release has no ClusterPolicy")
    n = check_workloads(docs, lock, problems, deployed)
    for p in problems:
        print(p)
    if not problems:
        print(f"ok: {n} workload images and {len(operands)} operand images at {lock.registry} and in the lock")
    return 1 if problems else 0


def operand_refs(spec, key, precompiled, kernels, os_tag):
    base = image_path(node(spec, key))
    if key not in ("driver", "gds", "gdrcopy", "vgpuManager") or not base or "sha256:" in base:
        return [base]
    if key == "driver" and precompiled:
        return [f"{base}-{k}-{os_tag}" for k in kernels] or [None]
    return [f"{base}-{os_tag}"]


def network(args):
    policy = yaml.safe_load(open(args.policy, encoding="utf-8"))
    lock = Lock(args.lock, args.registry)
    problems = []
    n = 0
    if args.rendered:
        docs = [d for d in yaml.safe_load_all(open(args.rendered, encoding="utf-8")) if d]
        # The SR-IOV network operator deploys its metrics exporter only with that
        # feature gate in its SriovOperatorConfig (the upstream chart leaves the
        # exporter untagged at ghcr.io); held to the rule when the gate is on.
        gate = any(d.get("kind") == "SriovOperatorConfig" and ((d.get("spec") or {}).get("featureGates") or {}).get("metricsExporter")
                   for d in docs)
        deployed = None if gate else set()
        n = check_workloads(docs, lock, problems, deployed, SRIOV_GATED_ENV)
    spec = policy.get("spec") or {}
    found = 0

    def walk(n, where):
        nonlocal found
        if not isinstance(n, dict):
            return
        if "image" in n and "repository" in n:
            found += 1
            base = f'{n["repository"]}/{n["image"]}'
            version = str(n.get("version", ""))
            if where == "ofedDriver":
                arches = [p.split("/")[1] for p in lock.platforms]
                if n.get("forcePrecompiled"):
                    refs = [f"{base}:{version}-{k}-{args.os_tag}-{a}" for k in lock.kernels for a in arches]
                else:
                    refs = [f"{base}:{version}-{args.os_tag}-{a}" for a in arches]
            else:
                refs = [f"{base}@{version}" if version.startswith("sha256:") else f"{base}:{version}"]
            for ref in refs:
                why = lock.problem(ref)
                if why:
                    problems.append(f"NicClusterPolicy {where}: {why}")
        for k, v in n.items():
            walk(v, f"{where}.{k}" if where else k)

    walk(spec, "")
    for p in problems:
        print(p)
    if not problems:
        print(f"ok: {n} workload images and {found} NicClusterPolicy operands at {lock.registry} and in the lock")
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gpu")
    g.add_argument("--rendered", required=True)
    g.add_argument("--values", required=True)
    g.add_argument("--no-policy", action="store_true", help="the release deploys no ClusterPolicy (DRA)")
    n = sub.add_parser("network")
    n.add_argument("--rendered")
    n.add_argument("--policy", required=True)
    for p in (g, n):
        p.add_argument("--lock", required=True)
        p.add_argument("--registry", required=True)
        p.add_argument("--os-tag", required=True)
    g.add_argument("--tag", required=True)
    args = ap.parse_args()
    return gpu(args) if args.cmd == "gpu" else network(args)


if __name__ == "__main__":
    sys.exit(main())
