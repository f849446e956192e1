#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PodTopologySpread and InterPodAffinity of `gpusched scheduler` on a real control plane
(issue #7).

Real Deployments are created through the API; the real kube-controller-manager creates their
ReplicaSets and pods (with ownerReferences), gpusched binds them to kwok nodes in three zones, and
the placements are read back from the API server with kubectl.

Measured numbers are printed on stderr with the prefix "MEASURED".
"""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase, make_kwok_node  # noqa: E402
from gpusched_harness import (  # noqa: E402
    GROUP_LABEL, SCHEDULER_NAME, Gpusched, create_objects, log, pod_condition, wait_nodes_ready,
    write_config)

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def deployment(name, replicas, group, extra_spec):
    spec = {
        "schedulerName": SCHEDULER_NAME,
        "terminationGracePeriodSeconds": 0,
        "nodeSelector": {GROUP_LABEL: group},
        "containers": [{"name": "main", "image": "registry.invalid/web:1",
                        "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}],
    }
    spec.update(extra_spec)
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


class SpreadAffinityE2ETest(ClusterTestCase):
    """One control plane for the file; each test has its own namespace, nodes and gpusched."""

    def setUp(self):
        self.t_start = time.monotonic()
        self.ns = self.cluster.new_namespace("spread")
        self.procs = []
        self.addCleanup(self._cleanup)

    def _cleanup(self):
        for p in self.procs:
            if p.alive():
                p.kill()
        self.cluster.kubectl("delete", "deployments,pods", "--all", "--namespace", self.ns,
                             "--wait=false", "--ignore-not-found")
        self.cluster.kubectl("delete", "nodes", "-l", f"{GROUP_LABEL}={self.ns}", "--wait=false",
                             "--ignore-not-found")
        log(f"MEASURED {self.id().split('.')[-1]}: took {time.monotonic() - self.t_start:.1f}s")

    def add_nodes(self, nodes):
        """nodes: [(name, zone, cpu)]; waits until they are Ready."""
        objs = [make_kwok_node(name, labels={GROUP_LABEL: self.ns, ZONE: zone},
                               allocatable={"cpu": cpu})
                for name, zone, cpu in nodes]
        create_objects(self.cluster, objs)
        wait_nodes_ready(self.cluster, f"{GROUP_LABEL}={self.ns}", len(nodes))

    def start_gpusched(self):
        path = write_config(self.cluster.dir, name=f"{self.ns}.yaml")
        p = Gpusched(self.cluster, path, name=f"{self.ns}-gpusched").start()
        self.procs.append(p)
        return p

    def pods(self, app):
        return self.cluster.get_json("pods", "--namespace", self.ns, "-l", f"app={app}")["items"]

    def wait_pods(self, app, count, bound, timeout=90):
        """Waits until `count` pods of `app` exist and `bound` of them have a node."""
        def ready():
            pods = self.pods(app)
            on_node = [p for p in pods if p["spec"].get("nodeName")]
            return (len(pods) == count and len(on_node) == bound) and pods
        return self.cluster.wait_for(ready, timeout=timeout, interval=1.0,
                                     what=f"{bound}/{count} pods of {app} bound in {self.ns}")

    def test_zone_spread_deployment_lands_evenly(self):
        # Zone a is four times larger: LeastAllocated alone would put most replicas there.
        n = self.ns
        self.add_nodes([(f"{n}-a-1", "zone-a", "64"), (f"{n}-a-2", "zone-a", "64"),
                        (f"{n}-b-1", "zone-b", "16"), (f"{n}-c-1", "zone-c", "16")])
        zones = {f"{n}-a-1": "zone-a", f"{n}-a-2": "zone-a", f"{n}-b-1": "zone-b",
                 f"{n}-c-1": "zone-c"}
        self.start_gpusched()
        t0 = time.monotonic()
        create_objects(self.cluster, [deployment("web", 6, n, {"topologySpreadConstraints": [{
            "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}}}]})], n)
        pods = self.wait_pods("web", 6, 6)
        per_zone = {}
        for p in pods:
            self.assertTrue(p["metadata"].get("ownerReferences"), "pod made by the ReplicaSet")
            z = zones[p["spec"]["nodeName"]]
            per_zone[z] = per_zone.get(z, 0) + 1
        self.assertEqual(per_zone, {"zone-a": 2, "zone-b": 2, "zone-c": 2})
        log(f"MEASURED zone spread: 6 replicas {per_zone} in {time.monotonic() - t0:.1f}s")

    def test_required_anti_affinity_on_hostname(self):
        n = self.ns
        self.add_nodes([(f"{n}-a-1", "zone-a", "64"), (f"{n}-b-1", "zone-b", "16"),
                        (f"{n}-c-1", "zone-c", "16")])
        self.start_gpusched()
        create_objects(self.cluster, [deployment("db", 4, n, {"affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "topologyKey": HOST, "labelSelector": {"matchLabels": {"app": "db"}}}]}}})], n)
        pods = self.wait_pods("db", 4, 3)
        nodes = sorted(p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName"))
        self.assertEqual(nodes, sorted([f"{n}-a-1", f"{n}-b-1", f"{n}-c-1"]))
        pending = [p for p in pods if not p["spec"].get("nodeName")][0]

        def reported():
            p = self.cluster.get_json("pod", pending["metadata"]["name"], "--namespace", n)
            c = pod_condition(p)
            return c if c and c.get("reason") == "Unschedulable" else None
        cond = self.cluster.wait_for(reported, timeout=30, what="PodScheduled=False")
        self.assertIn("3 node(s) didn't match pod anti-affinity rules", cond["message"])
        log(f"MEASURED anti-affinity: 3 replicas on 3 nodes; 4th: {cond['message']}")

        # A fourth node in the group lets the pending replica bind there.
        create_objects(self.cluster, [make_kwok_node(f"{n}-c-2", labels={GROUP_LABEL: n,
                                                                         ZONE: "zone-c"})])
        pods = self.wait_pods("db", 4, 4, timeout=60)
        self.assertEqual(len({p["spec"]["nodeName"] for p in pods}), 4)


if __name__ == "__main__":
    unittest.main(verbosity=2)
