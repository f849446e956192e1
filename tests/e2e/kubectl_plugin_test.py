#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`kubectl gpusched ...` (issue #24): the kubectl plugin as a user gets it, with the real kubectl.

The build is installed the way `make install` does (`cmake --install --component gpusched`) into
a temporary prefix whose bin/ is put first on PATH. Checked: `kubectl plugin list` finds
kubectl-gpusched there; `kubectl gpusched version` and `simulate` print what `gpusched` prints;
against one control plane (KUBECONFIG pointing at it, as kubectl plugins are used):
`kubectl gpusched explain NS/POD` explains a pending GPU pod (the node's reason), and
`kubectl gpusched plan deployment/NAME --replicas 1` names the pods a real Deployment's scale-down
removes, the same as `gpusched deletion-cost plan`.

Environment: GPUSCHED_BUILD_DIR (the CMake build to install; ctest sets it), GPUSCHED_BINARY,
GPUSCHED_TESTBIN_DIR, GPUSCHED_SOURCE_DIR.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase, testbin_dir  # noqa: E402
from gpusched_harness import (  # noqa: E402
    GROUP_LABEL, create_objects, gpu_pod, gpusched_binary, kwok_gpu_node, wait_nodes_ready)


class KubectlPluginTest(ClusterTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        build = os.environ.get("GPUSCHED_BUILD_DIR")
        if not build:
            raise RuntimeError("GPUSCHED_BUILD_DIR is not set (the CMake build to install)")
        cls.prefix = tempfile.mkdtemp(prefix="gpusched-install-", dir=cls.cluster.dir)
        subprocess.run(["cmake", "--install", build, "--prefix", cls.prefix,
                        "--component", "gpusched"], check=True, stdout=subprocess.DEVNULL)
        cls.env = dict(os.environ)
        cls.env["PATH"] = os.pathsep.join([os.path.join(cls.prefix, "bin"), testbin_dir(),
                                           os.environ.get("PATH", "")])
        cls.env["KUBECONFIG"] = cls.cluster.kubeconfig

    def kubectl(self, *args, check=True):
        proc = subprocess.run(["kubectl", *args], env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=120)
        if check:
            self.assertEqual(proc.returncode, 0, f"kubectl {' '.join(args)}:\n{proc.stderr}")
        return proc

    def gpusched(self, *args):
        proc = subprocess.run([gpusched_binary(), *args], env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, f"gpusched {' '.join(args)}:\n{proc.stderr}")
        return proc

    def test_a_kubectl_finds_the_plugin(self):
        out = self.kubectl("plugin", "list").stdout
        self.assertIn(os.path.join(self.prefix, "bin", "kubectl-gpusched"), out)

    def test_b_version_and_simulate_are_gpuscheds(self):
        self.assertEqual(self.kubectl("gpusched", "version", "-o", "json").stdout,
                         self.gpusched("version", "-o", "json").stdout)
        timing = ("wallSeconds", "decisionsPerSecond")
        plugin = json.loads(self.kubectl("gpusched", "simulate", "-o", "json").stdout)
        direct = json.loads(self.gpusched("simulate", "-o", "json").stdout)
        self.assertTrue(plugin["placements"])
        for k in timing:
            plugin.pop(k, None), direct.pop(k, None)
        self.assertEqual(plugin, direct)
        usage = self.kubectl("gpusched", "--help").stdout
        self.assertIn("kubectl gpusched", usage, "the plugin's help names the command users type")

    def test_c_explain_a_pending_pod_of_the_live_cluster(self):
        ns = self.cluster.new_namespace("plugin")
        node = f"{ns}-t4"
        create_objects(self.cluster, [kwok_gpu_node(node, ns, "Tesla-T4", 2, 15360, "z1")])
        wait_nodes_ready(self.cluster, f"{GROUP_LABEL}={ns}", 1)
        # No gpu-scheduler runs: the pod stays pending; 4 GPUs fit nowhere.
        create_objects(self.cluster, [gpu_pod("big", 4, group=ns)], namespace=ns)
        out = json.loads(self.kubectl("gpusched", "explain", f"{ns}/big", "-o", "json").stdout)
        nodes = {n["name"]: n for n in out["nodes"]}
        self.assertIn(node, nodes, out)
        self.assertFalse(nodes[node]["feasible"], nodes[node])
        text = self.kubectl("gpusched", "explain", f"{ns}/big").stdout
        self.assertIn(node, text)

    def test_d_plan_is_deletion_cost_plan(self):
        ns = self.cluster.new_namespace("plugin-plan")
        create_objects(self.cluster, [{
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}],
                                           "nodeSelector": {GROUP_LABEL: ns},
                                           "tolerations": [{"operator": "Exists"}]}}}}],
            namespace=ns)
        create_objects(self.cluster, [kwok_gpu_node(f"{ns}-n", ns, "Tesla-T4", 1, 15360, "z1")])
        self.cluster.wait_for(
            lambda: len([p for p in self.cluster.get_json("pods", "-n", ns)["items"]
                         if p["spec"].get("nodeName")]) == 3,
            timeout=90, what="3 replicas bound")
        now = ["--now", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())]  # one ranking time
        plugin = self.kubectl("gpusched", "plan", "deployment/web", "-n", ns, "--replicas", "1",
                              "-o", "json", *now).stdout
        direct = self.gpusched("deletion-cost", "plan", "deployment/web", "-n", ns,
                               "--replicas", "1", "-o", "json", *now).stdout
        plan = json.loads(plugin)
        self.assertEqual(plan, json.loads(direct))
        self.assertIn("web", json.dumps(plan))


if __name__ == "__main__":
    unittest.main(verbosity=2)
