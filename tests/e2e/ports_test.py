#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""NodePorts of `gpusched scheduler` on a real control plane (issue #22).

Three pods ask for the same hostPort on two kwok nodes: two bind, on different nodes, and the
third is reported as upstream reports it ("2 node(s) didn't have free ports for the requested pod
ports"). Deleting one of the bound pods frees its port and the third binds there.

Measured numbers are printed on stderr with the prefix "MEASURED".
"""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase, make_kwok_node  # noqa: E402
from gpusched_harness import (  # noqa: E402
    GROUP_LABEL, SCHEDULER_NAME, Gpusched, create_objects, log, pod_condition, wait_nodes_ready,
    write_config)


def host_port_pod(name, group, port, protocol="TCP"):
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "terminationGracePeriodSeconds": 0,
            "nodeSelector": {GROUP_LABEL: group},
            "containers": [{"name": "main", "image": "registry.invalid/agent:1",
                            "ports": [{"containerPort": 80, "hostPort": port,
                                       "protocol": protocol}],
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
        },
    }


class PortsE2ETest(ClusterTestCase):

    def setUp(self):
        self.t_start = time.monotonic()
        self.ns = self.cluster.new_namespace("ports")
        self.procs = []
        self.addCleanup(self._cleanup)

    def _cleanup(self):
        for p in self.procs:
            if p.alive():
                p.kill()
        self.cluster.kubectl("delete", "pods", "--all", "--namespace", self.ns, "--wait=false",
                             "--ignore-not-found")
        self.cluster.kubectl("delete", "nodes", "-l", f"{GROUP_LABEL}={self.ns}", "--wait=false",
                             "--ignore-not-found")
        log(f"MEASURED {self.id().split('.')[-1]}: took {time.monotonic() - self.t_start:.1f}s")

    def node_of(self, name):
        pod = self.cluster.get_json("pod", name, "--namespace", self.ns)
        return pod["spec"].get("nodeName")

    def test_same_host_port_never_shares_a_node(self):
        n = self.ns
        nodes = [f"{n}-1", f"{n}-2"]
        create_objects(self.cluster, [make_kwok_node(name, labels={GROUP_LABEL: n},
                                                     allocatable={"cpu": "8"})
                                      for name in nodes])
        wait_nodes_ready(self.cluster, f"{GROUP_LABEL}={n}", 2)
        path = write_config(self.cluster.dir, name=f"{n}.yaml")
        self.procs.append(Gpusched(self.cluster, path, name=f"{n}-gpusched").start())

        t0 = time.monotonic()
        # The same port over UDP conflicts with nothing: it binds beside a TCP one.
        create_objects(self.cluster, [host_port_pod("web-0", n, 8080),
                                      host_port_pod("web-1", n, 8080),
                                      host_port_pod("dns-0", n, 8080, protocol="UDP")], n)
        placed = self.cluster.wait_for(
            lambda: all(self.node_of(p) for p in ("web-0", "web-1", "dns-0")) and
            {p: self.node_of(p) for p in ("web-0", "web-1", "dns-0")},
            timeout=60, interval=0.5, what="web-0, web-1 and dns-0 bound")
        self.assertNotEqual(placed["web-0"], placed["web-1"])
        log(f"MEASURED two hostPort pods bound on two nodes in {time.monotonic() - t0:.1f}s")

        create_objects(self.cluster, [host_port_pod("web-2", n, 8080)], n)

        def reported():
            c = pod_condition(self.cluster.get_json("pod", "web-2", "--namespace", n))
            return c if c and c.get("reason") == "Unschedulable" else None
        cond = self.cluster.wait_for(reported, timeout=30, what="web-2 PodScheduled=False")
        self.assertIn("2 node(s) didn't have free ports for the requested pod ports",
                      cond["message"])
        self.assertIsNone(self.node_of("web-2"))

        # Deleting web-0 frees its port: web-2 binds on web-0's node, never beside web-1.
        t1 = time.monotonic()
        self.cluster.kubectl("delete", "pod", "web-0", "--namespace", n, "--wait=true")
        node = self.cluster.wait_for(lambda: self.node_of("web-2"), timeout=60, interval=0.5,
                                     what="web-2 bound after web-0 left")
        self.assertEqual(node, placed["web-0"])
        self.assertNotEqual(node, placed["web-1"])
        log(f"MEASURED web-2 bound {time.monotonic() - t1:.1f}s after web-0 was deleted")


if __name__ == "__main__":
    unittest.main(verbosity=2)
