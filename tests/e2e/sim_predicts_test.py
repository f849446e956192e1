#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The simulator predicts the real scheduler (issue #16).

One control plane; a mixed cluster of kwok nodes (8-GPU A100, 4-GPU V100, 2-GPU T4 and CPU-only
nodes in three zones, created before gpusched starts, so its cache holds them in name order) and
a seeded random sequence of pods (whole GPUs, 2/4-GPU pods, GPU shares through
gpusched.io/gpu-milli, model-pinned pods and CPU-only pods). `gpusched scheduler --seed S` with
the default profile places the pods one at a time, each bound before the next is created. Then
`gpusched simulate -f` with the same nodes (read back from the API server), the same pods, the
same config file and `--seed S` must give exactly the same node and the same GPU devices for every
pod, as read from the API server (spec.nodeName, the gpusched.io/gpu-devices annotation).
"""

import json
import os
import random
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase, make_kwok_node  # noqa: E402
from gpusched_harness import (  # noqa: E402
    GROUP_LABEL, Gpusched, create_objects, gpu_pod, gpusched_binary, kwok_gpu_node, log,
    wait_nodes_ready, write_config)

DEVICES = "gpusched.io/gpu-devices"
SEED = 7
PODS = 32


def devices_of(annotation):
    """'0,1' or '1:250m' or '3:500m:8192Mi' -> [device indices]."""
    if not annotation:
        return []
    return [int(tok.split(":")[0]) for tok in annotation.split(",")]


class SimulatorPredictsTest(ClusterTestCase):

    def test_simulator_gives_the_placements_of_the_real_scheduler(self):
        ns = self.cluster.new_namespace("simpredict")
        specs = []
        for i in range(3):
            specs.append(kwok_gpu_node(f"{ns}-a100-{i}", ns, "A100", 8, 40960, f"zone-{i % 3}"))
        for i in range(3):
            specs.append(kwok_gpu_node(f"{ns}-v100-{i}", ns, "V100", 4, 16384, f"zone-{(i + 1) % 3}"))
        for i in range(4):
            specs.append(kwok_gpu_node(f"{ns}-t4-{i}", ns, "T4", 2, 15360, f"zone-{i % 3}"))
        for i in range(3):
            specs.append(make_kwok_node(f"{ns}-cpu-{i}", labels={
                GROUP_LABEL: ns, "topology.kubernetes.io/zone": f"zone-{i % 3}"}))
        self.cluster.apply(specs)
        wait_nodes_ready(self.cluster, f"{GROUP_LABEL}={ns}", len(specs))
        nodes = sorted(self.cluster.get_json("nodes", "-l", f"{GROUP_LABEL}={ns}")["items"],
                       key=lambda n: n["metadata"]["name"])

        rng = random.Random(SEED)
        pods = []
        for i in range(PODS):
            kind = rng.choice(["whole", "whole", "multi", "share", "share", "pinned", "cpu", "cpu"])
            name = f"p{i:02d}-{kind}"
            cpu = rng.choice(["500m", "2", "4", "8"])
            if kind == "whole":
                pod = gpu_pod(name, 1, group=ns, cpu=cpu)
            elif kind == "multi":
                pod = gpu_pod(name, rng.choice([2, 4]), group=ns, cpu=cpu)
            elif kind == "share":
                pod = gpu_pod(name, 0, group=ns, cpu=cpu, annotations={
                    "gpusched.io/gpu-milli": str(rng.choice([250, 300, 500, 700]))})
            elif kind == "pinned":
                pod = gpu_pod(name, 1, group=ns, cpu=cpu, model=rng.choice(["A100", "V100"]))
            else:
                pod = gpu_pod(name, 0, group=ns, cpu=cpu)
            pod["metadata"]["namespace"] = ns
            pods.append(pod)

        config = write_config(self.cluster.dir, name=f"{ns}.yaml")
        sched = Gpusched(self.cluster, config, name=ns, extra_args=[f"--seed={SEED}"]).start()
        self.addCleanup(sched.kill)
        sched.wait_log("gpusched scheduler: scheduling", timeout=60)

        real = {}
        for pod in pods:
            name = pod["metadata"]["name"]
            create_objects(self.cluster, [pod], namespace=ns)

            def settled():
                p = self.cluster.get_json("pod", name, "--namespace", ns)
                if p["spec"].get("nodeName"):
                    return p
                for c in p.get("status", {}).get("conditions", []) or []:
                    if c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable":
                        return p
                return None
            p = self.cluster.wait_for(settled, timeout=60, what=f"{name} bound or unschedulable")
            real[name] = (p["spec"].get("nodeName", ""),
                          devices_of(p["metadata"].get("annotations", {}).get(DEVICES)))
        # Every pod fits (the cluster has 44 GPUs), so no pod is retried: a retry would be a
        # scheduling attempt the one-pass simulation does not make.
        bound = sum(1 for n, _ in real.values() if n)
        self.assertEqual(bound, PODS, f"unbound pods: {real}")

        manifest = os.path.join(self.cluster.dir, f"{ns}-workload.yaml")
        with open(manifest, "w") as f:
            for obj in [self.strip_node(n) for n in nodes] + pods:
                f.write("---\n" + json.dumps(obj) + "\n")
        out = subprocess.run([gpusched_binary(), "simulate", "-f", manifest, "--config", config,
                              "--seed", str(SEED), "-o", "json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        report = json.loads(out.stdout)
        predicted = {}
        for row in report["placements"]:
            pod_ns, name = row["pod"].split("/", 1)
            self.assertEqual(pod_ns, ns)
            predicted[name] = (row["node"], sorted(row["gpuDevices"]))
        real_sorted = {k: (n, sorted(d)) for k, (n, d) in real.items()}
        mismatches = {k: (real_sorted[k], predicted.get(k)) for k in real_sorted
                      if real_sorted[k] != predicted.get(k)}
        self.assertEqual(mismatches, {}, "pod: (real, simulated)")
        cpu_on_gpu = [k for k, (n, _) in real.items() if k.endswith("-cpu") and n and "-cpu-" not in n]
        log(f"MEASURED simulator prediction: {len(real)} pods ({bound} bound), all placements and "
            f"devices equal; CPU-only pods on GPU nodes: {len(cpu_on_gpu)}")

    @staticmethod
    def strip_node(node):
        """The node as a manifest: metadata (name, labels, annotations), spec and allocatable."""
        meta = node["metadata"]
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": meta["name"], "labels": meta.get("labels", {}),
                             "annotations": meta.get("annotations", {})},
                "spec": {k: v for k, v in node.get("spec", {}).items() if k == "taints"},
                "status": {"allocatable": node["status"]["allocatable"],
                           "capacity": node["status"].get("capacity", {})}}


if __name__ == "__main__":
    unittest.main()
