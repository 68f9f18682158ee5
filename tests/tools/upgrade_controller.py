#!/usr/bin/env python3
"""The GPU Operator's driver upgrade, played through the API of kube_api.py.

  upgrade_controller.py --url URL --log FILE --daemonset NAME=NODE,...[@REV]...
                        [--namespace NS] [--path NODE=STATE,...]... [--same-driver]
                        [--paused FILE] [--tick SECONDS]

For the kit's upgrade.sh, run with the real kubectl and helm against the
stand-in (tests/integration/upgrade_cluster*.sh start it through kube_lib.sh's
kube_play_upgrade_controller). Its requests carry Python's User-Agent, so a
test tells them apart from kubectl's and helm's in requests.jsonl.

At start, as the operator leaves an installed cluster: each --daemonset (the
driver DaemonSets, one selector app=nvidia-driver-daemonset; a name longer
than nvidia-driver-daemonset is a precompiled one, per kernel) with its first
ControllerRevision (revision REV, default 1, named and labelled as the
DaemonSet controller writes it, owned by the DaemonSet's uid), a driver pod at
that revision on each of its NODEs, and a Running validator pod beside each.
Then it writes "ready" to the log.

Each release of the chart deployed from revision 2 on (helm's release Secret
says so) is the operator applying the new ClusterPolicy: every DaemonSet's
driver image changes and it gets a new ControllerRevision, unless
--same-driver (a kit that leaves the driver as it is). From the first such
release on, unless the file --paused exists, the upgrade controller moves one
node per tick (maxParallelUpgrades 1), the first by name of the GPU nodes
(nvidia.com/gpu.present=true) that are not labelled
nvidia.com/gpu-driver-upgrade.skip=true, run a driver pod (the controller
builds its node list from them) and have a step to take along their --path
(default upgrade-required,pod-restart-required,upgrade-done), in the label
nvidia.com/gpu-driver-upgrade-state:
  - a node upgrade-done with every driver pod at its DaemonSet's newest
    revision has none; one upgrade-done out of sync starts the path again;
  - a node at the path's last state stays there (upgrade-failed, or a state
    it never leaves: a stuck drain);
  - pod-restart-required replaces the node's pods (driver pod at the newest
    revision, validator gone); upgrade-done starts the validator again.
--hold STATE=SECONDS keeps a node in STATE at least that long, so that a
poller on a loaded machine sees a state the test expects it to pass through.
Every change is a line in the log: "daemonset NAME revision N hash H",
"pod NODE hash H", "release N deployed", "NODE STATE".
"""

import argparse
import hashlib
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request

STATE = "nvidia.com/gpu-driver-upgrade-state"
SKIP = "nvidia.com/gpu-driver-upgrade.skip"
PLAIN = "nvidia-driver-daemonset"
DEFAULT_PATH = ["upgrade-required", "pod-restart-required", "upgrade-done"]


class Controller:
    def __init__(self, args):
        self.url, self.log = args.url, open(args.log, "a", buffering=1)
        self.ns = f"/api/v1/namespaces/{args.namespace}"
        self.apps = f"/apis/apps/v1/namespaces/{args.namespace}"
        self.paths = {n: p.split(",") for n, p in (x.split("=", 1) for x in args.path)}
        self.same_driver, self.paused, self.tick = args.same_driver, args.paused, args.tick
        # STATE -> seconds a node stays in it at least, so that a poller on a
        # loaded machine sees a passing state.
        self.hold = {st: float(sec) for st, sec in (x.split("=", 1) for x in args.hold)}
        self.entered = {}  # node -> when it took its current state
        self.daemonsets = {}  # name -> (object, nodes, first revision)
        self.hashes = {}  # DaemonSet uid -> newest hash
        for spec in args.daemonset:
            name, _, rest = spec.partition("=")
            nodes, _, rev = rest.partition("@")
            self.daemonsets[name] = (None, [n for n in nodes.split(",") if n], int(rev or 1))

    def call(self, method, path, body=None, ctype="application/merge-patch+json"):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, method=method, data=data, headers={"Content-Type": ctype})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)

    def create(self, path, obj):
        return self.call("POST", path, obj, "application/json")

    def items(self, path, **query):
        return self.call("GET", path + "?" + urllib.parse.urlencode(query))["items"]

    def say(self, line):
        self.log.write(line + "\n")

    @staticmethod
    def owner(ds):
        return [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": ds["metadata"]["name"],
                 "uid": ds["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]

    def new_revision(self, ds, number=None):
        """The DaemonSet controller's ControllerRevision for the current template."""
        template = ds["spec"]["template"]
        digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()
        h = "".join("bcdfghjklmnpqrstvwxz2456789"[b % 27] for b in digest[:10])
        name, uid = ds["metadata"]["name"], ds["metadata"]["uid"]
        if number is None:
            revs = self.items(self.apps + "/controllerrevisions", labelSelector="app=" + PLAIN)
            number = 1 + max([r["revision"] for r in revs if r["metadata"]["ownerReferences"][0]["uid"] == uid])
        self.create(self.apps + "/controllerrevisions", {
            "apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": f"{name}-{h}", "ownerReferences": self.owner(ds),
                         "labels": dict(template["metadata"]["labels"], **{"controller-revision-hash": h})},
            "data": {"spec": {"template": dict(template, **{"$patch": "replace"})}}, "revision": number})
        self.say(f"daemonset {name} revision {number} hash {h}")
        self.hashes[uid] = h

    def driver_pod(self, ds, node):
        h = self.hashes[ds["metadata"]["uid"]]
        self.create(self.ns + "/pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{ds['metadata']['name'][:40]}-{node}", "ownerReferences": self.owner(ds),
                         "labels": dict(ds["spec"]["template"]["metadata"]["labels"], **{"controller-revision-hash": h})},
            "spec": {"nodeName": node, "containers": ds["spec"]["template"]["spec"]["containers"]},
            "status": {"phase": "Running"}})
        self.say(f"pod {node} hash {h}")

    def validator(self, node):
        self.create(self.ns + "/pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"nvidia-operator-validator-{node}", "labels": {"app": "nvidia-operator-validator"}},
            "spec": {"nodeName": node, "containers": [{"name": "v", "image": "x"}]}, "status": {"phase": "Running"}})

    def driver_pods(self, node):
        return self.items(self.ns + "/pods", labelSelector="app=" + PLAIN, fieldSelector="spec.nodeName=" + node)

    def in_sync(self, pods):
        return all(p["metadata"]["labels"]["controller-revision-hash"] == self.hashes[p["metadata"]["ownerReferences"][0]["uid"]]
                   for p in pods)

    def start(self):
        for name, (_, nodes, first) in self.daemonsets.items():
            labels = {"app": PLAIN, "app.kubernetes.io/component": "nvidia-driver"}
            spec = {}
            if name != PLAIN:  # precompiled: nvidia-driver-daemonset-KERNEL-OS
                labels["nvidia.com/precompiled"] = "true"
                spec["nodeSelector"] = {"feature.node.kubernetes.io/kernel-version.full": name[len(PLAIN) + 1:].rsplit("-", 1)[0]}
            spec["containers"] = [{"name": "nvidia-driver-ctr", "image": "registry.site:5000/gpu/nvidia/driver:570-release1"}]
            ds = self.create(self.apps + "/daemonsets", {
                "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "labels": labels},
                "spec": {"selector": {"matchLabels": {"app": PLAIN}}, "updateStrategy": {"type": "OnDelete"},
                         "template": {"metadata": {"labels": labels}, "spec": spec}}})
            self.daemonsets[name] = (ds, nodes, first)
            self.new_revision(ds, first)
            for node in nodes:
                self.driver_pod(ds, node)
                self.validator(node)
        self.say("ready")

    def next_state(self, node):
        """The node's next state, or None when the controller leaves it alone."""
        state = node["metadata"]["labels"].get(STATE)
        path = self.paths.get(node["metadata"]["name"], DEFAULT_PATH)
        pods = self.driver_pods(node["metadata"]["name"])
        if not pods or (state == "upgrade-done" and self.in_sync(pods)):
            return None
        held = self.hold.get(state, 0)
        if held and time.monotonic() - self.entered.get(node["metadata"]["name"], 0) < held:
            return None
        if state in path[:-1]:
            return path[path.index(state) + 1]
        if state == path[-1] and state != "upgrade-done":
            return None
        return path[0]

    def move(self, node, state):
        name = node["metadata"]["name"]
        self.call("PATCH", f"/api/v1/nodes/{name}", {"metadata": {"labels": {STATE: state}}})
        self.entered[name] = time.monotonic()
        self.say(f"{name} {state}")
        if state == "pod-restart-required":
            for p in self.items(self.ns + "/pods", fieldSelector="spec.nodeName=" + name):
                self.call("DELETE", f"{self.ns}/pods/{p['metadata']['name']}")
            ds = next(ds for ds, nodes, _ in self.daemonsets.values() if name in nodes)
            self.driver_pod(ds, name)
        elif state == "upgrade-done":
            try:
                self.validator(name)
            except urllib.error.HTTPError as e:  # still there: no pod restart on this path
                if e.code != 409:
                    raise

    def release_deployed(self, rev):
        return any(s["metadata"]["labels"].get("version") == str(rev) and s["metadata"]["labels"].get("status") == "deployed"
                   for s in self.items(self.ns + "/secrets", labelSelector="owner=helm"))

    def run(self):
        release = 2
        while True:
            if self.release_deployed(release):
                for name, (ds, nodes, first) in self.daemonsets.items():
                    if self.same_driver:
                        continue
                    ds = self.call("PATCH", f"{self.apps}/daemonsets/{name}", {"spec": {"template": {"spec": {"containers": [
                        {"name": "nvidia-driver-ctr", "image": f"registry.site:5000/gpu/nvidia/driver:570-release{release}"}]}}}})
                    self.daemonsets[name] = (ds, nodes, first)
                    self.new_revision(ds)
                self.say(f"release {release} deployed")
                release += 1
            if release > 2 and not (self.paused and os.path.exists(self.paused)):
                nodes = sorted((n for n in self.items("/api/v1/nodes", labelSelector="nvidia.com/gpu.present=true")
                                if n["metadata"]["labels"].get(SKIP) != "true"), key=lambda n: n["metadata"]["name"])
                # One node at a time: one on its way blocks the others, even stuck.
                busy = [n for n in nodes if n["metadata"]["labels"].get(STATE) not in (None, "upgrade-done", "upgrade-failed")]
                for node in busy[:1] or nodes:
                    state = self.next_state(node)
                    if state:
                        self.move(node, state)
                        break
            time.sleep(self.tick)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--namespace", default="gpu-operator")
    p.add_argument("--daemonset", action="append", required=True, help="NAME=NODE,...[@FIRST_REVISION]")
    p.add_argument("--path", action="append", default=[], help="NODE=STATE,...")
    p.add_argument("--same-driver", action="store_true")
    p.add_argument("--paused")
    p.add_argument("--tick", type=float, default=1.5)
    p.add_argument("--hold", action="append", default=[], help="STATE=SECONDS: a node stays in STATE at least that long")
    c = Controller(p.parse_args())
    c.start()
    c.run()


if __name__ == "__main__":
    main()
