#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`gpusched explain` and the decision log against a real control plane (issue #9 parts 2-3).

One control plane; kwok GPU nodes of two models (labelled e2e.gpusched.io/group=<namespace>, which
the pods select); `gpusched scheduler` runs with --logging-format=json -v 2 --decision-annotation.
A 2-GPU A100 pod is placed by gpusched; a 6-GPU A100 pod fits nowhere (too few GPUs on the A100
nodes, the wrong model on the T4 node) and stays pending; a pod whose
scheduler does not run stays pending too. `gpusched explain NS/POD --kubeconfig ...` (the gpusched
service account, read-only) must give, per node, the reason the 6-GPU pod does not fit, and for
the placed pod the node it is bound to with the highest total. The scheduler's log must parse line
by line as JSON and hold one decision line for the placed pod. Everything is checked against the
API server's objects, not gpusched's memory.
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
    GROUP_LABEL, Gpusched, create_objects, gpu_pod, gpusched_binary, kwok_gpu_node, log,
    wait_nodes_ready, write_config)

DECISION_ANNOTATION = "gpusched.io/decision"


class ExplainE2ETest(ClusterTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ns = cls.cluster.new_namespace("explain")
        ns = cls.ns
        cls.nodes = {
            f"{ns}-a100-big": kwok_gpu_node(f"{ns}-a100-big", ns, "A100-SXM4-40GB", 4, 40960, "z1"),
            f"{ns}-a100-small": kwok_gpu_node(f"{ns}-a100-small", ns, "A100-SXM4-40GB", 2, 40960, "z1"),
            f"{ns}-t4": kwok_gpu_node(f"{ns}-t4", ns, "Tesla-T4", 8, 15360, "z2"),
        }
        create_objects(cls.cluster, cls.nodes.values())
        wait_nodes_ready(cls.cluster, f"{GROUP_LABEL}={ns}", 3)
        config = write_config(cls.cluster.dir, name=f"{ns}.yaml")
        cls.gpusched = Gpusched(cls.cluster, config, name=f"{ns}-gpusched",
                                extra_args=["--logging-format=json", "--decision-annotation"]).start()
        cls.gpusched.wait_log("informers synced", timeout=60)
        create_objects(cls.cluster, [
            gpu_pod("fits", 2, model="A100", group=ns),
            gpu_pod("toobig", 6, model="A100", group=ns),
            gpu_pod("orphan", 1, model="T4", group=ns, scheduler="no-such-scheduler"),
        ], namespace=ns)
        cls.bound_node = cls.cluster.wait_for(
            lambda: cls.cluster.get_json("pod", "fits", "-n", ns)["spec"].get("nodeName"),
            timeout=60, what="pod fits bound")
        # The 6-GPU pod has been tried (its FailedScheduling condition is written).
        cls.cluster.wait_for(
            lambda: any(c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                        for c in cls.cluster.get_json("pod", "toobig", "-n", ns)
                        .get("status", {}).get("conditions", [])),
            timeout=60, what="pod toobig marked Unschedulable")

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "gpusched", None) is not None and cls.gpusched.alive():
            cls.gpusched.stop()
        super().tearDownClass()

    def explain(self, pod, *extra, output="json"):
        cmd = [gpusched_binary(), "explain", f"{self.ns}/{pod}",
               f"--kubeconfig={self.cluster.gpusched_kubeconfig}", "-o", output, *extra]
        t0 = time.monotonic()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=120)
        log(f"MEASURED explain {pod} -o {output}: {time.monotonic() - t0:.2f}s")
        self.assertEqual(p.returncode, 0, f"{cmd} exited {p.returncode}: {p.stderr}")
        return json.loads(p.stdout) if output == "json" else p.stdout

    def our_nodes(self, ex):
        rows = {n["name"]: n for n in ex["nodes"] if n["name"] in self.nodes}
        self.assertEqual(set(rows), set(self.nodes), "every node of the cluster is explained")
        return rows

    def test_pending_pod_gets_the_reason_per_node(self):
        ex = self.explain("toobig")
        self.assertEqual(ex["status"], "unschedulable")
        self.assertIsNone(ex["chosenNode"])
        self.assertIsNone(ex["boundNode"])
        rows = self.our_nodes(ex)
        for name, row in rows.items():
            self.assertFalse(row["feasible"], name)
            self.assertTrue(row["filter"]["plugin"], row)
        self.assertEqual(rows[f"{self.ns}-t4"]["filter"]["plugin"], "GpuFit")
        self.assertEqual(rows[f"{self.ns}-a100-big"]["filter"]["reason"], "Insufficient nvidia.com/gpu")
        self.assertEqual(rows[f"{self.ns}-a100-small"]["filter"]["reason"], "Insufficient nvidia.com/gpu")
        self.assertIn("model", rows[f"{self.ns}-t4"]["filter"]["reason"].lower())
        # The same reasons in the text table.
        text = self.explain("toobig", output="text")
        for name in self.nodes:
            line = next((ln for ln in text.splitlines() if ln.startswith(name + " ")), None)
            self.assertIsNotNone(line, f"{name} missing from:\n{text}")
            self.assertIn(rows[name]["filter"]["reason"], line)

    def test_bound_pod_shows_its_node_with_the_highest_total(self):
        ex = self.explain("fits")
        self.assertEqual(ex["boundNode"], self.bound_node)
        self.assertEqual(ex["status"], "schedulable")
        rows = self.our_nodes(ex)
        feasible = {n: r for n, r in rows.items() if r["feasible"]}
        self.assertEqual(set(feasible), {f"{self.ns}-a100-big", f"{self.ns}-a100-small"})
        best = max(r["total"] for r in feasible.values())
        self.assertEqual(feasible[self.bound_node]["total"], best, feasible)
        self.assertTrue(feasible[self.bound_node]["bound"])
        self.assertEqual(ex["chosenNode"], self.bound_node)
        for r in feasible.values():
            self.assertEqual(r["total"], sum(s["weighted"] for s in r["scores"]))
            self.assertIn("GpuFragmentation", {s["plugin"] for s in r["scores"]})
        self.assertIn("model", rows[f"{self.ns}-t4"]["filter"]["reason"].lower())

    def test_pod_of_another_scheduler_is_explained_with_the_chosen_profile(self):
        ex = self.explain("orphan", "--scheduler-name", "gpu-scheduler")
        self.assertEqual(ex["profile"], "gpu-scheduler")
        self.assertEqual(ex["status"], "schedulable")
        self.assertEqual(ex["chosenNode"], f"{self.ns}-t4")
        pod = self.cluster.get_json("pod", "orphan", "-n", self.ns)
        self.assertFalse(pod["spec"].get("nodeName"), "explain never binds")

    def test_decision_annotation_matches_the_binding(self):
        pod = self.cluster.get_json("pod", "fits", "-n", self.ns)
        value = json.loads(pod["metadata"]["annotations"][DECISION_ANNOTATION])
        self.assertEqual(value["node"], pod["spec"]["nodeName"])
        self.assertGreaterEqual(value["feasible"], 2)
        self.assertGreaterEqual(value["total"], 3)
        self.assertIn(value["runnerUp"]["node"], self.nodes)
        self.assertGreaterEqual(value["score"], value["runnerUp"]["score"])

    def test_json_log_parses_line_by_line_with_one_decision_line(self):
        self.gpusched.wait_log('"Successfully bound pod to node"', timeout=30)
        decisions = []
        lines = [ln for ln in self.gpusched.log().splitlines() if ln and not ln.startswith("+ ")]
        self.assertTrue(lines)
        for ln in lines:
            try:
                obj = json.loads(ln)
            except ValueError as e:
                self.fail(f"not JSON ({e}): {ln!r}")
            self.assertIsInstance(obj, dict, ln)
            for key in ("ts", "level", "msg"):
                self.assertIn(key, obj, ln)
            if obj["msg"] == "Successfully bound pod to node" and obj.get("pod") == f"{self.ns}/fits":
                decisions.append(obj)
        self.assertEqual(len(decisions), 1, lines[-20:])
        d = decisions[0]
        self.assertEqual(d["node"], self.bound_node)
        self.assertEqual(d["v"], 2)
        self.assertTrue(d["topScores"].startswith(self.bound_node + "="), d)
        self.assertGreaterEqual(d["feasibleNodes"], 2)
        unsched = [json.loads(ln) for ln in lines if f'"pod":"{self.ns}/toobig"' in ln]
        self.assertTrue(any("Insufficient nvidia.com/gpu" in o.get("reasons", "") for o in unsched),
                        unsched)


if __name__ == "__main__":
    unittest.main()
