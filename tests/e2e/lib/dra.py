# SPDX-License-Identifier: Apache-2.0
"""Dynamic Resource Allocation helpers for the e2e tests (issue #23, docs/dra.md).

What an NVIDIA DRA driver would publish, without a driver: one ResourceSlice per kwok node
(driver gpu.nvidia.com, pool = the node's name, 8 GPUs with the driver's attributes productName,
index, uuid, cliqueId — two NVLink cliques of 4 — and capacity memory), the DeviceClass
gpu.nvidia.com, claim templates and claims with CEL selectors, pods that use them, and a
validator that checks every allocation in the cluster against the rules (the few selector shapes
these tests write are evaluated in Python).
"""

import re

from cluster import make_kwok_node
from gpusched_harness import GROUP_LABEL

DRIVER = "gpu.nvidia.com"
CLASS = "gpu.nvidia.com"
FINALIZER = "resource.kubernetes.io/delete-protection"
API = "resource.k8s.io/v1"

A100_80 = "NVIDIA A100-SXM4-80GB"
A100_40 = "NVIDIA A100-SXM4-40GB"
H100 = "NVIDIA H100 80GB HBM3"
MEMORY = {A100_80: "80Gi", A100_40: "40Gi", H100: "80Gi"}
GIB = 1 << 30

# The RBAC deploy/ gives gpusched for DRA (deploy_test.py checks the chart has it).
DRA_RBAC_RULES = [
    {"apiGroups": ["resource.k8s.io"],
     "resources": ["deviceclasses", "resourceslices", "devicetaintrules"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"],
     "verbs": ["update", "patch"]},
]


def grant_dra_rbac(cluster, extra_rules=()):
    """Binds deploy/'s DRA rules (and `extra_rules`) to the test cluster's gpusched service
    account."""
    cluster.apply([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "e2e-gpusched-dra"}, "rules": DRA_RBAC_RULES + list(extra_rules)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "e2e-gpusched-dra"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "e2e-gpusched-dra"},
         "subjects": [{"kind": "ServiceAccount", "name": "gpusched",
                       "namespace": "gpusched-system"}]},
    ])


def device_class():
    return {"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": CLASS},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def dra_node(name, group):
    """A kwok node without nvidia.com/gpu: its GPUs are in its ResourceSlice only."""
    return make_kwok_node(name, labels={GROUP_LABEL: group})


def gpu_slice(node, product, group, gpus=8):
    devices = []
    for i in range(gpus):
        devices.append({
            "name": f"gpu-{i}",
            "attributes": {
                "productName": {"string": product},
                "index": {"int": i},
                "uuid": {"string": f"GPU-{node}-{i:02d}"},
                "cliqueId": {"string": f"{node}.{i // 4}"},
            },
            "capacity": {"memory": {"value": MEMORY[product]}},
        })
    return {"apiVersion": API, "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-gpu", "labels": {GROUP_LABEL: group}},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


# The MIG profiles of an A100 80GB: (profile, compute slices, memory, memory slices, placements).
MIG_PROFILES = [("7g.80gb", 7, "80Gi", 8, [0]), ("4g.40gb", 4, "40Gi", 4, [0]),
                ("3g.40gb", 3, "40Gi", 4, [0, 4]), ("2g.20gb", 2, "20Gi", 2, [0, 2, 4]),
                ("1g.10gb", 1, "10Gi", 1, list(range(7)))]


def mig_slices(node, group, gpus=1):
    """The node's GPUs as partitionable devices (KEP-4815), as NVIDIA's DRA driver publishes MIG:
    one slice with a counter set per GPU (compute 7, memory 80Gi, memory-slice-0..7 of 1) and a
    second slice of the same pool with every MIG placement of every GPU drawing on it."""
    meta = {"labels": {GROUP_LABEL: group}}
    pool = {"name": node, "generation": 1, "resourceSliceCount": 2}
    sets, devices = [], []
    for g in range(gpus):
        counters = {"compute": {"value": "7"}, "memory": {"value": "80Gi"}}
        counters.update({f"memory-slice-{m}": {"value": "1"} for m in range(8)})
        sets.append({"name": f"gpu-{g}", "counters": counters})
        for profile, compute, memory, slices, placements in MIG_PROFILES:
            for start in placements:
                draws = {"compute": {"value": str(compute)}, "memory": {"value": memory}}
                draws.update({f"memory-slice-{m}": {"value": "1"}
                              for m in range(start, start + slices)})
                devices.append({
                    "name": f"gpu-{g}-mig-{profile.split('.')[0]}-{start}",
                    "attributes": {"profile": {"string": profile}, "parentIndex": {"int": g},
                                   "productName": {"string": A100_80}},
                    "capacity": {"memory": {"value": memory}},
                    "consumesCounters": [{"counterSet": f"gpu-{g}", "counters": draws}]})
    return [{"apiVersion": API, "kind": "ResourceSlice",
             "metadata": dict(meta, name=f"{node}-counters"),
             "spec": {"driver": DRIVER, "nodeName": node, "pool": pool, "sharedCounters": sets}},
            {"apiVersion": API, "kind": "ResourceSlice",
             "metadata": dict(meta, name=f"{node}-mig"),
             "spec": {"driver": DRIVER, "nodeName": node, "pool": pool, "devices": devices}}]


def shared_gpu_slice(node, group):
    """One H100 that claims share by capacity (KEP-5075): memory 80Gi taken in steps of 8Gi (8Gi
    when a claim does not say)."""
    device = {"name": "gpu-0", "allowMultipleAllocations": True,
              "attributes": {"productName": {"string": H100}},
              "capacity": {"memory": {"value": "80Gi", "requestPolicy": {
                  "default": "8Gi", "validRange": {"min": "8Gi", "step": "8Gi"}}}}}
    return {"apiVersion": API, "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-shared", "labels": {GROUP_LABEL: group}},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [device]}}


def profile_selector(profile):
    return f'device.attributes["{DRIVER}"].profile == "{profile}"'


def product_selector(product):
    return f'device.attributes["{DRIVER}"].productName == "{product}"'


def memory_selector(quantity):
    return f'device.capacity["{DRIVER}"].memory.compareTo(quantity("{quantity}")) >= 0'


def index_below_selector(n):
    return f'device.attributes["{DRIVER}"].index < {n}'


def claim_spec(count, selectors=(), same_clique=False, request="gpu", capacity=None):
    exactly = {"deviceClassName": CLASS, "allocationMode": "ExactCount", "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    if capacity:
        exactly["capacity"] = {"requests": capacity}
    spec = {"devices": {"requests": [{"name": request, "exactly": exactly}]}}
    if same_clique:
        spec["devices"]["constraints"] = [{"requests": [request],
                                           "matchAttribute": f"{DRIVER}/cliqueId"}]
    return spec


def claim_template(name, spec):
    return {"apiVersion": API, "kind": "ResourceClaimTemplate", "metadata": {"name": name},
            "spec": {"spec": spec}}


def resource_claim(name, spec):
    return {"apiVersion": API, "kind": "ResourceClaim", "metadata": {"name": name}, "spec": spec}


def dra_pod(name, scheduler, group, template=None, claim=None, node=None):
    """A pod with one claim "gpu": from `template` (a claim per pod) or the shared `claim`."""
    source = ({"resourceClaimTemplateName": template} if template
              else {"resourceClaimName": claim})
    selector = {GROUP_LABEL: group}
    if node:
        selector["kubernetes.io/hostname"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"schedulerName": scheduler, "terminationGracePeriodSeconds": 0,
                     "nodeSelector": selector,
                     "resourceClaims": [dict({"name": "gpu"}, **source)],
                     "containers": [{"name": "main", "image": "registry.invalid/worker:1",
                                     "resources": {"requests": {"cpu": "100m",
                                                                "memory": "128Mi"},
                                                   "claims": [{"name": "gpu"}]}}]}}


def gpu_pod(name, scheduler, group, gpus):
    """A pod asking for `gpus` nvidia.com/gpu, no claim: the device plugin's resource, or a
    DeviceClass's extendedResourceName (KEP-5004) on a node without it."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"schedulerName": scheduler, "terminationGracePeriodSeconds": 0,
                     "nodeSelector": {GROUP_LABEL: group},
                     "containers": [{"name": "main", "image": "registry.invalid/worker:1",
                                     "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}


def pod_claim_name(pod):
    """The name of the pod's claim "gpu": resourceClaimName, or the generated one; for a pod
    without claims, the claim the scheduler made for its extended resources."""
    ext = (pod.get("status") or {}).get("extendedResourceClaimStatus")
    if ext:
        return ext.get("resourceClaimName")
    for c in pod["spec"].get("resourceClaims", []):
        if c.get("name") == "gpu" and c.get("resourceClaimName"):
            return c["resourceClaimName"]
    for s in pod.get("status", {}).get("resourceClaimStatuses", []) or []:
        if s.get("name") == "gpu":
            return s.get("resourceClaimName")
    return None


# --- the validator ----------------------------------------------------------------------------

_QUANTITY = re.compile(r"^(\d+)(Ki|Mi|Gi|Ti)?$")


def parse_quantity(q):
    m = _QUANTITY.match(q)
    if not m:
        raise ValueError(f"quantity {q!r} not handled by the test")
    return int(m.group(1)) * {None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30,
                              "Ti": 1 << 40}[m.group(2)]


def attr_value(attr):
    for kind in ("string", "int", "bool", "version"):
        if kind in attr:
            return attr[kind]
    return None


def selector_holds(expr, driver, device):
    """Evaluates the selector shapes these tests write (joined by &&); raises on anything
    else."""
    if " && " in expr:
        return all(selector_holds(e, driver, device) for e in expr.split(" && "))
    attrs = {f"{driver}/{k}" if "/" not in k else k: attr_value(v)
             for k, v in device.get("attributes", {}).items()}
    caps = {f"{driver}/{k}" if "/" not in k else k: parse_quantity(v["value"])
            for k, v in device.get("capacity", {}).items()}
    m = re.fullmatch(r'device\.driver == "([^"]+)"', expr)
    if m:
        return driver == m.group(1)
    m = re.fullmatch(r'device\.attributes\["([^"]+)"\]\.(\w+) == "([^"]*)"', expr)
    if m:
        return attrs.get(f"{m.group(1)}/{m.group(2)}") == m.group(3)
    m = re.fullmatch(r'has\(device\.attributes\["([^"]+)"\]\.(\w+)\)', expr)
    if m:
        return f"{m.group(1)}/{m.group(2)}" in attrs
    m = re.fullmatch(r'device\.attributes\["([^"]+)"\]\.(\w+) < (\d+)', expr)
    if m:
        v = attrs.get(f"{m.group(1)}/{m.group(2)}")
        return isinstance(v, int) and v < int(m.group(3))
    m = re.fullmatch(
        r'device\.capacity\["([^"]+)"\]\.(\w+)\.compareTo\(quantity\("([^"]+)"\)\) >= 0', expr)
    if m:
        v = caps.get(f"{m.group(1)}/{m.group(2)}")
        return v is not None and v >= parse_quantity(m.group(3))
    raise ValueError(f"selector {expr!r} not handled by the test's evaluator")


def validate_allocations(claims, slices, classes, pods):
    """Every rule an allocation must keep; returns a list of violations (empty: all good).

    claims, slices, classes: the API objects (dicts); pods: the pods using them (by uid). Checks,
    for every allocated claim: each result names a device of a slice, on the node every pod
    reserving the claim is bound to; the class's and the request's selectors hold for it; each
    request has exactly `count` results; matchAttribute constraints hold; no device is in two
    claims; each bound pod using the claim is in reservedFor; the finalizer is present; the
    allocated devices never draw a shared counter (KEP-4815) beyond what its counter set has."""
    problems = []
    devices = {}  # (driver, pool, device) -> (slice, device dict)
    for s in slices:
        spec = s["spec"]
        for d in spec.get("devices", []):
            devices[(spec["driver"], spec["pool"]["name"], d["name"])] = (spec, d)
    class_selectors = {c["metadata"]["name"]: [x["cel"]["expression"]
                                               for x in c["spec"].get("selectors", [])]
                       for c in classes}
    pods_by_claim = {}
    for p in pods:
        name = pod_claim_name(p)
        if name:
            pods_by_claim.setdefault((p["metadata"]["namespace"], name), []).append(p)
    owner = {}
    shared = {}  # (driver, pool, device) of a shared device -> {shareID: consumedCapacity}
    for c in claims:
        key = (c["metadata"]["namespace"], c["metadata"]["name"])
        label = f"claim {key[0]}/{key[1]}"
        alloc = (c.get("status") or {}).get("allocation")
        users = [p for p in pods_by_claim.get(key, []) if p["spec"].get("nodeName")]
        if not alloc:
            if users:
                problems.append(f"{label}: not allocated but used by bound pods "
                                f"{[p['metadata']['name'] for p in users]}")
            continue
        if FINALIZER not in c["metadata"].get("finalizers", []):
            problems.append(f"{label}: allocated without the finalizer {FINALIZER}")
        # A pod by uid; a native PodGroup (KEP-5729) by name: its pods know no uid of it.
        reserved = {(r.get("resource"), r.get("uid" if r.get("resource") == "pods" else "name"))
                    for r in c["status"].get("reservedFor", [])}
        for p in users:
            group = (p["spec"].get("schedulingGroup") or {}).get("podGroupName")
            if (("pods", p["metadata"]["uid"]) not in reserved
                    and ("podgroups", group) not in reserved):
                problems.append(f"{label}: bound pod {p['metadata']['name']} not in reservedFor "
                                "(itself or its PodGroup)")
        nodes = {p["spec"]["nodeName"] for p in users}
        if len(nodes) > 1:
            problems.append(f"{label}: used by pods on several nodes {sorted(nodes)}")
        requests = {r["name"]: r["exactly"] for r in c["spec"]["devices"]["requests"]}
        per_request = {}
        for r in alloc["devices"].get("results", []):
            dev_key = (r["driver"], r["pool"], r["device"])
            where = f"{label}: device {'/'.join(dev_key)}"
            if dev_key not in devices:
                problems.append(f"{where} is in no ResourceSlice")
                continue
            spec, dev = devices[dev_key]
            if nodes and spec.get("nodeName") not in nodes:
                problems.append(f"{where} is on {spec.get('nodeName')}, its pods on {sorted(nodes)}")
            if dev.get("allowMultipleAllocations") and not r.get("adminAccess"):
                problems += share_violations(where, r, requests.get(r["request"]), dev, shared)
            elif not r.get("adminAccess"):
                if dev_key in owner and owner[dev_key] != key:
                    problems.append(f"{where} is also allocated to {owner[dev_key]}")
                owner[dev_key] = key
            req = requests.get(r["request"])
            if req is None:
                problems.append(f"{where}: result for unknown request {r['request']}")
                continue
            per_request.setdefault(r["request"], []).append(dev)
            exprs = class_selectors.get(req["deviceClassName"], []) + [
                x["cel"]["expression"] for x in req.get("selectors", [])]
            for e in exprs:
                if not selector_holds(e, r["driver"], dev):
                    problems.append(f"{where} does not satisfy {e}")
        for name, req in requests.items():
            got = len(per_request.get(name, []))
            if req.get("allocationMode", "ExactCount") == "ExactCount" and got != req.get("count", 1):
                problems.append(f"{label}: request {name} has {got} devices, wants {req.get('count', 1)}")
        for con in c["spec"]["devices"].get("constraints", []) or []:
            attr = con["matchAttribute"]
            domain, _, short = attr.partition("/")
            values = set()
            for name in con.get("requests") or list(requests):
                for dev in per_request.get(name, []):
                    a = dev.get("attributes", {})
                    v = a.get(short) if domain == DRIVER else a.get(attr)
                    values.add(None if v is None else attr_value(v))
            if len(values) > 1:
                problems.append(f"{label}: matchAttribute {attr} broken: {sorted(map(str, values))}")
    problems += counter_violations(slices, list(owner) + list(shared), devices)
    problems += capacity_violations(shared, devices)
    return problems


def share_violations(where, result, request, dev, shared):
    """A result on a device that allows multiple allocations (KEP-5075): it has a shareID unique
    on the device, consumes each of the device's capacities and at least what the request asks;
    records the share in `shared`."""
    problems = []
    share = result.get("shareID")
    consumed = {k: parse_quantity(v) for k, v in (result.get("consumedCapacity") or {}).items()}
    dev_key = (result["driver"], result["pool"], result["device"])
    shares = shared.setdefault(dev_key, {})
    if not share:
        problems.append(f"{where}: a shared device's result without shareID")
    elif share in shares:
        problems.append(f"{where}: shareID {share} used twice")
    shares[share] = consumed
    if set(consumed) != set(dev.get("capacity", {})):
        problems.append(f"{where}: consumedCapacity {sorted(consumed)} is not the device's "
                        f"capacities {sorted(dev.get('capacity', {}))}")
    asked = ((request or {}).get("capacity") or {}).get("requests") or {}
    for name, amount in asked.items():
        if consumed.get(name, 0) < parse_quantity(amount):
            problems.append(f"{where}: consumes {consumed.get(name)} of {name}, asked {amount}")
    return problems


def capacity_violations(shared, devices):
    """The shared devices whose shares consume more of a capacity than the device has."""
    problems = []
    for dev_key, shares in sorted(shared.items()):
        _, dev = devices[dev_key]
        for name, v in dev.get("capacity", {}).items():
            used = sum(c.get(name, 0) for c in shares.values())
            if used > parse_quantity(v["value"]):
                problems.append(f"device {'/'.join(dev_key)}: shares consume {used} of {name}, "
                                f"it has {v['value']}")
    return problems


def counter_violations(slices, allocated, devices):
    """The counters (driver, pool, set, counter) that the `allocated` devices (keys of `devices`)
    draw beyond their capacity, or that no slice of the pool publishes."""
    capacity = {}
    for s in slices:
        spec = s["spec"]
        for cs in spec.get("sharedCounters") or []:
            for name, v in cs["counters"].items():
                key = (spec["driver"], spec["pool"]["name"], cs["name"], name)
                capacity[key] = parse_quantity(v["value"])
    drawn = {}
    for dev_key in allocated:
        _, dev = devices[dev_key]
        for use in dev.get("consumesCounters") or []:
            for name, v in use["counters"].items():
                key = (dev_key[0], dev_key[1], use["counterSet"], name)
                drawn[key] = drawn.get(key, 0) + parse_quantity(v["value"])
    problems = []
    for key, used in sorted(drawn.items()):
        if key not in capacity:
            problems.append(f"counter {'/'.join(key)}: drawn by allocated devices, not published")
        elif used > capacity[key]:
            problems.append(f"counter {'/'.join(key)} over-drawn: {used} of {capacity[key]}")
    return problems
