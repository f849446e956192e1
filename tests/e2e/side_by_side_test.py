#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/side_by_side at a tiny scale (issue #10): both schedulers bind every pod, each its own.

Runs bench/side_by_side/side_by_side.py (which starts its own control plane without the upstream
kube-scheduler) with 72 kwok nodes and 150 pods per scheduler, and checks its JSON report: every
pod was created and bound (seen on the watch and in a LIST afterwards), every pod names the run's
profile, and the Scheduled events of the pods were reported by that profile's scheduler only; the
measured rates, CPU seconds and peak RSS are positive and consistent with each other.

The gpusched binary is the one the other e2e tests use ($GPUSCHED_BINARY, set by ctest; else the
newest build/*/cmd/gpusched/gpusched).
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))

from cluster import source_dir  # noqa: E402
from gpusched_harness import gpusched_binary, log  # noqa: E402

# 72 nodes = one whole cycle of the script's node groups: with these 150 pods (seed 42: 16 GPU
# pods, 26 GPUs) every pod fits wherever either scheduler puts the others. With 30 nodes (2 A10G
# nodes) gpusched once packed model-agnostic GPU pods onto both A10G nodes before the one
# A10G-pinned pod arrived, which then had no room: a legitimate outcome, not what this test checks.
NODES, PODS = 72, 150
PROFILES = {"kube-scheduler": "bench-kube", "gpusched": "bench-gpusched"}


class SideBySideTest(unittest.TestCase):
    def test_both_schedulers_bind_every_pod(self):
        script = os.path.join(source_dir(), "bench", "side_by_side", "side_by_side.py")
        with tempfile.TemporaryDirectory(prefix="gpusched-side-test-") as tmp:
            out = os.path.join(tmp, "report.json")
            t0 = time.monotonic()
            proc = subprocess.run(
                [sys.executable, script, "--nodes", str(NODES), "--pods", str(PODS),
                 "--gpusched-binary", gpusched_binary(), "--settle", "1", "--stall", "30",
                 "--json", out],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
            took = time.monotonic() - t0
            self.assertEqual(proc.returncode, 0, f"side_by_side.py failed:\n{proc.stdout[-6000:]}")
            with open(out) as f:
                report = json.load(f)
        log(f"MEASURED side_by_side {NODES} nodes x {PODS} pods took {took:.1f}s:\n"
            + proc.stdout[proc.stdout.find("| scheduler"):])

        self.assertEqual((report["nodes"], report["pods"]), (NODES, PODS))
        runs = {r["scheduler"]: r for r in report["results"]}
        self.assertEqual(sorted(runs), sorted(PROFILES))
        for kind, r in runs.items():
            with self.subTest(scheduler=kind):
                profile = PROFILES[kind]
                self.assertEqual(r["profile"], profile)
                self.assertEqual(r["created"], PODS, r.get("create_error_samples"))
                self.assertEqual(r["create_errors"], 0)
                self.assertEqual(r["bound"], PODS, f"{kind}: watch saw {r['bound']} of {PODS} bound")
                self.assertEqual(r["bound_by_list"], PODS, f"{kind}: LIST shows {r['bound_by_list']} bound")
                self.assertEqual(r["scheduler_names"], [profile])
                # Scheduled events: one per pod, all from this run's scheduler (reportingController
                # is the profile's schedulerName for both).
                self.assertEqual(r["scheduled_events"], {profile: PODS}, f"{kind}: Scheduled events")
                for key in ("create_pods_per_s", "pods_per_s", "bind_pods_per_s", "cpu_s",
                            "cpu_s_per_1000_pods", "peak_rss_mib", "t0_to_last_bind_s"):
                    self.assertGreater(r[key], 0, f"{kind}: {key}")
                # pods/s is bound pods over the create->last-bind span; binds follow creates.
                self.assertAlmostEqual(r["pods_per_s"], PODS / r["t0_to_last_bind_s"], delta=0.2)
                self.assertGreaterEqual(r["t0_to_first_bind_s"], 0)
                self.assertLessEqual(r["first_to_last_bind_s"], r["t0_to_last_bind_s"] + 1e-3)
                self.assertAlmostEqual(r["cpu_s_per_1000_pods"], r["cpu_s"] * 1000 / PODS, delta=0.01)
                self.assertLess(r["peak_rss_mib"], 4096)
        if report["ratios"]:
            for k, v in report["ratios"].items():
                self.assertGreater(v, 0, k)


if __name__ == "__main__":
    unittest.main(verbosity=2)
