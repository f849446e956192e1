#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Monitoring end to end (issue #9): a real Prometheus server scrapes `gpusched scheduler`.

The test control plane (cluster.py) runs kwok GPU nodes; gpusched runs with leader election and
serves /metrics on a free loopback port over HTTPS with delegated authentication and authorization
(issue #21); Debian's /usr/bin/prometheus scrapes it every second with the bearer token of a
service account granted `get /metrics` (deploy/'s ServiceMonitor does the same)
(a temp config, its TSDB in the cluster directory) and evaluates deploy/monitoring's rules.
After GPU pods are created and bound, the test asks Prometheus's HTTP API for:

- non-zero scheduler_schedule_attempts_total (scheduled and unschedulable);
- scheduler_scheduling_attempt_duration_seconds buckets (15 + "+Inf", kube-scheduler's);
- gpusched_cluster_gpus_allocated per model equal to the GPUs of the bindings read from the API;
- gpusched_leader == 1; scheduler_pending_pods{queue="unschedulable"} == 1;

and checks the health endpoints (/healthz, /livez, /readyz), that `promtool check metrics`
accepts a real scrape, and that every metric named in deploy/monitoring is either exported by
this scrape or belongs to another subcommand (extender, deletion-cost controller).
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase, source_dir  # noqa: E402
from gpusched_harness import (  # noqa: E402
    GPU, GROUP_LABEL, Gpusched, create_objects, gpu_pod, grant_lease_access, kwok_gpu_node, log,
    wait_nodes_ready, write_config)
from prometheus import PROMETHEUS, Prometheus  # noqa: E402
from secure import https_get, metrics_reader_token  # noqa: E402

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
NODE_GROUP = "eks.amazonaws.com/nodegroup"


def http_get(url, timeout=10, token=None):
    return https_get(url, token=token, timeout=timeout)


def rule_file_from_prometheusrule(path, out):
    """The PrometheusRule's spec (which holds `groups:`) as a plain Prometheus rule file."""
    text = open(path).read()
    body = text[text.index("\nspec:\n") + len("\nspec:\n"):]
    lines = []
    for line in body.splitlines():
        if line and not line.startswith(" "):
            break
        lines.append(line[2:])
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


def metric_names_in(text):
    """scheduler_* / gpusched_* identifiers (not recording-rule names, which contain ':')."""
    names = set()
    for m in re.finditer(r"(?<![A-Za-z0-9_:])((?:scheduler|gpusched)_[a-z0-9_]+)(?![a-z0-9_:])", text):
        names.add(m.group(1))
    return names


class MonitoringE2ETest(ClusterTestCase):
    cluster_kwargs = {"start_scheduler": False}

    def setUp(self):
        if not os.access(PROMETHEUS, os.X_OK) or not os.access(PROMTOOL, os.X_OK):
            self.fail("prometheus/promtool not installed (Debian package prometheus; scripts/bootstrap)")
        self.ns = self.cluster.new_namespace("mon")
        self.procs = []
        self.addCleanup(self._cleanup)

    def _cleanup(self):
        for p in self.procs:
            if isinstance(p, Gpusched):
                if p.alive():
                    p.kill()
            elif p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=5)

    # --- Prometheus ---------------------------------------------------------------------------

    def start_prometheus(self, target_port, token):
        rules = os.path.join(self.cluster.dir, f"{self.ns}-rules.yaml")
        rule_file_from_prometheusrule(
            os.path.join(source_dir(), "deploy", "monitoring", "prometheusrule.yaml"), rules)
        job = {"targets": [f"127.0.0.1:{target_port}"], "scheme": "https", "token": token}
        self.prom = Prometheus(self.cluster, self.ns, {"gpusched": job},
                               rule_files=[rules],
                               extra_args=["--storage.tsdb.retention.time=1h"]).start()
        self.addCleanup(self.prom.stop)

    def query(self, q):
        return self.prom.query(q)

    def wait_query(self, q, check, what, timeout=60):
        last = []

        def ok():
            nonlocal last
            last = self.query(q)
            return check(last) or None
        try:
            self.cluster.wait_for(ok, timeout=timeout, interval=1.0, what=what)
        except AssertionError as e:
            raise AssertionError(f"{e}; last result of {q}: {last}") from None
        return last

    # --- the test -------------------------------------------------------------------------------

    def test_prometheus_scrapes_scheduling_gpu_allocation_and_leader(self):
        ns = self.ns
        lease = f"gpu-scheduler-{ns}"
        grant_lease_access(self.cluster, lease)
        nodes = [("a100-1", "A100-SXM4-40GB", 8, "train"), ("a100-2", "A100-SXM4-40GB", 8, "train"),
                 ("t4-1", "T4", 4, "infer")]
        self.cluster.apply([kwok_gpu_node(f"{ns}-{n}", ns, model, count, 40960, "zone-a",
                                          {NODE_GROUP: group})
                            for n, model, count, group in nodes])
        wait_nodes_ready(self.cluster, f"{GROUP_LABEL}={ns}", len(nodes))

        config = write_config(self.cluster.dir, name=f"{ns}.yaml", leader_elect=True, lease_name=lease,
                              lease_duration="4s", renew_deadline="3s", retry_period="1s")
        sched = Gpusched(self.cluster, config, name=f"{ns}-gpusched",
                         extra_args=[f"--leader-elect-resource-name={lease}"]).start()
        self.procs.append(sched)
        port = sched.metrics_port()
        base = f"https://127.0.0.1:{port}"
        for path in ("/healthz", "/livez"):
            status, body = http_get(base + path)
            self.assertEqual((status, body.strip()), (200, "ok"), path)
        self.cluster.wait_for(lambda: http_get(base + "/readyz")[0] == 200 or None, timeout=90,
                              what="gpusched /readyz 200 (informers synced, leader known)")
        # Prometheus scrapes as a service account of its own, granted get /metrics.
        token = metrics_reader_token(self.cluster, namespace=self.ns, name="prometheus")
        self.assertEqual(http_get(base + "/metrics")[0], 401, "no token: 401")
        self.start_prometheus(port, token)

        pods = [("a-2", 2, "A100-SXM4-40GB"), ("a-3", 3, "A100-SXM4-40GB"), ("a-1", 1, "A100-SXM4-40GB"),
                ("a-4", 4, "A100-SXM4-40GB"), ("t-1", 1, "T4"), ("t-2", 2, "T4")]
        objs = [gpu_pod(name, gpus, model=model, group=ns) for name, gpus, model in pods]
        objs.append(gpu_pod("too-big", 16, group=ns))  # fits on no node: unschedulable
        create_objects(self.cluster, objs, namespace=ns)

        def bound():
            items = self.cluster.get_json("pods", "--namespace", ns)["items"]
            b = {p["metadata"]["name"]: p for p in items if p["spec"].get("nodeName")}
            return b if len(b) == len(pods) else None
        placed = self.cluster.wait_for(bound, timeout=120, interval=1.0, what="6 GPU pods bound")

        # What the API's bindings say: GPUs per node model.
        node_model = {n["metadata"]["name"]: n["metadata"]["labels"]["gpu.nvidia.com/model"]
                      for n in self.cluster.get_json("nodes", "-l", f"{GROUP_LABEL}={ns}")["items"]}
        want = {}
        for p in placed.values():
            gpus = int(p["spec"]["containers"][0]["resources"]["limits"][GPU])
            model = node_model[p["spec"]["nodeName"]]
            want[model] = want.get(model, 0) + gpus
        self.assertEqual(want, {"A100-SXM4-40GB": 10, "T4": 3})

        def alloc_matches(result):
            got = {r["metric"]["model"]: float(r["value"][1]) for r in result}
            return got == {k: float(v) for k, v in want.items()}
        self.wait_query("sum by (model) (gpusched_cluster_gpus_allocated)", alloc_matches,
                        "Prometheus' GPU allocation per model equals the bindings")
        total = {r["metric"]["model"]: float(r["value"][1])
                 for r in self.query("sum by (model) (gpusched_cluster_gpus)")}
        self.assertEqual(total, {"A100-SXM4-40GB": 16.0, "T4": 4.0})
        groups = {r["metric"]["node_group"] for r in self.query("gpusched_cluster_gpus")}
        self.assertEqual(groups, {"train", "infer"})

        self.wait_query('sum(scheduler_schedule_attempts_total{result="scheduled"})',
                        lambda r: r and float(r[0]["value"][1]) >= len(pods), "scheduled attempts counted")
        self.wait_query('sum(scheduler_schedule_attempts_total{result="unschedulable"})',
                        lambda r: r and float(r[0]["value"][1]) >= 1, "unschedulable attempts counted")
        buckets = self.wait_query(
            'scheduler_scheduling_attempt_duration_seconds_bucket{result="scheduled",profile="gpu-scheduler"}',
            lambda r: len(r) == 16, "attempt latency histogram buckets")
        les = sorted(float(r["metric"]["le"]) for r in buckets)
        self.assertAlmostEqual(les[0], 0.001)
        self.assertAlmostEqual(les[14], 16.384)
        self.assertEqual(les[15], float("inf"))
        inf = [r for r in buckets if r["metric"]["le"] == "+Inf"][0]
        self.assertGreaterEqual(float(inf["value"][1]), len(pods))
        p99 = self.query('histogram_quantile(0.99, sum by (le) '
                         '(scheduler_scheduling_attempt_duration_seconds_bucket{result="scheduled"}))')
        self.assertTrue(p99 and 0 < float(p99[0]["value"][1]) <= 16.384, p99)
        self.wait_query("gpusched_leader", lambda r: len(r) == 1 and r[0]["value"][1] == "1"
                        and r[0]["metric"]["lease"] == f"kube-system/{lease}", "leader gauge = 1")
        self.wait_query('scheduler_pending_pods{queue="unschedulable"}',
                        lambda r: r and r[0]["value"][1] == "1", "the 16-GPU pod waits as unschedulable")
        self.wait_query("gpusched_ready", lambda r: r and r[0]["value"][1] == "1", "ready gauge")
        self.wait_query('sum(gpusched_api_client_requests_total{verb="POST"})',
                        lambda r: r and float(r[0]["value"][1]) >= len(pods), "API client POSTs counted")
        self.wait_query('up{job="gpusched"}', lambda r: r and r[0]["value"][1] == "1", "target up")
        rules_status, rules_body = self.prom.get("/api/v1/rules")
        self.assertEqual(rules_status, 200)
        groups_loaded = [g["name"] for g in json.loads(rules_body)["data"]["groups"]]
        self.assertEqual(sorted(groups_loaded), ["gpusched.alerts", "gpusched.rules"])
        ratio = self.wait_query("gpusched:gpu_allocation_ratio:by_model", lambda r: len(r) == 2,
                                "the allocation recording rule evaluates")
        by_model = {r["metric"]["model"]: float(r["value"][1]) for r in ratio}
        self.assertAlmostEqual(by_model["A100-SXM4-40GB"], 10 / 16)

        # promtool on a real scrape.
        status, scrape = http_get(base + "/metrics", token=token)
        self.assertEqual(status, 200)
        check = subprocess.run([PROMTOOL, "check", "metrics"], input=scrape, capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        log(f"MEASURED monitoring: scrape {len(scrape)} bytes, "
            f"{sum(1 for line in scrape.splitlines() if line and not line.startswith('#'))} samples")

        # Every metric the dashboards and rules use is exported: by this scrape, or (extender,
        # deletion-cost controller, API client histograms not yet observed) by the catalog, which
        # docs/monitoring.md lists and src/metrics/catalog_test.cc checks against the code.
        exported = set(re.findall(r"^# TYPE (\S+) ", scrape, re.M))
        docs = metric_names_in(open(os.path.join(source_dir(), "docs", "monitoring.md")).read())
        for name in exported:
            self.assertIn(name, docs, f"{name} is exported but not documented in docs/monitoring.md")
        used = set()
        mon = os.path.join(source_dir(), "deploy", "monitoring")
        for root, _, files in os.walk(mon):
            for f in files:
                if f.endswith((".yaml", ".json")):
                    used |= metric_names_in(open(os.path.join(root, f)).read())
        series = set()
        for name in exported:
            series |= {name, name + "_bucket", name + "_sum", name + "_count"}
        other_components = ("gpusched_extender_", "gpusched_deletion_cost_")
        for name in sorted(used):
            if name.startswith(other_components):
                base_name = name.removesuffix("_bucket").removesuffix("_sum").removesuffix("_count")
                self.assertIn(base_name, docs, f"{name} is used in deploy/monitoring but not documented")
                continue
            self.assertIn(name, series, f"{name} is used in deploy/monitoring but not exported by the scheduler")

        rc = sched.stop(signal.SIGTERM, timeout=30)
        self.assertEqual(rc, 0, sched.log()[-3000:])


if __name__ == "__main__":
    unittest.main(verbosity=2)
