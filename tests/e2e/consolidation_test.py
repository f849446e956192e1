#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Consolidation by `gpusched scheduler` on a real control plane (issue #41).

One control plane (etcd, kube-apiserver, kube-controller-manager with its Deployment, ReplicaSet
and disruption controllers, kwok) is shared by the tests of this file; each test has its own
namespace, four kwok 8-GPU nodes and gpusched process. Two 1-GPU replicas of a Deployment run on
each node (6-GPU fillers place them, then leave); an 8-GPU pod arrives (or `gpusched consolidate --dry-run` plans). Everything is read back
from the API server with kubectl: the evictions go through the real eviction subresource, the
replacements come from the real ReplicaSet controller, the budget from the disruption controller.
"""

import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase  # noqa: E402
from gpusched_harness import (  # noqa: E402
    GROUP_LABEL, SCHEDULER_NAME, Gpusched, events, gpu_pod, gpusched_binary, install_pod_groups,
    kwok_gpu_node, log, wait_nodes_ready, write_config)

MOVABLE = "gpusched.io/movable"
# deploy/'s rule for consolidation's evictions; the test cluster's gpusched identity otherwise has
# kube-scheduler's roles, which do not evict.
EVICTION_RULE = {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}


def grant_eviction(cluster):
    cluster.apply([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "e2e-gpusched-eviction"}, "rules": [EVICTION_RULE]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "e2e-gpusched-eviction"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "e2e-gpusched-eviction"},
         "subjects": [{"kind": "ServiceAccount", "name": "gpusched",
                       "namespace": "gpusched-system"}]},
    ])


class ConsolidationE2ETest(ClusterTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        install_pod_groups(cls.cluster)  # for the gang's PodGroup

    def setUp(self):
        self.t_start = time.monotonic()
        self.ns = self.cluster.new_namespace("consolidate")
        self.addCleanup(self._cleanup)
        grant_eviction(self.cluster)
        path = write_config(self.cluster.dir, name=f"{self.ns}.yaml")
        self.gpusched = Gpusched(self.cluster, path, name=self.ns).start()
        self.nodes = [f"{self.ns}-n{i}" for i in range(1, 5)]
        self.cluster.apply([kwok_gpu_node(n, self.ns, "A100-SXM4-80GB", 8, 81920, "zone-a")
                            for n in self.nodes])
        wait_nodes_ready(self.cluster, f"{GROUP_LABEL}={self.ns}", len(self.nodes))

    def _cleanup(self):
        if self.gpusched.alive():
            self.gpusched.kill()
        self.cluster.kubectl("delete", "namespace", self.ns, "--wait=false", "--ignore-not-found")
        self.cluster.kubectl("delete", "nodes", "-l", f"{GROUP_LABEL}={self.ns}", "--wait=false",
                             "--ignore-not-found")
        log(f"MEASURED {self.id().split('.')[-1]}: took {time.monotonic() - self.t_start:.1f}s")

    # --- objects and reads -------------------------------------------------------------------

    def pods(self):
        return {p["metadata"]["name"]: p
                for p in self.cluster.get_json("pods", "--namespace", self.ns)["items"]}

    def running(self):
        return {n: p["spec"]["nodeName"] for n, p in self.pods().items()
                if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")}

    def wait_running(self, want, timeout=90):
        """Waits until `want(running)` holds; returns the running pods then."""
        return self.cluster.wait_for(lambda: want(self.running()) and self.running(),
                                     timeout=timeout, what="pods running")

    def two_replicas_per_node(self, movable):
        """Fillers take 6 GPUs of each node, the replicas the other 2; then the fillers leave."""
        fillers = [gpu_pod(f"filler-{i}", 6, group=self.ns) for i in range(4)]
        self.cluster.apply(fillers, namespace=self.ns)
        self.wait_running(lambda r: len(r) == 4)
        annotations = {MOVABLE: "true"} if movable else {}
        template = gpu_pod("x", 1, group=self.ns, annotations=annotations)
        del template["metadata"]["name"]
        template["metadata"]["labels"] = {"app": "infer"}
        self.cluster.apply({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "infer"},
            "spec": {"replicas": 8, "selector": {"matchLabels": {"app": "infer"}},
                     "template": {"metadata": template["metadata"], "spec": template["spec"]}}},
            namespace=self.ns)
        self.wait_running(lambda r: len(r) == 12)
        self.cluster.kubectl("delete", "pods", "--namespace", self.ns,
                             *[f"filler-{i}" for i in range(4)])
        placed = self.wait_running(lambda r: len(r) == 8)
        per_node = sorted(list(placed.values()).count(n) for n in self.nodes)
        self.assertEqual(per_node, [2, 2, 2, 2], placed)
        return placed

    def submit_train(self):
        self.cluster.apply(gpu_pod("train", 8, group=self.ns), namespace=self.ns)

    def submit_gang(self, size):
        """PodGroup "job" (minMember `size`) and its `size` 8-GPU members worker-<i>."""
        self.cluster.apply({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                            "metadata": {"name": "job"}, "spec": {"minMember": size}},
                           namespace=self.ns)
        members = []
        for i in range(size):
            pod = gpu_pod(f"worker-{i}", 8, group=self.ns)
            pod["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "job"}
            members.append(pod)
        self.cluster.apply(members, namespace=self.ns)

    def moved_events(self):
        return [e for e in events(self.cluster, self.ns)
                if e.get("reason") == "Moved" and e.get("reportingController") == SCHEDULER_NAME]

    def assert_nothing_moves(self, before):
        time.sleep(8)  # several attempts of the 8-GPU pod
        pods = self.pods()
        self.assertFalse(pods["train"]["spec"].get("nodeName"))
        self.assertEqual(self.running(), before)
        self.assertEqual(self.moved_events(), [])

    # --- tests -------------------------------------------------------------------------------

    def test_the_fewest_replicas_move_and_the_big_pod_binds(self):
        before = self.two_replicas_per_node(movable=True)
        self.submit_train()
        after = self.wait_running(lambda r: "train" in r and len(r) == 9, timeout=120)
        node = after["train"]
        moved = sorted(n for n in before if n not in after)
        self.assertEqual(len(moved), 2, f"before {before}, after {after}")
        self.assertTrue(all(before[n] == node for n in moved), "only the train node's replicas")
        unchanged = {n: v for n, v in before.items() if n not in moved}
        self.assertTrue(all(after[n] == v for n, v in unchanged.items()), "nothing else moved")
        replacements = {n: v for n, v in after.items() if n not in before and n != "train"}
        self.assertEqual(len(replacements), 2, after)
        self.assertTrue(all(v != node for v in replacements.values()), replacements)
        notes = [e.get("note", "") for e in self.moved_events()]
        self.assertEqual(len(notes), 2, notes)
        self.assertTrue(all(f"on node {node}" in n for n in notes), notes)

    def test_a_budget_that_forbids_the_move_moves_nothing(self):
        before = self.two_replicas_per_node(movable=True)
        self.cluster.apply({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                            "metadata": {"name": "infer"},
                            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "infer"}}}},
                           namespace=self.ns)
        self.cluster.wait_for(
            lambda: self.cluster.get_json("pdb", "infer", "--namespace", self.ns)
            .get("status", {}).get("observedGeneration") is not None,
            timeout=60, what="PDB status from the disruption controller")
        self.submit_train()
        self.assert_nothing_moves(before)
        # The plan was made and the API server's eviction subresource refused it (429).
        with open(self.gpusched.log_path) as f:
            self.assertIn("Cannot evict pod as it would violate the pod's disruption budget",
                          f.read())

    def test_pods_that_did_not_opt_in_never_move(self):
        before = self.two_replicas_per_node(movable=False)
        self.submit_train()
        self.assert_nothing_moves(before)

    def test_a_gang_gets_moves_on_two_nodes_all_or_nothing(self):
        """Two 8-GPU members of a PodGroup: the replicas of two nodes move, both members bind
        there; with only one node's replicas movable (the gang cannot fit), nothing moves."""
        before = self.two_replicas_per_node(movable=True)
        self.submit_gang(2)
        after = self.wait_running(
            lambda r: "worker-0" in r and "worker-1" in r and len(r) == 10, timeout=120)
        nodes = {after["worker-0"], after["worker-1"]}
        self.assertEqual(len(nodes), 2, after)
        moved = sorted(n for n in before if n not in after)
        self.assertEqual(len(moved), 4, f"before {before}, after {after}")
        self.assertTrue(all(before[n] in nodes for n in moved), "only the members' nodes")
        replacements = {n: v for n, v in after.items() if n not in before and
                        not n.startswith("worker-")}
        self.assertEqual(len(replacements), 4, after)
        self.assertTrue(all(v not in nodes for v in replacements.values()), replacements)

    def test_a_gang_that_cannot_fit_after_moves_moves_nothing(self):
        before = self.two_replicas_per_node(movable=True)
        # Two nodes' replicas stop being movable: a new ReplicaSet would replace them, so the
        # annotation is removed from the running pods themselves.
        keep = sorted(n for n, node in before.items() if node in self.nodes[1:])
        self.cluster.kubectl("annotate", "pods", "--namespace", self.ns, *keep, f"{MOVABLE}-")
        self.submit_gang(3)
        time.sleep(8)  # several attempts of the gang
        self.assertEqual(self.running(), before)
        self.assertEqual(self.moved_events(), [])
        pods = self.pods()
        for i in range(3):
            self.assertFalse(pods[f"worker-{i}"]["status"].get("nominatedNodeName"))

    def test_the_dry_run_lists_the_moves_and_changes_nothing(self):
        """`gpusched consolidate --dry-run` against the live cluster: read-only, and its plan
        empties whole nodes by moving this namespace's opted-in replicas."""
        before = self.two_replicas_per_node(movable=True)
        out = subprocess.run(
            [gpusched_binary(), "consolidate", "--dry-run", "--kubeconfig",
             self.cluster.kubeconfig, "-o", "json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120, check=True)
        plan = json.loads(out.stdout)
        self.assertLessEqual(plan["moves"], 10)
        eight = [s for s in plan["sizes"] if s["gpus"] == 8]
        self.assertTrue(eight and eight[0]["madeByMoves"] >= 1, plan["sizes"])
        for room in plan["plans"]:
            self.assertTrue(room["held"], room)
            for move in room["moves"]:
                ns, name = move["pod"].split("/")
                self.assertEqual(ns, self.ns, move)
                self.assertEqual(before[name], move["from"], move)
                self.assertTrue(move["to"] and move["to"] != move["from"], move)
        time.sleep(2)
        self.assertEqual(self.running(), before, "the dry run moved nothing")
        self.assertEqual(self.moved_events(), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
