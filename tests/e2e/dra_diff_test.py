#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""DRA placement by `gpusched scheduler` against the upstream kube-scheduler (issue #23).

One control plane: kube-apiserver 1.37 (resource.k8s.io/v1, with the DRAPartitionableDevices,
DRAConsumableCapacity and DRAExtendedResource gates: alpha in 1.35, beta or GA in 1.37),
kube-controller-manager (its resourceclaim controller creates claims from templates and releases
them), the upstream kube-scheduler v1.37 (schedulerName default-scheduler, DRA on by default, the same gates) and one
gpusched with the default profile. Seven kwok nodes: four with the slices an NVIDIA DRA driver
would publish (lib/dra.py): 8 GPUs each, "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3",
"NVIDIA A100-SXM4-40GB" (40Gi) and H100 again; one with two A100 80GB published as MIG counter
sets and their partitions (KEP-4815); one H100 shared by capacity (KEP-5075: memory 80Gi in steps
of 8Gi); one with NVIDIA's device plugin only (allocatable nvidia.com/gpu: 4). The DeviceClass
gpu-ext.nvidia.com backs `nvidia.com/gpu` (KEP-5004) with the whole GPUs of the first four.

A random mix from GPUSCHED_E2E_DRA_SEED (default 23): GPUSCHED_E2E_DRA_WORKLOADS (default 22)
workloads. 15 % are plain pods asking 1-2 `nvidia.com/gpu` (the device plugin's node or a claim
the scheduler makes); 10 % a MIG partition (1g.10gb, 2g.20gb or 3g.40gb); 10 % a share of 16Gi,
24Gi or 40Gi (capacity.requests); the rest each one pod with a claim from its own
ResourceClaimTemplate or, in a fifth of them, two pods sharing one ResourceClaim; counts 1-4; a
productName selector in 40 %, a memory selector (>= 40Gi or >= 80Gi) in 30 %, a matchAttribute
constraint on gpu.nvidia.com/cliqueId in 30 % of those asking for 2 or more. The demand exceeds
the GPUs, so some pods stay pending.

The mix is scheduled twice, one scheduler after the other, in fresh namespaces: first by
kube-scheduler, then — once the first phase's pods and claims are deleted and every claim is gone
(the devices released) — by gpusched. Pods are created with a scheduling gate, which is removed
in creation order once the controller made their claims, so both schedulers see them in the same
order. A phase ends when every pod is bound or Unschedulable and nothing changed for 5 s.

Checked: every allocation either scheduler made keeps the rules (lib/dra.py's validator: devices
exist on the pod's node, the class's and the request's selectors hold, counts, constraints, no
device in two claims, no counter over-drawn, shares within the capacity, reservedFor, finalizer;
extended resource claims found through the pods' status.extendedResourceClaimStatus), and
gpusched binds at least as many pods as kube-scheduler (issue #23). Both schedulers' pods bound
and GPUs allocated are printed (MEASURED lines). Both place pods while later ones are still
gated; gpusched looks ahead over the claims those pods wait for
(src/plugins/dynamic_resources/lookahead.h), kube-scheduler breaks ties at random.
"""

import json
import os
import random
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase, make_kwok_node  # noqa: E402
from dra import (  # noqa: E402
    A100_40, A100_80, H100, claim_spec, claim_template, device_class, dra_node, dra_pod,
    gpu_pod, gpu_slice, grant_dra_rbac, memory_selector, mig_slices, product_selector,
    profile_selector, resource_claim, shared_gpu_slice, validate_allocations)
from gpusched_harness import (  # noqa: E402
    GROUP_LABEL, SCHEDULER_NAME, Gpusched, log, wait_nodes_ready, wait_pods_settled, write_config)

SEED = int(os.environ.get("GPUSCHED_E2E_DRA_SEED", "23"))
WORKLOADS = int(os.environ.get("GPUSCHED_E2E_DRA_WORKLOADS", "22"))
PRODUCTS = [A100_80, H100, A100_40, H100]
GATE = "e2e.gpusched.io/ordered"
# Which schedulers run (debugging: "default-scheduler" alone checks the mix and the validator).
SCHEDULERS = os.environ.get("GPUSCHED_E2E_DRA_SCHEDULERS",
                            f"default-scheduler,{SCHEDULER_NAME}").split(",")


GATES = "--feature-gates=DRAPartitionableDevices=true,DRAConsumableCapacity=true,DRAExtendedResource=true"


def extended_class():
    """gpu-ext.nvidia.com: the whole GPUs (they have a uuid) behind `nvidia.com/gpu`."""
    c = device_class()
    c["metadata"]["name"] = "gpu-ext.nvidia.com"
    c["spec"]["selectors"][0]["cel"]["expression"] += \
        ' && has(device.attributes["gpu.nvidia.com"].uuid)'
    c["spec"]["extendedResourceName"] = "nvidia.com/gpu"
    return c


def allocated_devices(claims):
    """How many devices the claims' allocations hold (each shared claim once)."""
    return sum(len(((c.get("status") or {}).get("allocation") or {}).get("devices", {})
                   .get("results", [])) for c in claims)


def generate_mix(seed, workloads):
    """[(kind, name, spec, pod names)]: kind "template" (one pod), "shared" (two pods) or
    "extended" (one plain pod; spec is its nvidia.com/gpu count)."""
    rng = random.Random(seed)
    mix = []
    for i in range(workloads):
        name = f"w{i:02d}"
        kind = rng.random()
        if kind < 0.15:
            mix.append(("extended", name, rng.randint(1, 2), [name]))
            continue
        if kind < 0.25:
            profile = rng.choice(["1g.10gb", "2g.20gb", "3g.40gb"])
            # has() first: upstream fails the attempt on a device without the attribute.
            selector = f'has(device.attributes["gpu.nvidia.com"].profile) && ' \
                       f'{profile_selector(profile)}'
            mix.append(("template", name, claim_spec(1, [selector]), [name]))
            continue
        if kind < 0.35:
            memory = rng.choice(["16Gi", "24Gi", "40Gi"])
            mix.append(("template", name, claim_spec(1, capacity={"memory": memory}), [name]))
            continue
        count = rng.randint(1, 4)
        selectors = []
        if rng.random() < 0.4:
            selectors.append(product_selector(rng.choice([A100_80, H100, A100_40])))
        if rng.random() < 0.3:
            selectors.append(memory_selector(rng.choice(["40Gi", "80Gi"])))
        same_clique = count >= 2 and rng.random() < 0.3
        spec = claim_spec(count, selectors, same_clique=same_clique)
        if rng.random() < 0.2:
            mix.append(("shared", name, spec, [f"{name}-a", f"{name}-b"]))
        else:
            mix.append(("template", name, spec, [name]))
    return mix


def demand(mix):
    return sum(s if k == "extended" else s["devices"]["requests"][0]["exactly"]["count"]
               for k, _, s, _ in mix)


class DraDiffE2ETest(ClusterTestCase):
    cluster_kwargs = {"extra_args": {"apiserver": [GATES], "scheduler": [GATES]}}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        c = cls.cluster
        grant_dra_rbac(c)
        c.apply([device_class(), extended_class()])
        cls.group = "dra-diff"
        nodes = [f"dra-diff-{i}" for i in range(len(PRODUCTS))]
        c.apply([dra_node(n, cls.group) for n in nodes + ["dra-diff-mig", "dra-diff-shared"]])
        c.apply(make_kwok_node("dra-diff-plugin", labels={GROUP_LABEL: cls.group},
                               allocatable={"nvidia.com/gpu": 4}))
        c.apply([gpu_slice(n, p, cls.group) for n, p in zip(nodes, PRODUCTS)])
        c.apply(mig_slices("dra-diff-mig", cls.group, gpus=2))
        c.apply(shared_gpu_slice("dra-diff-shared", cls.group))
        wait_nodes_ready(c, f"{GROUP_LABEL}={cls.group}", len(nodes) + 3)
        cls.gpusched = Gpusched(c, write_config(c.dir, "dra-diff.yaml"),
                                name="gpusched-dra-diff").start()

    @classmethod
    def tearDownClass(cls):
        if cls.gpusched.alive():
            cls.gpusched.kill()
        super().tearDownClass()

    def pods(self, ns):
        return self.cluster.get_json("pods", "--namespace", ns)["items"]

    def run_phase(self, scheduler, mix):
        """Creates the mix for `scheduler`; returns (namespace, bound pod names, claims, pods)."""
        c = self.cluster
        ns = c.new_namespace("dra-up" if scheduler == "default-scheduler" else "dra-gs")
        t0 = time.monotonic()
        objects = []
        for kind, name, spec, _ in mix:
            if kind != "extended":
                objects.append(claim_template(name, spec) if kind == "template"
                               else resource_claim(name, spec))
        c.apply(objects, namespace=ns)
        pods = []
        for kind, name, spec, pod_names in mix:
            for p in pod_names:
                if kind == "extended":
                    pods.append(dict(gpu_pod(p, scheduler, self.group, spec)))
                    pods[-1]["spec"]["schedulingGates"] = [{"name": GATE}]
                    continue
                pod = dra_pod(p, scheduler, self.group,
                              template=name if kind == "template" else None,
                              claim=name if kind == "shared" else None)
                pod["spec"]["schedulingGates"] = [{"name": GATE}]
                pods.append(pod)
        c.apply(pods, namespace=ns)
        names = [p["metadata"]["name"] for p in pods]

        # The controller makes template claims for gated pods too; wait (bounded) for them so
        # that ungating in order is the order the schedulers see.
        def claims_made():
            want = sum(1 for k, *_ in mix if k == "template")
            have = len(c.get_json("resourceclaims", "--namespace", ns)["items"])
            return have >= want + sum(1 for k, *_ in mix if k == "shared")
        try:
            c.wait_for(claims_made, timeout=30, what="template claims created")
        except AssertionError as e:
            log(f"note: {e}; ungating anyway")
        for n in names:
            c.kubectl("patch", "pod", n, "--namespace", ns, "--type=json",
                      "-p", json.dumps([{"op": "remove", "path": "/spec/schedulingGates"}]))

        state = wait_pods_settled(c, ns, f"{scheduler}'s pods settled")
        claims = c.get_json("resourceclaims", "--namespace", ns)["items"]
        pod_objs = self.pods(ns)
        bound = sorted(n for n, node in state.items() if node)
        gpus = allocated_devices(claims)
        log(f"MEASURED {scheduler}: {len(bound)}/{len(names)} pods bound, {gpus} devices allocated in "
            f"{time.monotonic() - t0:.1f}s (seed {SEED})")
        return ns, bound, gpus, claims, pod_objs

    def clean_phase(self, ns):
        """Deletes the phase's pods and claims and waits until every claim is gone."""
        c = self.cluster
        c.kubectl("delete", "pods", "--all", "--namespace", ns, "--grace-period=0", "--force",
                  "--wait=false")
        c.kubectl("delete", "resourceclaims", "--all", "--namespace", ns, "--wait=false")
        c.wait_for(lambda: not c.get_json("resourceclaims", "--namespace", ns)["items"]
                   and not self.pods(ns), timeout=90, what=f"{ns}'s pods and claims gone")

    def test_both_allocate_validly_and_gpusched_binds_at_least_as_many_pods(self):
        mix = generate_mix(SEED, WORKLOADS)
        log(f"mix (seed {SEED}): {len(mix)} workloads, "
            f"{sum(len(p) for *_, p in mix)} pods, {demand(mix)} devices asked")
        slices = self.cluster.get_json("resourceslices", "-l", f"{GROUP_LABEL}={self.group}")["items"]
        classes = self.cluster.get_json("deviceclasses")["items"]
        results, allocated = {}, {}
        for scheduler in SCHEDULERS:
            ns, bound, gpus, claims, pods = self.run_phase(scheduler, mix)
            problems = validate_allocations(claims, slices, classes, pods)
            self.assertEqual(problems, [], f"{scheduler}'s allocations break the rules:\n"
                             + "\n".join(problems))
            results[scheduler] = bound
            allocated[scheduler] = gpus
            self.clean_phase(ns)
        if set(results) != {"default-scheduler", SCHEDULER_NAME}:
            self.skipTest(f"only {sorted(results)} ran (GPUSCHED_E2E_DRA_SCHEDULERS)")
        up, gs = len(results["default-scheduler"]), len(results[SCHEDULER_NAME])
        log(f"MEASURED dra_diff seed {SEED}: kube-scheduler bound {up} "
            f"({allocated['default-scheduler']} devices), gpusched bound {gs} "
            f"({allocated[SCHEDULER_NAME]} devices)")
        log(f"only kube-scheduler: {sorted(set(results['default-scheduler']) - set(results[SCHEDULER_NAME]))}; "
            f"only gpusched: {sorted(set(results[SCHEDULER_NAME]) - set(results['default-scheduler']))}")
        self.assertGreater(gs, 0, "gpusched bound no pod")
        self.assertGreaterEqual(gs, up, f"seed {SEED}: gpusched bound {gs} pods, "
                                f"kube-scheduler {up}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
