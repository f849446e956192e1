#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Feasibility of gpusched's default profile against the upstream kube-scheduler (issue #22).

One control plane (etcd, kube-apiserver, kube-controller-manager with its PV controller, kwok and
the upstream kube-scheduler v1.37 that scripts/testbin builds) and one gpusched process with the
default profile. From GPUSCHED_E2E_FD_SEED (default 22): a random cluster of NODES kwok nodes
(zones, racks, generations, taints, cordons, CPU/memory/pods/extended resources), background
pods bound by spec.nodeName (labels, host ports, anti-affinity towards test pods, a
ReadWriteOncePod claim), StorageClasses, PersistentVolumes and claims (pre-bound zonal volumes,
available static volumes of a WaitForFirstConsumer class in some zones, an unbound Immediate
claim), then GPUSCHED_E2E_FD_PODS (default 500) random pods: CPU, memory and extended-resource
requests, host ports, node selectors and required node affinity (In, NotIn, Exists,
DoesNotExist, Gt, Lt, matchFields), tolerations, topology spread (DoNotSchedule), required pod
affinity and anti-affinity, and volumes.

How the feasible set is observed: every node also runs a marker pod, and every test pod carries
a required anti-affinity to the markers (topologyKey hostname). InterPodAffinity is the last
filter of both default profiles, so every node that passes all the other filters is rejected
there with "node(s) didn't match pod anti-affinity rules", and no test pod is ever bound (so
they do not change the cluster for each other). Each pod is created twice, identical but for
its name and schedulerName; the part of the FailedScheduling message before "preemption:" (the
pod's PodScheduled condition) lists, per reason, how many nodes failed with it, the first
failing filter of each node in upstream's order. The two messages must be equal for every pod:
the same number of feasible nodes and the same rejection reason counts for all others.
"""

import os
import random
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase, make_kwok_node  # noqa: E402
from gpusched_harness import (  # noqa: E402
    SCHEDULER_NAME, Gpusched, create_objects, log, pod_condition, write_config)

SEED = int(os.environ.get("GPUSCHED_E2E_FD_SEED", "22"))
PODS = int(os.environ.get("GPUSCHED_E2E_FD_PODS", "500"))
NODES = 12
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
ZONES = ["zone-a", "zone-b", "zone-c"]
MARKER = "e2e.gpusched.io/marker"
APPS = ["web", "db", "cache", "train"]
FOO = "example.com/foo"
PORTS = [(8080, "TCP", ""), (8080, "UDP", ""), (9090, "TCP", "127.0.0.1"), (9090, "TCP", "")]


def node_name(i):
    return f"fd-n{i}"


class World:
    """The random cluster: nodes, background objects and test pod specs, from one seed."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.nodes = [self.random_node(i) for i in range(NODES)]
        self.node_zone = {n["metadata"]["name"]: n["metadata"]["labels"][ZONE] for n in self.nodes}

    # --- nodes ---------------------------------------------------------------------------------

    def random_node(self, i):
        r = self.rng
        labels = {ZONE: ZONES[i % len(ZONES)], "rack": f"r{r.randrange(4)}",
                  "gen": str(r.randrange(1, 6))}
        if r.random() < 0.5:
            labels["disk"] = r.choice(["ssd", "hdd"])
        alloc = {"cpu": str(r.choice([4, 8, 16, 32])), "memory": f"{r.choice([16, 32, 64])}Gi",
                 "pods": str(r.choice([4, 110, 110, 110]))}
        if r.random() < 0.3:
            alloc[FOO] = str(r.choice([1, 2]))
        taints = []
        if r.random() < 0.3:
            taints.append({"key": "dedicated", "value": r.choice(["gpu", "infra"]),
                           "effect": "NoSchedule"})
        if r.random() < 0.15:
            taints.append({"key": "spot", "effect": "NoExecute"})
        if r.random() < 0.2:
            taints.append({"key": "soft", "value": "x", "effect": "PreferNoSchedule"})
        node = make_kwok_node(node_name(i), labels=labels, allocatable=alloc, taints=taints)
        if i == NODES - 1:
            node["spec"]["unschedulable"] = True
        return node

    # --- background objects ----------------------------------------------------------------------

    def storage(self):
        """StorageClasses, PVs and PVCs (the PV controller binds the pre-bound pairs)."""
        objs = [
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
             "metadata": {"name": "fd-wffc"}, "provisioner": "kubernetes.io/no-provisioner",
             "volumeBindingMode": "WaitForFirstConsumer"},
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
             "metadata": {"name": "fd-immediate"}, "provisioner": "kubernetes.io/no-provisioner",
             "volumeBindingMode": "Immediate"},
        ]
        ns_objs = []
        for z in ZONES[:2]:
            pv = self.pv(f"fd-bound-{z}", z, "fd-wffc", "10Gi", ["ReadWriteOnce"])
            pv["spec"]["claimRef"] = {"namespace": "{ns}", "name": f"bound-{z}"}
            objs.append(pv)
            ns_objs.append(self.pvc(f"bound-{z}", "fd-wffc", "10Gi", ["ReadWriteOnce"],
                                    volume=f"fd-bound-{z}"))
        # Available static volumes of the WaitForFirstConsumer class: zone-a and zone-b only.
        for k, z in enumerate(["zone-a", "zone-a", "zone-b"]):
            objs.append(self.pv(f"fd-free-{k}", z, "fd-wffc", "20Gi", ["ReadWriteOnce"]))
        ns_objs += [self.pvc("wffc-small", "fd-wffc", "5Gi", ["ReadWriteOnce"]),
                    self.pvc("wffc-huge", "fd-wffc", "100Gi", ["ReadWriteOnce"]),
                    self.pvc("immediate", "fd-immediate", "1Gi", ["ReadWriteOnce"])]
        # A ReadWriteOncePod claim, in use by a background pod.
        pv = self.pv("fd-rwop", "zone-c", "fd-wffc", "1Gi", ["ReadWriteOncePod"])
        pv["spec"]["claimRef"] = {"namespace": "{ns}", "name": "rwop"}
        objs.append(pv)
        ns_objs.append(self.pvc("rwop", "fd-wffc", "1Gi", ["ReadWriteOncePod"], volume="fd-rwop"))
        return objs, ns_objs

    @staticmethod
    def pv(name, zone, cls, size, modes):
        return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                "spec": {"capacity": {"storage": size}, "accessModes": modes,
                         "storageClassName": cls, "persistentVolumeReclaimPolicy": "Retain",
                         "local": {"path": f"/mnt/{name}"},
                         "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                             {"key": ZONE, "operator": "In", "values": [zone]}]}]}}}}

    @staticmethod
    def pvc(name, cls, size, modes, volume=None):
        spec = {"accessModes": modes, "storageClassName": cls,
                "resources": {"requests": {"storage": size}}}
        if volume:
            spec["volumeName"] = volume
        return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
                "spec": spec}

    def background_pods(self):
        pods = []
        for i, n in enumerate(self.nodes):
            name = n["metadata"]["name"]
            pods.append(self.bound_pod(f"marker-{i}", name, {MARKER: "yes"}))
            if n["spec"].get("unschedulable"):
                continue
            for k in range(self.rng.randrange(0, 3)):
                labels = {"app": self.rng.choice(APPS)}
                p = self.bound_pod(f"bg-{i}-{k}", name, labels,
                                   cpu=f"{self.rng.choice([250, 500, 1000, 2000])}m")
                if self.rng.random() < 0.3:
                    port, proto, ip = self.rng.choice(PORTS)
                    p["spec"]["containers"][0]["ports"] = [self.port(port, proto, ip)]
                if self.rng.random() < 0.15:
                    p["spec"]["affinity"] = {"podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [{
                            "labelSelector": {"matchLabels": {"role": "picky"}},
                            "topologyKey": self.rng.choice([HOST, ZONE])}]}}
                pods.append(p)
        # The ReadWriteOncePod claim's user, in the claim's zone.
        zone_c = next(n for n in self.nodes
                      if self.node_zone[n["metadata"]["name"]] == "zone-c"
                      and not n["spec"].get("unschedulable"))
        p = self.bound_pod("rwop-user", zone_c["metadata"]["name"], {"app": "db"})
        p["spec"]["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": "rwop"}}]
        pods.append(p)
        return pods

    @staticmethod
    def port(port, proto, ip):
        p = {"containerPort": port, "hostPort": port, "protocol": proto}
        if ip:
            p["hostIP"] = ip
        return p

    @staticmethod
    def bound_pod(name, node, labels, cpu="0"):
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
                "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                         "tolerations": [{"operator": "Exists"}],
                         "containers": [{"name": "c", "image": "registry.invalid/bg:1",
                                         "resources": {"requests": {"cpu": cpu}}}]}}

    # --- test pods -------------------------------------------------------------------------------

    def test_pod_spec(self):
        """One random test pod's labels and spec (without name and schedulerName)."""
        r = self.rng
        labels = {"app": r.choice(APPS)}
        if r.random() < 0.2:
            labels["role"] = "picky"
        requests = {"cpu": f"{r.choice([100, 500, 2000, 6000, 12000, 24000])}m",
                    "memory": f"{r.choice([128, 1024, 8192, 40960])}Mi"}
        if r.random() < 0.15:
            requests[FOO] = str(r.choice([1, 2]))
        container = {"name": "c", "image": "registry.invalid/t:1",
                     "resources": {"requests": requests, "limits": dict(requests)}}
        if r.random() < 0.25:
            container["ports"] = [self.port(*r.choice(PORTS))]
        spec = {"terminationGracePeriodSeconds": 0, "containers": [container],
                "affinity": {"podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {MARKER: "yes"}},
                         "topologyKey": HOST}]}}}
        self.add_node_rules(spec)
        self.add_tolerations(spec)
        self.add_spread(spec, labels)
        self.add_pod_affinity(spec)
        self.add_volumes(spec)
        return labels, spec

    def add_node_rules(self, spec):
        r = self.rng
        if r.random() < 0.25:
            spec["nodeSelector"] = {ZONE: r.choice(ZONES)}
        if r.random() < 0.4:
            exprs = []
            for _ in range(r.randrange(1, 3)):
                op = r.choice(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
                if op in ("Gt", "Lt"):
                    exprs.append({"key": "gen", "operator": op, "values": [str(r.randrange(1, 6))]})
                elif op in ("Exists", "DoesNotExist"):
                    exprs.append({"key": "disk", "operator": op})
                else:
                    exprs.append({"key": "rack", "operator": op,
                                  "values": r.sample(["r0", "r1", "r2", "r3"], r.randrange(1, 3))})
            term = {"matchExpressions": exprs}
            if r.random() < 0.2:
                term = {"matchFields": [{"key": "metadata.name",
                                         "operator": r.choice(["In", "NotIn"]),
                                         "values": [node_name(r.randrange(NODES))]}]}
            terms = [term]
            if r.random() < 0.3:
                terms.append({"matchExpressions": [{"key": ZONE, "operator": "In",
                                                    "values": [r.choice(ZONES)]}]})
            spec["affinity"]["nodeAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}

    def add_tolerations(self, spec):
        r = self.rng
        tols = []
        if r.random() < 0.4:
            tols.append({"key": "dedicated", "operator": "Equal",
                         "value": r.choice(["gpu", "infra"]), "effect": "NoSchedule"})
        if r.random() < 0.2:
            tols.append({"key": "spot", "operator": "Exists"})
        if r.random() < 0.05:
            tols.append({"operator": "Exists"})
        if tols:
            spec["tolerations"] = tols

    def add_spread(self, spec, labels):
        r = self.rng
        if r.random() < 0.3:
            c = {"maxSkew": r.choice([1, 2]), "topologyKey": r.choice([ZONE, HOST, "rack"]),
                 "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchLabels": {"app": labels["app"]}}}
            if r.random() < 0.2:
                c["nodeTaintsPolicy"] = "Honor"
            if r.random() < 0.2:
                c["minDomains"] = r.choice([2, 4])
            spec["topologySpreadConstraints"] = [c]

    def add_pod_affinity(self, spec):
        r = self.rng
        if r.random() < 0.2:
            spec["affinity"]["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": r.choice(APPS)}},
                 "topologyKey": r.choice([ZONE, HOST])}]}
        if r.random() < 0.2:
            spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]\
                .append({"labelSelector": {"matchLabels": {"app": r.choice(APPS)}},
                         "topologyKey": r.choice([ZONE, HOST])})

    def add_volumes(self, spec):
        r = self.rng
        if r.random() >= 0.3:
            return
        claim = r.choice(["bound-zone-a", "bound-zone-b", "wffc-small", "wffc-huge", "immediate",
                          "rwop", "missing"])
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]


def fit_part(message):
    """The FitError part of a FailedScheduling message: "0/N nodes are available: <reasons>",
    without the PostFilter messages after its period (upstream's DynamicResources PostFilter adds
    "no new claims to deallocate," or "not found", preemption "preemption: ..."; no reason text
    contains a period followed by a space)."""
    return (message or "").split(". ", 1)[0].strip().rstrip(".")


class FeasibilityDiffTest(ClusterTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.gpusched = Gpusched(cls.cluster, write_config(cls.cluster.dir, name="fd.yaml"),
                                name="gpusched-fd")
        cls.gpusched.start()

    @classmethod
    def tearDownClass(cls):
        if cls.gpusched.alive():
            cls.gpusched.kill()
        super().tearDownClass()

    def build_cluster(self, world, ns):
        c = self.cluster
        create_objects(c, world.nodes)

        def ready():
            nodes = c.get_json("nodes", "-l", "type=kwok")["items"]
            ok = [n for n in nodes if any(
                cond.get("type") == "Ready" and cond.get("status") == "True"
                for cond in n.get("status", {}).get("conditions", []))
                and not any(t["key"].startswith("node.kubernetes.io/")
                            and t["key"] != "node.kubernetes.io/unschedulable"
                            for t in n.get("spec", {}).get("taints", []))]
            return len(ok) == NODES
        c.wait_for(ready, timeout=120, what=f"{NODES} kwok nodes Ready")
        cluster_objs, ns_objs = world.storage()
        text_fix = [self.fill_ns(o, ns) for o in cluster_objs]
        create_objects(c, text_fix)
        create_objects(c, ns_objs, namespace=ns)
        c.wait_for(lambda: all(
            p["status"].get("phase") == "Bound"
            for p in c.get_json("pvc", "--namespace", ns)["items"]
            if p["metadata"]["name"].startswith("bound-") or p["metadata"]["name"] == "rwop"),
            timeout=90, what="the pre-bound claims Bound by the PV controller")
        bg = world.background_pods()
        create_objects(c, bg, namespace=ns)
        c.wait_for(lambda: sum(p["status"].get("phase") == "Running"
                               for p in c.get_json("pods", "--namespace", ns)["items"]) == len(bg),
                   timeout=120, what="background pods Running")

    @staticmethod
    def fill_ns(obj, ns):
        ref = obj.get("spec", {}).get("claimRef")
        if ref:
            ref["namespace"] = ns
        return obj

    def test_every_pod_has_the_same_feasible_nodes_and_reasons(self):
        world = World(SEED)
        ns = self.cluster.new_namespace("fd")
        self.build_cluster(world, ns)
        specs = [world.test_pod_spec() for _ in range(PODS)]
        pods = []
        for i, (labels, spec) in enumerate(specs):
            for suffix, scheduler in (("up", "default-scheduler"), ("gs", SCHEDULER_NAME)):
                pods.append({"apiVersion": "v1", "kind": "Pod",
                             "metadata": {"name": f"t{i}-{suffix}", "labels": dict(labels)},
                             "spec": dict(spec, schedulerName=scheduler)})
        t0 = time.monotonic()
        for k in range(0, len(pods), 200):
            create_objects(self.cluster, pods[k:k + 200], namespace=ns)

        def messages():
            got = {}
            for p in self.cluster.get_json("pods", "--namespace", ns)["items"]:
                name = p["metadata"]["name"]
                if not name.startswith("t"):
                    continue
                self.assertFalse(p["spec"].get("nodeName"), f"{name} was bound")
                cond = pod_condition(p)
                if cond and cond.get("reason") == "Unschedulable" and cond.get("message"):
                    got[name] = cond["message"]
            return got if len(got) == len(pods) else None
        got = self.cluster.wait_for(messages, timeout=600, interval=3,
                                    what=f"{len(pods)} pods with a FailedScheduling condition")
        took = time.monotonic() - t0

        mismatches, feasible_any, reasons = [], 0, set()
        for i, (labels, spec) in enumerate(specs):
            up, gs = fit_part(got[f"t{i}-up"]), fit_part(got[f"t{i}-gs"])
            reasons.update(re.findall(r"\d+ ([^,]+?)(?=, \d+ |$)", up.split(": ", 1)[-1]))
            if "didn't match pod anti-affinity rules" in up:
                feasible_any += 1
            if up != gs:
                mismatches.append(f"pod t{i} {labels} {spec}\n  upstream: {up}\n  gpusched: {gs}")
        log(f"MEASURED feasibility diff: {PODS} pods x 2 schedulers on {NODES} nodes (seed {SEED}) "
            f"in {took:.1f}s; {feasible_any} pods feasible somewhere (marker reason present); "
            f"{len(reasons)} distinct reasons: {sorted(reasons)}; {len(mismatches)} mismatches")
        self.assertEqual(mismatches, [], "\n".join(mismatches[:20]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
