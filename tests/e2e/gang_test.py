#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Gang scheduling by `gpusched scheduler` on a real control plane (issue #19).

One control plane for the file: on Kubernetes 1.35 (GPUSCHED_E2E_KUBE=1.35, ctest's
e2e_gang_kube_1_35) the API server serves the Workload API (--feature-gates=GenericWorkload=true,
--runtime-config=scheduling.k8s.io/v1alpha1=true); on 1.37 it serves scheduling.k8s.io/v1beta1
(GenericWorkload is beta there, off by default), and v1alpha1 is gone. The
scheduler-plugins PodGroup CRD is installed (tests/e2e/testdata/podgroup-crd.yaml), and kwok runs
with the test cluster's stages except that a Job's pod completes only after the duration in its
annotation e2e.gpusched.io/complete-after (so a Job "runs" for a while). gpusched's service
account gets the RBAC of the chart for PodGroups and Workloads. Everything is checked from the
API server and from gpusched's /metrics (the GPUs its cache holds, assumed pods included).

  test_a  two Indexed Jobs (the real Job controller) of 4 and 2 workers x 8 GPUs, each with a
          PodGroup, on 4 nodes of 8 GPUs: one gang is bound whole, the other has no pod bound
          and holds no GPU; when the first job's pods complete, the second one starts.
  test_b  a gang that can never fit (5 x 8 GPUs on 4 x 8) times out: its PodGroup's phase says
          TimedOut and its pods get GangTimedOut events; a single-GPU pod still binds.
  test_c  a PodGroup requiring one zone: zone-a has 8 free GPUs on two half-used nodes, zone-b
          two empty nodes; a gang of 3 x 4 GPUs lands whole in zone-b (pod by pod, packing
          would put two members into zone-a's free halves).
  test_d  (1.35 only) the same gang rule through the v1alpha1 Workload API: pods with
          spec.workloadRef wait until the gang's minCount pods exist, then bind together in one
          zone.
  test_e  gang preemption with two members per node (issue #36): two 8-GPU nodes with one
          low-priority 1-GPU pod each, an Indexed Job of 4 x 4 GPUs of high priority with a
          PodGroup. Both small pods get DisruptionTarget and are deleted through the API (a
          finalizer holds them until the test has read them); meanwhile `gpusched explain` says
          the gang waits for them; then every member binds on the node it was nominated to.
  test_f  three nodes, two members each, an eviction on two nodes and none on the third: exactly
          two victims, six members bound where nominated.
  test_g  a gang that cannot fit even with every lower-priority pod gone (a higher-priority pod
          holds 2 GPUs) evicts nothing and keeps no nomination.
  test_h  (1.37) test_a with native gangs: Jobs with spec.scheduling's gang policy, whose
          Workloads and PodGroups the Job controller creates (WorkloadWithJob); both PodGroups
          get PodGroupInitiallyScheduled True.
  test_i  (1.37) a standalone native PodGroup with a topology constraint: its members wait
          (condition False), then bind whole in one zone (condition True).
  test_j  (1.37) test_e with the Job's native gang: it preempts as a unit and binds.
"""

import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase, kube_minor, testbin_dir  # noqa: E402
from gpusched_harness import (  # noqa: E402
    GROUP_LABEL, Gpusched, drop_finalizers, events, gpu_pod, gpusched_binary, install_pod_groups,
    kwok_gpu_node, log, priority_class, wait_nodes_ready, write_config)

ZONE = "topology.kubernetes.io/zone"
COMPLETE_AFTER = "e2e.gpusched.io/complete-after"
FINALIZER = "e2e.gpusched.io/hold"
KUBE_MINOR = kube_minor()
# The gang API of the release: v1alpha1 Workloads (spec.workloadRef) in 1.35, v1beta1 in 1.37.
SCHEDULING_API = "scheduling.k8s.io/v1alpha1" if KUBE_MINOR == 35 else "scheduling.k8s.io/v1beta1"


def delayed_completion_stages(path):
    """The testbin's kwok stages with the Job pods' completion delayed by COMPLETE_AFTER."""
    with open(os.path.join(testbin_dir(), "..", "share", "kwok", "stages.yaml")) as f:
        text = f.read()
    docs = text.split("\n---\n")
    out = []
    for d in docs:
        if "name: pod-complete" in d:
            assert "  next:\n" in d, "unexpected pod-complete stage layout"
            d = d.replace("  next:\n", "  delay:\n    durationMilliseconds: 0\n    durationFrom:\n"
                          f"      expressionFrom: '.metadata.annotations[\"{COMPLETE_AFTER}\"]'\n"
                          "  next:\n", 1)
        out.append(d)
    with open(path, "w") as f:
        f.write("\n---\n".join(out))
    return path


class GangE2ETest(ClusterTestCase):
    # 1.37: the native PodGroup (beta), the Job controller's Workloads and PodGroups
    # (WorkloadWithJob, alpha) and a PodGroup's topology constraint (alpha) are all off by default.
    GATES = ("GenericWorkload=true" if KUBE_MINOR == 35 else
             "GenericWorkload=true,WorkloadWithJob=true,TopologyAwareWorkloadScheduling=true")
    cluster_kwargs = {"extra_args": {
        "apiserver": [f"--feature-gates={GATES}", f"--runtime-config={SCHEDULING_API}=true"],
        "kcm": [f"--feature-gates={GATES}"]}}

    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.stages = delayed_completion_stages(
            os.path.join(tempfile.mkdtemp(prefix="gang-stages-"), "stages.yaml"))
        cls.cluster_kwargs = dict(cls.cluster_kwargs, kwok_stages=cls.stages)
        super().setUpClass()
        c = cls.cluster
        install_pod_groups(c)
        cls.gpusched = Gpusched(c, write_config(c.dir, name="gang.yaml"), name="gpusched-gang")
        cls.gpusched.start()

    @classmethod
    def tearDownClass(cls):
        if cls.gpusched.alive():
            cls.gpusched.kill()
        super().tearDownClass()

    def setUp(self):
        self.t0 = time.monotonic()
        self.ns = self.cluster.new_namespace("gang")
        self.addCleanup(self.cleanup)

    def cleanup(self):
        for p in self.pods():
            if FINALIZER in p["metadata"].get("finalizers", []):
                self.release(p["metadata"]["name"])
        for c in getattr(self, "classes", []):
            self.cluster.kubectl("delete", "priorityclass", c, "--ignore-not-found")
        self.cluster.kubectl("delete", "namespace", self.ns, "--wait=false", "--ignore-not-found")
        self.cluster.kubectl("delete", "nodes", "-l", f"{GROUP_LABEL}={self.ns}", "--wait=false",
                             "--ignore-not-found")
        log(f"MEASURED {self.id().split('.')[-1]}: took {time.monotonic() - self.t0:.1f}s")

    # --- objects and reads -------------------------------------------------------------------

    def nodes(self, spec):
        """spec: [(name, gpus, zone)]"""
        self.cluster.apply([kwok_gpu_node(f"{self.ns}-{n}", self.ns, "A100-SXM4-80GB", g, 81920, z)
                            for n, g, z in spec])
        wait_nodes_ready(self.cluster, f"{GROUP_LABEL}={self.ns}", len(spec))

    def pod_group(self, name, min_member, timeout=None, zone_required=False):
        obj = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
               "metadata": {"name": name}, "spec": {"minMember": min_member}}
        if timeout:
            obj["spec"]["scheduleTimeoutSeconds"] = timeout
        if zone_required:
            obj["metadata"]["annotations"] = {"gpusched.io/gang-topology-required": ZONE}
        self.cluster.apply(obj, namespace=self.ns)

    def member(self, name, group, gpus, extra_spec=None, annotations=None):
        pod = gpu_pod(name, gpus, group=self.ns, annotations=annotations)
        pod["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": group} if group else {}
        pod["spec"].update(extra_spec or {})
        return pod

    def indexed_job(self, name, workers, gpus, group, complete_after, priority_class=None,
                    native=False):
        """An Indexed Job whose pods join the scheduler-plugins PodGroup `group`, or with
        native=True (1.37) a gang of the Job's own: spec.scheduling's gang policy, from which the
        Job controller creates a Workload and a PodGroup (minCount: the parallelism) and sets
        each pod's spec.schedulingGroup."""
        template = self.member("x", group, gpus, annotations={COMPLETE_AFTER: complete_after})
        del template["metadata"]["name"]
        if priority_class:
            template["spec"]["priorityClassName"] = priority_class
        template["spec"]["restartPolicy"] = "Never"
        spec = {"completionMode": "Indexed", "completions": workers, "parallelism": workers,
                "backoffLimit": 0,
                "template": {"metadata": template["metadata"], "spec": template["spec"]}}
        if native:
            spec["scheduling"] = {"schedulingPolicy": {"gang": {}}}
        self.cluster.apply({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                            "spec": spec}, namespace=self.ns)

    def native_pod_groups(self):
        """The namespace's native PodGroups (scheduling.k8s.io) by name."""
        items = self.cluster.get_json("podgroups.scheduling.k8s.io", "--namespace", self.ns)
        return {g["metadata"]["name"]: g for g in items["items"]}

    def podgroup_attempts(self):
        """scheduler_podgroup_schedule_attempts_total of gpusched's /metrics, by result."""
        status, body = self.gpusched.get("/metrics")
        self.assertEqual(status, 200, body[:300])
        out = {}
        for line in body.splitlines():
            if line.startswith("scheduler_podgroup_schedule_attempts_total{"):
                labels, value = line.rsplit(" ", 1)
                result = labels.split('result="', 1)[1].split('"', 1)[0]
                out[result] = out.get(result, 0) + float(value)
        return out

    @staticmethod
    def initially_scheduled(group):
        """The status of a native PodGroup's PodGroupInitiallyScheduled condition, or None."""
        for c in group.get("status", {}).get("conditions", []):
            if c["type"] == "PodGroupInitiallyScheduled":
                return c["status"]
        return None

    def pods(self, selector=None):
        args = ["pods", "--namespace", self.ns] + (["-l", selector] if selector else [])
        return self.cluster.get_json(*args)["items"]

    def bound(self, pods):
        return [p for p in pods if p["spec"].get("nodeName")]

    def job_pods(self, job):
        return self.pods(f"batch.kubernetes.io/job-name={job}")

    def allocated_gpus(self):
        """gpusched_cluster_gpus_allocated summed over models: what gpusched's cache holds."""
        status, body = self.gpusched.get("/metrics")
        self.assertEqual(status, 200, body[:300])
        return sum(float(line.rsplit(" ", 1)[1]) for line in body.splitlines()
                   if line.startswith("gpusched_cluster_gpus_allocated{"))

    def zone_of(self, node_name):
        node = self.cluster.get_json("node", node_name)
        return node["metadata"]["labels"].get(ZONE)

    def priority_class(self, suffix, value):
        name = priority_class(self.cluster, f"{self.ns}-{suffix}", value)
        self.classes = getattr(self, "classes", []) + [name]
        return name

    def held_pod(self, name, gpus, node, priority_class):
        """A pod placed on `node` by nodeName, with a finalizer so that the test can read it
        while it terminates."""
        pod = self.member(name, None, gpus)
        pod["metadata"]["finalizers"] = [FINALIZER]
        pod["spec"]["nodeName"] = node
        pod["spec"]["priorityClassName"] = priority_class
        self.cluster.apply(pod, namespace=self.ns)

    def release(self, name):
        drop_finalizers(self.cluster, self.ns, name)

    def terminating(self):
        return {p["metadata"]["name"]: p for p in self.pods()
                if p["metadata"].get("deletionTimestamp")}

    def explain_json(self, pod):
        cmd = [gpusched_binary(), "explain", f"{self.ns}/{pod}",
               f"--kubeconfig={self.cluster.gpusched_kubeconfig}", "-o", "json"]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, f"{cmd}: {p.stderr}")
        return json.loads(p.stdout)

    def preempt_for_gang(self, nodes, victims_on, workers, native=False):
        """`nodes` 8-GPU nodes, a 1-GPU low-priority held pod on each node of `victims_on`, then
        an Indexed Job of `workers` x 4 GPUs of high priority with a PodGroup of minMember
        `workers` (native=True: the Job's native gang). Returns (victim names, {member:
        nominated node}) once every victim is terminating and every member is nominated."""
        low = self.priority_class("low", 10)
        high = self.priority_class("high", 1000)
        self.nodes([(n, 8, "zone-a") for n in nodes])
        victims = []
        for n in victims_on:
            victims.append(f"low-{n}")
            self.held_pod(victims[-1], 1, f"{self.ns}-{n}", low)
        self.cluster.wait_for(lambda: len(self.bound(self.pods())) == len(victims), timeout=30,
                              what="the low-priority pods running")
        if not native:
            self.pod_group("ft", workers)
        self.indexed_job("ft", workers, 4, None if native else "ft", complete_after="600s",
                         priority_class=high, native=native)

        def preempted():
            t = self.terminating()
            members = self.job_pods("ft")
            nominated = {p["metadata"]["name"]: p.get("status", {}).get("nominatedNodeName")
                         for p in members}
            done = (len(t) == len(victims) and len(members) == workers
                    and all(nominated.values()))
            return done and (t, nominated)
        terminating, nominated = self.cluster.wait_for(preempted, timeout=90,
                                                       what="victims terminating, members nominated")
        self.assertEqual(sorted(terminating), sorted(victims))
        for name, pod in terminating.items():
            cond = [c for c in pod.get("status", {}).get("conditions", [])
                    if c["type"] == "DisruptionTarget"]
            self.assertEqual([(c["status"], c["reason"]) for c in cond],
                             [("True", "PreemptionByScheduler")], name)
        self.assertEqual(self.bound(self.job_pods("ft")), [], "bound before its victims left")
        return victims, nominated

    def assert_bound_where_nominated(self, nominated):
        def all_bound():
            b = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in self.bound(self.job_pods("ft"))}
            return len(b) == len(nominated) and b
        bound = self.cluster.wait_for(all_bound, timeout=90, what="every member bound")
        self.assertEqual(bound, nominated)
        return bound

    # --- tests -------------------------------------------------------------------------------

    def two_jobs_one_whole_then_the_other(self, native):
        """Indexed Jobs of 4 and 2 workers x 8 GPUs on 4 nodes of 8 GPUs: one gang is bound
        whole, the other gets no pod and no GPU until the first completes. Returns the Job
        placed first."""
        self.nodes([(f"n{i}", 8, "zone-a") for i in range(4)])
        base = self.allocated_gpus()
        for job, workers in (("train-a", 4), ("train-b", 2)):
            if not native:
                self.pod_group(job, workers)
            self.indexed_job(job, workers, 8, None if native else job, complete_after="25s",
                             native=native)

        def one_whole():
            a, b = self.bound(self.job_pods("train-a")), self.bound(self.job_pods("train-b"))
            return (len(a) == 4 and len(b) == 0) or (len(b) == 2 and len(a) == 0)
        self.cluster.wait_for(one_whole, timeout=90, what="one gang bound whole")
        first = "train-a" if self.bound(self.job_pods("train-a")) else "train-b"
        second = "train-b" if first == "train-a" else "train-a"
        want_first = 32 if first == "train-a" else 16
        # Hold for a while: the other gang gets no pod and no GPU while the first one runs.
        for _ in range(5):
            self.assertEqual(self.bound(self.job_pods(second)), [], f"{second} got a pod")
            self.assertEqual(self.allocated_gpus() - base, want_first,
                             f"gpusched holds GPUs beyond {first}'s")
            time.sleep(1)
        nodes = {p["spec"]["nodeName"] for p in self.bound(self.job_pods(first))}
        self.assertEqual(len(nodes), 4 if first == "train-a" else 2)
        log(f"{first} placed whole on {sorted(nodes)}; {second} waits with nothing held")

        def second_started():
            want = 4 if second == "train-a" else 2
            return len(self.bound(self.job_pods(second))) == want
        self.cluster.wait_for(second_started, timeout=120,
                              what=f"{second} bound after {first} completed")
        # The Job controller counts the completions on its own schedule, maybe after the bind.
        want_done = 4 if first == "train-a" else 2
        self.cluster.wait_for(
            lambda: self.cluster.get_json("job", first, "--namespace", self.ns)["status"]
            .get("succeeded") == want_done, timeout=60, what=f"job {first} succeeded")
        return first

    def test_a_two_indexed_jobs_one_gang_whole_the_other_nothing_then_it_starts(self):
        self.two_jobs_one_whole_then_the_other(native=False)

    def test_b_a_gang_that_never_fits_times_out_and_a_single_pod_binds(self):
        self.nodes([(f"n{i}", 8, "zone-a") for i in range(4)])
        self.pod_group("huge", 5, timeout=10)
        for i in range(5):
            self.cluster.apply(self.member(f"huge-{i}", "huge", 8), namespace=self.ns)

        def timed_out():
            pg = self.cluster.get_json("podgroups.scheduling.x-k8s.io", "huge", "--namespace", self.ns)
            return pg.get("status", {}).get("phase") == "TimedOut" and pg
        self.cluster.wait_for(timed_out, timeout=60, what="PodGroup huge TimedOut")
        self.assertEqual(self.bound(self.pods("scheduling.x-k8s.io/pod-group=huge")), [])
        reasons = [e.get("reason") for e in events(self.cluster, self.ns)]
        self.assertIn("GangTimedOut", reasons)
        self.cluster.apply(self.member("single", None, 1), namespace=self.ns)
        self.cluster.wait_for(
            lambda: self.cluster.get_json("pod", "single", "--namespace", self.ns)["spec"]
            .get("nodeName"), timeout=60, what="a single-GPU pod bound")

    def required_zone_setup(self):
        """zone-a: two nodes with 4 of 8 GPUs used by filler pods; zone-b: two empty nodes."""
        self.nodes([("a0", 8, "zone-a"), ("a1", 8, "zone-a"), ("b0", 8, "zone-b"),
                    ("b1", 8, "zone-b")])
        for n in ("a0", "a1"):
            filler = self.member(f"fill-{n}", None, 4)
            filler["spec"]["nodeName"] = f"{self.ns}-{n}"
            self.cluster.apply(filler, namespace=self.ns)

    def assert_one_zone(self, pods, want_zone):
        zones = {self.zone_of(p["spec"]["nodeName"]) for p in pods}
        self.assertEqual(zones, {want_zone})

    def test_c_a_gang_requiring_one_zone_lands_in_one_zone(self):
        self.required_zone_setup()
        self.pod_group("zonal", 3, zone_required=True)
        for i in range(3):
            self.cluster.apply(self.member(f"z-{i}", "zonal", 4), namespace=self.ns)
        pods = self.cluster.wait_for(
            lambda: len(b := self.bound(self.pods("scheduling.x-k8s.io/pod-group=zonal"))) == 3
            and b, timeout=60, what="the zonal gang bound")
        self.assert_one_zone(pods, "zone-b")
        # gpusched writes PodGroup statuses once a second (Scheduler::Tick), after the binds.
        self.cluster.wait_for(
            lambda: self.cluster.get_json("podgroups.scheduling.x-k8s.io", "zonal", "--namespace", self.ns)
            .get("status", {}).get("phase") in ("Scheduling", "Running"),
            timeout=30, what="PodGroup zonal phase Scheduling or Running")

    if KUBE_MINOR == 35:  # 1.37 serves no v1alpha1 Workload (its native gangs: issue #38)
        def test_d_workload_v1alpha1_gang(self):
            self.required_zone_setup()
            self.cluster.apply({
                "apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
                "metadata": {"name": "llm",
                             "annotations": {"gpusched.io/gang-topology-required": ZONE}},
                "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 3}}}]}},
                namespace=self.ns)
            ref = {"workloadRef": {"name": "llm", "podGroup": "workers"}}
            for i in range(2):
                self.cluster.apply(self.member(f"w-{i}", None, 4, extra_spec=ref), namespace=self.ns)
            created = self.pods()
            self.assertTrue(all(p["spec"].get("workloadRef") for p in created
                                if p["metadata"]["name"].startswith("w-")),
                            "the API server kept spec.workloadRef (GenericWorkload gate)")
            time.sleep(5)
            self.assertEqual([p for p in self.bound(self.pods())
                              if p["metadata"]["name"].startswith("w-")],
                             [], "two of minCount 3 must wait")
            self.cluster.apply(self.member("w-2", None, 4, extra_spec=ref), namespace=self.ns)

            def all_bound():
                b = [p for p in self.bound(self.pods()) if p["metadata"]["name"].startswith("w-")]
                return len(b) == 3 and b
            pods = self.cluster.wait_for(all_bound, timeout=60, what="the Workload gang bound")
            self.assert_one_zone(pods, "zone-b")

    if KUBE_MINOR >= 37:
        def test_h_native_job_gangs_one_whole_the_other_nothing_then_it_starts(self):
            """test_a with the Jobs' own native gangs: the Job controller's PodGroups; both get
            PodGroupInitiallyScheduled True from gpusched once placed."""
            self.two_jobs_one_whole_then_the_other(native=True)
            groups = self.native_pod_groups()
            self.assertEqual(len(groups), 2, sorted(groups))
            self.assertEqual(sorted(g["spec"]["schedulingPolicy"]["gang"]["minCount"]
                                    for g in groups.values()), [2, 4])
            self.cluster.wait_for(
                lambda: all(self.initially_scheduled(g) == "True"
                            for g in self.native_pod_groups().values()),
                timeout=30, what="PodGroupInitiallyScheduled True on both native PodGroups")
            # kube-scheduler 1.37's pod group metrics: both gangs scheduled, the second one
            # unschedulable while the first ran.
            attempts = self.podgroup_attempts()
            self.assertGreaterEqual(attempts.get("scheduled", 0), 2, attempts)
            self.assertGreaterEqual(attempts.get("unschedulable", 0), 1, attempts)

        def test_i_native_pod_group_with_a_topology_constraint(self):
            """Pods naming a standalone native PodGroup (spec.schedulingGroup) of minCount 3 and
            topology constraint zone: two wait (the PodGroup says Unschedulable), the third
            makes the gang, which binds whole in zone-b."""
            self.required_zone_setup()
            self.cluster.apply({
                "apiVersion": SCHEDULING_API, "kind": "PodGroup", "metadata": {"name": "llm"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 3}},
                         "schedulingConstraints": {"topology": [{"key": ZONE}]}}},
                namespace=self.ns)
            ref = {"schedulingGroup": {"podGroupName": "llm"}}
            for i in range(2):
                self.cluster.apply(self.member(f"w-{i}", None, 4, extra_spec=ref),
                                   namespace=self.ns)
            self.cluster.wait_for(
                lambda: self.initially_scheduled(self.native_pod_groups()["llm"]) == "False",
                timeout=30, what="PodGroupInitiallyScheduled False while two of three wait")
            self.assertEqual([p for p in self.bound(self.pods())
                              if p["metadata"]["name"].startswith("w-")], [])
            self.cluster.apply(self.member("w-2", None, 4, extra_spec=ref), namespace=self.ns)

            def all_bound():
                b = [p for p in self.bound(self.pods()) if p["metadata"]["name"].startswith("w-")]
                return len(b) == 3 and b
            pods = self.cluster.wait_for(all_bound, timeout=60, what="the native gang bound")
            self.assert_one_zone(pods, "zone-b")
            self.cluster.wait_for(
                lambda: self.initially_scheduled(self.native_pod_groups()["llm"]) == "True",
                timeout=30, what="PodGroupInitiallyScheduled True once placed")

        def test_j_a_native_gang_preempts_as_a_unit(self):
            """test_e with the Job's native gang: both victims evicted for the gang; `gpusched
            explain` of a member (reading the native PodGroup from the cluster) says the gang
            waits for them; every member bound where nominated."""
            victims, nominated = self.preempt_for_gang(["a", "b"], ["a", "b"], 4, native=True)
            gang = self.explain_json(sorted(nominated)[0]).get("gang", {})
            self.assertTrue(gang.get("awaitingVictims"), gang)
            self.assertIn("(scheduling.k8s.io) waits for the pods it preempted",
                          gang.get("message", ""))
            for v in victims:
                self.release(v)
            self.assert_bound_where_nominated(nominated)

    def test_e_gang_preemption_two_members_per_node(self):
        victims, nominated = self.preempt_for_gang(["a", "b"], ["a", "b"], 4)
        per_node = {}
        for node in nominated.values():
            per_node[node] = per_node.get(node, 0) + 1
        self.assertEqual(per_node, {f"{self.ns}-a": 2, f"{self.ns}-b": 2})
        member = sorted(nominated)[0]
        gang = self.explain_json(member).get("gang", {})
        self.assertTrue(gang.get("awaitingVictims"), gang)
        for v in victims:
            self.assertIn(f"{self.ns}/{v} on ", gang.get("message", ""))
        for v in victims:
            self.release(v)
        self.assert_bound_where_nominated(nominated)
        self.assertEqual(self.terminating(), {})

    def test_f_gang_preemption_three_nodes_eviction_on_two(self):
        victims, nominated = self.preempt_for_gang(["a", "b", "c"], ["a", "b"], 6)
        self.assertEqual(len(victims), 2)
        self.assertEqual(sorted(set(nominated.values())),
                         [f"{self.ns}-a", f"{self.ns}-b", f"{self.ns}-c"])
        for v in victims:
            self.release(v)
        self.assert_bound_where_nominated(nominated)

    def test_g_a_gang_that_cannot_fit_evicts_nothing(self):
        low = self.priority_class("low", 10)
        high = self.priority_class("high", 1000)
        top = self.priority_class("top", 2000)
        self.nodes([("a", 8, "zone-a"), ("b", 8, "zone-a")])
        self.held_pod("low-a", 1, f"{self.ns}-a", low)
        self.held_pod("low-b", 1, f"{self.ns}-b", low)
        self.held_pod("top-b", 2, f"{self.ns}-b", top)
        self.cluster.wait_for(lambda: len(self.bound(self.pods())) == 3, timeout=30,
                              what="the running pods")
        self.pod_group("ft", 4)
        self.indexed_job("ft", 4, 4, "ft", complete_after="600s", priority_class=high)
        self.cluster.wait_for(lambda: len(self.job_pods("ft")) == 4, timeout=30,
                              what="the Job's pods")
        self.cluster.wait_for(
            lambda: any(e.get("reason") == "FailedScheduling" for e in events(self.cluster, self.ns)),
            timeout=30, what="a FailedScheduling event for the gang")
        time.sleep(3)
        self.assertEqual(self.terminating(), {})
        for p in self.job_pods("ft"):
            self.assertFalse(p.get("status", {}).get("nominatedNodeName"), p["metadata"]["name"])
            self.assertFalse(p["spec"].get("nodeName"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
