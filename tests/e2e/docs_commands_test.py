#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The documented commands that need a cluster, run against the test control plane (issue #24).

tests/docs/doc_commands.py finds the commands marked `<!-- docs-test: cluster -->` in the
repository's Markdown; each runs verbatim (bash, from a scratch copy of the repository root)
with HOME pointing at a directory whose ~/.kube/config is the control plane's admin kubeconfig,
KUBECONFIG unset, and `gpusched`, `kubectl-gpusched` and kubectl on PATH. The cluster holds the
objects the docs name: namespace ml with a pending 2-GPU pod `train` (schedulerName
gpu-scheduler) and a pod `other` of another scheduler, namespace prod with a 6-replica Deployment
`web` (bound by the control plane's kube-scheduler), and kwok GPU nodes. One-shot commands
(explain, plan) must exit 0. The long-running ones (scheduler, extender, deletion-cost
controller) must still run after STARTUP_S seconds and exit 0 on SIGTERM.

Environment: GPUSCHED_BINARY, GPUSCHED_TESTBIN_DIR, GPUSCHED_SOURCE_DIR.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "docs"))

from cluster import ClusterTestCase, testbin_dir  # noqa: E402
from doc_commands import ROOT, all_commands, scratch_root  # noqa: E402
from gpusched_harness import (  # noqa: E402
    GROUP_LABEL, create_objects, gpu_pod, gpusched_binary, kwok_gpu_node, wait_nodes_ready)

STARTUP_S = 8
LONG_RUNNING = (("scheduler",), ("extender",), ("deletion-cost", "controller"))


def web_deployment():
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "prod"},
        "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx"}],
                                       "nodeSelector": {GROUP_LABEL: "docs"}}}}}


class DocsClusterCommandsTest(ClusterTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.commands = [c for c in all_commands(ROOT) if c.kind == "cluster"]
        for ns in ("ml", "prod"):
            cls.cluster.kubectl("create", "namespace", ns)
        create_objects(cls.cluster, [kwok_gpu_node(f"docs-a100-{i}", "docs", "A100", 8, 40960, "z1")
                                     for i in range(2)])
        wait_nodes_ready(cls.cluster, f"{GROUP_LABEL}=docs", 2)
        create_objects(cls.cluster, [gpu_pod("train", 2, group="docs"),
                                     gpu_pod("other", 1, group="docs", scheduler="other-scheduler")],
                       namespace="ml")
        create_objects(cls.cluster, [web_deployment()], namespace="prod")
        cls.cluster.wait_for(
            lambda: len([p for p in cls.cluster.get_json("pods", "-n", "prod")["items"]
                         if p["spec"].get("nodeName")]) == 6,
            timeout=120, what="prod/web's 6 replicas bound")
        cls.tmp = tempfile.mkdtemp(prefix="docs-", dir=cls.cluster.dir)
        cls.repo, bindir = scratch_root(cls.tmp, os.path.abspath(gpusched_binary()))
        os.makedirs(os.path.join(cls.tmp, ".kube"))
        shutil.copy(cls.cluster.kubeconfig, os.path.join(cls.tmp, ".kube", "config"))
        cls.env = dict(os.environ, HOME=cls.tmp,
                       PATH=os.pathsep.join([bindir, testbin_dir(), os.environ.get("PATH", "")]))
        cls.env.pop("KUBECONFIG", None)

    def test_there_are_cluster_commands(self):
        self.assertGreaterEqual(len(self.commands), 8, self.commands)

    def run_one_shot(self, cmd):
        proc = subprocess.run(["bash", "-c", cmd.text], cwd=self.repo, env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=180)
        if proc.returncode != 0:
            return f"exit {proc.returncode}: {proc.stderr.strip()[-800:]}"
        return None

    def run_long(self, cmd):
        log = os.path.join(self.tmp, f"cmd-{cmd.line}.log")
        with open(log, "w") as logf:
            proc = subprocess.Popen(["bash", "-c", "exec " + cmd.text], cwd=self.repo,
                                    env=self.env, stdout=logf, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            time.sleep(STARTUP_S)
            if proc.poll() is not None:
                return f"exited {proc.returncode} within {STARTUP_S}s: {open(log).read()[-800:]}"
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=60)
            if rc != 0:
                return f"exit {rc} on SIGTERM: {open(log).read()[-800:]}"
            return None
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)

    def test_every_cluster_command_runs(self):
        failures = []
        for cmd in self.commands:
            argv = cmd.argv()
            long_running = any(tuple(argv[:len(p)]) == p for p in LONG_RUNNING)
            why = self.run_long(cmd) if long_running else self.run_one_shot(cmd)
            print(f"{cmd.where()}: {'ok' if why is None else 'FAILED'}: {cmd.text}", file=sys.stderr)
            if why:
                failures.append(f"{cmd.where()}: {cmd.text}\n    {why}")
        self.assertEqual(failures, [], "\n" + "\n".join(failures))


if __name__ == "__main__":
    unittest.main(verbosity=2)
