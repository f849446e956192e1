#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Deploying gpusched (issue #11): the Helm chart, the kustomize manifests, the Dockerfile and
least-privilege RBAC, checked with the real tools against a real control plane.

``DockerfileTest`` (no cluster)
    Every COPY source of deploy/Dockerfile exists and passes deploy/Dockerfile.dockerignore;
    dockerfilelint (npm, pinned, cached under ~/.cache/gpusched/npm) has nothing to say. The
    lint is skipped, with a note, when npm or its registry cannot be reached.

``DeployTest`` (one control plane for the class, no upstream kube-scheduler)
    render      ``helm lint``; ``helm template`` with the default values, with every toggle on,
                and with deletionCost.namespaces; ``kubectl kustomize`` of the base and every
                overlay. The YAML is turned into JSON by ``kubectl create --dry-run=client -o
                json`` (no YAML library needed). Checked: the hardening of every workload (non-
                root, read-only root filesystem, no capabilities, RuntimeDefault seccomp,
                resources), the scheduler's 2 replicas, --leader-elect, anti-affinity, PDB and
                probes, the RBAC rules exactly (chart and kustomize identical), and that every
                KubeSchedulerConfiguration they carry is accepted by gpusched.
    dry-run     ``kubectl apply --dry-run=server`` of every rendering, in namespaces that
                enforce the "restricted" Pod Security Standard (any PodSecurity warning fails);
                minimal ServiceMonitor/PrometheusRule CRDs are installed first.
    install     ``helm install``, ``helm upgrade`` (a config change rolls the pod template),
                ``helm uninstall`` (no cluster-scoped object left behind).
    rbac        the chart's ServiceAccount, RBAC and ConfigMap applied for real; ``gpusched
                scheduler`` runs on a token of that ServiceAccount with the chart's config
                (leader election on, Lease in the release namespace) and binds a pod, marks an
                impossible pod unschedulable, records events and holds the Lease, with no
                "forbidden" in its log; anything else is refused (``kubectl delete node`` ->
                Forbidden, and a table of ``kubectl auth can-i``).
    deletion-cost ``gpusched deletion-cost controller`` runs on a token of the chart's
                ServiceAccount with the chart's policy ConfigMap and deletionCost.namespaces
                set to one of two namespaces its policy selects: it annotates the pod it may
                patch, is refused (and says so) on the other; plus ``kubectl auth can-i --as``.

Environment: GPUSCHED_BINARY (ctest sets it; else the newest build/*/cmd/gpusched/gpusched),
GPUSCHED_SOURCE_DIR, GPUSCHED_TESTBIN_DIR (kubectl and helm come from there; see
docs/testing.md).
"""

import base64
import json
import os
import re
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import types
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase, KubectlError, free_port, source_dir, testbin_dir  # noqa: E402
from gpusched_harness import (  # noqa: E402
    GROUP_LABEL, Gpusched, create_objects, events, gpu_pod, gpusched_binary, kwok_gpu_node, log,
    pod_condition, wait_nodes_ready)
from oci_image import Buildah, OciArchive, image_archive  # noqa: E402

CHART = os.path.join("deploy", "helm", "gpusched")
KUSTOMIZE = os.path.join("deploy", "kustomize")
KUSTOMIZATIONS = ["base", "overlays/deletion-cost", "overlays/monitoring", "overlays/full"]
DOCKERFILE = os.path.join("deploy", "Dockerfile")
DOCKERFILELINT_VERSION = "1.8.0"

# Every optional part of the chart switched on.
ALL_TOGGLES = [
    "httpServer.enabled=true",
    "monitoring.service.enabled=true",
    "monitoring.serviceMonitor.enabled=true",
    "monitoring.prometheusRule.enabled=true",
    "deletionCost.enabled=true",
    "extender.enabled=true",
    "extender.clientCASecretName=gpusched-extender-client-ca",
]

# The RBAC each component ends with: {role kind, name suffix: {(apiGroup, resource,
# resourceNames, verbs)}}; names are "<fullname>-<suffix>" (fullname "gpusched" in kustomize).
# Secure serving (#21): every component reviews tokens and access for /metrics.
DELEGATED_AUTH_RULES = {
    ("authentication.k8s.io", "tokenreviews", (), ("create",)),
    ("authorization.k8s.io", "subjectaccessreviews", (), ("create",)),
}
SCHEDULER_RULES = DELEGATED_AUTH_RULES | {
    ("", "pods", (), ("delete", "get", "list", "watch")),  # delete: preemption victims
    ("", "pods/binding", (), ("create",)),
    ("", "pods/eviction", (), ("create",)),  # consolidation's moves
    ("", "pods/status", (), ("patch",)),
    ("", "nodes", (), ("get", "list", "watch")),
    ("policy", "poddisruptionbudgets", (), ("get", "list", "watch")),
    ("events.k8s.io", "events", (), ("create",)),
    # NetworkLocality's read-only watch of the NetworkAware objects.
    ("appgroup.diktyo.x-k8s.io", "appgroups", (), ("get", "list", "watch")),
    ("networktopology.diktyo.x-k8s.io", "networktopologies", (), ("get", "list", "watch")),
    # Gang scheduling: PodGroups (their status phase written) and Workloads.
    ("scheduling.x-k8s.io", "podgroups", (), ("get", "list", "watch")),
    ("scheduling.volcano.sh", "podgroups", (), ("get", "list", "watch")),
    ("scheduling.x-k8s.io", "podgroups/status", (), ("patch",)),
    ("scheduling.volcano.sh", "podgroups/status", (), ("patch",)),
    ("scheduling.k8s.io", "podgroups", (), ("get", "list", "watch")),
    ("scheduling.k8s.io", "podgroups/status", (), ("patch",)),
    ("scheduling.k8s.io", "workloads", (), ("get", "list", "watch")),
    # Volumes: claims and PVs read and patched (VolumeBinding's PreBind), storage objects read.
    ("", "persistentvolumes", (), ("get", "list", "patch", "watch")),
    ("", "persistentvolumeclaims", (), ("get", "list", "patch", "watch")),
    ("storage.k8s.io", "storageclasses", (), ("get", "list", "watch")),
    ("storage.k8s.io", "csinodes", (), ("get", "list", "watch")),
    ("storage.k8s.io", "csidrivers", (), ("get", "list", "watch")),
    # DRA: classes, slices and taint rules read; claims read, their finalizer (update/patch) and status written;
    # a pod's extended resource claim created, and deleted when the pod does not bind.
    ("resource.k8s.io", "deviceclasses", (), ("get", "list", "watch")),
    ("resource.k8s.io", "resourceslices", (), ("get", "list", "watch")),
    ("resource.k8s.io", "devicetaintrules", (), ("get", "list", "watch")),
    ("resource.k8s.io", "resourceclaims", (),
     ("create", "delete", "get", "list", "patch", "update", "watch")),
    ("resource.k8s.io", "resourceclaims/status", (), ("patch", "update")),
}
LEASE_RULES = lambda name: {  # noqa: E731
    ("coordination.k8s.io", "leases", (), ("create",)),
    ("coordination.k8s.io", "leases", (name,), ("get", "update")),
}
DELETION_COST_RULES = DELEGATED_AUTH_RULES | {
    ("", "pods", (), ("list", "patch", "watch")),
    ("apps", "deployments", (), ("list",)),
    ("apps", "replicasets", (), ("list",)),
    ("events.k8s.io", "events", (), ("create",)),
}
EXTENDER_RULES = DELEGATED_AUTH_RULES | {
    ("", "pods", (), ("get", "list", "watch")),
    ("", "nodes", (), ("get", "list", "watch")),
    # The preempt verb weighs PodDisruptionBudgets.
    ("policy", "poddisruptionbudgets", (), ("get", "list", "watch")),
    ("", "pods/binding", (), ("create",)),
}
# What Prometheus' service account may do (monitoring.serviceMonitor): get /metrics.
METRICS_READER_RULES = {("", "nonResourceURL /metrics", (), ("get",))}
PROMETHEUS_SA = ("monitoring", "prometheus-k8s")
EXPECTED_ROLES = {
    ("ClusterRole", "scheduler"): SCHEDULER_RULES,
    ("ClusterRole", "metrics-reader"): METRICS_READER_RULES,
    ("Role", "leader-election"): LEASE_RULES("gpu-scheduler"),
    ("ClusterRole", "deletion-cost"): DELETION_COST_RULES,
    ("ClusterRole", "extender"): EXTENDER_RULES,
}

# Minimal CRDs so that the Prometheus Operator objects can be dry-run (schema left open).
MONITORING_CRDS = [
    {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
     "metadata": {"name": f"{plural}.monitoring.coreos.com"},
     "spec": {"group": "monitoring.coreos.com", "scope": "Namespaced",
              "names": {"kind": kind, "plural": plural, "singular": plural[:-1],
                        "listKind": kind + "List"},
              "versions": [{"name": "v1", "served": True, "storage": True,
                            "schema": {"openAPIV3Schema": {
                                "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
    for kind, plural in (("ServiceMonitor", "servicemonitors"),
                         ("PrometheusRule", "prometheusrules"))
]


def normalized_rules(role):
    out = set()
    for r in role.get("rules", []):
        for group in r.get("apiGroups", []):
            for res in r.get("resources", []):
                out.add((group, res, tuple(sorted(r.get("resourceNames", []))),
                         tuple(sorted(r.get("verbs", [])))))
        for url in r.get("nonResourceURLs", []):
            out.add(("", f"nonResourceURL {url}", (), tuple(sorted(r.get("verbs", [])))))
    return out


def by_kind(objects, kind):
    return [o for o in objects if o["kind"] == kind]


def http_status(url):
    """The HTTP status of a GET (https: the certificate not verified, as the kubelet's probes),
    or None when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=5,
                                    context=ssl._create_unverified_context()) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def find(objects, kind, name):
    for o in objects:
        if o["kind"] == kind and o["metadata"]["name"] == name:
            return o
    have = [(o["kind"], o["metadata"]["name"]) for o in objects]
    raise AssertionError(f"no {kind} {name} in {have}")


def dockerfile_instructions(text):
    """(instruction, arguments) pairs of a Dockerfile, continuation lines joined."""
    out, buf = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            buf += stripped[:-1] + " "
            continue
        buf += stripped
        word, _, rest = buf.partition(" ")
        out.append((word.upper(), rest.strip()))
        buf = ""
    return out


def glob_to_regex(pattern):
    """A .dockerignore glob as a regex: `*` and `?` stay within a path segment, `**` does not."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return "^" + out + "$"


def dockerignore_excludes(patterns, path):
    """Whether `path` (relative, '/'-separated) is left out of the build context: the last
    pattern that matches the path or one of its parent directories decides (moby's rule)."""
    parts = path.split("/")
    candidates = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    excluded = False
    for raw in patterns:
        negate = raw.startswith("!")
        pat = raw[1:] if negate else raw
        rx = re.compile(glob_to_regex(pat.strip().strip("/")))
        if any(rx.match(c) for c in candidates):
            excluded = not negate
    return excluded


class DockerfileTest(unittest.TestCase):
    """deploy/Dockerfile, without a Docker engine."""

    def setUp(self):
        self.root = source_dir()
        with open(os.path.join(self.root, DOCKERFILE)) as f:
            self.instructions = dockerfile_instructions(f.read())

    def test_every_copied_path_exists_and_is_in_the_build_context(self):
        ignore_path = os.path.join(self.root, DOCKERFILE + ".dockerignore")
        with open(ignore_path) as f:
            patterns = [ln.strip() for ln in f if ln.strip() and not ln.lstrip().startswith("#")]
        copies = 0
        for word, args in self.instructions:
            if word not in ("COPY", "ADD"):
                continue
            self.assertEqual(word, "COPY", "use COPY, not ADD")
            tokens = json.loads(args) if args.startswith("[") else shlex.split(args)
            flags = [t for t in tokens if t.startswith("--")]
            paths = [t for t in tokens if not t.startswith("--")]
            if any(f.startswith("--from") for f in flags):
                continue  # from another stage
            self.assertGreaterEqual(len(paths), 2, f"COPY {args}")
            for src in paths[:-1]:
                copies += 1
                full = os.path.join(self.root, src)
                self.assertTrue(os.path.exists(full), f"COPY source {src} does not exist")
                self.assertFalse(dockerignore_excludes(patterns, src.rstrip("/")),
                                 f"COPY source {src} is excluded by {ignore_path}")
        self.assertGreater(copies, 0, "no COPY from the build context")

    def test_stages_run_as_non_root_on_pinned_bases(self):
        froms = [args for word, args in self.instructions if word == "FROM"]
        self.assertGreaterEqual(len(froms), 2, "a multi-stage build")
        users = [args for word, args in self.instructions if word == "USER"]
        self.assertTrue(users, "the runtime stage sets USER")
        self.assertNotIn(users[-1].split(":")[0], ("root", "0"))
        self.assertEqual(froms[-1], "scratch", "the runtime stage has no base image")
        for image in (f.split()[0] for f in froms[:-1]):
            self.assertRegex(image, r"^[^$]+:[^/]+$", f"base image {image} without a tag")
            self.assertFalse(image.endswith(":latest"), f"base image {image} is :latest")
        entry = [a for w, a in self.instructions if w == "ENTRYPOINT"]
        self.assertEqual(entry, ['["/usr/local/bin/gpusched"]'])

    def test_the_root_filesystem_is_laid_out_as_make_image_does(self):
        """Docker's image and `make image`'s have one layout: both run scripts/image-rootfs."""
        runs = [a for w, a in self.instructions if w == "RUN"]
        self.assertTrue(any(r.startswith("scripts/image-rootfs ") for r in runs), runs)
        with open(os.path.join(self.root, "scripts", "build-image")) as f:
            self.assertIn("scripts/image-rootfs", f.read())
        copies = [a for w, a in self.instructions if w == "COPY" and a.startswith("--from=")]
        self.assertEqual(copies, ["--from=build /rootfs/ /"])

    def test_dockerfilelint(self):
        npm = shutil.which("npm")
        if not npm:
            self.skipTest("npm is not installed: dockerfilelint not run")
        home = os.environ.get("HOME") or os.path.expanduser("~")
        cache_root = os.environ.get("GPUSCHED_CACHE_DIR") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"), "gpusched")
        prefix = os.path.join(cache_root, "npm", f"dockerfilelint-{DOCKERFILELINT_VERSION}")
        binary = os.path.join(prefix, "node_modules", ".bin", "dockerfilelint")
        if not os.access(binary, os.X_OK):
            os.makedirs(prefix, exist_ok=True)
            proc = subprocess.run(
                [npm, "install", "--prefix", prefix, "--no-audit", "--no-fund", "--no-save",
                 "--cache", os.path.join(cache_root, "npm", "cache"),
                 f"dockerfilelint@{DOCKERFILELINT_VERSION}"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
            if proc.returncode != 0 or not os.access(binary, os.X_OK):
                print(f"deploy_test: NOTE dockerfilelint could not be installed from npm; lint "
                      f"skipped:\n{proc.stdout[-2000:]}", file=sys.stderr)
                self.skipTest("dockerfilelint could not be installed from the npm registry")
        proc = subprocess.run([binary, os.path.join(self.root, DOCKERFILE)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=120)
        self.assertEqual(proc.returncode, 0, f"dockerfilelint:\n{proc.stdout}")


class DeployTest(ClusterTestCase):
    """The chart and the manifests against one control plane (see the module docstring)."""

    cluster_kwargs = {"start_scheduler": False}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.root = source_dir()
        cls.bin_dir = testbin_dir()
        cls.helm_bin = os.path.join(cls.bin_dir, "helm")
        if not os.access(cls.helm_bin, os.X_OK):
            raise RuntimeError(f"no helm in {cls.bin_dir}: run scripts/testbin")
        cls.helm_home = tempfile.mkdtemp(prefix="gpusched-helm-", dir=cls.cluster.dir)
        version = json.loads(cls.cluster.kubectl("version", "-o", "json"))
        cls.kube_version = version["serverVersion"]["gitVersion"]
        cls.cluster.apply(MONITORING_CRDS)
        cls.cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                            *[f"crd/{c['metadata']['name']}" for c in MONITORING_CRDS])

    # --- tools -------------------------------------------------------------------------------

    def run_tool(self, cmd, input=None, timeout=120):
        proc = subprocess.run(cmd, input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=timeout, cwd=self.root)
        return proc.returncode, proc.stdout, proc.stderr

    def helm(self, *args, check=True):
        env = dict(os.environ)
        for var in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"):
            env[var] = os.path.join(self.helm_home, var.lower())
        env["KUBECONFIG"] = self.cluster.kubeconfig
        proc = subprocess.run([self.helm_bin, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=180, cwd=self.root,
                              env=env)
        if check and proc.returncode != 0:
            raise AssertionError(
                f"helm {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
        return proc

    def helm_template(self, release="gpusched", namespace="gpusched-system", sets=()):
        args = ["template", release, CHART, "--namespace", namespace,
                "--kube-version", self.kube_version]
        for s in sets:
            args += ["--set", s]
        return self.helm(*args).stdout

    def kustomize(self, path):
        return self.cluster.kubectl("kustomize", os.path.join(self.root, KUSTOMIZE, path))

    def to_objects(self, yaml_text):
        """Rendered YAML -> list of objects, via kubectl (client-side only)."""
        out = self.cluster.kubectl("create", "--dry-run=client", "-o", "json", "-f", "-",
                                   input=yaml_text)
        objects, decoder, pos = [], json.JSONDecoder(), 0
        while True:
            while pos < len(out) and out[pos].isspace():
                pos += 1
            if pos >= len(out):
                return objects
            doc, pos = decoder.raw_decode(out, pos)  # one JSON document per object
            objects += doc["items"] if doc.get("kind") == "List" else [doc]

    def shared_rule_groups(self):
        with open(os.path.join(self.root, "deploy", "monitoring", "prometheusrule.yaml")) as f:
            (rule,) = self.to_objects(f.read())
        self.assertGreaterEqual(len(rule["spec"]["groups"]), 2)
        return rule["spec"]["groups"]

    def config_of(self, objects, name_prefix):
        cms = [o for o in by_kind(objects, "ConfigMap")
               if o["metadata"]["name"].startswith(name_prefix)]
        self.assertEqual(len(cms), 1, f"ConfigMap {name_prefix}*")
        return cms[0]["data"]["config.yaml"]

    def check_config_accepted(self, text, what):
        binary = gpusched_binary()  # raises when there is none: these checks are not optional
        path = os.path.join(self.cluster.dir, "config-under-test.yaml")
        with open(path, "w") as f:
            f.write(text)
        rc, out, err = self.run_tool([binary, "simulate", "--config", path, "-o", "json"])
        self.assertEqual(rc, 0, f"gpusched rejects the config of {what}:\n{err}\n{text}")

    def check_args_accepted(self, objects, what):
        """The scheduler container's args parse: with a missing kubeconfig gpusched must fail on
        the kubeconfig, after every flag was accepted."""
        binary = gpusched_binary()  # raises when there is none: these checks are not optional
        path = os.path.join(self.cluster.dir, "args-config-under-test.yaml")
        with open(path, "w") as f:
            f.write(self.config_of(objects, "gpusched-config"))
        pod = find(objects, "Deployment", "gpusched-scheduler")["spec"]["template"]["spec"]
        args = [a if not a.startswith("--config=") else f"--config={path}"
                for a in pod["containers"][0]["args"]]
        missing = os.path.join(self.cluster.dir, "no-such-kubeconfig")
        rc, out, err = self.run_tool([binary, *args, f"--kubeconfig={missing}"])
        self.assertEqual(rc, 1, f"{what}: gpusched {args} exited {rc}:\n{err}")
        self.assertIn("no-such-kubeconfig", err, f"{what}: {err}")

    def check_policy_accepted(self, text, what):
        """The DeletionCostPolicy parses: the controller reads it before the kubeconfig, so with
        a missing kubeconfig it must fail on the kubeconfig, not on the policy."""
        binary = gpusched_binary()  # raises when there is none: these checks are not optional
        path = os.path.join(self.cluster.dir, "policy-under-test.yaml")
        with open(path, "w") as f:
            f.write(text)
        missing = os.path.join(self.cluster.dir, "no-such.kubeconfig")
        rc, out, err = self.run_tool([binary, "deletion-cost", "controller", f"--config={path}",
                                      f"--kubeconfig={missing}"])
        self.assertEqual(rc, 1, f"{what}: {err}")
        self.assertIn(missing, err, f"gpusched rejects the policy of {what}:\n{err}\n{text}")

    # --- shared checks -----------------------------------------------------------------------

    def check_hardened(self, deploy):
        name = deploy["metadata"]["name"]
        spec = deploy["spec"]["template"]["spec"]
        psc = spec.get("securityContext", {})
        self.assertTrue(psc.get("runAsNonRoot"), f"{name}: pod runAsNonRoot")
        self.assertEqual(psc.get("seccompProfile", {}).get("type"), "RuntimeDefault", name)
        self.assertTrue(spec.get("automountServiceAccountToken"), f"{name}: token mounted")
        for key in ("hostNetwork", "hostPID", "hostIPC"):
            self.assertFalse(spec.get(key), f"{name}: {key}")
        for c in spec["containers"]:
            sc = c.get("securityContext", {})
            what = f"{name}/{c['name']}"
            self.assertRegex(c["image"], r"^[^:@]+(:[^:/@]+|@sha256:[0-9a-f]{64})$",
                             f"{what}: image pinned to a tag or digest")
            self.assertFalse(c["image"].endswith(":latest"), what)
            self.assertIs(sc.get("allowPrivilegeEscalation"), False, what)
            self.assertIs(sc.get("readOnlyRootFilesystem"), True, what)
            self.assertTrue(sc.get("runAsNonRoot"), what)
            self.assertFalse(sc.get("privileged"), what)
            self.assertEqual(sc.get("capabilities", {}).get("drop"), ["ALL"], what)
            self.assertFalse(sc.get("capabilities", {}).get("add"), what)
            self.assertEqual(sc.get("seccompProfile", {}).get("type"), "RuntimeDefault", what)
            req = c.get("resources", {}).get("requests", {})
            self.assertIn("cpu", req, what)
            self.assertIn("memory", req, what)
            self.assertIn("memory", c.get("resources", {}).get("limits", {}), what)

    def check_scheduler(self, objects, fullname, probes):
        deploy = find(objects, "Deployment", f"{fullname}-scheduler")
        self.check_hardened(deploy)
        self.assertEqual(deploy["spec"]["replicas"], 2)
        pod = deploy["spec"]["template"]["spec"]
        c = pod["containers"][0]
        self.assertEqual(c["args"][0], "scheduler")
        self.assertIn("--leader-elect=true", c["args"])
        self.assertIn("--config=/etc/gpusched/config.yaml", c["args"])
        anti = pod["affinity"]["podAntiAffinity"]
        terms = [t["podAffinityTerm"]
                 for t in anti.get("preferredDuringSchedulingIgnoredDuringExecution", [])]
        terms += anti.get("requiredDuringSchedulingIgnoredDuringExecution", [])
        self.assertEqual([t["topologyKey"] for t in terms], ["kubernetes.io/hostname"])
        labels = deploy["spec"]["template"]["metadata"]["labels"]
        for t in terms:
            for k, v in t["labelSelector"]["matchLabels"].items():
                self.assertEqual(labels.get(k), v, "anti-affinity selects the scheduler pods")
        pdb = find(objects, "PodDisruptionBudget", f"{fullname}-scheduler")
        self.assertEqual(pdb["spec"]["minAvailable"], 1)
        for k, v in pdb["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(labels.get(k), v, "the PDB selects the scheduler pods")
        if probes:
            self.assertEqual(c["livenessProbe"]["httpGet"]["path"], "/healthz")
            self.assertEqual(c["readinessProbe"]["httpGet"]["path"], "/readyz")
            for probe in ("livenessProbe", "readinessProbe"):
                self.assertEqual(c[probe]["httpGet"].get("scheme"), "HTTPS", probe)
            self.assertEqual([p["name"] for p in c["ports"]], ["metrics"])
        else:
            self.assertNotIn("livenessProbe", c)
            self.assertNotIn("readinessProbe", c)
            self.assertNotIn("ports", c)
        mounts = {m["mountPath"] for m in c["volumeMounts"]}
        self.assertEqual(mounts, {"/etc/gpusched", "/tmp"})
        sa = find(objects, "ServiceAccount", pod["serviceAccountName"])
        self.assertIs(sa.get("automountServiceAccountToken"), False)

    def check_rbac(self, objects, fullname, namespace):
        """Every Role/ClusterRole is one of EXPECTED_ROLES, with exactly its rules; no wildcard."""
        found = {}
        for o in objects:
            if o["kind"] not in ("Role", "ClusterRole"):
                continue
            name = o["metadata"]["name"]
            self.assertTrue(name.startswith(fullname + "-"), name)
            suffix = name[len(fullname) + 1:]
            rules = normalized_rules(o)
            for g, res, _, verbs in rules:
                self.assertNotIn("*", (g, res) + verbs, f"{name}: wildcard")
            if o["kind"] == "Role":
                self.assertEqual(o["metadata"]["namespace"], namespace,
                                 f"{name}: release namespace")
            if suffix == "deletion-cost-patch-pods":
                self.assertEqual(rules, {("", "pods", (), ("patch",))})
            else:
                self.assertIn((o["kind"], suffix), EXPECTED_ROLES, f"unexpected {o['kind']} {name}")
                expected = EXPECTED_ROLES[(o["kind"], suffix)]
                if suffix == "deletion-cost" and any(
                        r["metadata"]["name"].endswith("-patch-pods") for r in objects
                        if r["kind"] == "ClusterRole"):
                    expected = {r if r[1] != "pods" else ("", "pods", (), ("list", "watch"))
                                for r in expected}
                self.assertEqual(rules, expected, f"{o['kind']} {name}")
            found[(o["kind"], suffix)] = rules
        for b in objects:
            if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
                continue
            for s in b["subjects"]:
                self.assertEqual(s["kind"], "ServiceAccount", b["metadata"]["name"])
                if b["metadata"]["name"].endswith("-metrics-reader"):
                    # Prometheus' service account, in its own namespace.
                    self.assertEqual((s["namespace"], s["name"]), PROMETHEUS_SA)
                    continue
                self.assertEqual(s["namespace"], namespace, b["metadata"]["name"])
        return found

    # --- rendering ---------------------------------------------------------------------------

    def test_a_chart_lints_and_renders_hardened_least_privilege_objects(self):
        proc = self.helm("lint", "--strict", CHART, "--kube-version", self.kube_version)
        self.assertIn("0 chart(s) failed", proc.stdout)

        default = self.to_objects(self.helm_template())
        kinds = sorted({o["kind"] for o in default})
        self.assertEqual(kinds, ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment",
                                 "PodDisruptionBudget", "Role", "RoleBinding", "ServiceAccount"])
        self.check_scheduler(default, "gpusched", probes=True)  # httpServer.enabled by default
        self.check_scheduler(self.to_objects(self.helm_template(sets=["httpServer.enabled=false"])),
                             "gpusched", probes=False)
        roles = self.check_rbac(default, "gpusched", "gpusched-system")
        self.assertEqual(set(roles), {("ClusterRole", "scheduler"), ("Role", "leader-election")})
        config = self.config_of(default, "gpusched-config")
        self.assertIn("resourceNamespace: gpusched-system", config)
        self.assertIn("resourceName: gpu-scheduler", config)
        self.assertIn("schedulerName: gpu-scheduler", config)
        self.check_config_accepted(config, "the chart (default values)")

        # Another release namespace: the Lease, the Role and the bindings follow it.
        other = self.to_objects(self.helm_template("team", "ml-platform"))
        self.assertIn("resourceNamespace: ml-platform",
                      self.config_of(other, "team-gpusched-config"))
        self.check_rbac(other, "team-gpusched", "ml-platform")

        everything = self.to_objects(self.helm_template(sets=ALL_TOGGLES))
        self.check_scheduler(everything, "gpusched", probes=True)
        for d in by_kind(everything, "Deployment"):
            self.check_hardened(d)
        names = {(o["kind"], o["metadata"]["name"]) for o in everything}
        for want in [("Deployment", "gpusched-deletion-cost"), ("Deployment", "gpusched-extender"),
                     ("Service", "gpusched-extender"), ("Service", "gpusched-metrics"),
                     ("ServiceMonitor", "gpusched"), ("PrometheusRule", "gpusched"),
                     ("ConfigMap", "gpusched-deletion-cost-policy"),
                     ("ConfigMap", "gpusched-extender-config")]:
            self.assertIn(want, names)
        # The optional scheduler flags render to arguments gpusched accepts.
        flags = self.to_objects(self.helm_template(sets=[
            "scheduler.decisionAnnotation=true", "scheduler.nodeGroupLabels={a/b,c}",
            "scheduler.gpuUtilization.prometheusUrl=http://prometheus:9090",
            "scheduler.networkTraffic.prometheusUrl=http://prometheus:9090",
            "scheduler.networkTraffic.query=sum(rate(x[1m]))",
            "scheduler.networkTraffic.workloadLabel=app.kubernetes.io/name"]))
        args = find(flags, "Deployment", "gpusched-scheduler")["spec"]["template"]["spec"][
            "containers"][0]["args"]
        for want in ["--decision-annotation", "--node-group-label=c",
                     "--gpu-utilization-prometheus-url=http://prometheus:9090",
                     "--network-traffic-query=sum(rate(x[1m]))"]:
            self.assertIn(want, args)
        self.check_args_accepted(flags, "the chart's optional scheduler flags")
        self.check_args_accepted(everything, "the chart (every toggle)")
        # One set of rules: the chart renders deploy/monitoring/prometheusrule.yaml's groups.
        self.assertEqual(find(everything, "PrometheusRule", "gpusched")["spec"]["groups"],
                         self.shared_rule_groups())
        roles = self.check_rbac(everything, "gpusched", "gpusched-system")
        self.assertEqual(set(roles), set(EXPECTED_ROLES))
        self.check_config_accepted(self.config_of(everything, "gpusched-extender-config"),
                                   "the chart's extender")
        policy = find(everything, "ConfigMap", "gpusched-deletion-cost-policy")
        self.check_policy_accepted(policy["data"]["policy.yaml"], "the chart's deletion cost")

        scoped = self.to_objects(self.helm_template(
            sets=["deletionCost.enabled=true", "deletionCost.namespaces={team-a,team-b}"]))
        self.check_rbac(scoped, "gpusched", "gpusched-system")
        bindings = [b for b in by_kind(scoped, "RoleBinding")
                    if b["roleRef"]["name"] == "gpusched-deletion-cost-patch-pods"]
        self.assertEqual(sorted(b["metadata"]["namespace"] for b in bindings), ["team-a", "team-b"])

        # Inconsistent values fail the render with a message.
        for sets, message in [(["httpServer.enabled=false", "monitoring.serviceMonitor.enabled=true"],
                               "httpServer.enabled"),
                              (["scheduler.leaderElect=false"], "leaderElect"),
                              (["scheduler.podAntiAffinity=sometimes"], "podAntiAffinity")]:
            proc = self.helm("template", "x", CHART, "--kube-version", self.kube_version,
                             *[a for s in sets for a in ("--set", s)], check=False)
            self.assertNotEqual(proc.returncode, 0, sets)
            self.assertIn(message, proc.stderr, sets)
        hard = self.to_objects(self.helm_template(sets=["scheduler.podAntiAffinity=hard"]))
        pod = find(hard, "Deployment", "gpusched-scheduler")["spec"]["template"]["spec"]
        anti = pod["affinity"]
        self.assertIn("requiredDuringSchedulingIgnoredDuringExecution", anti["podAntiAffinity"])

    def test_b_kustomize_renders_the_same_objects_as_the_chart(self):
        rendered = {k: self.to_objects(self.kustomize(k)) for k in KUSTOMIZATIONS}
        base = rendered["base"]
        self.check_scheduler(base, "gpusched", probes=True)
        self.check_scheduler(rendered["overlays/monitoring"], "gpusched", probes=True)
        self.assertEqual(
            find(rendered["overlays/monitoring"], "PrometheusRule", "gpusched")["spec"]["groups"],
            self.shared_rule_groups())
        for k, objects in rendered.items():
            for d in by_kind(objects, "Deployment"):
                self.check_hardened(d)
            self.check_rbac(objects, "gpusched", "gpusched-system")
            for o in objects:
                if o["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding",
                                     "CustomResourceDefinition"):
                    self.assertEqual(o["metadata"].get("namespace"), "gpusched-system",
                                     f"{k}: {o['kind']} {o['metadata']['name']}")
        config = self.config_of(base, "gpusched-config-")
        self.check_config_accepted(config, "kustomize base")
        self.check_config_accepted(self.config_of(rendered["overlays/full"],
                                                  "gpusched-extender-config-"),
                                   "kustomize extender")
        policies = [o for o in by_kind(rendered["overlays/full"], "ConfigMap")
                    if o["metadata"]["name"].startswith("gpusched-deletion-cost-policy-")]
        self.assertEqual(len(policies), 1)
        self.check_policy_accepted(policies[0]["data"]["policy.yaml"], "kustomize deletion cost")

        # Same objects and the same RBAC as the chart with the same parts enabled.
        def inventory(objects):
            return {(o["kind"], re.sub(r"-[a-z0-9]{10}$", "", o["metadata"]["name"])
                     if o["kind"] == "ConfigMap" else o["metadata"]["name"])
                    for o in objects if o["kind"] != "Namespace"}

        def rbac(objects):
            return {(o["kind"], o["metadata"]["name"]): normalized_rules(o)
                    for o in objects if o["kind"] in ("Role", "ClusterRole")}
        for kust, sets in [("base", []), ("overlays/full", ALL_TOGGLES)]:
            chart = self.to_objects(self.helm_template(sets=sets))
            self.assertEqual(inventory(rendered[kust]), inventory(chart), kust)
            self.assertEqual(rbac(rendered[kust]), rbac(chart), kust)

    # --- against the API server --------------------------------------------------------------

    def ensure_namespace(self, name):
        self.cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": name, "labels": {
                "pod-security.kubernetes.io/enforce": "restricted",
                "pod-security.kubernetes.io/warn": "restricted",
                "pod-security.kubernetes.io/audit": "restricted"}}})

    def server_dry_run(self, yaml_text, what):
        rc, out, err = self.run_tool(
            [os.path.join(self.bin_dir, "kubectl"), f"--kubeconfig={self.cluster.kubeconfig}",
             "apply", "--dry-run=server", "-f", "-"], input=yaml_text)
        self.assertEqual(rc, 0, f"{what}: kubectl apply --dry-run=server failed:\n{err}")
        self.assertNotIn("PodSecurity", err, f"{what}: Pod Security warnings:\n{err}")
        self.assertNotIn("Warning", err, f"{what}: warnings:\n{err}")
        applied = [ln for ln in out.splitlines() if ln.strip()]
        self.assertTrue(applied and all("(server dry run)" in ln for ln in applied), out)
        return applied

    def test_c_every_manifest_passes_server_side_dry_run(self):
        for ns in ("gpusched-system", "team-a", "team-b"):
            self.ensure_namespace(ns)
        renders = {
            "helm default": self.helm_template(),
            "helm every toggle": self.helm_template(sets=ALL_TOGGLES),
            "helm deletion-cost namespaces": self.helm_template(
                sets=["deletionCost.enabled=true", "deletionCost.namespaces={team-a,team-b}"]),
        }
        for k in KUSTOMIZATIONS:
            renders[f"kustomize {k}"] = self.kustomize(k)
        for what, text in renders.items():
            applied = self.server_dry_run(text, what)
            log(f"deploy_test: server dry run of {what}: {len(applied)} objects")

    def test_d_helm_install_upgrade_uninstall(self):
        ns = self.cluster.new_namespace("gs-helm")
        release = "gs"
        proc = self.helm("install", release, CHART, "--namespace", ns,
                         "--set", "extender.enabled=true", "--set", "deletionCost.enabled=true",
                         "--set", "extender.clientCASecretName=gpusched-extender-client-ca")
        self.assertIn("Pods opt in with spec.schedulerName", proc.stdout)  # NOTES.txt
        self.assertIn("gpusched.io/deletion-cost-policy=POLICY", proc.stdout)
        self.assertIn(f"urlPrefix: https://{release}-gpusched-extender.{ns}.svc:8888/", proc.stdout)
        deploy = self.cluster.get_json("deployment", f"{release}-gpusched-scheduler", "-n", ns)
        self.assertEqual(deploy["spec"]["replicas"], 2)
        before = deploy["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
        self.cluster.get_json("clusterrole", f"{release}-gpusched-scheduler")
        self.cluster.get_json("role", f"{release}-gpusched-leader-election", "-n", ns)

        self.helm("upgrade", release, CHART, "--namespace", ns, "--reuse-values",
                  "--set", "schedulerConfig.qps=200", "--set", "schedulerConfig.burst=400")
        cm = self.cluster.get_json("configmap", f"{release}-gpusched-config", "-n", ns)
        self.assertIn("qps: 200", cm["data"]["config.yaml"])
        deploy = self.cluster.get_json("deployment", f"{release}-gpusched-scheduler", "-n", ns)
        after = deploy["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
        self.assertNotEqual(before, after, "a config change rolls the scheduler pods")
        history = json.loads(self.helm("history", release, "--namespace", ns, "-o", "json").stdout)
        self.assertEqual([h["status"] for h in history], ["superseded", "deployed"])

        self.helm("uninstall", release, "--namespace", ns, "--wait")
        for kind, name in (("clusterrole", f"{release}-gpusched-scheduler"),
                           ("clusterrolebinding", f"{release}-gpusched-scheduler")):
            out = self.cluster.kubectl("get", kind, name, "--ignore-not-found")
            self.assertEqual(out.strip(), "", f"{kind} {name} left behind")

    def can_i(self, kubeconfig, *args):
        cmd = [os.path.join(self.bin_dir, "kubectl"), f"--kubeconfig={kubeconfig}", "auth",
               "can-i", *args]
        rc, out, err = self.run_tool(cmd)
        if out.strip() not in ("yes", "no"):
            raise AssertionError(f"kubectl auth can-i {' '.join(args)}: rc {rc}\n{out}{err}")
        return out.strip() == "yes"

    def check_can_i(self, kubeconfig, allowed, denied, extra=()):
        wrong = []
        for args in allowed:
            if not self.can_i(kubeconfig, *args, *extra):
                wrong.append(("should be allowed", args))
        for args in denied:
            if self.can_i(kubeconfig, *args, *extra):
                wrong.append(("should be refused", args))
        self.assertEqual(wrong, [])

    def test_e_scheduler_runs_on_exactly_its_rbac(self):
        ns = self.cluster.new_namespace("gs-rbac")
        release = "rbac"
        fullname = f"{release}-gpusched"
        objects = self.to_objects(self.helm_template(release, ns))
        # The token first (the harness creates the ServiceAccount), then the chart's objects.
        sa_kc = self.cluster.sa_kubeconfig(ns, fullname)
        wanted = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
                  "ConfigMap"}
        self.cluster.apply([o for o in objects if o["kind"] in wanted])
        config_path = os.path.join(self.cluster.dir, f"{ns}-config.yaml")
        with open(config_path, "w") as f:
            f.write(self.config_of(objects, f"{fullname}-config"))

        node = f"{ns}-n0"
        self.cluster.apply([kwok_gpu_node(node, ns, "A100", 8, 40960, "zone-a")])
        wait_nodes_ready(self.cluster, f"{GROUP_LABEL}={ns}", 1)

        # Run as the Deployment would: the chart's config and flags, the ServiceAccount's token.
        as_sa = types.SimpleNamespace(dir=self.cluster.dir, gpusched_kubeconfig=sa_kc)
        sched = Gpusched(as_sa, config_path, name=f"{ns}-gpusched",
                         extra_args=["--leader-elect=true"]).start()
        self.addCleanup(sched.kill)
        sched.wait_log("informers synced", timeout=60)

        create_objects(self.cluster, [gpu_pod("fits", 2, group=ns),
                                      gpu_pod("impossible", 1, model="H100", group=ns)], ns)

        def placed():
            pods = {p["metadata"]["name"]: p
                    for p in self.cluster.get_json("pods", "-n", ns)["items"]}
            bound = pods["fits"]["spec"].get("nodeName")
            cond = pod_condition(pods["impossible"]) or {}
            return bound and cond.get("status") == "False" and (bound, cond)
        bound, cond = self.cluster.wait_for(placed, timeout=90, interval=1.0,
                                            what="fits bound, impossible marked unschedulable")
        self.assertEqual(bound, node)
        self.assertEqual(cond.get("reason"), "Unschedulable")

        def recorded():
            got = {(e.get("regarding", {}).get("name"), e.get("reason"))
                   for e in events(self.cluster, ns)}
            return {("fits", "Scheduled"), ("impossible", "FailedScheduling")} <= got
        self.cluster.wait_for(recorded, timeout=60, what="Scheduled and FailedScheduling events")
        lease = self.cluster.get_json("lease", "gpu-scheduler", "-n", ns)
        self.assertTrue(lease["spec"].get("holderIdentity"), "gpusched holds the Lease")
        self.assertNotRegex(sched.log().lower(), r"forbidden|\b403\b",
                            "gpusched hit a permission it lacks")

        # Outside the grant: refused.
        with self.assertRaises(KubectlError) as ctx:
            self.cluster.kubectl("delete", "node", node, "--wait=false", kubeconfig=sa_kc)
        self.assertIn("forbidden", ctx.exception.stderr.lower())
        self.cluster.get_json("node", node)  # still there
        self.check_can_i(
            sa_kc,
            allowed=[
                ("list", "pods", "-A"), ("watch", "pods", "-A"), ("get", "pods", "-n", ns),
                ("create", "pods", "--subresource=binding", "-n", ns),
                ("patch", "pods", "--subresource=status", "-n", ns),
                ("list", "nodes"), ("watch", "nodes"), ("get", "nodes"),
                ("delete", "pods", "-n", ns),
                ("create", "pods", "--subresource=eviction", "-n", ns),  # consolidation's moves
                ("list", "poddisruptionbudgets.policy", "-A"),
                ("watch", "poddisruptionbudgets.policy", "-A"),
                ("create", "events.events.k8s.io", "-n", ns),
                ("create", "leases.coordination.k8s.io", "-n", ns),
                ("get", "leases.coordination.k8s.io/gpu-scheduler", "-n", ns),
                ("update", "leases.coordination.k8s.io/gpu-scheduler", "-n", ns),
            ],
            denied=[
                ("delete", "nodes"), ("update", "nodes"), ("patch", "nodes"), ("create", "nodes"),
                ("patch", "nodes", "--subresource=status"),
                ("create", "pods", "-n", ns),
                ("update", "pods", "-n", ns), ("patch", "pods", "-n", ns),
                ("create", "poddisruptionbudgets.policy", "-n", ns),
                ("delete", "poddisruptionbudgets.policy", "-n", ns),
                ("update", "pods", "--subresource=status", "-n", ns),
                ("get", "secrets", "-n", ns), ("list", "secrets", "-A"),
                ("list", "configmaps", "-n", ns),
                ("create", "serviceaccounts", "--subresource=token", "-n", ns),
                ("list", "leases.coordination.k8s.io", "-n", ns),
                ("watch", "leases.coordination.k8s.io", "-n", ns),
                ("get", "leases.coordination.k8s.io/other", "-n", ns),
                ("update", "leases.coordination.k8s.io/other", "-n", ns),
                ("delete", "leases.coordination.k8s.io/gpu-scheduler", "-n", ns),
                ("create", "leases.coordination.k8s.io", "-n", "kube-system"),
                ("update", "leases.coordination.k8s.io/gpu-scheduler", "-n", "kube-system"),
                ("create", "deployments.apps", "-n", ns),
                ("create", "clusterrolebindings.rbac.authorization.k8s.io"),
                ("impersonate", "serviceaccounts"),
            ])

        rc = sched.stop(signal.SIGTERM, timeout=30)
        self.assertEqual(rc, 0, f"gpusched exited {rc}; log tail:\n{sched.log()[-3000:]}")
        lease = self.cluster.get_json("lease", "gpu-scheduler", "-n", ns)
        self.assertFalse(lease["spec"].get("holderIdentity"), "the Lease is released on SIGTERM")
        self.cluster.kubectl("delete", "pods", "--all", "-n", ns, "--wait=false")
        self.cluster.kubectl("delete", "node", node, "--wait=false")

    def test_g_default_values_run_in_the_built_image(self):
        """The chart's default values with the image `make image` built: the rendered image
        reference is the archive's, and the image's entrypoint with the rendered args, run
        inside the image (buildah, chroot isolation, the image's non-root user) with the
        ConfigMap and the ServiceAccount token mounted where the kubelet mounts them, schedules
        a GPU pod, holds the Lease and answers the probes."""
        archive = OciArchive(image_archive())
        ns = self.cluster.new_namespace("gs-image")
        release = "img"
        fullname = f"{release}-gpusched"
        objects = self.to_objects(self.helm_template(release, ns))
        deployment = find(objects, "Deployment", f"{fullname}-scheduler")
        pod_spec = deployment["spec"]["template"]["spec"]
        container = pod_spec["containers"][0]
        self.assertEqual(container["image"], archive.ref,
                         "the chart's default image is not the one `make image` builds")
        self.assertNotIn("command", container, "the chart must use the image's entrypoint")
        argv = archive.config["config"]["Entrypoint"] + container["args"]

        self.cluster.sa_kubeconfig(ns, pod_spec["serviceAccountName"])
        self.cluster.apply([o for o in objects if o["kind"] in
                            {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
                             "ConfigMap"}])
        mounts = self.pod_volumes(objects, pod_spec, container, ns)
        node = f"{ns}-n0"
        self.cluster.apply([kwok_gpu_node(node, ns, "A100", 8, 40960, "zone-a")])
        wait_nodes_ready(self.cluster, f"{GROUP_LABEL}={ns}", 1)

        buildah = Buildah(tempfile.mkdtemp(prefix="buildah-", dir=self.cluster.dir))
        self.addCleanup(buildah.cleanup)
        ctr = buildah.from_archive(archive.path)
        server = re.match(r"https://([^:/]+):(\d+)", self.cluster.server)
        env = {"KUBERNETES_SERVICE_HOST": server.group(1),
               "KUBERNETES_SERVICE_PORT": server.group(2)}
        proc, read_log = self.start_process(
            f"{ns}-image", buildah.run_command(ctr, argv, volumes=mounts, env=env))
        create_objects(self.cluster, [gpu_pod("fits", 2, group=ns)], ns)
        bound = self.cluster.wait_for(
            lambda: self.cluster.get_json("pod", "fits", "-n", ns)["spec"].get("nodeName"),
            timeout=90, what=f"the pod bound by the image's scheduler (log: logs/{ns}-image.log)")
        self.assertEqual(bound, node)
        lease = self.cluster.get_json("lease", "gpu-scheduler", "-n", ns)
        self.assertTrue(lease["spec"].get("holderIdentity"), "the image's scheduler holds the Lease")
        port = container["ports"][0]["containerPort"]
        for probe in ("livenessProbe", "readinessProbe"):
            path = container[probe]["httpGet"]["path"]
            status = self.cluster.wait_for(
                lambda: http_status(f"https://127.0.0.1:{port}{path}") == 200 or None,
                timeout=30, what=f"{probe} {path} on port {port}")
            self.assertTrue(status)
        self.assertIsNone(proc.poll(), f"the image's scheduler exited:\n{read_log()[-3000:]}")
        self.assertNotRegex(read_log().lower(), r"forbidden|\b403\b")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        self.cluster.kubectl("delete", "pods", "--all", "-n", ns, "--wait=false")
        self.cluster.kubectl("delete", "node", node, "--wait=false")

    def pod_volumes(self, objects, pod_spec, container, ns):
        """{host dir: (container path, "ro"|"rw")} as the kubelet would mount the chart's
        volumes: ConfigMaps as files, emptyDirs as empty directories, and the ServiceAccount
        token, CA and namespace at /var/run/secrets/kubernetes.io/serviceaccount."""
        volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}
        mounts = {}
        for m in container.get("volumeMounts", []):
            v = volumes[m["name"]]
            host = tempfile.mkdtemp(prefix=f"vol-{m['name']}-", dir=self.cluster.dir)
            os.chmod(host, 0o755)
            if "configMap" in v:
                cm = find(objects, "ConfigMap", v["configMap"]["name"])
                for key, text in cm["data"].items():
                    with open(os.path.join(host, key), "w") as f:
                        f.write(text)
                    os.chmod(os.path.join(host, key), 0o644)
            elif "emptyDir" in v:
                os.chmod(host, 0o1777)
            else:
                self.fail(f"volume {m['name']}: only configMap and emptyDir are expected")
            mounts[host] = (m["mountPath"], "ro" if m.get("readOnly") else "rw")
        sa = tempfile.mkdtemp(prefix="vol-sa-", dir=self.cluster.dir)
        os.chmod(sa, 0o755)
        token = self.cluster.kubectl("create", "token", pod_spec["serviceAccountName"],
                                     "-n", ns, "--duration=1h").strip()
        admin = json.loads(self.cluster.kubectl("config", "view", "--raw", "--minify", "-o", "json"))
        ca = base64.b64decode(admin["clusters"][0]["cluster"]["certificate-authority-data"])
        for name, data in (("token", token.encode()), ("ca.crt", ca), ("namespace", ns.encode())):
            with open(os.path.join(sa, name), "wb") as f:
                f.write(data)
            os.chmod(os.path.join(sa, name), 0o644)
        mounts[sa] = ("/var/run/secrets/kubernetes.io/serviceaccount", "ro")
        return mounts

    def start_process(self, name, cmd):
        """Starts command line `cmd` (gpusched, or gpusched inside the image through buildah)
        in its own process group, its log in the cluster's logs/; killed at cleanup. Returns
        (process, read_log)."""
        log_path = os.path.join(self.cluster.dir, "logs", f"{name}.log")
        with open(log_path, "a") as logf:
            logf.write("+ " + " ".join(cmd) + "\n")
            logf.flush()
            proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)

        def kill():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self.addCleanup(kill)

        def read_log():
            with open(log_path, errors="replace") as f:
                return f.read()
        return proc, read_log

    def test_f_deletion_cost_controller_patches_only_where_allowed(self):
        ns = self.cluster.new_namespace("gs-dc")
        team_a = self.cluster.new_namespace("team-x")
        team_b = self.cluster.new_namespace("team-y")
        release = "dc"
        name = f"{release}-gpusched-deletion-cost"
        policy = {
            "apiVersion": "gpusched.io/v1alpha1", "kind": "DeletionCostPolicy",
            "controller": {"resyncPeriod": "2s", "workers": 2},
            "policies": [{"name": "web",
                          "selector": {"namespaces": [team_a, team_b],
                                       "matchLabels": {"app": "web"}},
                          "terms": [{"label": "app", "cost": 7}]}],
        }
        values = os.path.join(self.cluster.dir, f"{ns}-values.json")
        with open(values, "w") as f:
            json.dump({"deletionCost": {"enabled": True, "namespaces": [team_a],
                                        "policy": policy}}, f)
        objects = self.to_objects(self.helm(
            "template", release, CHART, "--namespace", ns, "--kube-version", self.kube_version,
            "-f", values).stdout)
        sa_kc = self.cluster.sa_kubeconfig(ns, name)
        self.cluster.apply([o for o in objects if o["kind"] in (
            "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
            "ConfigMap")])
        policy_path = os.path.join(self.cluster.dir, f"{ns}-policy.yaml")
        with open(policy_path, "w") as f:
            f.write(find(objects, "ConfigMap", f"{name}-policy")["data"]["policy.yaml"])

        node = f"{ns}-n0"
        self.cluster.apply([kwok_gpu_node(node, ns, "A100", 8, 40960, "zone-a")])
        wait_nodes_ready(self.cluster, f"{GROUP_LABEL}={ns}", 1)
        for team in (team_a, team_b):
            pod = gpu_pod("web", 0, group=ns)
            pod["metadata"]["labels"] = {"app": "web"}
            pod["spec"]["nodeName"] = node  # no scheduler needed
            create_objects(self.cluster, [pod], team)

        # As the Deployment runs it: the chart's policy, the ServiceAccount's token.
        proc, read_log = self.start_process(f"{ns}-deletion-cost", [
            gpusched_binary(), "deletion-cost", "controller", f"--config={policy_path}", f"--kubeconfig={sa_kc}",
            "--bind-address=127.0.0.1", f"--secure-port={free_port()}", "-v", "2"])

        def cost(team):
            pod = self.cluster.get_json("pod", "web", "-n", team)
            return pod["metadata"].get("annotations", {}).get(
                "controller.kubernetes.io/pod-deletion-cost")
        self.cluster.wait_for(lambda: cost(team_a) == "7", timeout=60,
                              what=f"{team_a}/web annotated with cost 7")
        self.cluster.wait_for(lambda: "forbidden" in read_log().lower(), timeout=30,
                              what=f"the patch of {team_b}/web refused")
        self.assertIsNone(cost(team_b), f"{team_b} is outside deletionCost.namespaces")
        self.assertIsNone(proc.poll(), f"controller exited:\n{read_log()[-3000:]}")
        forbidden = [ln for ln in read_log().splitlines() if "forbidden" in ln.lower()]
        self.assertTrue(all(team_b in ln for ln in forbidden),
                        f"refused outside {team_b}:\n" + "\n".join(forbidden))

        who = ("--as", f"system:serviceaccount:{ns}:{name}")
        self.check_can_i(
            self.cluster.kubeconfig,
            allowed=[
                ("list", "pods", "-A"), ("watch", "pods", "-A"), ("patch", "pods", "-n", team_a),
                ("list", "replicasets.apps", "-A"), ("list", "deployments.apps", "-A"),
                ("create", "events.events.k8s.io", "-n", team_a),
            ],
            denied=[
                ("patch", "pods", "-n", team_b), ("patch", "pods", "-n", ns),
                ("get", "pods", "-n", team_a),
                ("delete", "pods", "-n", team_a), ("update", "pods", "-n", team_a),
                ("patch", "pods", "--subresource=status", "-n", team_a),
                ("create", "pods", "--subresource=binding", "-n", team_a),
                ("create", "pods", "--subresource=eviction", "-n", team_a),
                ("patch", "replicasets.apps", "-n", team_a), ("watch", "replicasets.apps", "-A"),
                ("list", "nodes"), ("patch", "nodes"),
                ("get", "secrets", "-n", team_a),
                ("create", "leases.coordination.k8s.io", "-n", ns),
            ],
            extra=who)
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(timeout=30), 0, read_log()[-3000:])

        # Without a namespace list the patch grant is cluster-wide (and still only patch).
        objects = self.to_objects(self.helm_template("dc2", ns, sets=["deletionCost.enabled=true"]))
        self.cluster.apply([o for o in objects if o["kind"] in (
            "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")])
        self.check_can_i(
            self.cluster.kubeconfig,
            allowed=[("patch", "pods", "-n", team_b)],
            denied=[("delete", "pods", "-n", team_b), ("update", "pods", "-n", team_b)],
            extra=("--as", f"system:serviceaccount:{ns}:dc2-gpusched-deletion-cost"))
        for team in (team_a, team_b):
            self.cluster.kubectl("delete", "pods", "--all", "-n", team, "--wait=false")
        self.cluster.kubectl("delete", "node", node, "--wait=false")


if __name__ == "__main__":
    unittest.main(verbosity=2)
