#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`gpusched simulate --from-cluster` against a real control plane (issues #20 and #37).

Two kwok A100 nodes of 8 GPUs; the upstream kube-scheduler binds an 8-GPU pod to one of them (a
pod bound by another scheduler, without gpusched's device annotation). `gpusched simulate
--from-cluster --kubeconfig K -f jobs.yaml -o json`, run as a service account that may only get,
list and watch, must see both nodes and the bound pod (PreBound, on its node, its 8 devices
counted in the GPU allocation), and place the file's Deployment of two 4-GPU pods on the other
node while an 8-GPU pod fits nowhere.

Every kind the scheduler reads is read from the cluster too (issue #37): a third kwok node whose
GPUs are published only as a ResourceSlice (DeviceClass gpu.nvidia.com), and a PersistentVolume
bound (by the real PV controller) to a claim, with node affinity to that node. The file's pod
with a ResourceClaim (given in the file) must get two of the slice's GPUs, and its pod using the
cluster's claim must go to the volume's node. The file's pod that names the cluster's
PriorityClass and ResourceClaimTemplate (neither in the file) must be admitted and get a claim of
one GPU of the slice made from the template. The reader may not list PodDisruptionBudgets: the
report must say so (a warning naming the collection), and the rest must still be simulated.

Nothing may be written: the command runs with read-only RBAC (a write would be refused and fail
it), and every pod and event of the cluster, by uid and resourceVersion, is the same after the run
as before it.
"""

import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase  # noqa: E402
from dra import (  # noqa: E402
    H100, claim_spec, claim_template, device_class, dra_node, gpu_slice)
from gpusched_harness import (  # noqa: E402
    GROUP_LABEL, create_objects, gpu_pod, gpusched_binary, kwok_gpu_node, log, wait_nodes_ready)

JOBS = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: NS}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {GROUP: NS}
      containers:
      - name: main
        resources:
          limits: {nvidia.com/gpu: "4"}
---
apiVersion: v1
kind: Pod
metadata: {name: big, namespace: NS}
spec:
  nodeSelector: {GROUP: NS}
  containers:
  - name: main
    resources:
      limits: {nvidia.com/gpu: "8"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: two-gpus, namespace: NS}
spec: CLAIM_SPEC
---
apiVersion: v1
kind: Pod
metadata: {name: dra, namespace: NS}
spec:
  resourceClaims: [{name: gpu, resourceClaimName: two-gpus}]
  containers:
  - name: main
    resources: {requests: {cpu: 100m}, claims: [{name: gpu}]}
---
apiVersion: v1
kind: Pod
metadata: {name: templated, namespace: NS}
spec:
  priorityClassName: NS-urgent
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
  containers:
  - name: main
    resources: {requests: {cpu: 100m}, claims: [{name: gpu}]}
---
apiVersion: v1
kind: Pod
metadata: {name: ckpt, namespace: NS}
spec:
  containers:
  - name: main
    resources: {requests: {cpu: 100m}}
  volumes:
  - {name: data, persistentVolumeClaim: {claimName: ckpt}}
"""
# What the reader may get, list and watch: everything gpusched reads but PodDisruptionBudgets.
READER_RULES = [
    {"apiGroups": [""], "resources": ["nodes", "pods", "persistentvolumes",
                                      "persistentvolumeclaims"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses", "csinodes", "csidrivers"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["resource.k8s.io"],
     "resources": ["deviceclasses", "resourceslices", "resourceclaims", "devicetaintrules",
                   "resourceclaimtemplates"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"],
     "verbs": ["get", "list", "watch"]},
]


def cluster_state(cluster):
    """Every pod and every event about a pod in the cluster: (kind, namespace, name, uid,
    resourceVersion). Events about nodes are left out: kube-controller-manager's node controller
    writes them (RegisteredNode) whenever it gets to the test's nodes, seconds later on a busy
    machine."""
    out = set()
    for kind in ("pods", "events"):
        for item in cluster.get_json(kind, "-A")["items"]:
            if kind == "events" and item.get("involvedObject", {}).get("kind") == "Node":
                continue
            m = item["metadata"]
            out.add((kind, m.get("namespace"), m["name"], m["uid"], m["resourceVersion"]))
    return out


class SimulateFromClusterE2ETest(ClusterTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        c = cls.cluster
        cls.ns = ns = c.new_namespace("simcluster")
        create_objects(c, [kwok_gpu_node(f"{ns}-a{i}", ns, "A100-SXM4-40GB", 8, 40960, "z1")
                           for i in range(2)])
        wait_nodes_ready(c, f"{GROUP_LABEL}={ns}", 2)
        create_objects(c, [gpu_pod("running", 8, group=ns, scheduler="default-scheduler")],
                       namespace=ns)
        cls.bound_node = c.wait_for(
            lambda: c.get_json("pod", "running", "-n", ns)["spec"].get("nodeName"),
            timeout=60, what="pod running bound by kube-scheduler")
        # kwok moves it to Running; after that nothing changes it (the before/after check).
        c.wait_for(lambda: c.get_json("pod", "running", "-n", ns)["status"].get("phase")
                   == "Running", timeout=60, what="pod running Running")
        # A node with DRA GPUs only, and a volume bound to a claim that can attach only there.
        cls.dra_node = f"{ns}-d0"
        create_objects(c, [dra_node(cls.dra_node, ns), device_class(),
                           gpu_slice(cls.dra_node, H100, ns)])
        # What creating the file's pods reads: a PriorityClass and a claim template.
        c.apply({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                 "metadata": {"name": f"{ns}-urgent"}, "value": 1000})
        c.apply(claim_template("one-gpu", claim_spec(1)), namespace=ns)
        c.apply([
            {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"{ns}-ckpt"},
             "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                      "storageClassName": "", "hostPath": {"path": "/tmp/ckpt"},
                      "claimRef": {"namespace": ns, "name": "ckpt"},
                      "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                          {"key": "kubernetes.io/hostname", "operator": "In",
                           "values": [cls.dra_node]}]}]}}}},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "ckpt", "namespace": ns},
             "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                      "volumeName": f"{ns}-ckpt",
                      "resources": {"requests": {"storage": "10Gi"}}}}])
        c.wait_for(lambda: c.get_json("pvc", "ckpt", "-n", ns).get("status", {}).get("phase")
                   == "Bound", timeout=60, what="claim ckpt bound by the PV controller")
        # A reader: get, list and watch of what gpusched reads, but PodDisruptionBudgets.
        c.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                 "metadata": {"name": f"{ns}-reader"}, "rules": READER_RULES})
        cls.kubeconfig = c.sa_kubeconfig(ns, "reader")
        c.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                 "metadata": {"name": f"{ns}-reader"},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                             "name": f"{ns}-reader"},
                 "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}]})
        cls.jobs = os.path.join(c.dir, "jobs.yaml")
        with open(cls.jobs, "w") as f:
            f.write(JOBS.replace("GROUP", GROUP_LABEL).replace("NS", ns).replace(
                "CLAIM_SPEC", json.dumps(claim_spec(2))))

    def test_places_the_files_pods_on_the_snapshot_and_writes_nothing(self):
        c, ns = self.cluster, self.ns
        before = cluster_state(c)
        cmd = [gpusched_binary(), "simulate", "--from-cluster", f"--kubeconfig={self.kubeconfig}",
               "-f", self.jobs, "-o", "json"]
        t0 = time.monotonic()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=120)
        log(f"MEASURED simulate --from-cluster: {time.monotonic() - t0:.2f}s")
        self.assertEqual(p.returncode, 0, f"{cmd} exited {p.returncode}: {p.stderr}")
        report = json.loads(p.stdout)
        self.assertTrue(report["source"].startswith("cluster "), report["source"])

        rows = {r["pod"]: r for r in report["placements"]}
        running = rows[f"{ns}/running"]
        self.assertEqual(running["state"], "PreBound")
        self.assertEqual(running["node"], self.bound_node)
        other = next(n for n in (f"{ns}-a0", f"{ns}-a1") if n != self.bound_node)
        web = [r for k, r in rows.items() if k.startswith(f"{ns}/web-")]
        self.assertEqual(len(web), 2, rows.keys())
        for r in web:
            self.assertEqual(r["state"], "Scheduled", r)
            self.assertEqual(r["node"], other, r)
            self.assertEqual(len(r["gpuDevices"]), 4, r)
        self.assertEqual(sorted(d for r in web for d in r["gpuDevices"]), list(range(8)))
        big = rows[f"{ns}/big"]
        self.assertEqual(big["state"], "Unschedulable", big)
        self.assertIn("Insufficient nvidia.com/gpu", big["message"])
        a100 = next(m for m in report["gpuModels"] if m["model"] == "A100-SXM4-40GB")
        self.assertEqual(a100["gpusAllocated"], 16)  # the bound pod's 8 included

        # The cluster's ResourceSlice, DeviceClass, PV and PVC were read.
        self.assertEqual((rows[f"{ns}/dra"]["state"], rows[f"{ns}/dra"]["node"]),
                         ("Scheduled", self.dra_node), rows[f"{ns}/dra"])
        claim = next(x for x in report["claims"] if x["claim"] == f"{ns}/two-gpus")
        self.assertEqual(len(claim["devices"]), 2, claim)
        self.assertTrue(all(d.startswith(f"gpu.nvidia.com/{self.dra_node}/") for d in
                            claim["devices"]), claim)
        self.assertEqual((rows[f"{ns}/ckpt"]["state"], rows[f"{ns}/ckpt"]["node"]),
                         ("Scheduled", self.dra_node), rows[f"{ns}/ckpt"])
        # The cluster's PriorityClass and ResourceClaimTemplate were read: the pod was admitted
        # and got a claim made from the template.
        self.assertEqual((rows[f"{ns}/templated"]["state"], rows[f"{ns}/templated"]["node"]),
                         ("Scheduled", self.dra_node), rows[f"{ns}/templated"])
        made = [x for x in report["claims"] if x["claim"].startswith(f"{ns}/templated-gpu-")]
        self.assertEqual(len(made), 1, report["claims"])
        self.assertEqual(len(made[0]["devices"]), 1, made)
        # What the reader may not list is named, not silently dropped.
        self.assertTrue(any(w.startswith("poddisruptionbudgets: forbidden")
                            for w in report["warnings"]), report["warnings"])

        # Nothing was written: the same pods and events, at the same resourceVersions.
        self.assertEqual(cluster_state(c), before)
        self.assertEqual([i["metadata"]["name"] for i in
                          c.get_json("pods", "-n", ns)["items"]], ["running"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
