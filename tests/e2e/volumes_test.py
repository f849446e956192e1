#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Volumes by `gpusched scheduler` on a real control plane (issue #22, part 1).

One control plane for the file; its kube-controller-manager runs every controller, the
persistentvolume-binder among them, which completes the bindings gpusched starts. Nodes are kwok
nodes in zones zone-a and zone-b; the PVs are hostPath volumes nobody mounts (kwok runs no
kubelet), which is all the PV controller and the scheduler look at.

  test_a  a WaitForFirstConsumer StorageClass (no provisioner, allowedTopologies: zone-a and
          zone-b) and one static PV in zone-b: the pod lands in zone-b, gpusched writes the PV's
          claimRef and the PV controller binds the claim to it (PVC phase Bound).
  test_b  a WaitForFirstConsumer class whose provisioner nobody runs, allowed in zone-a only:
          gpusched picks a zone-a node and writes volume.kubernetes.io/selected-node on the claim
          (the pod then waits for the volume, as with kube-scheduler).
  test_c  an unbound claim of an Immediate class: the pod is unschedulable with upstream's
          message "pod has unbound immediate PersistentVolumeClaims".
  test_d  a ReadWriteOncePod claim (bound by the PV controller to a static PV) used by a running
          pod: a second pod using it is unschedulable with VolumeRestrictions' reason.
"""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase  # noqa: E402
from gpusched_harness import (  # noqa: E402
    GROUP_LABEL, SCHEDULER_NAME, Gpusched, kwok_gpu_node, log, pod_condition, wait_nodes_ready)

ZONE = "topology.kubernetes.io/zone"
SELECTED_NODE = "volume.kubernetes.io/selected-node"

CONFIG = f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  qps: 200
  burst: 400
leaderElection:
  leaderElect: false
profiles:
- schedulerName: {SCHEDULER_NAME}
  pluginConfig:
  - name: VolumeBinding
    args:
      bindTimeoutSeconds: 20
"""


class VolumesE2ETest(ClusterTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        c = cls.cluster
        path = os.path.join(c.dir, "volumes.yaml")
        with open(path, "w") as f:
            f.write(CONFIG)
        cls.gpusched = Gpusched(c, path, name="gpusched-volumes")
        cls.gpusched.start()

    @classmethod
    def tearDownClass(cls):
        if cls.gpusched.alive():
            cls.gpusched.kill()
        super().tearDownClass()

    def setUp(self):
        self.t0 = time.monotonic()
        self.ns = self.cluster.new_namespace("vol")
        self.addCleanup(self.cleanup)

    def cleanup(self):
        c = self.cluster
        c.kubectl("delete", "namespace", self.ns, "--wait=false", "--ignore-not-found")
        c.kubectl("delete", "nodes", "-l", f"{GROUP_LABEL}={self.ns}", "--wait=false",
                  "--ignore-not-found")
        c.kubectl("delete", "pv,storageclass", "-l", f"{GROUP_LABEL}={self.ns}", "--wait=false",
                  "--ignore-not-found")
        log(f"MEASURED {self.id().split('.')[-1]}: took {time.monotonic() - self.t0:.1f}s")

    # --- objects -------------------------------------------------------------------------------

    def nodes(self):
        spec = [("a1", "zone-a"), ("a2", "zone-a"), ("b1", "zone-b"), ("b2", "zone-b")]
        self.cluster.apply([kwok_gpu_node(f"{self.ns}-{n}", self.ns, "A100-SXM4-80GB", 1, 81920, z)
                            for n, z in spec])
        wait_nodes_ready(self.cluster, f"{GROUP_LABEL}={self.ns}", len(spec))

    def storage_class(self, name, provisioner, mode, zones=None):
        sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
              "metadata": {"name": name, "labels": {GROUP_LABEL: self.ns}},
              "provisioner": provisioner, "volumeBindingMode": mode}
        if zones:
            sc["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": zones}]}]
        self.cluster.apply(sc)

    def zonal_pv(self, name, storage_class, zone):
        self.cluster.apply({
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "labels": {GROUP_LABEL: self.ns, ZONE: zone}},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "storageClassName": storage_class, "persistentVolumeReclaimPolicy": "Retain",
                     "hostPath": {"path": f"/tmp/{name}"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": ZONE, "operator": "In", "values": [zone]}]}]}}}})

    def claim(self, name, storage_class, mode="ReadWriteOnce"):
        self.cluster.apply({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": [mode], "storageClassName": storage_class,
                     "resources": {"requests": {"storage": "1Gi"}}}}, namespace=self.ns)

    def pod(self, name, claim):
        self.cluster.apply({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"schedulerName": SCHEDULER_NAME, "terminationGracePeriodSeconds": 0,
                     "nodeSelector": {GROUP_LABEL: self.ns},
                     "containers": [{"name": "main", "image": "registry.invalid/worker:1",
                                     "resources": {"requests": {"cpu": "100m",
                                                                "memory": "128Mi"}},
                                     "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                     "volumes": [{"name": "data",
                                  "persistentVolumeClaim": {"claimName": claim}}]}},
            namespace=self.ns)

    def get(self, kind, name):
        return self.cluster.get_json(kind, name, "--namespace", self.ns)

    def zone_of(self, node):
        return self.cluster.get_json("node", node)["metadata"]["labels"].get(ZONE)

    # --- tests ---------------------------------------------------------------------------------

    def test_a_wait_for_first_consumer_static_pv_pod_lands_in_its_zone_and_claim_binds(self):
        self.nodes()
        sc = f"{self.ns}-wffc"
        pv = f"{self.ns}-pv-b"
        self.storage_class(sc, "kubernetes.io/no-provisioner", "WaitForFirstConsumer",
                           zones=["zone-a", "zone-b"])
        self.zonal_pv(pv, sc, "zone-b")
        self.claim("data", sc)
        self.pod("train", "data")

        def bound():
            p = self.get("pod", "train")
            return p["spec"].get("nodeName") and p
        p = self.cluster.wait_for(bound, timeout=60, what="the pod bound")
        node = p["spec"]["nodeName"]
        self.assertEqual(self.zone_of(node), "zone-b", f"pod on {node}")

        def claim_bound():
            c = self.get("pvc", "data")
            return c.get("status", {}).get("phase") == "Bound" and c
        c = self.cluster.wait_for(claim_bound, timeout=60, what="the claim Bound by the PV controller")
        self.assertEqual(c["spec"].get("volumeName"), pv)
        claim_ref = self.cluster.get_json("pv", pv)["spec"]["claimRef"]
        self.assertEqual((claim_ref["namespace"], claim_ref["name"]), (self.ns, "data"))
        log(f"pod on {node} (zone-b); claim bound to {pv}")

    def test_b_dynamic_provisioning_gets_selected_node_in_an_allowed_zone(self):
        self.nodes()
        sc = f"{self.ns}-dyn"
        self.storage_class(sc, "example.com/nobody-runs-this", "WaitForFirstConsumer",
                           zones=["zone-a"])
        self.claim("scratch", sc)
        self.pod("train", "scratch")

        def selected():
            ann = self.get("pvc", "scratch")["metadata"].get("annotations", {})
            return ann.get(SELECTED_NODE)
        node = self.cluster.wait_for(selected, timeout=60, what=f"{SELECTED_NODE} on the claim")
        self.assertEqual(self.zone_of(node), "zone-a", f"selected {node}")
        # Nobody provisions the volume: the pod is not bound.
        self.assertFalse(self.get("pod", "train")["spec"].get("nodeName"))
        log(f"claim's selected node: {node} (zone-a)")

    def test_c_unbound_immediate_claim_is_unschedulable_with_upstreams_message(self):
        self.nodes()
        sc = f"{self.ns}-immediate"
        self.storage_class(sc, "example.com/nobody-runs-this", "Immediate")
        self.claim("data", sc)
        self.pod("train", "data")

        def rejected():
            cond = pod_condition(self.get("pod", "train"))
            return cond and cond.get("reason") == "Unschedulable" and cond
        cond = self.cluster.wait_for(rejected, timeout=60, what="PodScheduled=False Unschedulable")
        self.assertIn("pod has unbound immediate PersistentVolumeClaims", cond.get("message", ""))
        log(f"message: {cond.get('message')}")


    def test_d_read_write_once_pod_conflict_is_reported_as_upstream(self):
        self.nodes()
        sc = f"{self.ns}-static"
        pv = f"{self.ns}-pv-rwop"
        self.storage_class(sc, "kubernetes.io/no-provisioner", "Immediate")
        self.cluster.apply({
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": pv, "labels": {GROUP_LABEL: self.ns}},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOncePod"],
                     "storageClassName": sc, "persistentVolumeReclaimPolicy": "Retain",
                     "hostPath": {"path": f"/tmp/{pv}"}}})
        self.claim("solo", sc, mode="ReadWriteOncePod")
        self.cluster.wait_for(
            lambda: self.get("pvc", "solo").get("status", {}).get("phase") == "Bound",
            timeout=60, what="the ReadWriteOncePod claim Bound by the PV controller")
        self.pod("first", "solo")
        self.cluster.wait_for(lambda: self.get("pod", "first")["spec"].get("nodeName"),
                              timeout=60, what="the first pod bound")
        self.pod("second", "solo")

        def rejected():
            cond = pod_condition(self.get("pod", "second"))
            return cond and cond.get("reason") == "Unschedulable" and cond
        cond = self.cluster.wait_for(rejected, timeout=60, what="the second pod Unschedulable")
        self.assertIn("node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod "
                      "access mode already in-use by another pod", cond.get("message", ""))
        self.assertFalse(self.get("pod", "second")["spec"].get("nodeName"))
        log(f"message: {cond.get('message')}")

if __name__ == "__main__":
    unittest.main(verbosity=2)
