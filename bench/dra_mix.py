#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes e2e_dra_diff's cluster and workload mix (tests/e2e/dra_diff_test.py) for one seed as
`gpusched simulate -f` input: the DeviceClass, four kwok-like nodes with their ResourceSlices, the
claims and claim templates, then the pods in creation order (BENCHMARKS.md, "device pressure").

    python3 bench/dra_mix.py 23 > /tmp/mix23.yaml && gpusched simulate -f /tmp/mix23.yaml

With --claims-first, every claim is a named ResourceClaim present before the pods (the templates
turned into claims): what the schedulers see on the test control plane, where
kube-controller-manager makes the gated pods' claims before the first gate is lifted.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

from dra import (  # noqa: E402
    claim_template, device_class, dra_node, dra_pod, gpu_slice, resource_claim)
from dra_diff_test import PRODUCTS, WORKLOADS, generate_mix  # noqa: E402


def documents(seed, workloads=WORKLOADS):
    docs = [device_class()]
    for i, product in enumerate(PRODUCTS):
        node = f"dra-diff-{i}"
        docs += [dra_node(node, "dra-diff"), gpu_slice(node, product, "dra-diff")]
    mix = generate_mix(seed, workloads)
    for kind, name, spec, _ in mix:
        docs.append(claim_template(name, spec) if kind == "template"
                    else resource_claim(name, spec))
    for kind, name, _, pods in mix:
        for p in pods:
            docs.append(dra_pod(p, "gpu-scheduler", "dra-diff",
                                template=name if kind == "template" else None,
                                claim=name if kind == "shared" else None))
    for d in docs:
        if d["kind"] in ("ResourceClaimTemplate", "ResourceClaim", "Pod"):
            d["metadata"]["namespace"] = "default"
    return docs


def claims_first(docs):
    """The templates as named claims, the pods naming them."""
    out = []
    for d in docs:
        if d["kind"] == "ResourceClaimTemplate":
            d = {"apiVersion": d["apiVersion"], "kind": "ResourceClaim",
                 "metadata": d["metadata"], "spec": d["spec"]["spec"]}
        elif d["kind"] == "Pod":
            for c in d["spec"]["resourceClaims"]:
                if "resourceClaimTemplateName" in c:
                    c["resourceClaimName"] = c.pop("resourceClaimTemplateName")
        out.append(d)
    return out


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--claims-first"]
    if len(args) != 1 or not args[0].isdigit():
        sys.exit("usage: dra_mix.py SEED [--claims-first]")
    docs = documents(int(args[0]))
    if "--claims-first" in sys.argv[1:]:
        docs = claims_first(docs)
    print("\n---\n".join(json.dumps(d) for d in docs))
