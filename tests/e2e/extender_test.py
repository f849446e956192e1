#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`gpusched extender` behind the real upstream kube-scheduler (issue #5).

One control plane (the harness's, including its own default kube-scheduler, which these pods do
not name) is shared by the tests here. The test starts:
  - `gpusched extender` on https://127.0.0.1:<free port> (a serving certificate from a test CA,
    clients authenticated by certificates of another test CA: --client-ca-file, issue #21),
    authenticated to the API server as gpusched-system/gpusched;
  - a second upstream kube-scheduler (schedulerName gpu-extender-scheduler, leader election off,
    no serving port) whose KubeSchedulerConfiguration has `extenders:` pointing at it over mTLS
    (tlsConfig certFile/keyFile/caFile), with filter/prioritize/preempt/bind verbs,
    nodeCacheCapable and managedResources nvidia.com/gpu.
A client without a certificate, or with one from a third CA, gets no bind; the extender refuses
to start with bind enabled and no client CA.
The preemption test starts a third one (gpu-extender-preempt) without managedResources, so that
half-GPU pods (gpusched.io/gpu-milli, no nvidia.com/gpu) also go through the extender.
Placements are checked from the API server (kubectl), never from gpusched's memory.

Measured numbers are printed on stderr with the prefix "MEASURED".
"""

import json
import os
import socket
import subprocess
import sys
import ssl
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase, KubectlError, free_port  # noqa: E402
from gpusched_harness import (  # noqa: E402
    GPU, GROUP_LABEL, create_objects, gpu_pod, gpusched_binary, kwok_gpu_node, log,
    wait_nodes_ready)
from secure import https_get, make_ca, make_cert  # noqa: E402

SCHEDULER = "gpu-extender-scheduler"
PREEMPT_SCHEDULER = "gpu-extender-preempt"
FINALIZER = "e2e.gpusched.io/hold"
MILLI = "gpusched.io/gpu-milli"
DEVICES = "gpusched.io/gpu-devices"


def gpus_of(pod):
    total = 0
    for c in pod["spec"].get("containers", []):
        res = c.get("resources", {})
        total += int(res.get("limits", {}).get(GPU) or res.get("requests", {}).get(GPU) or 0)
    return total


class Proc:
    """A child process with its log in the cluster directory; always stopped at cleanup."""

    def __init__(self, cluster, name, cmd):
        self.name = name
        self.log_path = os.path.join(cluster.dir, "logs", f"{name}.log")
        with open(self.log_path, "a") as logf:
            logf.write("+ " + " ".join(cmd) + "\n")
            logf.flush()
            self.proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""


def client_context(cert=None):
    """A TLS client context (server certificate not verified) with `cert` = (cert, key)."""
    ctx = ssl._create_unverified_context()
    if cert:
        ctx.load_cert_chain(*cert)
    return ctx


def raw_request(port, data, cert=None, timeout=10):
    """Sends raw bytes over TLS (client certificate `cert`), then close_notify (TLS's half-close:
    the server sees the end of the request, as a TCP half-close did over plain HTTP), and returns
    the reply (b"" if the handshake was refused or the connection dropped). Memory BIOs, so that
    the client can keep reading after its close_notify."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = client_context(cert).wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    out = b""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        def flush():
            pending = outgoing.read()
            if pending:
                sock.sendall(pending)

        def pump():
            chunk = sock.recv(65536)
            if not chunk:
                incoming.write_eof()
                return False
            incoming.write(chunk)
            return True
        try:
            while True:
                try:
                    tls.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    flush()
                    if not pump():
                        return out
            flush()
            tls.write(data)
            try:
                tls.unwrap()
            except ssl.SSLWantReadError:
                pass
            flush()
            while True:
                try:
                    chunk = tls.read(65536)
                    if not chunk:
                        break
                    out += chunk
                except ssl.SSLWantReadError:
                    if not pump():
                        break
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError, socket.timeout):
            pass
    return out


class ExtenderE2ETest(ClusterTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls._start_components()
        except BaseException:
            cls._failed = True
            cls.tearDownClass()
            raise

    @classmethod
    def _start_components(cls):
        c = cls.cluster
        cls.port = free_port()
        cls.group = "extender"
        nodes = [
            kwok_gpu_node("ext-a100", cls.group, "A100-SXM4-80GB", 2, 81920, "z1"),
            kwok_gpu_node("ext-t4", cls.group, "Tesla-T4", 1, 16384, "z1"),
            kwok_gpu_node("ext-h100", cls.group, "H100-SXM5-80GB", 4, 81920, "z2"),
        ]
        create_objects(c, nodes)
        wait_nodes_ready(c, f"{GROUP_LABEL}={cls.group}", 3)
        profile = os.path.join(c.dir, "gpusched-extender.yaml")
        with open(profile, "w") as f:
            f.write("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                    "leaderElection: {leaderElect: false}\nprofiles:\n- schedulerName: gpusched-extender\n")
        # Three CAs: the extender's serving certificate, kube-scheduler's client certificate, and
        # one the extender does not trust.
        pki = os.path.join(c.dir, "extender-pki")
        os.makedirs(pki, exist_ok=True)
        cls.server_ca = make_ca(pki, "server-ca")
        cls.serving = make_cert(pki, cls.server_ca, "serving", "127.0.0.1")
        cls.client_ca = make_ca(pki, "client-ca")
        cls.client = make_cert(pki, cls.client_ca, "kube-scheduler", "system:kube-scheduler",
                               usage="clientAuth", sans=())
        other_ca = make_ca(pki, "other-ca")
        cls.other_client = make_cert(pki, other_ca, "intruder", "system:kube-scheduler",
                                     usage="clientAuth", sans=())
        cls.extender_args = [
            gpusched_binary(), "extender", f"--config={profile}",
            f"--kubeconfig={c.gpusched_kubeconfig}", "--bind-address=127.0.0.1",
            f"--secure-port={cls.port}", f"--tls-cert-file={cls.serving[0]}",
            f"--tls-private-key-file={cls.serving[1]}", f"--client-ca-file={cls.client_ca[0]}",
            "--threads=4", "-v", "2"]
        cls.extender = Proc(c, "gpusched-extender", cls.extender_args)
        deadline = time.monotonic() + 90
        while https_get(f"https://127.0.0.1:{cls.port}/healthz", ca=cls.server_ca[0],
                        timeout=2)[0] != 200:
            if not cls.extender.alive() or time.monotonic() > deadline:
                raise AssertionError("extender did not start:\n" + cls.extender.log()[-3000:])
            time.sleep(0.3)
        cls.kube_scheduler = cls.start_kube_scheduler(
            "kube-scheduler-extender", SCHEDULER,
            managed_resources=[{"name": GPU, "ignoredByScheduler": False}])

    @classmethod
    def start_kube_scheduler(cls, name, scheduler, managed_resources):
        """An upstream kube-scheduler with gpusched as its extender (every verb)."""
        c = cls.cluster
        ks_config = os.path.join(c.dir, f"{name}.yaml")
        extender = {
            "urlPrefix": f"https://127.0.0.1:{cls.port}",
            "tlsConfig": {"certFile": cls.client[0], "keyFile": cls.client[1],
                          "caFile": cls.server_ca[0]},
            "filterVerb": "filter", "prioritizeVerb": "prioritize", "preemptVerb": "preempt",
            "bindVerb": "bind", "weight": 5, "nodeCacheCapable": True, "httpTimeout": "5s",
        }
        if managed_resources:
            extender["managedResources"] = managed_resources
        with open(ks_config, "w") as f:
            json.dump({
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "clientConnection": {"kubeconfig": os.path.join(c.dir, "kube-scheduler.kubeconfig")},
                "leaderElection": {"leaderElect": False},
                "profiles": [{"schedulerName": scheduler}],
                "extenders": [extender],
            }, f)
        return Proc(c, name, [
            os.path.join(c.bin_dir, "kube-scheduler"), f"--config={ks_config}",
            "--secure-port=0", "--v=2"])

    @classmethod
    def tearDownClass(cls):
        for p in (getattr(cls, "kube_scheduler", None), getattr(cls, "extender", None)):
            if p is not None:
                p.stop()
        super().tearDownClass()

    def pods(self, ns):
        return self.cluster.get_json("pods", "--namespace", ns)["items"]

    def wait_settled(self, ns, want_bound, timeout=90):
        """Waits until `want_bound` pods have a node and stay so for 3 s; returns the pods."""
        def settled():
            first = [p for p in self.pods(ns) if p["spec"].get("nodeName")]
            if len(first) < want_bound:
                return False
            time.sleep(3)
            return self.pods(ns)
        return self.cluster.wait_for(settled, timeout=timeout, what=f"{want_bound} pods bound in {ns}")

    def test_model_and_memory_are_honoured(self):
        ns = self.cluster.new_namespace("ext-model")
        pods = [
            gpu_pod("want-a100", 1, model="A100", scheduler=SCHEDULER, group=self.group),
            gpu_pod("want-t4", 1, model="T4", scheduler=SCHEDULER, group=self.group),
            gpu_pod("want-40g", 1, memory=40000, scheduler=SCHEDULER, group=self.group),
            gpu_pod("want-v100", 1, model="V100", scheduler=SCHEDULER, group=self.group),
            gpu_pod("cpu-only", 0, scheduler=SCHEDULER, group=self.group),
        ]
        t0 = time.monotonic()
        create_objects(self.cluster, pods, namespace=ns)
        got = {p["metadata"]["name"]: p for p in self.wait_settled(ns, 4)}
        log(f"MEASURED extender model test: 4 pods bound in {time.monotonic() - t0:.1f}s")
        self.assertEqual(got["want-a100"]["spec"].get("nodeName"), "ext-a100")
        self.assertEqual(got["want-t4"]["spec"].get("nodeName"), "ext-t4")
        self.assertIn(got["want-40g"]["spec"].get("nodeName"), ("ext-a100", "ext-h100"))
        self.assertTrue(got["cpu-only"]["spec"].get("nodeName"))
        self.assertFalse(got["want-v100"]["spec"].get("nodeName"), "no V100 exists")
        # The device choice was recorded before binding (bind verb).
        self.assertIn("gpusched.io/gpu-devices", got["want-a100"]["metadata"].get("annotations", {}))
        self.cluster.kubectl("delete", "namespace", ns, "--wait=false")

    def test_sequence_never_overcommits(self):
        self.cluster.wait_for(lambda: not [p for p in self.cluster.get_json("pods", "-A")["items"]
                                           if p["spec"].get("nodeName", "").startswith("ext-")
                                           and p["metadata"]["namespace"].startswith("ext-model")],
                              timeout=60, what="previous test's pods gone")
        ns = self.cluster.new_namespace("ext-seq")
        capacity = {"ext-a100": 2, "ext-t4": 1, "ext-h100": 4}
        sizes = [1, 2, 1, 1, 2, 1, 1, 4, 1, 2]  # 16 GPUs asked, 7 exist
        pods = [gpu_pod(f"seq-{i}", n, scheduler=SCHEDULER, group=self.group)
                for i, n in enumerate(sizes)]
        create_objects(self.cluster, pods, namespace=ns)

        def full():
            items = self.pods(ns)
            used = {}
            for p in items:
                node = p["spec"].get("nodeName")
                if node:
                    used[node] = used.get(node, 0) + gpus_of(p)
            return used if sum(used.values()) >= 6 else False
        self.cluster.wait_for(full, timeout=120, what="GPUs filled")
        time.sleep(5)  # let anything still in flight land
        used = {}
        for p in self.pods(ns):
            node = p["spec"].get("nodeName")
            if node:
                used[node] = used.get(node, 0) + gpus_of(p)
        log(f"MEASURED extender sequence: GPUs used per node {used} of {capacity}")
        for node, n in used.items():
            self.assertLessEqual(n, capacity[node], f"{node} over-committed: {used}")
        # Devices per pod never overlap on a node.
        seen = {}
        for p in self.pods(ns):
            node = p["spec"].get("nodeName")
            devs = p["metadata"].get("annotations", {}).get("gpusched.io/gpu-devices")
            if not node or not devs:
                continue
            for d in devs.split(","):
                key = (node, d.split(":")[0])
                self.assertNotIn(key, seen, f"device {key} given twice")
                seen[key] = p["metadata"]["name"]
        self.cluster.kubectl("delete", "namespace", ns, "--wait=false")

    def test_survives_bad_requests(self):
        port = self.port
        cases = [
            ("malformed JSON", b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n"
             b"Connection: close\r\n\r\n{\"Pod\":[", b"HTTP/1.1 400"),
            ("truncated body", b"POST /prioritize HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n"
             b"Connection: close\r\n\r\n{\"Pod\":{\"metadata\":", b"HTTP/1.1 400"),
            ("oversized body announced", b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n"
             b"Connection: close\r\n\r\n", b"HTTP/1.1 413"),
            ("garbage", b"\x00\x01\x02 not http\r\n\r\n", b"HTTP/1.1 400"),
            ("bind without fields", b"POST /bind HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
             b"Connection: close\r\n\r\n{}", b"HTTP/1.1 400"),
        ]
        for name, data, want in cases:
            with self.subTest(name):
                got = raw_request(port, data, cert=self.client)
                self.assertTrue(got.startswith(want), f"{name}: {got[:200]!r}")
        # A whole 9 MiB body through urllib: 413 (or a reset once the server has answered).
        req = urllib.request.Request(f"https://127.0.0.1:{port}/filter", data=b" " * (9 << 20),
                                     headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=30, context=client_context(self.client))
            self.fail("9 MiB body accepted")
        except urllib.error.HTTPError as e:
            self.assertEqual(e.code, 413)
        except (ConnectionResetError, BrokenPipeError, urllib.error.URLError, ssl.SSLError):
            pass
        self.assertTrue(self.extender.alive(), self.extender.log()[-2000:])
        self.assertEqual(https_get(f"https://127.0.0.1:{port}/healthz")[0], 200)

    # --- authentication (issue #21) -------------------------------------------------------------

    def test_clients_without_the_client_ca_get_no_bind(self):
        ns = self.cluster.new_namespace("ext-authn")
        # A pod no scheduler picks up: only a bind through the extender could place it.
        create_objects(self.cluster, [gpu_pod("orphan", 1, scheduler="nobody", group=self.group)],
                       namespace=ns)
        pod = self.cluster.get_json("pod", "orphan", "--namespace", ns)
        body = json.dumps({"PodName": "orphan", "PodNamespace": ns,
                           "PodUID": pod["metadata"]["uid"], "Node": "ext-t4"}).encode()
        request = (b"POST /bind HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n"
                   + body)
        got = raw_request(self.port, request)
        self.assertTrue(got.startswith(b"HTTP/1.1 401"), got[:300])
        self.assertIn(b'"reason":"Unauthorized"', got)
        got = raw_request(self.port, request, cert=self.other_client)
        self.assertFalse(got.startswith(b"HTTP/1.1 2"), got[:300])
        self.assertNotIn(b"HTTP/1.1 200", got)
        # The same request over plain HTTP gets no answer from the TLS port.
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            s.sendall(request)
            try:
                plain = s.recv(100)
            except (ConnectionResetError, socket.timeout):
                plain = b""
        self.assertFalse(plain.startswith(b"HTTP/1.1 2"), plain)
        time.sleep(2)
        self.assertEqual(self.cluster.get_json("pod", "orphan", "--namespace", ns)["spec"]
                         .get("nodeName", ""), "", "an unauthenticated bind placed the pod")
        # /metrics: client certificates authenticate, but the delegated authorizer decides; no
        # credentials: 401.
        self.assertEqual(https_get(f"https://127.0.0.1:{self.port}/metrics")[0], 401)
        self.cluster.kubectl("delete", "namespace", ns, "--wait=false")

    def test_refuses_to_start_without_a_client_ca_when_it_binds(self):
        base = [a for a in self.extender_args if not a.startswith(("--client-ca-file",
                                                                   "--secure-port"))]
        base.append(f"--secure-port={free_port()}")
        cases = [
            ("bind, preempt and no client CA", [], "--client-ca-file"),
            ("bind with --anonymous-auth", [f"--client-ca-file={self.client_ca[0]}",
                                           "--anonymous-auth"], "--anonymous-auth"),
            ("filter alone without a client CA or --anonymous-auth",
             ["--verbs=filter,prioritize"], "--anonymous-auth"),
        ]
        for name, extra, want in cases:
            with self.subTest(name):
                r = subprocess.run(base + extra, capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(want, r.stderr)


    # --- preemption through the preempt verb ----------------------------------------------------

    def _release(self, ns, name):
        """Drops the test's finalizer so the API server can delete the pod."""
        patch = json.dumps([{"op": "remove", "path": "/metadata/finalizers"}])
        try:
            self.cluster.kubectl("patch", "pod", name, "--namespace", ns, "--type=json", "-p", patch)
        except KubectlError as e:
            if "NotFound" not in str(e) and "not found" not in str(e):
                raise

    def _preempt_cleanup(self, ns, node, classes):
        for p in self.pods(ns):
            if FINALIZER in p["metadata"].get("finalizers", []):
                self._release(ns, p["metadata"]["name"])
        self.cluster.kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found")
        self.cluster.kubectl("delete", "node", node, "--wait=false", "--ignore-not-found")
        for c in classes:
            self.cluster.kubectl("delete", "priorityclass", c, "--ignore-not-found")

    def test_names_the_kinds_it_leaves_to_kube_scheduler(self):
        """The default profile's gang, volume and DRA plugins ask for kinds the extender does not
        watch (kube-scheduler gangs, binds volumes and allocates claims): said once at start."""
        lines = [line for line in self.extender.log().splitlines()
                 if "which the extender does not watch" in line]
        self.assertEqual(len(lines), 1, self.extender.log()[-3000:])
        self.assertIn("PodGroups, PersistentVolumeClaims, ResourceClaims", lines[0])

    def test_kube_scheduler_preemption_frees_one_whole_device(self):
        """kube-scheduler's own preemption, corrected by the preempt verb.

        One node, 2 GPUs and 4 CPUs; four half-GPU pods (1 CPU each) of priority 1 and 3, one of
        each per device; then a whole-GPU pod of priority 1000 (1 CPU). kube-scheduler sees no
        devices and no shares: its dry run sees the node short of CPU only and proposes the one
        least important pod (a priority-1 share), which frees no whole GPU. The extender replaces
        it with the two pods on one device; kube-scheduler evicts those and the pod binds there.
        A PodDisruptionBudget that allows no disruption guards d-p3, the least important pod of
        priority 3 (created last): the extender reads it through its informer and empties the
        other device (a-p1, c-p3), which it would not without the budget.
        """
        ns = self.cluster.new_namespace("ext-preempt")
        node = f"{ns}-n1"
        classes = [f"{ns}-p1", f"{ns}-p3", f"{ns}-high"]
        self.addCleanup(self._preempt_cleanup, ns, node, classes)
        for name, value in zip(classes, (1, 3, 1000)):
            self.cluster.apply({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                "metadata": {"name": name}, "value": value,
                                "preemptionPolicy": "PreemptLowerPriority"})
        n = kwok_gpu_node(node, ns, "A100-SXM4-40GB", 2, 40960, "z1")
        n["status"]["allocatable"]["cpu"] = n["status"]["capacity"]["cpu"] = "4"
        create_objects(self.cluster, [n])
        create_objects(self.cluster, [{
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "guard-d"},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "d-p3"}}}}],
            namespace=ns)
        wait_nodes_ready(self.cluster, f"{GROUP_LABEL}={ns}", 1)
        ks = self.start_kube_scheduler("kube-scheduler-extender-preempt", PREEMPT_SCHEDULER,
                                       managed_resources=None)
        self.addCleanup(ks.stop)

        def pod(name, gpus, priority_class, annotations=None, finalizer=True):
            p = gpu_pod(name, gpus, scheduler=PREEMPT_SCHEDULER, group=ns,
                        annotations=annotations, cpu="1")
            p["spec"]["priorityClassName"] = priority_class
            p["metadata"].setdefault("labels", {})["app"] = name
            if finalizer:
                p["metadata"]["finalizers"] = [FINALIZER]
            return p

        # Created one at a time so that best fit puts a and c on one device, b and d on the other.
        for i, (name, pc) in enumerate((("a-p1", classes[0]), ("c-p3", classes[1]),
                                        ("b-p1", classes[0]), ("d-p3", classes[1]))):
            create_objects(self.cluster, [pod(name, 0, pc, annotations={MILLI: "500"})],
                           namespace=ns)
            self.wait_settled(ns, i + 1, timeout=120)
        devices = {p["metadata"]["name"]: p["metadata"]["annotations"][DEVICES].split(":")[0]
                   for p in self.pods(ns)}
        self.assertEqual(len(set(devices.values())), 2, devices)
        self.assertNotEqual(devices["a-p1"], devices["b-p1"], devices)
        self.assertNotEqual(devices["c-p3"], devices["d-p3"], devices)

        create_objects(self.cluster, [pod("whole", 1, classes[2], finalizer=False)], namespace=ns)

        def terminating():
            t = sorted(p["metadata"]["name"] for p in self.pods(ns)
                       if p["metadata"].get("deletionTimestamp"))
            return len(t) >= 2 and t
        try:
            self.cluster.wait_for(terminating, timeout=90, what="2 victims terminating")
        finally:
            lines = [line for line in self.extender.log().splitlines()
                     if "Extender preemption" in line and f"{ns}/whole" in line]
            log("extender preempt answers:\n  " + "\n  ".join(lines or ["(none)"]))
        time.sleep(2)  # a third victim would show by now
        victims = sorted(p["metadata"]["name"] for p in self.pods(ns)
                         if p["metadata"].get("deletionTimestamp"))
        self.assertEqual(len(victims), 2, victims)
        self.assertEqual(len({devices[v] for v in victims}), 1,
                         f"victims {victims} on devices {devices}: no whole device freed")
        self.assertEqual(victims, ["a-p1", "c-p3"], "the budget guarding d-p3 was not weighed")
        self.assertTrue(any('answer="replaced"' in line for line in lines), lines)
        for v in victims:
            self._release(ns, v)

        def whole_bound():
            p = {x["metadata"]["name"]: x for x in self.pods(ns)}.get("whole")
            return p if p and p["spec"].get("nodeName") else False
        bound = self.cluster.wait_for(whole_bound, timeout=90, what="whole bound")
        self.assertEqual(bound["spec"]["nodeName"], node)
        self.assertEqual(bound["metadata"]["annotations"][DEVICES], devices[victims[0]])

if __name__ == "__main__":
    unittest.main(verbosity=2)
