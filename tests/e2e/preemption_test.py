#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Priority preemption by `gpusched scheduler` on a real control plane (issue #18).

One control plane (etcd, kube-apiserver, kube-controller-manager with its Deployment, ReplicaSet
and disruption controllers, kwok) is shared by the tests of this file; each test has its own
namespace, kwok GPU nodes, PriorityClasses and gpusched process. Low-priority GPU pods come from a
real Deployment; the victims carry a finalizer so that the test can read the DisruptionTarget
condition the scheduler wrote before the API server lets them go. Everything is read back from
the API server with kubectl.
"""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase  # noqa: E402
from gpusched_harness import (  # noqa: E402
    GROUP_LABEL, SCHEDULER_NAME, Gpusched, drop_finalizers, events, gpu_pod, kwok_gpu_node, log,
    priority_class, wait_nodes_ready, write_config)

FINALIZER = "e2e.gpusched.io/hold"
MILLI = "gpusched.io/gpu-milli"


class PreemptionE2ETest(ClusterTestCase):

    def setUp(self):
        self.t_start = time.monotonic()
        self.ns = self.cluster.new_namespace("preempt")
        self.classes = []
        self.procs = []
        self.addCleanup(self._cleanup)
        path = write_config(self.cluster.dir, name=f"{self.ns}.yaml")
        self.gpusched = Gpusched(self.cluster, path, name=self.ns).start()
        self.procs.append(self.gpusched)

    def _cleanup(self):
        for p in self.procs:
            if p.alive():
                p.kill()
        pods = self.cluster.get_json("pods", "--namespace", self.ns)["items"]
        for p in pods:
            if FINALIZER in p["metadata"].get("finalizers", []):
                self.release(p["metadata"]["name"])
        self.cluster.kubectl("delete", "namespace", self.ns, "--wait=false", "--ignore-not-found")
        self.cluster.kubectl("delete", "nodes", "-l", f"{GROUP_LABEL}={self.ns}", "--wait=false",
                             "--ignore-not-found")
        for c in self.classes:
            self.cluster.kubectl("delete", "priorityclass", c, "--ignore-not-found")
        log(f"MEASURED {self.id().split('.')[-1]}: took {time.monotonic() - self.t_start:.1f}s")

    # --- objects -----------------------------------------------------------------------------

    def priority_class(self, suffix, value, policy="PreemptLowerPriority"):
        name = priority_class(self.cluster, f"{self.ns}-{suffix}", value, policy)
        self.classes.append(name)
        return name

    def add_nodes(self, names, gpus):
        self.cluster.apply([kwok_gpu_node(n, self.ns, "A100-SXM4-40GB", gpus, 40960, "zone-a")
                            for n in names])
        wait_nodes_ready(self.cluster, f"{GROUP_LABEL}={self.ns}", len(names))

    def pod_spec(self, name, gpus, priority_class, labels=None, annotations=None, finalizer=True):
        pod = gpu_pod(name, gpus, group=self.ns, annotations=annotations)
        pod["metadata"]["labels"] = labels or {}
        if finalizer:
            pod["metadata"]["finalizers"] = [FINALIZER]
        pod["spec"]["priorityClassName"] = priority_class
        return pod

    def deployment(self, name, replicas, gpus, priority_class, labels):
        pod = self.pod_spec("x", gpus, priority_class, labels=labels)
        del pod["metadata"]["name"]
        template = {"metadata": pod["metadata"], "spec": pod["spec"]}
        self.cluster.apply({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": template}}, namespace=self.ns)

    def pdb(self, name, labels):
        self.cluster.apply({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                            "metadata": {"name": name},
                            "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}}},
                           namespace=self.ns)

    def create(self, pod):
        self.cluster.apply(pod, namespace=self.ns)

    def release(self, name):
        """Drops the test's finalizer so the API server can delete the pod."""
        drop_finalizers(self.cluster, self.ns, name)

    # --- reads -------------------------------------------------------------------------------

    def pods(self):
        return {p["metadata"]["name"]: p
                for p in self.cluster.get_json("pods", "--namespace", self.ns)["items"]}

    def wait_bound(self, count, timeout=60):
        def bound():
            b = {n: p["spec"]["nodeName"] for n, p in self.pods().items()
                 if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")}
            return len(b) >= count and b
        return self.cluster.wait_for(bound, timeout=timeout, what=f"{count} pods bound")

    def wait_terminating(self, count, timeout=60):
        def terminating():
            t = {n: p for n, p in self.pods().items() if p["metadata"].get("deletionTimestamp")}
            return len(t) >= count and t
        return self.cluster.wait_for(terminating, timeout=timeout,
                                     what=f"{count} victims terminating")

    def wait_nominated(self, name, timeout=60):
        def nominated():
            return self.pods()[name].get("status", {}).get("nominatedNodeName")
        return self.cluster.wait_for(nominated, timeout=timeout, what=f"{name} nominated")

    def disruption_target(self, pod):
        for c in pod.get("status", {}).get("conditions", []):
            if c["type"] == "DisruptionTarget":
                return c
        return None

    def preempted_events(self):
        return [e for e in events(self.cluster, self.ns)
                if e.get("reason") == "Preempted" and e.get("reportingController") == SCHEDULER_NAME]

    # --- tests -------------------------------------------------------------------------------

    def test_a_high_priority_pod_preempts_the_minimum_and_binds_on_its_nominated_node(self):
        low = self.priority_class("low", 10)
        high = self.priority_class("high", 1000)
        self.add_nodes([f"{self.ns}-n1", f"{self.ns}-n2"], 2)
        self.deployment("train", 4, 1, low, {"app": "train"})
        before = self.wait_bound(4)
        self.create(self.pod_spec("serve", 1, high, finalizer=False))
        victims = self.wait_terminating(1)
        time.sleep(2)  # a second victim would be chosen in the same cycle; give it time to show
        victims = {n: p for n, p in self.pods().items() if p["metadata"].get("deletionTimestamp")}
        self.assertEqual(len(victims), 1, f"victims: {sorted(victims)}")
        (victim_name, victim), = victims.items()
        cond = self.disruption_target(victim)
        self.assertIsNotNone(cond, victim["status"])
        self.assertEqual((cond["status"], cond["reason"]), ("True", "PreemptionByScheduler"))
        self.assertEqual(cond["message"],
                         f"{SCHEDULER_NAME}: preempting to accommodate a higher priority pod")
        nominated = self.wait_nominated("serve")
        self.assertEqual(nominated, before[victim_name])
        notes = [e.get("note") for e in self.preempted_events()]
        self.assertTrue(any(f"on node {nominated}" in n for n in notes), notes)
        self.assertFalse(self.pods()["serve"]["spec"].get("nodeName"),
                         "bound before its victim left")
        self.release(victim_name)
        bound = self.wait_bound(4)
        self.assertEqual(bound.get("serve"), nominated)
        # The Deployment's replacement for the victim stays pending: it cannot preempt back.
        time.sleep(3)
        pods = self.pods()
        pending = [n for n, p in pods.items() if not p["spec"].get("nodeName")]
        self.assertEqual(len(pending), 1, pending)
        self.assertEqual(len([n for n, p in pods.items() if p["metadata"].get("deletionTimestamp")]), 0)

    def test_a_pdb_is_respected_when_another_node_can_serve(self):
        low = self.priority_class("low", 10)
        mid = self.priority_class("mid", 100)
        high = self.priority_class("high", 1000)
        n1, n2 = f"{self.ns}-n1", f"{self.ns}-n2"
        self.add_nodes([n1, n2], 1)
        # The cheapest victim (priority 10) is guarded by a PDB that allows no disruption (the
        # disruption controller computes disruptionsAllowed=0); the other node's pod costs more.
        self.create(self.pod_spec("db", 1, low, labels={"app": "db"}))
        bound = self.wait_bound(1)
        self.pdb("db", {"app": "db"})
        self.cluster.wait_for(
            lambda: self.cluster.get_json("pdb", "db", "--namespace", self.ns)
            .get("status", {}).get("observedGeneration") is not None,
            timeout=60, what="PDB status from the disruption controller")
        self.create(self.pod_spec("batch", 1, mid, labels={"app": "batch"}))
        bound = self.wait_bound(2)
        self.create(self.pod_spec("serve", 1, high, finalizer=False))
        victims = self.wait_terminating(1)
        self.assertEqual(sorted(victims), ["batch"])
        self.assertEqual(self.wait_nominated("serve"), bound["batch"])
        self.release("batch")
        self.assertEqual(self.wait_bound(2).get("serve"), bound["batch"])

    def test_preemption_policy_never_never_preempts(self):
        low = self.priority_class("low", 10)
        never = self.priority_class("never", 1000, policy="Never")
        self.add_nodes([f"{self.ns}-n1"], 1)
        self.create(self.pod_spec("train", 1, low))
        self.wait_bound(1)
        self.create(self.pod_spec("polite", 1, never, finalizer=False))

        def failed():
            for e in events(self.cluster, self.ns):
                if (e.get("reason") == "FailedScheduling"
                        and e.get("regarding", {}).get("name") == "polite"):
                    return e.get("note")
            return None
        note = self.cluster.wait_for(failed, timeout=60, what="FailedScheduling for polite")
        self.assertIn("preemption: not eligible due to preemptionPolicy=Never.", note)
        time.sleep(3)
        pods = self.pods()
        self.assertFalse(pods["train"]["metadata"].get("deletionTimestamp"))
        self.assertFalse(pods["polite"]["spec"].get("nodeName"))
        self.assertFalse(pods["polite"].get("status", {}).get("nominatedNodeName"))
        self.assertEqual(self.preempted_events(), [])

    def test_shared_gpus_the_victims_free_one_whole_device(self):
        p1 = self.priority_class("p1", 1)
        p3 = self.priority_class("p3", 3)
        high = self.priority_class("high", 1000)
        self.add_nodes([f"{self.ns}-n1"], 2)
        # Two half-GPU pods per device, created in an order that puts one p1 and one p3 on each
        # device (binpack fills device 0 first). Counting GPUs would evict the two p1 pods (one
        # per device) and free no whole device.
        for name, pc in (("a-p1", p1), ("c-p3", p3), ("b-p1", p1), ("d-p3", p3)):
            self.create(self.pod_spec(name, 0, pc, annotations={MILLI: "500"}))
            self.wait_bound(len(self.pods()))
        devices = {n: p["metadata"]["annotations"]["gpusched.io/gpu-devices"].split(":")[0]
                   for n, p in self.pods().items()}
        self.assertEqual(len(set(devices.values())), 2, devices)
        self.assertNotEqual(devices["a-p1"], devices["b-p1"], devices)
        self.create(self.pod_spec("whole", 1, high, finalizer=False))
        victims = self.wait_terminating(2)
        time.sleep(2)
        victims = sorted(n for n, p in self.pods().items() if p["metadata"].get("deletionTimestamp"))
        self.assertEqual(len(victims), 2, victims)
        self.assertEqual(len({devices[v] for v in victims}), 1,
                         f"victims {victims} on devices {devices}: no whole device freed")
        for v in victims:
            self.release(v)
        bound = self.wait_bound(3)
        self.assertIn("whole", bound)
        freed = devices[victims[0]]
        self.assertEqual(self.pods()["whole"]["metadata"]["annotations"]["gpusched.io/gpu-devices"],
                         freed)


if __name__ == "__main__":
    unittest.main()
