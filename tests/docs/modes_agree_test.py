#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every scenario file of the repository gives the same placements in every mode (issue #37).

A scenario is a YAML file under docs/examples/ or a testdata/ folder that holds Pods or workload
objects: with its own Nodes it stands alone; without, it runs on the files of its folder that hold
only the cluster (Nodes, storage, DRA slices, ...). Each scenario runs

  static   gpusched simulate -f ... -o json
  replay   gpusched simulate --replay -f ... -o json, on copies of the files without arrival
           and duration annotations or creation timestamps: every pod arrives one second after
           the previous one and never leaves, which is the static run
  explain  gpusched explain -f ... NS/NAME -o json, for every pod of the static run

and asserts: the replay places every pod on the same node and GPU devices, in the same state,
allocates every DRA claim the same devices and leaves every gang in the same state; explain says
each pod is bound where the static run put it. A scenario with objects the API server would
refuse is simulated without them, and explain refuses it naming the first one.

Environment: GPUSCHED_BINARY (the binary; ctest sets it), GPUSCHED_SOURCE_DIR.
"""

import json
import os
import subprocess
import tempfile
import unittest

import yaml

ROOT = os.environ.get("GPUSCHED_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BINARY = os.environ.get("GPUSCHED_BINARY") or os.path.join(
    ROOT, "build", "release", "cmd", "gpusched", "gpusched")
WORKLOAD_KINDS = {"Pod", "Deployment", "ReplicaSet", "StatefulSet", "Job", "DaemonSet"}
TIMING_ANNOTATIONS = ("gpusched.io/arrival", "gpusched.io/duration")
# Scenarios the test must find (a discovery that finds nothing fails rather than passes).
REQUIRED = ("docs/examples/dra/workloads.yaml", "docs/examples/gang/training.yaml",
            "docs/examples/volumes/zonal.yaml", "docs/examples/simulate/workloads.yaml",
            "docs/examples/network/appgroup.yaml")


def tracked_yaml():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "--cached", "--others",
                          "--exclude-standard", "*.yaml"], check=True,
                         capture_output=True, text=True).stdout.split()
    return [p for p in out if p.startswith("docs/examples/") or "/testdata/" in p]


def kinds_of(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if isinstance(d, dict)]
    kinds = set()
    for d in docs:
        kinds.add(d.get("kind"))
        for item in d.get("items") or []:
            if isinstance(item, dict):
                kinds.add(item.get("kind"))
    return kinds


def scenarios():
    """[(name, [files])]: each file with workloads, with its folder's cluster files if needed."""
    files = {p: kinds_of(p) for p in tracked_yaml()}
    cluster_only = {}
    for path, kinds in files.items():
        if "Node" in kinds and not kinds & WORKLOAD_KINDS:
            cluster_only.setdefault(os.path.dirname(path), []).append(path)
    out = []
    for path, kinds in sorted(files.items()):
        if not kinds & WORKLOAD_KINDS:
            continue
        if "Node" in kinds:
            out.append((path, [path]))
        elif cluster_only.get(os.path.dirname(path)):
            out.append((path, sorted(cluster_only[os.path.dirname(path)]) + [path]))
    return out


def without_timing(doc):
    """`doc` with the replay's timing removed from it and from its pod template."""
    if not isinstance(doc, dict):
        return doc
    for meta in (doc.get("metadata"), ((doc.get("spec") or {}).get("template") or {}).get(
            "metadata")):
        if not isinstance(meta, dict):
            continue
        meta.pop("creationTimestamp", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            for key in TIMING_ANNOTATIONS:
                annotations.pop(key, None)
    for item in doc.get("items") or []:
        without_timing(item)
    return doc


def timing_removed(path, tmp):
    """`path`, or a copy in `tmp` without timing when it has some (a copy is written only then:
    re-dumped YAML would change pod-template-hash and so the names of the pods)."""
    with open(path, encoding="utf-8") as f:
        docs = list(yaml.safe_load_all(f))
    before = json.dumps(docs, sort_keys=True, default=str)
    docs = [without_timing(d) for d in docs]
    if json.dumps(docs, sort_keys=True, default=str) == before:
        return path
    copy = os.path.join(tmp, os.path.basename(path))
    with open(copy, "w", encoding="utf-8") as f:
        yaml.safe_dump_all(docs, f)
    return copy


def gpusched(*args):
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=300)


def simulate(files, *flags):
    args = ["simulate", "-o", "json", *flags]
    for f in files:
        args += ["-f", f]
    r = gpusched(*args)
    # Exit 1 with the report when objects were rejected (reported, the rest simulated).
    report = json.loads(r.stdout) if r.returncode in (0, 1) and r.stdout else None
    if report is None or r.returncode != (1 if report["rejected"] else 0):
        raise AssertionError(f"gpusched {' '.join(args)}: exit {r.returncode}\n{r.stderr}")
    return report


def outcome(report):
    """What must agree between modes: placements, claim allocations, gang states."""
    pods = {p["pod"]: (p["node"], tuple(p["gpuDevices"]), p["state"])
            for p in report["placements"]}
    claims = {c["claim"]: (c["node"], tuple(c["devices"])) for c in report.get("claims", [])}
    gangs = {g["gang"]: (g["state"], g["bound"], tuple(g["nodes"])) for g in report.get("gangs", [])}
    return pods, claims, gangs


class ModesAgreeTest(unittest.TestCase):
    def setUp(self):
        self.assertTrue(os.access(BINARY, os.X_OK), f"no gpusched binary at {BINARY}")
        self.scenarios = scenarios()
        names = {name for name, _ in self.scenarios}
        for required in REQUIRED:
            self.assertIn(required, names)

    def test_replay_without_timing_equals_the_static_run(self):
        for name, files in self.scenarios:
            with self.subTest(scenario=name), tempfile.TemporaryDirectory() as tmp:
                static = simulate([os.path.join(ROOT, f) for f in files])
                inputs = [timing_removed(os.path.join(ROOT, f), tmp) for f in files]
                replay = simulate(inputs, "--replay")
                self.assertEqual(outcome(static), outcome(replay))
                self.assertEqual(static["pods"], replay["pods"])
                self.assertEqual(len(static["rejected"]), len(replay["rejected"]))

    def test_explain_reads_what_simulate_read(self):
        for name, files in self.scenarios:
            with self.subTest(scenario=name):
                paths = [os.path.join(ROOT, f) for f in files]
                static = simulate(paths)
                file_args = [a for p in paths for a in ("-f", p)]
                if static["rejected"]:
                    # explain answers about one cluster state: it refuses invalid input, naming it.
                    pod = static["placements"][0]["pod"]
                    r = gpusched("explain", *file_args, pod, "-o", "json")
                    self.assertNotEqual(r.returncode, 0)
                    self.assertIn(static["rejected"][0]["source"], r.stderr)
                    continue
                for placement in static["placements"]:
                    r = gpusched("explain", *file_args, placement["pod"], "-o", "json")
                    self.assertEqual(r.returncode, 0, r.stderr)
                    explained = json.loads(r.stdout)
                    expected = placement["node"] if placement["state"] in (
                        "Scheduled", "PreBound") else None
                    self.assertEqual(explained["boundNode"], expected,
                                     f"{placement['pod']}: {placement}")


if __name__ == "__main__":
    unittest.main()
