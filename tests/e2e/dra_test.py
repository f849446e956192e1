#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""GPUs through Dynamic Resource Allocation by `gpusched scheduler` (issue #23, docs/dra.md).

One control plane (kube-apiserver 1.37 serving resource.k8s.io/v1; kube-controller-manager with
every controller, the resourceclaim controller among them, which creates a pod's claims from its
ResourceClaimTemplates and releases them when the pod goes) and one gpusched with the default
profile, on the RBAC deploy/ gives it for DRA. No driver runs: each test publishes, for its kwok
nodes, the ResourceSlices the NVIDIA DRA driver would (lib/dra.py: 8 GPUs per node, productName,
index, uuid, cliqueId in two cliques of 4, capacity memory) and the DeviceClass gpu.nvidia.com.

  test_a  templates asking by product name (CEL on productName) and by memory (capacity
          compareTo): every pod is bound and every claim's allocation is valid (lib/dra.py's
          validator: the devices exist in a slice of the pod's node and satisfy the selectors,
          the counts, no device in two claims, reservedFor names the pod, the finalizer is there).
  test_b  one ResourceClaim (resourceClaimName) shared by two pods: both on the same node, both
          in reservedFor, one allocation.
  test_c  matchAttribute gpu.nvidia.com/cliqueId on a 4-GPU claim: with gpu-0 and gpu-1 taken
          (clique 0), free devices span both cliques and the first four free are not in one
          clique; the claim gets gpu-4..gpu-7. With gpu-0 and gpu-4 taken, no clique has four free
          and the pod is unschedulable.
  test_d  impossible requests (a product no device has; 9 GPUs of an 8-GPU node): FailedScheduling
          with "cannot allocate all claims".
  test_e  deploy/examples/dra/ (docs/dra.md's examples) pass server-side dry run.
  test_f  preemption of DRA devices (upstream cannot, KEP-5690): a low-priority pod's claim holds
          all 8 GPUs of the one node; a high-priority pod asking for 4 gets the low one preempted
          (its claim released by kube-controller-manager) and binds with a valid allocation.
  test_g  partitionable devices (KEP-4815; DRAPartitionableDevices, alpha in 1.35, beta and on by
          default in 1.37): one A100 80GB published as a counter set and its MIG placements (lib/dra.py
          mig_slices). Three pods asking for 3g.40gb: two bind, on the two halves; the third and a
          7g.80gb pod are rejected with "cannot allocate all claims" (no counter over-drawn: the
          validator sums every allocated device's draws). Deleting one bound pod releases its half
          and the third 3g.40gb pod binds; the 7g.80gb pod still waits.
  test_h  consumable capacity (KEP-5075; DRAConsumableCapacity, alpha in 1.35, beta in 1.37): one H100 that
          allows multiple allocations, memory 80Gi in steps of 8Gi. Two pods asking for 30Gi
          share it (the apiserver stores each share's shareID and consumedCapacity, 32Gi); a
          third is rejected with "cannot allocate all claims" (16Gi left); deleting one bound pod
          lets it bind. The validator sums every share's consumedCapacity against the capacity.
  test_i  extended resources backed by DRA (KEP-5004; DRAExtendedResource, alpha in 1.35, GA in 1.37): a
          DeviceClass with extendedResourceName nvidia.com/gpu, a DRA-only node (8 GPUs in its
          slice) and a device-plugin node (allocatable nvidia.com/gpu: 2). Five plain pods
          asking `nvidia.com/gpu: 2` all bind: those on the DRA node each get a claim the
          scheduler created ("<pod>-extended-resources-<5>", owned by the pod, annotated,
          allocated with 2 devices, named in the pod's status.extendedResourceClaimStatus), the
          one on the device-plugin node none; a sixth is rejected. The validator checks every
          claim.
  test_j  device taints (KEP-5055; DRADeviceTaints, alpha in 1.35, GA in 1.37; the gate
          on the apiserver and kube-controller-manager): every GPU of one node tainted NoSchedule, three pods with a
          1-GPU claim all bind on the other node; then a NoExecute taint on the device one of them
          holds: kube-controller-manager's device-taint-eviction controller evicts that pod (as
          gpusched leaves eviction to it, docs/dra.md), the others stay, and a new pod's claim
          does not get the tainted device.
  test_k  (1.37) ResourceClaims of a native PodGroup (KEP-5729; DRAWorkloadResourceClaims, beta
          and off by default in 1.37, with GenericWorkload): a PodGroup of 3 lists claim "fabric"
          (1 GPU) from a template; each member uses it and a 2-GPU claim of its own.
          kube-controller-manager makes one "fabric" claim, owned by the PodGroup, and names it
          in the PodGroup's and every member's status; gpusched places the gang on one node (the
          shared device's), allocates "fabric" once and reserves it for the PodGroup
          (reservedFor: scheduling.k8s.io podgroups), each member's own claim for the member.
  test_l  (1.37) a DeviceTaintRule (KEP-5055; DRADeviceTaintRules, GA in 1.37, resource.k8s.io/v1)
          taints every GPU of one node's pool NoSchedule (its slice carries no taint): of three
          pods with a 1-GPU claim, two bind on the other node (2 GPUs) and the third is
          rejected with "cannot allocate all claims"; deleting the rule lets it bind on the
          first node. The validator checks every claim.
"""

import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase, kube_minor, make_kwok_node  # noqa: E402
from dra import (  # noqa: E402
    A100_80, API, DRIVER, H100, claim_spec, claim_template, device_class, dra_node, dra_pod, gpu_pod, gpu_slice,
    grant_dra_rbac, index_below_selector, memory_selector, mig_slices, parse_quantity,
    pod_claim_name, product_selector, profile_selector, resource_claim, shared_gpu_slice,
    validate_allocations)
from gpusched_harness import (  # noqa: E402
    GROUP_LABEL, Gpusched, events, log, pod_condition, wait_nodes_ready, write_config)
from gpusched_harness import SCHEDULER_NAME as GPUSCHED_NAME  # noqa: E402

# The scheduler under test; "default-scheduler" runs the same checks against kube-scheduler
# (debugging the test itself).
SCHEDULER_NAME = os.environ.get("GPUSCHED_E2E_DRA_SCHEDULER", GPUSCHED_NAME)
KUBE_MINOR = kube_minor()
# 1.37: a native PodGroup's resourceClaims (beta, off by default) need the native PodGroup API.
WORKLOAD_GATES = ",GenericWorkload=true,DRAWorkloadResourceClaims=true" if KUBE_MINOR >= 37 else ""
WORKLOAD_API = ",scheduling.k8s.io/v1beta1=true" if KUBE_MINOR >= 37 else ""
PODGROUP_RBAC_RULES = [
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["podgroups"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["podgroups/status"],
     "verbs": ["patch", "update"]},
]


class DraE2ETest(ClusterTestCase):
    # sharedCounters / consumesCounters and allowMultipleAllocations / capacity requests /
    # shareID / consumedCapacity are dropped by a 1.35 apiserver without the gates; 1.37 has them
    # on by default (the gates are named so that the file also runs on 1.35).
    cluster_kwargs = {"extra_args": {
        "apiserver": ["--feature-gates=DRAPartitionableDevices=true,DRAConsumableCapacity=true,"
                      "DRAExtendedResource=true,DRADeviceTaints=true" + WORKLOAD_GATES,
                      # DeviceTaintRules: the device-taint-eviction controller's informer.
                      "--runtime-config=resource.k8s.io/v1alpha3=true" + WORKLOAD_API],
        "kcm": ["--feature-gates=DRADeviceTaints=true" + WORKLOAD_GATES]}}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        c = cls.cluster
        grant_dra_rbac(c, extra_rules=PODGROUP_RBAC_RULES if KUBE_MINOR >= 37 else ())
        c.apply(device_class())
        cls.gpusched = Gpusched(c, write_config(c.dir, "dra.yaml"), name="gpusched-dra").start()

    @classmethod
    def tearDownClass(cls):
        if cls.gpusched.alive():
            cls.gpusched.kill()
        super().tearDownClass()

    def setUp(self):
        self.t0 = time.monotonic()
        self.ns = self.cluster.new_namespace("dra")
        self.addCleanup(self.cleanup)

    def cleanup(self):
        c = self.cluster
        c.kubectl("delete", "namespace", self.ns, "--wait=false", "--ignore-not-found")
        c.kubectl("delete", "nodes,resourceslices", "-l", f"{GROUP_LABEL}={self.ns}",
                  "--wait=false", "--ignore-not-found")
        log(f"MEASURED {self.id().split('.')[-1]}: took {time.monotonic() - self.t0:.1f}s")

    # --- helpers -------------------------------------------------------------------------------

    def nodes(self, products):
        """One kwok node and one slice per product; returns the node names."""
        names = [f"{self.ns}-{i}" for i in range(len(products))]
        self.cluster.apply([dra_node(n, self.ns) for n in names])
        self.cluster.apply([gpu_slice(n, p, self.ns) for n, p in zip(names, products)])
        wait_nodes_ready(self.cluster, f"{GROUP_LABEL}={self.ns}", len(names))
        return names

    def get(self, kind, name=None):
        args = [kind] + ([name] if name else []) + ["--namespace", self.ns]
        return self.cluster.get_json(*args)

    def wait_bound(self, names, timeout=60):
        def bound():
            pods = {p["metadata"]["name"]: p for p in self.get("pods")["items"]}
            ok = [pods[n] for n in names if n in pods and pods[n]["spec"].get("nodeName")]
            return len(ok) == len(names) and ok
        return self.cluster.wait_for(bound, timeout=timeout, what=f"pods {names} bound")

    def wait_rejected(self, name, want="cannot allocate all claims", timeout=60):
        """The pod's PodScheduled=False condition once its message names `want`: the first
        attempts may find the claim not yet made by kube-controller-manager (upstream's "pod
        ...: ResourceClaim not created yet"), and the pod is retried when it appears."""
        def rejected():
            cond = pod_condition(self.get("pod", name))
            return (cond and cond.get("reason") == "Unschedulable"
                    and want in cond.get("message", "") and cond)
        return self.cluster.wait_for(rejected, timeout=timeout,
                                     what=f"{name} Unschedulable with {want!r}")

    def claims_of(self, pods):
        claims = {c["metadata"]["name"]: c for c in self.get("resourceclaims")["items"]}
        return {p["metadata"]["name"]: claims.get(pod_claim_name(p)) for p in pods}

    def validate(self):
        """The validator over everything in the namespace; fails with every violation."""
        claims = self.get("resourceclaims")["items"]
        slices = self.cluster.get_json("resourceslices", "-l", f"{GROUP_LABEL}={self.ns}")["items"]
        classes = self.cluster.get_json("deviceclasses")["items"]
        pods = self.get("pods")["items"]
        problems = validate_allocations(claims, slices, classes, pods)
        self.assertEqual(problems, [], "invalid allocations:\n" + "\n".join(problems))
        return claims

    def wait_allocated(self, pod_names, timeout=30):
        """The pods' claims, once each is allocated and reserved for its pod (PreBind's write
        precedes the binding, so this is normally at once)."""
        def allocated():
            pods = [self.get("pod", n) for n in pod_names]
            claims = self.claims_of(pods)
            ok = all(c and (c.get("status") or {}).get("allocation") for c in claims.values())
            return ok and (pods, claims)
        return self.cluster.wait_for(allocated, timeout=timeout, what="claims allocated")

    @staticmethod
    def devices(claim):
        return sorted(r["device"] for r in claim["status"]["allocation"]["devices"]["results"])

    # --- tests ---------------------------------------------------------------------------------

    def test_a_templates_by_product_and_memory_bind_with_valid_allocations(self):
        a100, h100 = self.nodes([A100_80, H100])
        self.cluster.apply([
            claim_template("h100-x2", claim_spec(2, [product_selector(H100)])),
            claim_template("a100-x3", claim_spec(3, [product_selector(A100_80)])),
            claim_template("big-x1", claim_spec(1, [memory_selector("80Gi")])),
        ], namespace=self.ns)
        pods = ([dra_pod(f"h100-{i}", SCHEDULER_NAME, self.ns, template="h100-x2") for i in range(3)]
                + [dra_pod(f"a100-{i}", SCHEDULER_NAME, self.ns, template="a100-x3")
                   for i in range(2)]
                + [dra_pod(f"big-{i}", SCHEDULER_NAME, self.ns, template="big-x1") for i in range(3)])
        self.cluster.apply(pods, namespace=self.ns)
        names = [p["metadata"]["name"] for p in pods]
        bound = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in self.wait_bound(names)}
        for n in names:
            if n.startswith("h100-"):
                self.assertEqual(bound[n], h100, n)
            if n.startswith("a100-"):
                self.assertEqual(bound[n], a100, n)
        pods, claims = self.wait_allocated(names)
        for p in pods:
            c = claims[p["metadata"]["name"]]
            reserved = [(r["resource"], r["name"], r["uid"]) for r in c["status"]["reservedFor"]]
            self.assertEqual(reserved, [("pods", p["metadata"]["name"], p["metadata"]["uid"])])
        self.validate()
        log("placements: " + json.dumps(bound, sort_keys=True))

    def test_b_a_shared_claim_serves_two_pods_on_one_node(self):
        self.nodes([H100, H100])
        self.cluster.apply(resource_claim("team", claim_spec(2, [product_selector(H100)])),
                           namespace=self.ns)
        self.cluster.apply([dra_pod(f"user-{i}", SCHEDULER_NAME, self.ns, claim="team")
                            for i in range(2)], namespace=self.ns)
        pods = self.wait_bound(["user-0", "user-1"])
        self.assertEqual(len({p["spec"]["nodeName"] for p in pods}), 1,
                         f"one node: {[p['spec']['nodeName'] for p in pods]}")

        def both_reserved():
            c = self.get("resourceclaim", "team")
            uids = {r["uid"] for r in (c.get("status") or {}).get("reservedFor", [])}
            return uids == {p["metadata"]["uid"] for p in pods} and c
        claim = self.cluster.wait_for(both_reserved, timeout=30, what="both pods in reservedFor")
        self.assertEqual(len(self.devices(claim)), 2)
        self.validate()
        log(f"shared claim on {pods[0]['spec']['nodeName']}: {self.devices(claim)}")

    def test_c_match_attribute_keeps_a_claim_in_one_clique(self):
        spread, split = self.nodes([H100, H100])
        self.cluster.apply([
            claim_template("low-two", claim_spec(2, [index_below_selector(2)])),
            claim_template("clique-x4", claim_spec(4, same_clique=True)),
        ], namespace=self.ns)
        # gpu-0 and gpu-1 taken on `spread`: free are gpu-2, gpu-3 (clique 0) and gpu-4..7.
        self.cluster.apply(dra_pod("hold-01", SCHEDULER_NAME, self.ns, template="low-two",
                                   node=spread), namespace=self.ns)
        self.wait_bound(["hold-01"])
        _, claims = self.wait_allocated(["hold-01"])
        self.assertEqual(self.devices(claims["hold-01"]), ["gpu-0", "gpu-1"])
        self.cluster.apply(dra_pod("four", SCHEDULER_NAME, self.ns, template="clique-x4",
                                   node=spread), namespace=self.ns)
        self.wait_bound(["four"])
        _, claims = self.wait_allocated(["four"])
        self.assertEqual(self.devices(claims["four"]), ["gpu-4", "gpu-5", "gpu-6", "gpu-7"],
                         "the one clique with four free devices")

        # On `split`, gpu-0 (clique 0) and gpu-4 (clique 1) taken: six free, no clique of four.
        self.cluster.apply(resource_claim("hold-0", claim_spec(1, [index_below_selector(1)])),
                           namespace=self.ns)
        self.cluster.apply(dra_pod("hold-0", SCHEDULER_NAME, self.ns, claim="hold-0", node=split),
                           namespace=self.ns)
        self.wait_bound(["hold-0"])
        self.cluster.apply(resource_claim("hold-4", claim_spec(
            1, [f'device.attributes["gpu.nvidia.com"].uuid == "GPU-{split}-04"'])),
            namespace=self.ns)
        self.cluster.apply(dra_pod("hold-4", SCHEDULER_NAME, self.ns, claim="hold-4", node=split),
                           namespace=self.ns)
        self.wait_bound(["hold-4"])
        self.cluster.apply(dra_pod("four-split", SCHEDULER_NAME, self.ns, template="clique-x4",
                                   node=split), namespace=self.ns)
        cond = self.wait_rejected("four-split")
        self.assertIn("cannot allocate all claims", cond.get("message", ""))
        self.assertFalse(self.get("pod", "four-split")["spec"].get("nodeName"))
        self.validate()
        log(f"clique claim: {self.devices(claims['four'])}; split node: {cond.get('message')}")

    def test_d_impossible_requests_fail_with_a_clear_message(self):
        self.nodes([A100_80, H100])
        self.cluster.apply([
            claim_template("b200", claim_spec(1, [product_selector("NVIDIA B200")])),
            claim_template("nine", claim_spec(9)),
        ], namespace=self.ns)
        self.cluster.apply([dra_pod("b200", SCHEDULER_NAME, self.ns, template="b200"),
                            dra_pod("nine", SCHEDULER_NAME, self.ns, template="nine")],
                           namespace=self.ns)
        for name in ("b200", "nine"):
            cond = self.wait_rejected(name)
            self.assertIn("cannot allocate all claims", cond.get("message", ""), name)

            def event():
                for e in events(self.cluster, self.ns):
                    if (e.get("reason") == "FailedScheduling"
                            and e.get("regarding", {}).get("name") == name
                            and "cannot allocate all claims" in e.get("note", "")):
                        return e
                return None
            e = self.cluster.wait_for(event, timeout=30, what=f"FailedScheduling for {name}")
            self.assertIn("cannot allocate all claims", e.get("note", ""))
            log(f"{name}: {e.get('note')}")
        self.validate()

    def test_f_preemption_frees_devices_held_by_a_lower_priority_claim(self):
        (node,) = self.nodes([H100])
        c = self.cluster
        for name, value in (("e2e-dra-low", 100), ("e2e-dra-high", 1000)):
            c.apply({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                     "metadata": {"name": name}, "value": value})
        c.apply([claim_template("all-eight", claim_spec(8)),
                 claim_template("four", claim_spec(4))], namespace=self.ns)
        low = dra_pod("low", SCHEDULER_NAME, self.ns, template="all-eight", node=node)
        low["spec"]["priorityClassName"] = "e2e-dra-low"
        c.apply(low, namespace=self.ns)
        self.wait_bound(["low"])
        _, claims = self.wait_allocated(["low"])
        self.assertEqual(len(self.devices(claims["low"])), 8)
        low_uid = self.get("pod", "low")["metadata"]["uid"]

        high = dra_pod("high", SCHEDULER_NAME, self.ns, template="four", node=node)
        high["spec"]["priorityClassName"] = "e2e-dra-high"
        c.apply(high, namespace=self.ns)
        self.wait_bound(["high"], timeout=120)
        _, claims = self.wait_allocated(["high"])
        self.assertEqual(len(self.devices(claims["high"])), 4)
        pods = {p["metadata"]["name"]: p for p in self.get("pods")["items"]}
        self.assertTrue("low" not in pods or pods["low"]["metadata"]["uid"] != low_uid
                        or pods["low"]["metadata"].get("deletionTimestamp"),
                        "the low-priority pod was not preempted")
        preempted = [e for e in events(c, self.ns)
                     if e.get("reason") == "Preempted"
                     and e.get("regarding", {}).get("name") == "low"]
        self.assertTrue(preempted, "no Preempted event for the low-priority pod")
        self.validate()
        log(f"preempted: {preempted[0].get('note')}; high got {self.devices(claims['high'])}")

    def test_e_the_documented_examples_pass_server_side_dry_run(self):
        c = self.cluster
        try:
            c.kubectl("create", "namespace", "ml")
        except Exception:  # noqa: BLE001 - already there
            pass
        examples = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy",
                                "examples", "dra")
        for name in sorted(os.listdir(examples)):
            out = c.kubectl("apply", "--dry-run=server", "-f", os.path.join(examples, name))
            lines = [ln for ln in out.splitlines() if ln.strip()]
            self.assertTrue(lines and all("(server dry run)" in ln for ln in lines), out)
            log(f"{name}: {len(lines)} objects pass server-side dry run")

    def test_g_mig_partitions_never_over_draw_their_gpu(self):
        c = self.cluster
        node = f"{self.ns}-mig"
        c.apply(dra_node(node, self.ns))
        c.apply(mig_slices(node, self.ns))
        wait_nodes_ready(c, f"{GROUP_LABEL}={self.ns}", 1)
        published = c.get_json("resourceslice", f"{node}-counters")["spec"]
        self.assertIn("sharedCounters", published, "the apiserver dropped sharedCounters")
        c.apply([claim_template("half", claim_spec(1, [profile_selector("3g.40gb")])),
                 claim_template("whole", claim_spec(1, [profile_selector("7g.80gb")]))],
                namespace=self.ns)
        c.apply([dra_pod(f"half-{i}", SCHEDULER_NAME, self.ns, template="half") for i in range(2)],
                namespace=self.ns)
        self.wait_bound(["half-0", "half-1"])
        _, claims = self.wait_allocated(["half-0", "half-1"])
        halves = sorted(self.devices(claims[n])[0] for n in ("half-0", "half-1"))
        self.assertEqual(halves, ["gpu-0-mig-3g-0", "gpu-0-mig-3g-4"])
        c.apply([dra_pod("half-2", SCHEDULER_NAME, self.ns, template="half"),
                 dra_pod("whole", SCHEDULER_NAME, self.ns, template="whole")], namespace=self.ns)
        self.wait_rejected("half-2")
        self.wait_rejected("whole")
        self.validate()
        c.kubectl("delete", "pod", "half-0", "--namespace", self.ns, "--wait=false")
        self.wait_bound(["half-2"], timeout=90)
        _, claims = self.wait_allocated(["half-2"])
        self.assertEqual(self.get("pod", "whole")["spec"].get("nodeName"), None)
        self.validate()
        log(f"halves {halves}; after half-0 left, half-2 got {self.devices(claims['half-2'])}")

    def test_h_capacity_shares_one_gpu_and_the_third_waits(self):
        c = self.cluster
        node = f"{self.ns}-shared"
        c.apply(dra_node(node, self.ns))
        c.apply(shared_gpu_slice(node, self.ns))
        wait_nodes_ready(c, f"{GROUP_LABEL}={self.ns}", 1)
        published = c.get_json("resourceslice", f"{node}-shared")["spec"]["devices"][0]
        self.assertTrue(published.get("allowMultipleAllocations"),
                        "the apiserver dropped allowMultipleAllocations")
        c.apply(claim_template("slice30", claim_spec(1, capacity={"memory": "30Gi"})),
                namespace=self.ns)
        c.apply([dra_pod(f"share-{i}", SCHEDULER_NAME, self.ns, template="slice30")
                 for i in range(2)], namespace=self.ns)
        self.wait_bound(["share-0", "share-1"])
        _, claims = self.wait_allocated(["share-0", "share-1"])
        results = [claims[n]["status"]["allocation"]["devices"]["results"][0]
                   for n in ("share-0", "share-1")]
        self.assertEqual([r["device"] for r in results], ["gpu-0", "gpu-0"])
        self.assertNotEqual(results[0].get("shareID"), results[1].get("shareID"))
        for r in results:
            self.assertEqual(parse_quantity(r["consumedCapacity"]["memory"]), 32 << 30, r)
        c.apply(dra_pod("share-2", SCHEDULER_NAME, self.ns, template="slice30"),
                namespace=self.ns)
        self.wait_rejected("share-2")
        self.validate()
        c.kubectl("delete", "pod", "share-0", "--namespace", self.ns, "--wait=false")
        self.wait_bound(["share-2"], timeout=90)
        self.wait_allocated(["share-2"])
        self.validate()
        log(f"shares {[r.get('shareID') for r in results]}; share-2 bound after share-0 left")

    def test_i_plain_gpu_pods_get_claims_on_dra_only_nodes(self):
        c = self.cluster
        ext_class = device_class()
        ext_class["metadata"]["name"] = "gpu-ext.nvidia.com"
        ext_class["spec"]["extendedResourceName"] = "nvidia.com/gpu"
        c.apply(ext_class)
        self.addCleanup(c.kubectl, "delete", "deviceclass", "gpu-ext.nvidia.com",
                        "--ignore-not-found")
        stored = c.get_json("deviceclass", "gpu-ext.nvidia.com")["spec"]
        self.assertEqual(stored.get("extendedResourceName"), "nvidia.com/gpu",
                         "the apiserver dropped extendedResourceName")
        (dra,) = self.nodes([H100])
        plugin = f"{self.ns}-plugin"
        c.apply(make_kwok_node(plugin, labels={GROUP_LABEL: self.ns},
                               allocatable={"nvidia.com/gpu": 2}))
        wait_nodes_ready(c, f"{GROUP_LABEL}={self.ns}", 2)
        names = [f"plain-{i}" for i in range(5)]
        c.apply([gpu_pod(n, SCHEDULER_NAME, self.ns, 2) for n in names], namespace=self.ns)
        bound = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in self.wait_bound(names)}
        on_dra = sorted(n for n, node in bound.items() if node == dra)
        self.assertEqual(len(on_dra), 4, bound)
        self.assertEqual([n for n, node in bound.items() if node == plugin], sorted(
            set(names) - set(on_dra)), bound)

        def claimed():
            pods = {n: self.get("pod", n) for n in on_dra}
            ok = all((p.get("status") or {}).get("extendedResourceClaimStatus")
                     for p in pods.values())
            return ok and pods
        pods = c.wait_for(claimed, timeout=30, what="extendedResourceClaimStatus on the pods")
        claims = {x["metadata"]["name"]: x for x in self.get("resourceclaims")["items"]}
        self.assertEqual(len(claims), 4, sorted(claims))
        for n, p in pods.items():
            status = p["status"]["extendedResourceClaimStatus"]
            claim = claims[status["resourceClaimName"]]
            self.assertTrue(claim["metadata"]["name"].startswith(f"{n}-extended-resources-"))
            self.assertEqual(claim["metadata"]["annotations"].get(
                "resource.kubernetes.io/extended-resource-claim"), "true")
            owner = claim["metadata"]["ownerReferences"][0]
            self.assertEqual((owner["kind"], owner["uid"], owner.get("controller")),
                             ("Pod", p["metadata"]["uid"], True))
            request = claim["spec"]["devices"]["requests"][0]
            self.assertEqual(request["exactly"]["deviceClassName"], "gpu-ext.nvidia.com")
            self.assertEqual(request["exactly"]["count"], 2)
            self.assertEqual(status["requestMappings"], [{
                "containerName": "main", "resourceName": "nvidia.com/gpu",
                "requestName": request["name"]}])
            self.assertEqual(len(self.devices(claim)), 2)
        self.validate()
        c.apply(gpu_pod("plain-5", SCHEDULER_NAME, self.ns, 2), namespace=self.ns)
        cond = self.wait_rejected("plain-5", want="0/2 nodes are available")
        log(f"on {dra}: {on_dra}; plain-5: {cond.get('message')}")

    def test_j_device_taints_keep_claims_off_and_no_execute_evicts(self):
        c = self.cluster
        tainted, clean = f"{self.ns}-tainted", f"{self.ns}-clean"
        c.apply([dra_node(tainted, self.ns), dra_node(clean, self.ns)])
        drained = gpu_slice(tainted, H100, self.ns)
        for d in drained["spec"]["devices"]:
            d["taints"] = [{"key": "example.com/maintenance", "effect": "NoSchedule"}]
        c.apply([drained, gpu_slice(clean, H100, self.ns)])
        wait_nodes_ready(c, f"{GROUP_LABEL}={self.ns}", 2)
        stored = c.get_json("resourceslice", f"{tainted}-gpu")["spec"]["devices"][0]
        self.assertTrue(stored.get("taints"), "the apiserver dropped the device taints")
        c.apply(claim_template("one", claim_spec(1)), namespace=self.ns)
        names = [f"t-{i}" for i in range(3)]
        c.apply([dra_pod(n, SCHEDULER_NAME, self.ns, template="one") for n in names],
                namespace=self.ns)
        pods = self.wait_bound(names)
        self.assertEqual({p["spec"]["nodeName"] for p in pods}, {clean})
        _, claims = self.wait_allocated(names)
        self.validate()

        victim = names[0]
        (device,) = self.devices(claims[victim])
        slice_ = c.get_json("resourceslice", f"{clean}-gpu")
        for d in slice_["spec"]["devices"]:
            if d["name"] == device:
                d["taints"] = [{"key": "example.com/broken", "effect": "NoExecute"}]
        c.apply(slice_)

        def evicted():
            pods = {p["metadata"]["name"]: p for p in self.get("pods")["items"]}
            p = pods.get(victim)
            return (p is None or p["metadata"].get("deletionTimestamp")) and pods
        pods = c.wait_for(evicted, timeout=90, what=f"{victim} evicted for the NoExecute taint")
        for n in names[1:]:
            self.assertTrue(pods[n]["spec"].get("nodeName") and
                            not pods[n]["metadata"].get("deletionTimestamp"), n)
        c.apply(dra_pod("t-new", SCHEDULER_NAME, self.ns, template="one"), namespace=self.ns)
        self.wait_bound(["t-new"])
        _, new_claims = self.wait_allocated(["t-new"])
        self.assertNotEqual(self.devices(new_claims["t-new"]), [device])
        log(f"NoSchedule node {tainted} unused; {victim} evicted for {device}; "
            f"t-new got {self.devices(new_claims['t-new'])}")



    @unittest.skipIf(KUBE_MINOR < 37, "resource.k8s.io/v1 DeviceTaintRules need Kubernetes 1.37")
    def test_l_a_device_taint_rule_keeps_new_claims_off_until_deleted(self):
        c = self.cluster
        ruled, clean = f"{self.ns}-ruled", f"{self.ns}-clean"
        c.apply([dra_node(ruled, self.ns), dra_node(clean, self.ns)])
        c.apply([gpu_slice(ruled, H100, self.ns, gpus=2), gpu_slice(clean, H100, self.ns, gpus=2)])
        wait_nodes_ready(c, f"{GROUP_LABEL}={self.ns}", 2)
        rule = f"{self.ns}-maintenance"
        c.apply({"apiVersion": API, "kind": "DeviceTaintRule", "metadata": {"name": rule},
                 "spec": {"deviceSelector": {"driver": DRIVER, "pool": ruled},
                          "taint": {"key": "example.com/maintenance", "effect": "NoSchedule"}}})
        self.addCleanup(c.kubectl, "delete", "devicetaintrule", rule, "--ignore-not-found")
        c.apply(claim_template("one", claim_spec(1)), namespace=self.ns)
        names = [f"r-{i}" for i in range(3)]
        c.apply([dra_pod(n, SCHEDULER_NAME, self.ns, template="one") for n in names[:2]],
                namespace=self.ns)
        pods = self.wait_bound(names[:2])
        self.assertEqual({p["spec"]["nodeName"] for p in pods}, {clean})
        c.apply(dra_pod(names[2], SCHEDULER_NAME, self.ns, template="one"), namespace=self.ns)
        self.wait_rejected(names[2])
        c.kubectl("delete", "devicetaintrule", rule)
        (pod,) = self.wait_bound(names[2:])
        self.assertEqual(pod["spec"]["nodeName"], ruled)
        self.wait_allocated(names)
        self.validate()
        log(f"{names[2]} waited while the rule tainted {ruled}'s GPUs, bound there once deleted")

    @unittest.skipIf(KUBE_MINOR < 37, "native PodGroups' resource claims need Kubernetes 1.37")
    def test_k_a_pod_groups_claim_is_shared_by_its_gang(self):
        self.nodes([H100, H100])
        self.cluster.apply([claim_template("fabric", claim_spec(1)),
                            claim_template("own-x2", claim_spec(2))], namespace=self.ns)
        self.cluster.apply({
            "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "train"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 3}},
                     "resourceClaims": [{"name": "fabric",
                                         "resourceClaimTemplateName": "fabric"}]}},
            namespace=self.ns)
        names = [f"w-{i}" for i in range(3)]
        members = []
        for n in names:
            pod = dra_pod(n, SCHEDULER_NAME, self.ns, template="own-x2")
            pod["spec"]["schedulingGroup"] = {"podGroupName": "train"}
            pod["spec"]["resourceClaims"].append(
                {"name": "fabric", "resourceClaimTemplateName": "fabric"})
            pod["spec"]["containers"][0]["resources"]["claims"].append({"name": "fabric"})
            members.append(pod)
        self.cluster.apply(members, namespace=self.ns)
        pods = self.wait_bound(names, timeout=90)
        nodes = {p["spec"]["nodeName"] for p in pods}
        self.assertEqual(len(nodes), 1, f"the gang on the shared device's node: {nodes}")
        group = self.get("podgroup.scheduling.k8s.io", "train")
        fabric = {s.get("name"): s.get("resourceClaimName")
                  for s in (group.get("status") or {}).get("resourceClaimStatuses", [])}["fabric"]
        for p in pods:
            named = {s["name"]: s.get("resourceClaimName")
                     for s in p["status"].get("resourceClaimStatuses", [])}
            self.assertEqual(named["fabric"], fabric, p["metadata"]["name"])

        def reserved_for_group():
            c = self.get("resourceclaim", fabric)
            status = c.get("status") or {}
            return status.get("allocation") and status.get("reservedFor") and c
        claim = self.cluster.wait_for(reserved_for_group, timeout=30, what="fabric allocated")
        owner = claim["metadata"]["ownerReferences"][0]
        self.assertEqual((owner["kind"], owner["name"]), ("PodGroup", "train"))
        self.assertEqual([(r.get("apiGroup"), r["resource"], r["name"], r["uid"])
                          for r in claim["status"]["reservedFor"]],
                         [("scheduling.k8s.io", "podgroups", "train", group["metadata"]["uid"])])
        (node,) = nodes
        self.assertEqual([r["pool"] for r in claim["status"]["allocation"]["devices"]["results"]],
                         [node])
        self.validate()  # the members' own claims, and no device in two claims
        own = [d for c in self.claims_of(pods).values() for d in self.devices(c)]
        log(f"gang on {node}: fabric {fabric} {self.devices(claim)}, own {sorted(own)}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
