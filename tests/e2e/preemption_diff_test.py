#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Preemption by `gpusched scheduler` against the upstream kube-scheduler (issue #18, differential).

One control plane (etcd, kube-apiserver, kube-controller-manager with its disruption controller,
kwok, and the upstream kube-scheduler v1.37 that scripts/testbin builds) and one gpusched process
with the default profile. GPUSCHED_E2E_PD_SCENARIOS (default 60) randomised whole-GPU scenarios
(no sharing) from GPUSCHED_E2E_PD_SEED (default 18), in batches of 12.

A scenario: 2-6 kwok nodes (4 or 8 GPUs, 16 or 32 CPUs) filled with pods bound by spec.nodeName
(1, 2 or 4 GPUs, 1-8 CPUs) of priorities 0, 10, 20, 50 and 100, with start times in four
10-minute waves (set through the status subresource once kwok has marked them Running) and a
team label; half the scenarios have a PodDisruptionBudget on team "a" that allows 0 or 1
disruptions (its status from the real disruption controller); then one preemptor (priority
1000, or 50 in a fifth of them) that fits no node as it is. The scenario is built twice,
identically: in namespace <batch>-up on its own copy of the nodes for kube-scheduler, in
<batch>-gs on another copy for gpusched; the preemptor's nodeSelector keeps each scheduler on its
copy (every other node is UnschedulableAndUnresolvable, so not a preemption candidate).

Compared per scenario: the nominated node (by its index in the scenario) and the victims (the
pods whose deletion the scheduler requested; they carry a finalizer so they can be read). Pods of
one node with equal priority and start time are given equal requests and team (upstream sorts
them with an unstable sort, so which of them goes is not defined), and victims are compared by
(priority, wave, GPUs, CPUs, team). A scenario agrees when both schedulers give the same outcome.
Where they differ, the difference is explained only when a model of upstream's rules (below:
victims by reprieve, then fewest PDB violations, lowest highest victim priority, smallest
priority sum, fewest victims, latest start of the highest-priority victims) says that both
nodes tie on every criterion and each scheduler's victims are the model's for its node; upstream
then takes the first node of a Go map iteration, gpusched the first from a random offset.
Every other difference fails the test.
"""

import json
import os
import random
import sys
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from api import Api  # noqa: E402
from cluster import ClusterTestCase, make_kwok_node  # noqa: E402
from gpusched_harness import (  # noqa: E402
    GPU, GROUP_LABEL, SCHEDULER_NAME, Gpusched, log, wait_nodes_ready, write_config)

SCENARIOS = int(os.environ.get("GPUSCHED_E2E_PD_SCENARIOS", "60"))
SEED = int(os.environ.get("GPUSCHED_E2E_PD_SEED", "18"))
BATCH = 12
FINALIZER = "e2e.gpusched.io/hold"
BATCH_LABEL = "e2e.gpusched.io/pd-batch"
VICTIM_PRIORITIES = [0, 10, 20, 50, 100]
PREEMPTOR_PRIORITIES = [1000, 50]
MAX_PODS = 110  # make_kwok_node's pods allocatable
WAVE_SECONDS = 600


def priority_class(value):
    return f"pd-p{value}"


# --- scenarios and the model of upstream's rules ---------------------------------------------

class Pod:
    def __init__(self, name, node, gpus, cpu, priority, wave, team):
        self.name, self.node, self.gpus, self.cpu = name, node, gpus, cpu
        self.priority, self.wave, self.team = priority, wave, team

    def signature(self):
        return (self.priority, self.wave, self.gpus, self.cpu, self.team)


class Scenario:
    """Nodes [(gpus, milli-CPU)], pods, an optional PDB (team "a", minAvailable) and a preemptor."""

    def __init__(self, index, seed):
        self.index = index
        self.key = f"s{index}"
        rng = random.Random(seed)
        self.nodes = [(rng.choice([4, 8]), rng.choice([16, 32]) * 1000)
                      for _ in range(rng.randint(2, 6))]
        self.pods = []
        for n, (gpus, cpu) in enumerate(self.nodes):
            self._fill(rng, n, gpus, cpu)
        team_a = sum(1 for p in self.pods if p.team == "a")
        self.pdb_min_available = None
        if team_a and rng.random() < 0.5:
            self.pdb_min_available = team_a - rng.choice([0, 0, 1])
        self.pre_priority = PREEMPTOR_PRIORITIES[0] if rng.random() < 0.8 else PREEMPTOR_PRIORITIES[1]
        self.pre_gpus, self.pre_cpu = self._preemptor(rng)

    def _fill(self, rng, n, gpus, cpu):
        combos = {}  # (priority, wave) -> (gpus, cpu, team): equal importance, equal pods
        used_gpus = used_cpu = 0
        for _ in range(rng.randint(1, 7)):
            priority, wave = rng.choice(VICTIM_PRIORITIES), rng.randint(0, 3)
            g, c, team = combos.get((priority, wave)) or (
                rng.choice([1, 1, 2, 2, 4]), rng.choice([1000, 2000, 4000, 8000]),
                rng.choice(["a", "b", "c"]))
            if used_gpus + g > gpus or used_cpu + c > cpu:
                continue
            combos.setdefault((priority, wave), (g, c, team))
            used_gpus += g
            used_cpu += c
            self.pods.append(Pod(f"{self.key}-p{len(self.pods)}", n, g, c, priority, wave, team))

    def _preemptor(self, rng):
        """A request that fits no node as it is (most often one that preemption can serve)."""
        for _ in range(100):
            g, c = rng.choice([1, 2, 4, 8]), rng.choice([1000, 4000, 12000])
            if not any(self.fits(n, self.on_node(n), g, c) for n in range(len(self.nodes))):
                return g, c
        return max(g for g, _ in self.nodes) + 1, 1000

    def on_node(self, n):
        return [p for p in self.pods if p.node == n]

    def fits(self, n, pods, gpus, cpu):
        node_gpus, node_cpu = self.nodes[n]
        return (sum(p.gpus for p in pods) + gpus <= node_gpus
                and sum(p.cpu for p in pods) + cpu <= node_cpu and len(pods) + 1 <= MAX_PODS)

    # The model (kube-scheduler's SelectVictimsOnNode and pickOneNodeForPreemption).

    def victims_on(self, n, pdb_allowed):
        """(sorted victim signatures, PDB violations) on node n, or None when not a candidate."""
        pods = self.on_node(n)
        lower = [p for p in pods if p.priority < self.pre_priority]
        kept = [p for p in pods if p.priority >= self.pre_priority]
        if not lower or not self.fits(n, kept, self.pre_gpus, self.pre_cpu):
            return None
        lower.sort(key=lambda p: (-p.priority, p.wave))
        allowed, violating = pdb_allowed, set()
        for p in lower:
            if self.pdb_min_available is not None and p.team == "a":
                allowed -= 1
                if allowed < 0:
                    violating.add(p.name)
        victims, violations = [], 0
        for group in (True, False):
            for p in lower:
                if (p.name in violating) != group:
                    continue
                if self.fits(n, kept + [p], self.pre_gpus, self.pre_cpu):
                    kept.append(p)
                else:
                    victims.append(p)
                    violations += group
        return sorted(p.signature() for p in victims), violations

    def best_nodes(self, pdb_allowed):
        """{node: victims} for the nodes tied best on every criterion; {} when none can serve."""
        candidates = {}
        for n in range(len(self.nodes)):
            v = self.victims_on(n, pdb_allowed)
            if v is not None:
                candidates[n] = v

        def highest(sigs):
            top = max(s[0] for s in sigs)
            return top, min(s[1] for s in sigs if s[0] == top)

        criteria = [
            lambda v: -v[1],                                       # fewest PDB violations
            lambda v: -highest(v[0])[0],                           # lowest highest priority
            lambda v: -sum(s[0] + 2**31 for s in v[0]),            # smallest priority sum
            lambda v: -len(v[0]),                                  # fewest victims
            lambda v: highest(v[0])[1],                            # latest start (later wave)
        ]
        best = dict(candidates)
        for score in criteria:
            if len(best) <= 1:
                break
            top = max(score(v) for v in best.values())
            best = {n: v for n, v in best.items() if score(v) == top}
        return {n: v[0] for n, v in best.items()}


# --- the test --------------------------------------------------------------------------------

class PreemptionDifferentialTest(ClusterTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.api = Api(cls.cluster)
        for value in VICTIM_PRIORITIES + PREEMPTOR_PRIORITIES:
            cls.cluster.apply({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                               "metadata": {"name": priority_class(value)}, "value": value})
        path = write_config(cls.cluster.dir, name="pd.yaml")
        cls.gpusched = Gpusched(cls.cluster, path, name="gpusched-pd").start()

    @classmethod
    def tearDownClass(cls):
        if cls.gpusched.alive():
            cls.gpusched.kill()
        super().tearDownClass()

    def test_preemption_matches_kube_scheduler(self):
        rng = random.Random(SEED)
        seeds = [rng.getrandbits(32) for _ in range(SCENARIOS)]
        results = []
        for first in range(0, SCENARIOS, BATCH):
            results += self.run_batch(first // BATCH, first, seeds[first:first + BATCH])
        same = sum(1 for r in results if r["verdict"] == "same")
        tie = sum(1 for r in results if r["verdict"] == "tie")
        none = sum(1 for r in results if r["verdict"] == "same" and r["up"][0] is None)
        model = sum(1 for r in results if r["model_agrees"])
        criteria = {}
        for r in results:
            criteria[r["decided_by"]] = criteria.get(r["decided_by"], 0) + 1
        print(f"\npreemption differential (seed {SEED}): {len(results)} scenarios, {same} the same "
              f"node and victims as kube-scheduler ({none} of them: no preemption possible), "
              f"{tie} a different node tied on every criterion, "
              f"{len(results) - same - tie} different; the model of upstream's rules agrees with "
              f"kube-scheduler in {model}; deciding criterion: {criteria}", file=sys.stderr)
        bad = [r for r in results if r["verdict"] == "differ"]
        self.assertEqual(bad, [], "\n".join(json.dumps(r, default=str) for r in bad))
        self.assertGreaterEqual(len(results), 50)

    # --- one batch ---------------------------------------------------------------------------

    def run_batch(self, b, first, seeds):
        scenarios = [Scenario(first + i, s) for i, s in enumerate(seeds)]
        batch = f"pd{b}-{os.getpid() % 10000}"
        sides = {"up": ("default-scheduler", f"{batch}-up"), "gs": (SCHEDULER_NAME, f"{batch}-gs")}
        for _, ns in sides.values():
            self.cluster.kubectl("create", "namespace", ns)
        self.addCleanup(self.cleanup_batch, batch, [ns for _, ns in sides.values()])
        nodes = [self.node(batch, side, s, n) for side in sides for s in scenarios
                 for n in range(len(s.nodes))]
        self.cluster.apply(nodes)
        wait_nodes_ready(self.cluster, f"{BATCH_LABEL}={batch}", len(nodes), timeout=180)
        for side, (_, ns) in sides.items():
            self.create(ns, [self.victim(batch, side, s, p) for s in scenarios for p in s.pods])
            self.create(ns, [self.pdb(s) for s in scenarios if s.pdb_min_available is not None])
        self.wait_running([ns for _, ns in sides.values()], sum(len(s.pods) for s in scenarios))
        base = time.time() - 4 * WAVE_SECONDS
        self.set_start_times(sides, scenarios, base)
        allowed = self.wait_pdbs(sides, scenarios)
        time.sleep(2)  # both schedulers' informers see the start times and the PDBs
        for side, (scheduler, ns) in sides.items():
            self.create(ns, [self.preemptor(batch, side, s, scheduler) for s in scenarios])
        outcomes = {side: self.wait_outcomes(ns, scenarios) for side, (_, ns) in sides.items()}
        time.sleep(3)  # victims are deleted after the nomination (upstream: asynchronously)
        for side, (_, ns) in sides.items():
            self.read_victims(ns, batch, side, scenarios, outcomes[side])
        return [self.judge(s, outcomes["up"][s.key], outcomes["gs"][s.key], allowed[s.key])
                for s in scenarios]

    def judge(self, s, up, gs, pdb_allowed):
        best = s.best_nodes(pdb_allowed)
        by = {s.pods[i].name: s.pods[i] for i in range(len(s.pods))}
        up_out = (up["node"], sorted(by[v].signature() for v in up["victims"]))
        gs_out = (gs["node"], sorted(by[v].signature() for v in gs["victims"]))

        def in_model(out):
            node, victims = out
            return (node is None and not best) or (node in best and best[node] == victims)

        if up_out == gs_out:
            verdict = "same"
        elif in_model(up_out) and in_model(gs_out):
            verdict = "tie"
        else:
            verdict = "differ"
        return {"scenario": s.key, "verdict": verdict, "up": up_out, "gs": gs_out,
                "model_agrees": in_model(up_out), "model_best": best,
                "decided_by": self.deciding_criterion(s, pdb_allowed),
                "up_message": up["message"], "gs_message": gs["message"]}

    @staticmethod
    def deciding_criterion(s, pdb_allowed):
        n = sum(1 for i in range(len(s.nodes)) if s.victims_on(i, pdb_allowed) is not None)
        if n == 0:
            return "no candidate"
        if n == 1:
            return "one candidate"
        return "tie" if len(s.best_nodes(pdb_allowed)) > 1 else "criteria"

    # --- objects -----------------------------------------------------------------------------

    @staticmethod
    def node_name(batch, side, s, n):
        return f"{batch}-{side}-{s.key}-n{n}"

    def node(self, batch, side, s, n):
        gpus, cpu = s.nodes[n]
        labels = {BATCH_LABEL: batch, GROUP_LABEL: f"{batch}-{side}-{s.key}",
                  "gpu.nvidia.com/model": "A100-SXM4-80GB", "gpu.nvidia.com/count": str(gpus),
                  "gpu.nvidia.com/memory": "81920", "topology.kubernetes.io/zone": "zone-a"}
        return make_kwok_node(self.node_name(batch, side, s, n), labels=labels,
                              allocatable={GPU: str(gpus), "cpu": f"{cpu}m"})

    @staticmethod
    def container(gpus, cpu):
        requests = {"cpu": f"{cpu}m", "memory": "128Mi", GPU: str(gpus)}
        return [{"name": "main", "image": "registry.invalid/worker:1",
                 "resources": {"requests": requests, "limits": {GPU: str(gpus)}}}]

    def victim(self, batch, side, s, p):
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": p.name, "finalizers": [FINALIZER],
                             "labels": {"scenario": s.key, "team": p.team}},
                "spec": {"nodeName": self.node_name(batch, side, s, p.node),
                         "priorityClassName": priority_class(p.priority),
                         "terminationGracePeriodSeconds": 0,
                         "containers": self.container(p.gpus, p.cpu)}}

    @staticmethod
    def pdb(s):
        return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": f"{s.key}-pdb"},
                "spec": {"minAvailable": s.pdb_min_available,
                         "selector": {"matchLabels": {"scenario": s.key, "team": "a"}}}}

    def preemptor(self, batch, side, s, scheduler):
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{s.key}-pre", "labels": {"role": "preemptor"}},
                "spec": {"schedulerName": scheduler,
                         "priorityClassName": priority_class(s.pre_priority),
                         "nodeSelector": {GROUP_LABEL: f"{batch}-{side}-{s.key}"},
                         "terminationGracePeriodSeconds": 0,
                         "containers": self.container(s.pre_gpus, s.pre_cpu)}}

    def create(self, ns, objects):
        def post(obj):
            kind = obj["kind"]
            path = (f"/api/v1/namespaces/{ns}/pods" if kind == "Pod"
                    else f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets")
            self.api.call("POST", path, obj)
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(post, objects))

    # --- waits and reads ---------------------------------------------------------------------

    def wait_running(self, namespaces, count):
        def running():
            return all(sum(1 for p in self.api.pods(ns)
                           if p.get("status", {}).get("phase") == "Running") == count
                       for ns in namespaces)
        self.cluster.wait_for(running, timeout=180, what=f"{count} pods Running per side")

    def set_start_times(self, sides, scenarios, base):
        def patch(item):
            ns, p = item
            t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(base + p.wave * WAVE_SECONDS))
            self.api.merge_patch(f"/api/v1/namespaces/{ns}/pods/{p.name}/status",
                                 {"status": {"startTime": t}})
        items = [(ns, p) for _, ns in sides.values() for s in scenarios for p in s.pods]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(patch, items))

    def wait_pdbs(self, sides, scenarios):
        """Each scenario's disruptionsAllowed, once the disruption controller counted its pods
        (the same on both sides)."""
        want = {s.key: sum(1 for p in s.pods if p.team == "a") for s in scenarios
                if s.pdb_min_available is not None}

        def settled():
            seen = {}
            for _, ns in sides.values():
                for pdb in self.api.get(
                        f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets")["items"]:
                    st, key = pdb.get("status", {}), pdb["metadata"]["name"][:-len("-pdb")]
                    if (st.get("observedGeneration") != pdb["metadata"]["generation"]
                            or st.get("expectedPods") != want[key]
                            or st.get("currentHealthy") != want[key]):
                        return None
                    if seen.setdefault(key, st["disruptionsAllowed"]) != st["disruptionsAllowed"]:
                        return None
            return seen if len(seen) == len(want) else None
        allowed = self.cluster.wait_for(settled, timeout=120, what="PDB status") if want else {}
        return {s.key: allowed.get(s.key, 0) for s in scenarios}

    def wait_outcomes(self, ns, scenarios):
        """Per scenario: the preemptor's nominated node index (None: no preemption) and its
        PodScheduled message, once it is nominated or its FitError names preemption."""
        def decided():
            out = {}
            for p in self.api.pods(ns, "role=preemptor"):
                key = p["metadata"]["name"][:-len("-pre")]
                st = p.get("status", {})
                cond = next((c for c in st.get("conditions", []) or []
                             if c.get("type") == "PodScheduled"), {})
                nominated = st.get("nominatedNodeName")
                if p["spec"].get("nodeName"):
                    raise AssertionError(f"{ns}/{key}-pre was bound: it fit without preemption")
                if nominated:
                    out[key] = {"node": int(nominated.rsplit("-n", 1)[1]),
                                "message": cond.get("message", "")}
                elif cond.get("status") == "False" and "preemption:" in cond.get("message", ""):
                    out[key] = {"node": None, "message": cond["message"]}
            return out if len(out) == len(scenarios) else None
        return self.cluster.wait_for(decided, timeout=180, what=f"preemption outcomes in {ns}")

    def read_victims(self, ns, batch, side, scenarios, outcomes):
        for key in outcomes:
            outcomes[key]["victims"] = []
        for p in self.api.pods(ns):
            name = p["metadata"]["name"]
            if p["metadata"].get("deletionTimestamp") and not name.endswith("-pre"):
                outcomes[name.rsplit("-p", 1)[0]]["victims"].append(name)

    def cleanup_batch(self, batch, namespaces):
        for ns in namespaces:
            try:
                pods = self.api.pods(ns)
            except AssertionError:
                continue
            for p in pods:
                if FINALIZER in p["metadata"].get("finalizers", []):
                    try:
                        self.api.merge_patch(f"/api/v1/namespaces/{ns}/pods/{p['metadata']['name']}",
                                             {"metadata": {"finalizers": None}})
                    except AssertionError as e:
                        log(f"cleanup: {e}")
            self.cluster.kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found")
        self.cluster.kubectl("delete", "nodes", "-l", f"{BATCH_LABEL}={batch}", "--wait=false",
                             "--ignore-not-found")


if __name__ == "__main__":
    unittest.main(verbosity=2)
