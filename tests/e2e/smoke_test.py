#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Smoke test of the e2e harness, with upstream components only (no gpusched code).

Three kwok nodes with 8 nvidia.com/gpu each; a Deployment of 4 pods asking for 4 GPUs each
is placed by the upstream kube-scheduler (at most 2 pods fit on one node), kwok runs them,
then scaling to 2 makes the real ReplicaSet controller delete 2 of them. Finally no process
of the control plane may be left.
"""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import TestCluster, make_kwok_node  # noqa: E402

GPU = "nvidia.com/gpu"
GPUS_PER_NODE = 8
GPUS_PER_POD = 4


def deployment(name, replicas):
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {"nvidia.com/gpu.present": "true"},
                    "terminationGracePeriodSeconds": 5,
                    "containers": [
                        {
                            "name": "worker",
                            # Never pulled: kwok plays the kubelet's part.
                            "image": "registry.invalid/gpu-worker:1",
                            "resources": {
                                "requests": {GPU: str(GPUS_PER_POD), "cpu": "1"},
                                "limits": {GPU: str(GPUS_PER_POD)},
                            },
                        }
                    ],
                },
            },
        },
    }


def is_ready(obj):
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in obj.get("status", {}).get("conditions", [])
    )


def processes_mentioning(text):
    """PIDs whose command line contains ``text``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append((int(entry), cmdline.strip()))
    return found


class SmokeTest(unittest.TestCase):
    def test_upstream_scheduler_places_gpu_pods_and_replicaset_scales_down(self):
        t0 = time.monotonic()
        with TestCluster() as c:
            cluster_dir = c.dir
            ns = c.new_namespace("smoke")
            node_names = [f"{ns}-gpu-{i}" for i in range(3)]
            c.apply(
                [
                    make_kwok_node(
                        name,
                        labels={
                            "nvidia.com/gpu.present": "true",
                            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                            "nvidia.com/gpu.count": str(GPUS_PER_NODE),
                        },
                        allocatable={GPU: str(GPUS_PER_NODE)},
                    )
                    for name in node_names
                ]
            )

            def nodes_ready():
                nodes = c.get_json("nodes", "-l", "nvidia.com/gpu.present=true")["items"]
                ready = [
                    n for n in nodes
                    if is_ready(n) and not n.get("spec", {}).get("taints")
                    and n["status"]["allocatable"].get(GPU) == str(GPUS_PER_NODE)
                ]
                return len(ready) == 3 and ready

            c.wait_for(nodes_ready, timeout=60, what="3 kwok GPU nodes Ready and untainted")

            c.apply(deployment("gpu-workload", 4), namespace=ns)

            def pods():
                return c.get_json("pods", "--namespace", ns, "-l", "app=gpu-workload")["items"]

            def four_running():
                items = pods()
                running = [
                    p for p in items
                    if p["status"].get("phase") == "Running" and is_ready(p)
                    and "deletionTimestamp" not in p["metadata"]
                ]
                return len(items) == 4 and len(running) == 4 and running

            running = c.wait_for(four_running, timeout=90, what="4 GPU pods Running and Ready")
            per_node = {}
            for p in running:
                node = p["spec"].get("nodeName")
                self.assertIn(node, node_names, f"pod {p['metadata']['name']} on {node}")
                self.assertEqual(p["spec"].get("schedulerName"), "default-scheduler")
                per_node[node] = per_node.get(node, 0) + GPUS_PER_POD
            for node, gpus in per_node.items():
                self.assertLessEqual(gpus, GPUS_PER_NODE, f"{node} overcommitted: {per_node}")
            self.assertGreaterEqual(len(per_node), 2, f"4x{GPUS_PER_POD} GPUs on one node? {per_node}")
            before = {p["metadata"]["name"] for p in running}
            print(f"placed by kube-scheduler: "
                  f"{sorted((p['metadata']['name'], p['spec']['nodeName']) for p in running)}",
                  file=sys.stderr)

            c.kubectl("scale", "deployment/gpu-workload", "--replicas=2", "--namespace", ns)

            def scaled_down():
                items = pods()
                return len(items) == 2 and all(
                    p["status"].get("phase") == "Running" and "deletionTimestamp" not in p["metadata"]
                    for p in items
                ) and items

            remaining = c.wait_for(scaled_down, timeout=90, what="exactly 2 pods after scale-down")
            after = {p["metadata"]["name"] for p in remaining}
            self.assertTrue(after <= before, f"new pods appeared: {after - before}")
            deleted = before - after
            self.assertEqual(len(deleted), 2, f"deleted: {deleted}")
            print(f"after scale-down: kept {sorted(after)}, deleted {sorted(deleted)}",
                  file=sys.stderr)
            for name in deleted:
                out = c.kubectl("get", "pod", name, "--namespace", ns, "--ignore-not-found")
                self.assertEqual(out.strip(), "", f"pod {name} still exists")

            # The deletions were the ReplicaSet controller's.
            def rs_deleted_events():
                events = c.get_json("events", "--namespace", ns,
                                    "--field-selector", "reason=SuccessfulDelete")["items"]
                msgs = " ".join(e.get("message", "") for e in events
                                if e.get("source", {}).get("component") == "replicaset-controller"
                                or e.get("reportingComponent") == "replicaset-controller")
                return all(f"Deleted pod: {n}" in msgs for n in deleted) and msgs

            c.wait_for(rs_deleted_events, timeout=30,
                       what="replicaset-controller SuccessfulDelete events for the deleted pods")
            dep = c.get_json("deployment", "gpu-workload", "--namespace", ns)
            self.assertEqual(dep["spec"]["replicas"], 2)
            c.wait_for(lambda: c.get_json("deployment", "gpu-workload", "--namespace", ns)
                       ["status"].get("readyReplicas") == 2,
                       timeout=30, what="deployment readyReplicas == 2")

        # Teardown left nothing behind.
        leftovers = processes_mentioning(cluster_dir)
        self.assertEqual(leftovers, [], "control-plane processes left after teardown")
        print(f"smoke test took {time.monotonic() - t0:.1f}s", file=sys.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
