#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`gpusched simulate -f` / `explain -f` inputs (issue #40): what a user gives them, read as kubectl
reads -f, and a YAML error that loses only its document.

- `-f DIR` reads the directory's .yaml/.yml/.json files (not its subdirectories: an empty top
  level is an error that suggests -R), `-R` its subdirectories too; `-f -` reads standard input.
- A YAML syntax error in document 2 of 3 rejects that document only, naming the file, the
  document and the line in the whole file; the other two are simulated.
- A file of which nothing parses is named with its YAML error, not only "no Node objects".
- `--load` implies `--replay` (so `--curve-csv` goes with it); `--load-window` without `--load`
  is a usage error, not silently ignored.
- A warning (here a node whose seed and GFD model labels disagree) is printed once, by the
  report; the embedded scheduler's log lines reach stderr only with -v.
- A plugin name misspelt in `--config` is reported with the config file's name and the closest
  registered plugin, before anything is simulated or explained.
Usage: simulate_inputs_cli_test.py GPUSCHED_BINARY
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

BINARY = None
EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                       "examples", "dra", "taint-rule.yaml")
NODE = """apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "10"}}
"""
POD = """apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
"""


def run(*args, stdin=None):
    p = subprocess.run([BINARY, *args], input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


class SimulateInputsCliTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gpusched-inputs-")
        self.addCleanup(shutil.rmtree, self.dir)

    def write(self, rel, text):
        path = os.path.join(self.dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def simulate_json(self, *args, stdin=None, want_rc=0):
        rc, out, err = run("simulate", *args, "-o", "json", stdin=stdin)
        self.assertEqual(rc, want_rc, err)
        return json.loads(out)

    def test_a_directory_is_read_like_kubectl(self):
        self.write("cluster/nodes.yaml", NODE)
        self.write("cluster/pods/a.yml", POD.replace("NAME", "a"))
        self.write("cluster/pods/b.json", json.dumps(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"},
             "spec": {"containers": [{"name": "c"}]}}))
        self.write("cluster/pods/notes.txt", "not a manifest")
        top = os.path.join(self.dir, "cluster")
        report = self.simulate_json("-R", "-f", top)
        self.assertEqual(sorted(p["pod"] for p in report["placements"]), ["default/a", "default/b"])
        self.assertEqual(report["rejected"], [])
        # Without -R only the top level is read: the node, no pods.
        report = self.simulate_json("-f", top)
        self.assertEqual(report["placements"], [])
        # A directory with nothing to read says so, and how to read its subdirectories.
        os.makedirs(os.path.join(self.dir, "empty", "sub"))
        rc, _, err = run("simulate", "-f", os.path.join(self.dir, "empty"))
        self.assertEqual(rc, 1, err)
        self.assertIn("no .yaml, .yml or .json files", err)
        self.assertIn("-R", err)

    def test_standard_input(self):
        with open(EXAMPLE) as f:
            text = f.read()
        report = self.simulate_json("-f", "-", stdin=text)
        self.assertEqual(len(report["placements"]), 3)
        rc, _, err = run("simulate", "-f", "-", "-f", "-", stdin=text)
        self.assertEqual(rc, 1, err)
        self.assertIn("standard input named twice", err)
        rc, out, err = run("explain", "ml/diag", "-f", "-", "-o", "json", stdin=text)
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["pod"], "ml/diag")

    def test_a_yaml_error_loses_only_its_document(self):
        bad = POD.replace("NAME", "broken").replace("metadata: {name: broken}",
                                                    "metadata:\n\tname: broken")
        text = "\n---\n".join([NODE, bad, POD.replace("NAME", "fine")])
        path = self.write("mixed.yaml", text)
        report = self.simulate_json("-f", path, want_rc=1)  # 1: an object was rejected
        self.assertEqual([p["pod"] for p in report["placements"]], ["default/fine"])
        (rejected,) = report["rejected"]
        self.assertEqual(rejected["document"], 2, rejected)
        # The line of the tab in the whole file, not in its document.
        line = text.split("\n").index("\tname: broken") + 1
        self.assertIn(f"YAML error at line {line},", rejected["error"])
        # explain stops at the rejected document, naming it.
        rc, _, err = run("explain", "default/fine", "-f", path)
        self.assertEqual(rc, 1)
        self.assertIn(f"mixed.yaml: document 2: YAML error at line {line},", err)

    def test_a_file_that_is_not_yaml_is_named_with_its_error(self):
        path = self.write("broken.yaml", NODE.replace("{name: n1}", "{name: n1"))
        rc, _, err = run("simulate", "-f", path)
        self.assertEqual(rc, 1)
        self.assertIn("no Node objects", err)
        self.assertIn("broken.yaml: YAML error at line", err)

    def test_load_implies_replay_and_its_window_needs_it(self):
        docs = os.path.join(os.path.dirname(EXAMPLE), "..", "simulate")
        inputs = ["-f", os.path.join(docs, "cluster.yaml"), "-f", os.path.join(docs, "churn.yaml")]
        curve = os.path.join(self.dir, "curve.csv")
        report = self.simulate_json(*inputs, "--load", "1.2", "--load-window", "6h",
                                    "--curve-csv", curve)
        self.assertEqual(report["replay"]["load"]["windowHours"], 6)
        with open(curve) as f:
            self.assertTrue(f.readline().startswith("t_hours,"))
        rc, _, err = run("simulate", *inputs, "--load-window", "6h")
        self.assertEqual(rc, 2)
        self.assertIn("--load-window needs --load", err)

    def test_movable_qos_needs_a_trace_and_a_known_class(self):
        docs = os.path.join(os.path.dirname(EXAMPLE), "..", "simulate")
        rc, _, err = run("simulate", "-f", os.path.join(docs, "cluster.yaml"), "--movable-qos", "LS")
        self.assertEqual(rc, 2)
        self.assertIn("--movable-qos needs --trace-* input", err)
        rc, _, err = run("simulate", "-f", os.path.join(docs, "cluster.yaml"), "--movable-qos", "XX")
        self.assertEqual(rc, 2)
        self.assertIn("XX", err)

    def assert_config_error(self, profile_lines, want_after_file):
        """A config whose one profile is `profile_lines` fails simulate, explain and the scheduler
        alike, with the file's name and then `want_after_file` (the scheduler before it reads its
        kubeconfig)."""
        config = self.write("sched.yaml", "\n".join([
            "apiVersion: kubescheduler.config.k8s.io/v1",
            "kind: KubeSchedulerConfiguration",
            "profiles:",
            "- schedulerName: gpu-scheduler", *profile_lines, ""]))
        for args in (["simulate", "--config", config, "-f", EXAMPLE],
                     ["explain", "--config", config, "-f", EXAMPLE, "pod/none"],
                     ["scheduler", "--config", config, "--kubeconfig", "/nonexistent/kubeconfig"]):
            rc, _, err = run(*args)
            self.assertEqual(rc, 1, err)
            self.assertIn(config + ": " + want_after_file, err)

    def test_each_warning_once_and_logs_only_with_v(self):
        node = NODE.replace("metadata: {name: n1}", "metadata:\n  name: n1\n  labels: "
                            "{gpu.nvidia.com/model: A100, nvidia.com/gpu.product: Tesla-T4}")
        path = self.write("conflict.yaml", node + "---\n" + POD.replace("NAME", "p"))
        want = "node n1: label gpu.nvidia.com/model=A100 (A100) disagrees with"
        rc, out, err = run("simulate", "-f", path)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.count(want), 1, out)
        self.assertEqual(err, "")
        rc, out, err = run("simulate", "-f", path, "-o", "csv")
        self.assertEqual(rc, 0, err)
        self.assertEqual(err.count(want), 1, err)
        self.assertEqual(err.count("\n"), 1, err)
        rc, out, err = run("simulate", "-f", path, "-v", "1")
        self.assertEqual(rc, 0, err)
        self.assertIn("GPU facts", err)  # the scheduler's own log line
        rc, out, err = run("explain", "p", "-f", path)
        self.assertEqual(rc, 0, err)
        self.assertEqual(err.count(want), 1, err)
        self.assertNotIn("GPU facts", err)

    def test_a_plugin_typo_in_the_config_names_the_file_and_the_closest_plugin(self):
        self.assert_config_error(
            ["  plugins:", "    score:", "      enabled:",
             "      - {name: GpuFragmentaton, weight: 3}"],
            'profiles[0].plugins.score.enabled[0]: unknown plugin "GpuFragmentaton"'
            ' (did you mean "GpuFragmentation"?)')

    def test_a_bad_plugin_arg_names_the_file_and_the_entry(self):
        self.assert_config_error(
            ["  pluginConfig:",
             "  - {name: NodeResourcesFit, args: {scoringStrategy: {type: MostAllocated}}}",
             "  - {name: Consolidation, args: {maxMovesPerPod: 0}}"],
            "profiles[0].pluginConfig[1].args: maxMovesPerPod: must be in 1..16, got 0")

if __name__ == "__main__":
    BINARY = sys.argv.pop(1)
    unittest.main(verbosity=2)
