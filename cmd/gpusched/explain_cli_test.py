#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`gpusched explain -f` on simulator input (testdata/explain.yaml): the CLI contract.

Golden-free: it checks the structure of the JSON and text outputs and the relations between the
values (every node has a verdict, totals are the sum of the weighted plugin scores, the chosen
node has the highest total, a bound pod's node is named), not recorded output.
Usage: explain_cli_test.py GPUSCHED_BINARY
"""

import json
import os
import subprocess
import sys
import unittest

BINARY = None
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "explain.yaml")
PREEMPTION = os.path.join(os.path.dirname(DATA), "explain-preemption.yaml")
GANG = os.path.join(os.path.dirname(DATA), "explain-gang.yaml")
SHARED_GPU = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                          "examples", "dra", "shared-gpu.yaml")
WORKLOADS = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                          "examples", "simulate", f) for f in ("cluster.yaml", "workloads.yaml")]
NODES = {"a100-big", "a100-small", "t4-1"}


def run(*args):
    p = subprocess.run([BINARY, "explain", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def explain_json(pod, *extra):
    rc, out, err = run(pod, "-f", DATA, "-o", "json", *extra)
    if rc != 0:
        raise AssertionError(f"explain {pod} exited {rc}: {err}")
    return json.loads(out)


class ExplainCliTest(unittest.TestCase):
    def check_breakdowns(self, ex):
        self.assertEqual({n["name"] for n in ex["nodes"]}, NODES)
        self.assertEqual(ex["totalNodes"], 3)
        for n in ex["nodes"]:
            if n["feasible"]:
                self.assertNotIn("filter", n)
                self.assertTrue(n["scores"], n)
                for s in n["scores"]:
                    self.assertEqual(s["weighted"], s["normalized"] * s["weight"], s)
                    self.assertGreaterEqual(s["weight"], 1)
                self.assertEqual(n["total"], sum(s["weighted"] for s in n["scores"]), n)
            else:
                self.assertTrue(n["filter"]["plugin"], n)
                self.assertTrue(n["filter"]["reason"], n)
                self.assertIn(n["filter"]["code"], ("Unschedulable", "UnschedulableAndUnresolvable"))

    def test_bound_pod_shows_its_node_with_the_highest_total(self):
        ex = explain_json("ml/train")
        self.check_breakdowns(ex)
        self.assertEqual(ex["status"], "schedulable")
        self.assertIn(ex["boundNode"], ("a100-big", "a100-small"))
        self.assertEqual(ex["chosenNode"], ex["boundNode"],
                         "with its own usage removed, the pod's node is chosen again")
        feasible = {n["name"]: n for n in ex["nodes"] if n["feasible"]}
        self.assertEqual(set(feasible), {"a100-big", "a100-small"})
        best = max(n["total"] for n in feasible.values())
        self.assertEqual(feasible[ex["boundNode"]]["total"], best)
        self.assertTrue(feasible[ex["boundNode"]]["bound"])
        self.assertTrue(feasible[ex["boundNode"]]["chosen"])
        t4 = next(n for n in ex["nodes"] if n["name"] == "t4-1")
        self.assertEqual(t4["filter"]["plugin"], "GpuFit")
        self.assertIn("model", t4["filter"]["reason"].lower())

    def test_pending_pod_names_the_reason_for_every_node(self):
        ex = explain_json("ml/huge")
        self.check_breakdowns(ex)
        self.assertEqual(ex["status"], "unschedulable")
        self.assertIsNone(ex["chosenNode"])
        self.assertIsNone(ex["boundNode"])
        self.assertTrue(ex["message"].startswith("0/3 nodes are available:"), ex["message"])
        by_name = {n["name"]: n for n in ex["nodes"]}
        for name in ("a100-big", "a100-small"):
            self.assertFalse(by_name[name]["feasible"])
            self.assertEqual(by_name[name]["filter"]["reason"], "Insufficient nvidia.com/gpu")
        self.assertEqual(by_name["t4-1"]["filter"]["plugin"], "GpuFit")
        self.assertIn("model", by_name["t4-1"]["filter"]["reason"].lower())
        self.assertIn("2 Insufficient nvidia.com/gpu", ex["message"])

    def test_text_output_is_an_aligned_table_with_every_node(self):
        rc, out, err = run("ml/huge", "-f", DATA)
        self.assertEqual(rc, 0, err)
        self.assertIn("NODE", out)
        self.assertIn("REASON", out)
        for name in NODES:
            self.assertIn(name, out)
        self.assertIn("Insufficient nvidia.com/gpu", out)
        self.assertIn("Result: unschedulable: 0/3 nodes are available:", out)
        rc, out, err = run("ml/train", "-f", DATA)
        self.assertEqual(rc, 0, err)
        for col in ("PLUGIN", "RAW", "NORMALIZED", "WEIGHT", "WEIGHTED", "TOTAL (chosen)"):
            self.assertIn(col, out)
        self.assertIn("Bound to a100-", out)
        header = next(line for line in out.splitlines() if line.startswith("NODE") and "RAW" in line)
        self.assertLess(header.index("PLUGIN"), header.index("RAW"))

    def test_scheduler_name_selects_the_profile_and_an_unknown_one_is_bad_input(self):
        ex = explain_json("ml/serve", "--scheduler-name", "gpu-scheduler")
        self.assertEqual(ex["profile"], "gpu-scheduler")
        self.assertEqual(ex["chosenNode"], "t4-1")
        rc, _, err = run("ml/serve", "-f", DATA, "--scheduler-name", "nope")
        self.assertEqual(rc, 1)
        self.assertIn("--scheduler-name", err)
        self.assertIn("nope", err)

    def test_preemption_lists_the_victims_on_each_node_and_the_nominated_one(self):
        rc, out, err = run("ml/urgent", "-f", PREEMPTION, "-o", "json")
        self.assertEqual(rc, 0, err)
        ex = json.loads(out)
        self.assertEqual(ex["status"], "unschedulable")
        self.assertIsNone(ex["chosenNode"])
        self.assertEqual(ex["nominatedNode"], "a100-b", "the lowest highest victim priority")
        by_name = {n["name"]: n["preemption"] for n in ex["nodes"]}
        self.assertEqual([v["pod"] for v in by_name["a100-b"]["victims"]],
                         ["ml/etl-2", "ml/etl-3", "ml/etl-4"])
        self.assertEqual([(v["pod"], v["priority"]) for v in by_name["a100-a"]["victims"]],
                         [("ml/train-1", 100), ("ml/etl-1", 10)], "most important first")
        self.assertFalse(by_name["a100-c"]["possible"], "its priority-1000 pod stays")
        self.assertEqual(by_name["a100-c"]["reason"], "Insufficient nvidia.com/gpu")
        for n in ex["nodes"]:
            for v in n["preemption"]["victims"]:
                self.assertLess(v["priority"], 1000)
        rc, out, err = run("ml/urgent", "-f", PREEMPTION)
        self.assertEqual(rc, 0, err)
        self.assertIn("a100-b (nominated)  ml/etl-2 (10), ml/etl-3 (10), ml/etl-4 (10)", out)
        self.assertIn("Preemption would evict ml/etl-2 (10), ml/etl-3 (10), ml/etl-4 (10) on a100-b "
                      "and nominate the pod there.", out)

    def test_a_gang_member_says_whether_its_gang_fits(self):
        rc, out, err = run("ml/train-1", "-f", GANG, "-o", "json")
        self.assertEqual(rc, 0, err)
        gang = json.loads(out)["gang"]
        self.assertEqual(gang["gang"], "gang PodGroup ml/train")
        self.assertEqual((gang["minMember"], gang["members"], gang["fits"]), (3, 3, False))
        self.assertIn("cannot be placed: pod ml/train-", gang["message"])
        self.assertIn("Insufficient nvidia.com/gpu", gang["message"])
        rc, out, err = run("ml/pair-0", "-f", GANG, "-o", "json")
        self.assertEqual(rc, 0, err)
        gang = json.loads(out)["gang"]
        self.assertTrue(gang["fits"], gang)
        # pair-1 is bound; the trial places the explained member (its own usage set aside).
        self.assertEqual([p["pod"] for p in gang["placements"]], ["ml/pair-0"])
        rc, out, err = run("ml/train-0", "-f", GANG)
        self.assertEqual(rc, 0, err)
        self.assertIn("Gang: gang PodGroup ml/train (minMember 3, 3 pods exist): the gang does not "
                      "fit: gang PodGroup ml/train cannot be placed: pod ml/train-", out)

    def test_a_shared_gpu_says_how_much_of_its_capacity_is_left(self):
        # Two 32Gi shares (30Gi rounded up to the policy's 8Gi step) hold 64Gi of the 80Gi H100.
        rc, out, err = run("ml/infer-c", "-f", SHARED_GPU, "-o", "json")
        self.assertEqual(rc, 0, err)
        devices = json.loads(out)["claims"]["requests"][0]["devices"]
        self.assertEqual([d["verdict"] for d in devices],
                         ["capacity short: gpu.nvidia.com/memory needs 32Gi, has 16Gi left"])

    def test_a_workload_or_pod_group_names_the_pod_it_explains(self):
        files = [a for f in WORKLOADS for a in ("-f", f)]
        cases = [
            (["deployment/embedder", "-n", "infer"], "deployment infer/embedder", "infer/embedder-"),
            (["deploy/embedder", "--namespace", "infer"], "deployment infer/embedder",
             "infer/embedder-"),
            (["sts/vectordb", "-n", "infer"], "statefulset infer/vectordb", "infer/vectordb-0"),
            (["job/finetune", "-n", "ml"], "job ml/finetune", "ml/finetune-"),
        ]
        for args, ref, pod in cases:
            with self.subTest(args[0]):
                rc, out, err = run(*args, *files, "-o", "json")
                self.assertEqual(rc, 0, err)
                self.assertIn(f"note: {ref}: explaining pod {pod}", err)
                self.assertTrue(json.loads(out)["pod"].startswith(pod), out[:200])
        rc, out, err = run("podgroup/train", "-n", "ml", "-f", GANG, "-o", "json")
        self.assertEqual(rc, 0, err)
        self.assertIn("explaining pod ml/train-0 (3 pods; the first not bound)", err)
        self.assertEqual(json.loads(out)["gang"]["gang"], "gang PodGroup ml/train")
        rc, _, err = run("deployment/nothing", "-n", "infer", *files)
        self.assertEqual(rc, 1, err)
        self.assertIn("no pod of deployment infer/nothing found in", err)

    def test_at_explains_a_pod_as_the_replayed_cluster_was_then(self):
        timed = os.path.join(os.path.dirname(WORKLOADS[0]), "timed.yaml")
        files = ["-f", WORKLOADS[0], "-f", timed]
        # sweep (8 GPUs) arrives at 1h and runs 2h: at 90m it is bound; pretrain runs from 0s.
        rc, out, err = run("ml/sweep", *files, "--at", "90m", "-o", "json")
        self.assertEqual(rc, 0, err)
        ex = json.loads(out)
        self.assertTrue(ex["boundNode"], ex.get("boundNode"))
        self.assertIn("replayed until 90m", ex["source"])
        rc, _, err = run("ml/sweep", *files, "--at", "30m")
        self.assertEqual(rc, 1, err)
        self.assertIn("pod ml/sweep not found in", err)
        self.assertIn("at 30m (a pod not arrived yet or gone by then is not there)", err)
        rc, _, err = run("ml/sweep", *files, "--at", "4h")  # gone: it left at 3h
        self.assertEqual(rc, 1, err)
        rc, _, err = run("ml/sweep", *files, "--at", "soon")
        self.assertEqual(rc, 2, err)
        self.assertIn("--at: invalid value \"soon\"", err)
        rc, _, err = run("ml/sweep", "--at", "90m")
        self.assertEqual(rc, 2, err)
        self.assertIn("--at: needs -f", err)

    def test_bad_input_and_usage_errors(self):
        cases = [
            ("an unknown pod is bad input naming it", ["ml/missing", "-f", DATA], 1, "ml/missing"),
            ("a missing file is bad input naming it", ["ml/train", "-f", "/nonexistent/x.yaml"], 1,
             "/nonexistent/x.yaml"),
            ("a malformed pod argument is a usage error", ["a/b/c", "-f", DATA], 2, "a/b/c"),
            ("a namespace other than -n's is a usage error", ["ml/train", "-n", "prod", "-f", DATA],
             2, "namespace \"ml\" disagrees with -n \"prod\""),
            ("--kubeconfig and -f are exclusive", ["ml/train", "-f", DATA, "--kubeconfig", "k"], 2,
             "exclusive"),
            ("an unknown output format is a usage error", ["ml/train", "-f", DATA, "-o", "yaml"], 2, ""),
        ]
        for name, args, want_rc, want_text in cases:
            with self.subTest(name):
                rc, _, err = run(*args)
                self.assertEqual(rc, want_rc, err)
                self.assertIn(want_text, err)


if __name__ == "__main__":
    BINARY = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("GPUSCHED_BINARY")
    if not BINARY:
        sys.exit("usage: explain_cli_test.py GPUSCHED_BINARY")
    unittest.main()
