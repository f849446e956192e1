#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""GPU sharing, restart accounting and DCGM utilization against a real control plane (issue #6).

One control plane is shared by the tests of this file; each test has its own namespace, its own
kwok GPU nodes (labelled e2e.gpusched.io/group=<namespace>, which its pods select) and its own
gpusched process. Everything is checked from the API server (pods and their
gpusched.io/gpu-devices annotations), never from gpusched's memory.

  test_a  shared pods in two dialects (gpusched.io/gpu-milli and KAI's gpu-fraction) land on the
          devices their annotations name, no device is over-committed; gpusched is restarted and
          the new process places more shared pods from the same accounting (no double booking).
  test_b  a real Prometheus (/usr/bin/prometheus, scrape interval 1s) scrapes a DCGM-format
          exporter served by this test; a pod lands on the less utilized of two equal nodes, and
          after the utilization flips the next pod goes to the other node.
"""

import http.server
import os
import signal
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase  # noqa: E402
from gpusched_harness import (  # noqa: E402
    GROUP_LABEL, SCHEDULER_NAME, Gpusched, create_objects, gpu_pod, kwok_gpu_node, log,
    wait_nodes_ready, write_config)
from prometheus import Prometheus  # noqa: E402

DEVICES = "gpusched.io/gpu-devices"


def shared_pod(name, group, annotations):
    """A pod asking for a GPU share through annotations only (no nvidia.com/gpu)."""
    return gpu_pod(name, 0, group=group, annotations=annotations)


def parse_devices(text):
    """'1:300m' or '0:300m,1:300m' -> [(device, milli)]; whole GPUs '0,1' -> milli 1000."""
    out = []
    for tok in text.split(","):
        parts = tok.split(":")
        milli = int(parts[1][:-1]) if len(parts) > 1 else 1000
        out.append((int(parts[0]), milli))
    return out


class DcgmExporter:
    """Serves DCGM_FI_DEV_GPU_UTIL per node and GPU in the exporter's text format."""

    def __init__(self):
        self.util = {}  # node -> percent
        self.lock = threading.Lock()
        exporter = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                with exporter.lock:
                    lines = ["# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).",
                             "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
                    for node, pct in sorted(exporter.util.items()):
                        for gpu in range(4):
                            lines.append(
                                f'DCGM_FI_DEV_GPU_UTIL{{gpu="{gpu}",UUID="GPU-{node}-{gpu}",'
                                f'device="nvidia{gpu}",modelName="NVIDIA A100-SXM4-40GB",'
                                f'Hostname="{node}"}} {pct}')
                body = ("\n".join(lines) + "\n").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def set(self, util):
        with self.lock:
            self.util = dict(util)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class GpuE2ETest(ClusterTestCase):

    def setUp(self):
        self.ns = self.cluster.new_namespace("gpu")
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

    def start_gpusched(self, name, extra_args=()):
        path = write_config(self.cluster.dir, name=f"{self.ns}-{name}.yaml")
        p = Gpusched(self.cluster, path, name=f"{self.ns}-{name}", extra_args=extra_args).start()
        self.procs.append(p)
        p.wait_log("informers synced", timeout=60)
        return p

    def add_nodes(self, names, gpus):
        self.cluster.apply([kwok_gpu_node(n, self.ns, "A100-SXM4-40GB", gpus, 40960, "zone-a")
                            for n in names])
        wait_nodes_ready(self.cluster, f"{GROUP_LABEL}={self.ns}", len(names))

    def pods(self):
        return {p["metadata"]["name"]: p
                for p in self.cluster.get_json("pods", "--namespace", self.ns)["items"]}

    def wait_bound(self, names, timeout=90):
        names = set(names)

        def bound():
            pods = self.pods()
            missing = [n for n in names
                       if not pods.get(n, {}).get("spec", {}).get("nodeName")]
            return not missing or None
        self.cluster.wait_for(bound, timeout=timeout, interval=1.0,
                              what=f"{len(names)} pods bound in {self.ns}")

    def check_devices(self, want_milli):
        """Every pod's annotation names devices with its own share, and no device of any node
        carries more than 1000 milli in total (from the API's pods only)."""
        per_device = {}
        for name, pod in self.pods().items():
            if name not in want_milli:
                continue
            node = pod["spec"].get("nodeName")
            self.assertTrue(node, f"pod {name} not bound")
            ann = pod["metadata"].get("annotations", {}).get(DEVICES)
            self.assertTrue(ann, f"pod {name} has no {DEVICES} annotation")
            entries = parse_devices(ann)
            self.assertEqual(len(entries), 1, f"pod {name}: {ann}")
            device, milli = entries[0]
            self.assertEqual(milli, want_milli[name], f"pod {name}: {ann}")
            self.assertIn(device, range(2), f"pod {name}: {ann}")
            per_device[(node, device)] = per_device.get((node, device), 0) + milli
        over = {k: v for k, v in per_device.items() if v > 1000}
        self.assertEqual(over, {}, f"over-committed devices: {per_device}")
        return per_device

    def test_a_shared_pods_of_two_dialects_and_a_restart_keep_devices_within_capacity(self):
        self.add_nodes([f"{self.ns}-n0", f"{self.ns}-n1"], gpus=2)
        first = self.start_gpusched("first")
        want = {}
        objs = []
        for i in range(4):
            want[f"milli-{i}"] = 300
            objs.append(shared_pod(f"milli-{i}", self.ns, {"gpusched.io/gpu-milli": "300"}))
        for i in range(2):
            want[f"kai-{i}"] = 400
            objs.append(shared_pod(f"kai-{i}", self.ns, {"gpu-fraction": "0.4"}))
        create_objects(self.cluster, objs, namespace=self.ns)
        self.wait_bound(want)
        before = self.check_devices(want)
        log(f"MEASURED shared placement, first process: {sorted(before.items())}")

        # Restart: the new process rebuilds the device accounting from the pods' annotations.
        self.assertEqual(first.stop(signal.SIGTERM, timeout=30), 0, first.log()[-3000:])
        self.start_gpusched("second")
        objs = []
        for i in range(4):
            want[f"after-{i}"] = 300
            objs.append(shared_pod(f"after-{i}", self.ns, {"gpusched.io/gpu-milli": "300"}))
        create_objects(self.cluster, objs, namespace=self.ns)
        self.wait_bound(want)
        after = self.check_devices(want)
        log(f"MEASURED shared placement after the restart: {sorted(after.items())}")
        self.assertEqual(sum(after.values()), 3200)

    def test_b_prometheus_dcgm_utilization_steers_placement(self):
        a, b = f"{self.ns}-util-a", f"{self.ns}-util-b"
        self.add_nodes([a, b], gpus=4)
        exporter = DcgmExporter()
        self.addCleanup(exporter.stop)
        exporter.set({a: 90, b: 10})

        prom = Prometheus(self.cluster, self.ns, {"dcgm": [f"127.0.0.1:{exporter.port}"]},
                          extra_args=["--query.lookback-delta=5s"]).start()
        self.addCleanup(prom.stop)
        url = prom.url

        def prom_util():
            return {s["metric"].get("Hostname"): float(s["value"][1])
                    for s in prom.try_query("avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)") or []}

        def sees(want):
            got = prom_util()
            return all(abs(got.get(n, -1) - v) < 0.5 for n, v in want.items()) or None
        self.cluster.wait_for(lambda: sees({a: 90, b: 10}), timeout=60,
                              what="Prometheus has scraped the exporter")

        sched = self.start_gpusched("util", extra_args=[
            f"--gpu-utilization-prometheus-url={url}",
            "--gpu-utilization-refresh-interval=1s", "--gpu-utilization-staleness=30s"])
        time.sleep(3)  # a few refresh rounds
        create_objects(self.cluster, [gpu_pod("first", 1, group=self.ns)], namespace=self.ns)
        self.wait_bound(["first"])
        self.assertEqual(self.pods()["first"]["spec"]["nodeName"], b,
                         "the first pod should go to the less utilized node (b: 10 %)")

        exporter.set({a: 10, b: 90})
        self.cluster.wait_for(lambda: sees({a: 10, b: 90}), timeout=60,
                              what="Prometheus sees the flipped utilization")
        time.sleep(3)
        create_objects(self.cluster, [gpu_pod("second", 1, group=self.ns)], namespace=self.ns)
        self.wait_bound(["second"])
        self.assertEqual(self.pods()["second"]["spec"]["nodeName"], a,
                         "after the flip the next pod should go to node a (10 %)")
        self.assertNotIn("GPU utilization from Prometheus: ", sched.log())
        log("MEASURED utilization placement: first -> b (10 %), second after flip -> a (10 %)")


if __name__ == "__main__":
    unittest.main()
