#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpusched under Kueue on a real control plane (issue #25; docs/kueue.md).

One control plane for the file, started without the upstream kube-scheduler and with the real
Kueue controller manager and its webhooks (scripts/test-cluster, TEST_CLUSTER_KUEUE=1). The
queues and flavors are the documented manifests, applied verbatim: deploy/kueue/flavors.yaml
(ResourceFlavor a100 on gpusched's seed label gpu.nvidia.com/model, h100 on GFD's
nvidia.com/gpu.product with a zone/hostname Topology) and deploy/kueue/queues.yaml (Cohort
gpu-teams, ClusterQueues team-a and team-b with 8 A100 and 16 H100 GPUs each, LocalQueues
team-a/gpu and team-b/gpu). kwok runs Job pods until the duration in their annotation
e2e.gpusched.io/complete-after (an hour here: they run until deleted).

Nodes: two A100 nodes (8 GPUs, zone-a); four H100 nodes (8 GPUs, GFD labels only), two in zone-a
each half used by a plain pod outside Kueue, two empty in zone-b. Left to itself, gpusched packs
a 4-GPU pod onto a half-used H100 node, so a pod placed without Kueue's node selector lands on
the wrong model (test_a) or in the wrong zone (test_b): the test fails if gpusched ignores a
Kueue-injected node selector or scheduling gate.

  test_a  quota, borrowing and preemption on flavor a100: team-a's first Job (no node selector
          of its own) is admitted on a100 and its pods are bound by gpusched to A100 nodes;
          team-b fills its own quota; team-a's second Job waits suspended (Workload not
          admitted); once team-b is idle it is admitted by borrowing; when team-b submits
          again, Kueue preempts the borrower back and team-b's Job runs. Every admitted pod is
          bound by gpusched (its Scheduled event) to a node with the admitted flavor's labels.
  test_b  topology-aware scheduling: deploy/kueue/tas-job.yaml's shape (3 x 4 H100 GPUs,
          kueue.x-k8s.io/podset-required-topology: zone) is admitted with a topology
          assignment; its pods are gated until Kueue injects their node selectors, and land
          entirely in zone-b (the only zone with room for all three). The pods are also one
          gpusched gang (a PodGroup of minMember 3): gang and gates do not fight.
"""

import json
import os
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase, make_kwok_node, source_dir  # noqa: E402
from gang_test import COMPLETE_AFTER, delayed_completion_stages  # noqa: E402
from gpusched_harness import (  # noqa: E402
    GPU, SCHEDULER_NAME, Gpusched, events, install_pod_groups, kwok_gpu_node, log,
    wait_nodes_ready, write_config)

GROUP = "kueue-e2e"
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
A100_LABEL, A100 = "gpu.nvidia.com/model", "A100-SXM4-80GB"
H100_LABEL, H100 = "nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"
FLAVOR_LABELS = {"a100": {A100_LABEL: A100}, "h100": {H100_LABEL: H100}}
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"
DEPLOY = os.path.join(source_dir(), "deploy", "kueue")


def h100_node(name, zone):
    """An H100 node as GPU Feature Discovery labels it (no gpusched seed labels)."""
    return make_kwok_node(name, labels={
        "e2e.gpusched.io/group": GROUP, ZONE: zone, H100_LABEL: H100,
        "nvidia.com/gpu.memory": "81559", "nvidia.com/gpu.count": "8"},
        allocatable={GPU: "8"})


def condition(obj, ctype):
    for c in obj.get("status", {}).get("conditions", []) or []:
        if c.get("type") == ctype:
            return c
    return None


class KueueE2ETest(ClusterTestCase):
    cluster_kwargs = {"start_scheduler": False, "kueue": True}

    @classmethod
    def setUpClass(cls):
        cls.stages = delayed_completion_stages(
            os.path.join(tempfile.mkdtemp(prefix="kueue-stages-"), "stages.yaml"))
        cls.cluster_kwargs = dict(cls.cluster_kwargs, kwok_stages=cls.stages)
        super().setUpClass()
        c = cls.cluster
        c.kubectl("apply", "-f", os.path.join(DEPLOY, "flavors.yaml"),
                  "-f", os.path.join(DEPLOY, "queues.yaml"))
        install_pod_groups(c)  # gangs (test_b)
        c.wait_for(lambda: all(condition(c.get_json("clusterqueue", q), "Active")["status"] == "True"
                               for q in ("team-a", "team-b")),
                   timeout=60, what="ClusterQueues team-a and team-b active")
        nodes = [kwok_gpu_node(f"a100-{i}", GROUP, A100, 8, 81920, "zone-a") for i in range(2)]
        nodes += [h100_node("h100-a0", "zone-a"), h100_node("h100-a1", "zone-a"),
                  h100_node("h100-b0", "zone-b"), h100_node("h100-b1", "zone-b")]
        c.apply(nodes)
        wait_nodes_ready(c, f"e2e.gpusched.io/group={GROUP}", len(nodes))
        # Half of each zone-a H100 node is used by a pod that Kueue does not manage.
        c.kubectl("create", "namespace", "others")
        c.wait_for(lambda: c.kubectl("get", "serviceaccount", "default", "-n", "others"),
                   timeout=60, what="service account others/default")
        for n in ("h100-a0", "h100-a1"):
            c.apply({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": f"fill-{n}", "namespace": "others"},
                     "spec": {"nodeName": n, "terminationGracePeriodSeconds": 0,
                              "containers": [{"name": "main", "image": "registry.invalid/x:1",
                                              "resources": {"limits": {GPU: "4"}}}]}})
        c.wait_for(lambda: all(p.get("status", {}).get("phase") == "Running"
                               for p in c.get_json("pods", "-n", "others")["items"]),
                   timeout=60, what="the filler pods running")
        cls.gpusched = Gpusched(c, write_config(c.dir, name="kueue.yaml"), name="gpusched-kueue")
        cls.gpusched.start()
        cls.gpusched.metrics_port()

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "gpusched", None) and cls.gpusched.alive():
            cls.gpusched.kill()
        super().tearDownClass()

    def setUp(self):
        self.t0 = time.monotonic()

    def tearDown(self):
        log(f"MEASURED {self.id().split('.')[-1]}: took {time.monotonic() - self.t0:.1f}s")

    # --- objects and reads -------------------------------------------------------------------

    def job(self, name, namespace, pods, gpus, node_selector=None, annotations=None,
            labels=None):
        """A Kueue-queued Indexed Job of `pods` x `gpus` GPUs whose pods run for an hour."""
        ann = {COMPLETE_AFTER: "3600s"}
        ann.update(annotations or {})
        spec = {"schedulerName": SCHEDULER_NAME, "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "main", "image": "registry.invalid/train:1",
                                "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                              "limits": {GPU: str(gpus)}}}]}
        if node_selector:
            spec["nodeSelector"] = dict(node_selector)
        self.cluster.kubectl("create", "-f", "-", input=json.dumps({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE_LABEL: "gpu"}},
            "spec": {"completionMode": "Indexed", "completions": pods, "parallelism": pods,
                     "backoffLimit": 0,
                     "template": {"metadata": {"annotations": ann, "labels": labels or {}},
                                  "spec": spec}}}))

    def workload(self, job, namespace):
        for w in self.cluster.get_json("workloads", "-n", namespace)["items"]:
            if any(o.get("kind") == "Job" and o.get("name") == job
                   for o in w["metadata"].get("ownerReferences", [])):
                return w
        return None

    def admitted(self, job, namespace):
        w = self.workload(job, namespace)
        c = w and condition(w, "Admitted")
        return w if c and c["status"] == "True" else None

    def pods(self, job, namespace):
        return self.cluster.get_json("pods", "-n", namespace, "-l",
                                     f"batch.kubernetes.io/job-name={job}")["items"]

    def live_pods(self, job, namespace):
        return [p for p in self.pods(job, namespace) if not p["metadata"].get("deletionTimestamp")]

    def node_labels(self, name):
        return self.cluster.get_json("node", name)["metadata"]["labels"]

    def wait_bound(self, job, namespace, count, timeout=90):
        def bound():
            pods = self.live_pods(job, namespace)
            ok = [p for p in pods if p["spec"].get("nodeName")]
            return len(ok) == count and len(pods) == count and ok
        return self.cluster.wait_for(bound, timeout=timeout, what=f"{namespace}/{job}: {count} pods bound")

    def assert_placed_on_flavor(self, job, namespace, count):
        """The Job's Workload is admitted; each pod carries the flavor's node labels as a node
        selector (Kueue's), was bound by gpusched and sits on a node of that flavor."""
        w = self.cluster.wait_for(lambda: self.admitted(job, namespace), timeout=60,
                                  what=f"{namespace}/{job} admitted")
        flavor = w["status"]["admission"]["podSetAssignments"][0]["flavors"][GPU]
        want = FLAVOR_LABELS[flavor]
        pods = self.wait_bound(job, namespace, count)
        names = {p["metadata"]["name"] for p in pods}

        def scheduled_events():
            got = {e.get("regarding", {}).get("name"): e for e in events(self.cluster, namespace)
                   if e.get("reason") == "Scheduled"}
            return names <= set(got) and got
        # Events are written after the bind, asynchronously.
        scheduled = self.cluster.wait_for(scheduled_events, timeout=30,
                                          what=f"Scheduled events of {sorted(names)}")
        for p in pods:
            name = p["metadata"]["name"]
            self.assertEqual(p["spec"]["schedulerName"], SCHEDULER_NAME)
            for k, v in want.items():
                self.assertEqual(p["spec"].get("nodeSelector", {}).get(k), v,
                                 f"{name}: Kueue's node selector for flavor {flavor}")
            labels = self.node_labels(p["spec"]["nodeName"])
            for k, v in want.items():
                self.assertEqual(labels.get(k), v,
                                 f"{name} on {p['spec']['nodeName']}, outside flavor {flavor} "
                                 f"({k}={v})")
            self.assertEqual(scheduled[name].get("reportingController"), SCHEDULER_NAME,
                             f"{name} was not bound by gpusched")
        return w, flavor, pods

    def gpu_usage(self, cq, flavor):
        """(total, borrowed) GPUs of ClusterQueue `cq` on `flavor` (its status.flavorsUsage)."""
        for f in self.cluster.get_json("clusterqueue", cq).get("status", {}).get("flavorsUsage", []):
            if f["name"] == flavor:
                for r in f.get("resources", []):
                    if r["name"] == GPU:
                        return int(r.get("total", "0")), int(r.get("borrowed", "0"))
        return 0, 0

    # --- tests -------------------------------------------------------------------------------

    def test_a_quota_borrowing_and_preemption_between_two_teams(self):
        c = self.cluster
        a100 = {A100_LABEL: A100}
        # team-a's first Job names no GPU model: Kueue picks flavor a100 (first with room) and
        # injects its node selector; without it gpusched would pack onto the half-used H100s.
        self.job("a1", "team-a", 2, 4)
        _, flavor, _ = self.assert_placed_on_flavor("a1", "team-a", 2)
        self.assertEqual(flavor, "a100")
        log("a1: admitted on a100, both pods on A100 nodes")

        self.job("b1", "team-b", 2, 4, node_selector=a100)
        self.assert_placed_on_flavor("b1", "team-b", 2)

        # Beyond team-a's quota with team-b using its own: a2 waits, suspended, unadmitted.
        self.job("a2", "team-a", 2, 4, node_selector=a100)

        def pending():
            w = self.workload("a2", "team-a")
            qr = w and condition(w, "QuotaReserved")
            return (qr and qr["status"] == "False"
                    and "insufficient unused quota" in qr.get("message", "") and qr)
        qr = c.wait_for(pending, timeout=60, what="a2's Workload evaluated and left pending")
        log(f"a2 pending: {qr.get('reason')}: {qr.get('message')}")
        self.assertTrue(c.get_json("job", "a2", "-n", "team-a")["spec"]["suspend"])
        self.assertIsNone(self.admitted("a2", "team-a"))
        self.assertEqual(self.pods("a2", "team-a"), [])
        c.wait_for(lambda: self.gpu_usage("team-a", "a100") == (8, 0), timeout=30,
                   what="team-a using its 8 nominal A100 GPUs, none borrowed")

        # team-b goes idle: a2 borrows team-b's unused A100 quota.
        c.kubectl("delete", "job", "b1", "-n", "team-b", "--cascade=foreground", "--wait=true")
        w, _, _ = self.assert_placed_on_flavor("a2", "team-a", 2)
        c.wait_for(lambda: self.gpu_usage("team-a", "a100") == (16, 8), timeout=30,
                   what="team-a using 16 A100 GPUs, 8 of them borrowed")
        log("a2: admitted by borrowing team-b's quota; pods on A100 nodes")

        # team-b needs its quota back: Kueue preempts the borrower, gpusched places b2.
        self.job("b2", "team-b", 2, 4, node_selector=a100)

        def a2_preempted():
            w = self.workload("a2", "team-a")
            ev = w and condition(w, "Evicted")
            return ev and ev["status"] == "True" and ev
        ev = c.wait_for(a2_preempted, timeout=60, what="a2 evicted by Kueue")
        log(f"a2 evicted: {ev.get('reason')}: {ev.get('message')}")
        self.assertEqual(ev.get("reason"), "Preempted")
        pre = condition(self.workload("a2", "team-a"), "Preempted")
        self.assertTrue(pre and pre["status"] == "True", f"a2's Preempted condition: {pre}")
        self.assertEqual(pre.get("reason"), "InCohortReclamation")
        self.assert_placed_on_flavor("b2", "team-b", 2)
        c.wait_for(lambda: c.get_json("job", "a2", "-n", "team-a")["spec"]["suspend"]
                   and not self.live_pods("a2", "team-a"),
                   timeout=60, what="a2 suspended again with no pods")
        c.wait_for(lambda: self.gpu_usage("team-b", "a100") == (8, 0)
                   and self.gpu_usage("team-a", "a100") == (8, 0), timeout=30,
                   what="team-b back on its 8 A100 GPUs, team-a on 8, nothing borrowed")
        self.assertIsNone(self.admitted("a2", "team-a"))
        # a1 (within team-a's nominal quota) kept running throughout.
        self.assertEqual(len(self.live_pods("a1", "team-a")), 2)

    def test_b_topology_aware_job_lands_in_one_zone(self):
        c = self.cluster
        # deploy/kueue/tas-job.yaml's pod shape, with the test's run time; its pods are also a
        # gang of gpusched (PodGroup tas, minMember 3), so the gang waits for Kueue's gates.
        c.apply({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                 "metadata": {"name": "tas"}, "spec": {"minMember": 3}}, namespace="team-b")
        self.job("tas", "team-b", 3, 4, node_selector={H100_LABEL: H100},
                 annotations={"kueue.x-k8s.io/podset-required-topology": ZONE},
                 labels={"scheduling.x-k8s.io/pod-group": "tas"})
        w, flavor, pods = self.assert_placed_on_flavor("tas", "team-b", 3)
        self.assertEqual(flavor, "h100")
        ta = w["status"]["admission"]["podSetAssignments"][0].get("topologyAssignment")
        self.assertTrue(ta, f"no topology assignment in {w['status']['admission']}")
        log(f"tas: topology assignment {json.dumps(ta)}")
        # Kueue created the pods gated (the gate is in the unsuspended Job's template) ...
        template = c.get_json("job", "tas", "-n", "team-b")["spec"]["template"]["spec"]
        self.assertIn(TOPOLOGY_GATE, [g["name"] for g in template.get("schedulingGates", [])])
        zones = set()
        for p in pods:
            sel = p["spec"].get("nodeSelector", {})
            node = p["spec"]["nodeName"]
            labels = self.node_labels(node)
            # ... and its ungater removed the gate once it had pinned the pod to its domain.
            self.assertNotIn(TOPOLOGY_GATE, [g["name"] for g in p["spec"].get("schedulingGates", [])])
            injected = {k: v for k, v in sel.items() if k in (ZONE, HOSTNAME)}
            self.assertTrue(injected, f"{p['metadata']['name']}: no topology node selector: {sel}")
            for k, v in injected.items():
                self.assertEqual(labels.get(k), v, f"{p['metadata']['name']} on {node} outside "
                                 f"its Kueue domain {k}={v}")
            zones.add(labels[ZONE])
        self.assertEqual(zones, {"zone-b"}, "the TAS Job must land in one zone, the one with room")
        # gpusched never tried a gated pod (the API server refuses to bind one: such an attempt
        # leaves an event about the scheduling gates).
        names = {p["metadata"]["name"] for p in pods}
        gated = [f"{e.get('reason')}: {e.get('note')}" for e in events(c, "team-b")
                 if e.get("regarding", {}).get("name") in names
                 and "gate" in (e.get("note") or "").lower()]
        self.assertEqual(gated, [], "gpusched acted on a gated pod")
        log(f"tas: pods on {sorted(p['spec']['nodeName'] for p in pods)}, all in zone-b")
        # gpusched placed them as one gang (it writes PodGroup statuses once a second).
        c.wait_for(lambda: c.get_json("podgroups.scheduling.x-k8s.io", "tas", "-n", "team-b").get("status", {})
                   .get("phase") in ("Scheduling", "Running"),
                   timeout=30, what="PodGroup team-b/tas phase Scheduling or Running")


if __name__ == "__main__":
    unittest.main(verbosity=2)
