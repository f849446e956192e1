#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""NetworkLocality against a real control plane (issue #7).

`gpusched scheduler` runs with a locality profile (NetworkLocality + PodTopologySpread) before the
NetworkAware CRDs exist (it must warn, not fail), then the test installs the CRDs from
deploy/crds/ through the API, creates a NetworkTopology and an AppGroup, kwok nodes in three zones
of one region, and pods:

  * AppGroup: `db` is pinned to zone b by a nodeSelector; `api` depends on `db` with
    maxNetworkCost 1, so NetworkLocality's Filter (as NetworkOverhead's) leaves only zone b
    (same zone costs 1, the other zones 5 and 10 by the NetworkTopology) -> every api replica
    lands in zone b.
  * gpusched.io/traffic annotation: `cache` is pinned to zone c; `worker` declares
    "app=cache => 50" (MB/s) -> it lands in zone c, the only zone where its traffic is free.

Everything is checked from the API server (pod.spec.nodeName -> node zone label).
"""

import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase, make_kwok_node, source_dir  # noqa: E402
from gpusched_harness import (  # noqa: E402
    SCHEDULER_NAME, Gpusched, create_objects, log, wait_nodes_ready)

GROUP_LABEL = "e2e.gpusched.io/group"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]


def locality_config(directory, namespace):
    text = f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{qps: 200, burst: 400}}
leaderElection: {{leaderElect: false}}
percentageOfNodesToScore: 100
profiles:
- schedulerName: {SCHEDULER_NAME}
  plugins:
    multiPoint:
      disabled: [{{name: "*"}}]
      enabled:
      - name: NetworkLocality
        weight: 5
      - name: NodeUnschedulable
      - name: NodeName
      - name: TaintToleration
      - name: NodeAffinity
      - name: NodeResourcesFit
      - name: PodTopologySpread
        weight: 2
      - name: DefaultBinder
  pluginConfig:
  - name: NetworkLocality
    args:
      namespaces: ["{namespace}"]
      networkTopologyName: nt-e2e
      weightsName: UserDefined
"""
    path = os.path.join(directory, "locality.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def pod(name, labels, group, node_selector=None, annotations=None):
    selector = {GROUP_LABEL: group}
    selector.update(node_selector or {})
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels, "annotations": annotations or {}},
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "terminationGracePeriodSeconds": 0,
            "nodeSelector": selector,
            "containers": [{"name": "main", "image": "registry.invalid/app:1",
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
        },
    }


def workload_ref(name):
    return {"kind": "Deployment", "name": name, "selector": name, "apiVersion": "apps/v1"}


class NetworkLocalityE2ETest(ClusterTestCase):

    def test_dependent_pods_land_in_the_expected_zones(self):
        c = self.cluster
        ns = c.new_namespace("netloc")
        # RBAC: the scheduler's service account may read the two CRDs (the Helm chart's role
        # does the same when NetworkLocality is enabled).
        c.apply({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "gpusched-network-locality"},
            "rules": [{"apiGroups": ["appgroup.diktyo.x-k8s.io",
                                     "networktopology.diktyo.x-k8s.io"],
                       "resources": ["appgroups", "networktopologies"],
                       "verbs": ["get", "list", "watch"]}]})
        c.apply({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "gpusched-network-locality"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "gpusched-network-locality"},
            "subjects": [{"kind": "ServiceAccount", "name": "gpusched",
                          "namespace": "gpusched-system"}]})

        nodes = []
        for z, zone in enumerate(ZONES):
            for i in range(2):
                nodes.append(make_kwok_node(f"{ns}-{z}-{i}", labels={
                    GROUP_LABEL: ns, ZONE: zone, REGION: "us-east-1"}))
        create_objects(c, nodes)
        self.addCleanup(lambda: c.kubectl("delete", "nodes", "-l", f"{GROUP_LABEL}={ns}",
                                          "--wait=false"))
        wait_nodes_ready(c, f"{GROUP_LABEL}={ns}", len(nodes))

        # The scheduler starts before the CRDs exist: a warning, and it keeps running.
        g = Gpusched(c, locality_config(c.dir, ns), name=f"gpusched-{ns}").start()
        self.addCleanup(g.stop)
        g.wait_log("is not served (CRD not installed)", timeout=60)
        self.assertTrue(g.alive(), g.log())

        crds = os.path.join(source_dir(), "deploy", "crds")
        c.kubectl("apply", "-f", crds)
        for crd in ("appgroups.appgroup.diktyo.x-k8s.io",
                    "networktopologies.networktopology.diktyo.x-k8s.io"):
            c.kubectl("wait", "--for=condition=Established", f"crd/{crd}", "--timeout=60s")

        cost = lambda o, d, n: {"origin": o, "costList": [{"destination": d, "networkCost": n}]}
        c.apply({
            "apiVersion": "networktopology.diktyo.x-k8s.io/v1alpha1", "kind": "NetworkTopology",
            "metadata": {"name": "nt-e2e", "namespace": ns},
            "spec": {"configmapName": "none", "weights": [{"name": "UserDefined", "topologyList": [
                {"topologyKey": ZONE, "originList": [
                    cost(ZONES[0], ZONES[1], 5), cost(ZONES[1], ZONES[0], 5),
                    cost(ZONES[1], ZONES[2], 10), cost(ZONES[2], ZONES[1], 10),
                    cost(ZONES[0], ZONES[2], 10), cost(ZONES[2], ZONES[0], 10)]}]}]}})
        c.apply({
            "apiVersion": "appgroup.diktyo.x-k8s.io/v1alpha1", "kind": "AppGroup",
            "metadata": {"name": "shop", "namespace": ns},
            "spec": {"numMembers": 2, "topologySortingAlgorithm": "KahnSort", "workloads": [
                {"workload": workload_ref("api"),
                 "dependencies": [{"workload": workload_ref("db"), "minBandwidth": "10Mi",
                                   "maxNetworkCost": 1}]},
                {"workload": workload_ref("db")}]}})
        # Objects the API server accepts but gpusched's decoder rejects (a dependency on a
        # workload the group lacks; a duplicate cost): logged and skipped, the scheduler runs on.
        # Created after the good ones, so once both warnings are logged the scheduler has the
        # good objects too (each kind is one list/watch stream, in order).
        c.apply({
            "apiVersion": "appgroup.diktyo.x-k8s.io/v1alpha1", "kind": "AppGroup",
            "metadata": {"name": "bad", "namespace": ns},
            "spec": {"numMembers": 1, "topologySortingAlgorithm": "KahnSort", "workloads": [
                {"workload": workload_ref("a"),
                 "dependencies": [{"workload": workload_ref("ghost")}]}]}})
        c.apply({
            "apiVersion": "networktopology.diktyo.x-k8s.io/v1alpha1", "kind": "NetworkTopology",
            "metadata": {"name": "nt-bad", "namespace": ns},
            "spec": {"weights": [{"name": "UserDefined", "topologyList": [
                {"topologyKey": ZONE, "originList": [cost("x", "y", 1), cost("x", "y", 2)]}]}]}})
        g.wait_log("names no workload of the AppGroup", timeout=90)
        g.wait_log("duplicate cost x -> y", timeout=90)
        self.assertTrue(g.alive(), g.log())

        ag = {"appgroup.diktyo.x-k8s.io": "shop"}
        db = pod("db-0", dict(ag, **{"appgroup.diktyo.x-k8s.io.workload": "db", "app": "db"}), ns,
                 node_selector={ZONE: ZONES[1]})
        cache = pod("cache-0", {"app": "cache"}, ns, node_selector={ZONE: ZONES[2]})
        create_objects(c, [db, cache], namespace=ns)
        self._wait_scheduled(ns, ["db-0", "cache-0"])
        api = [pod(f"api-{i}", dict(ag, **{"appgroup.diktyo.x-k8s.io.workload": "api",
                                           "app": "api"}), ns) for i in range(3)]
        worker = [pod(f"worker-{i}", {"app": "worker"}, ns,
                      annotations={"gpusched.io/traffic": "app=cache => 50"}) for i in range(2)]
        t0 = time.monotonic()
        create_objects(c, api + worker, namespace=ns)
        placed = self._wait_scheduled(ns, [p["metadata"]["name"] for p in api + worker])
        log(f"MEASURED network_locality e2e: 5 pods placed in {time.monotonic() - t0:.1f}s")

        zone_of = {n["metadata"]["name"]: n["metadata"]["labels"][ZONE]
                   for n in c.get_json("nodes", "-l", f"{GROUP_LABEL}={ns}")["items"]}
        for name, node in placed.items():
            if name.startswith("api-"):
                self.assertEqual(ZONES[1], zone_of[node], f"{name} on {node}\n{g.log()}")
            if name.startswith("worker-"):
                self.assertEqual(ZONES[2], zone_of[node], f"{name} on {node}\n{g.log()}")
        self.assertTrue(g.alive())

    def _wait_scheduled(self, ns, names, timeout=120):
        def done():
            pods = {p["metadata"]["name"]: p.get("spec", {}).get("nodeName")
                    for p in self.cluster.get_json("pods", "--namespace", ns)["items"]}
            if all(pods.get(n) for n in names):
                return {n: pods[n] for n in names}
            return None
        return self.cluster.wait_for(done, timeout=timeout, what=f"pods {names} scheduled")


if __name__ == "__main__":
    unittest.main()
