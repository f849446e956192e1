# SPDX-License-Identifier: Apache-2.0
"""Helpers for e2e tests that run ``gpusched scheduler`` against a TestCluster (cluster.py).

Standard library only.

``gpusched_binary() -> str``
    ``GPUSCHED_BINARY`` (set by ctest to ``$<TARGET_FILE:gpusched>``), else the newest
    ``build/*/cmd/gpusched/gpusched`` of the source tree; raises if there is none.

``write_config(directory, name="gpusched.yaml", leader_elect=False, lease_name=..., qps=200,
burst=400, lease_duration="15s", renew_deadline="10s", retry_period="2s") -> str``
    Writes a KubeSchedulerConfiguration with one profile, ``gpu-scheduler``.

``Gpusched(cluster, config, name, extra_args=())``
    One ``gpusched scheduler`` process with the cluster's gpusched service-account kubeconfig,
    its own process group and its log in ``<cluster.dir>/logs/<name>.log``. ``start()``,
    ``stop(sig=SIGTERM, timeout=30) -> exit code``, ``kill()`` (SIGKILL), ``alive()``,
    ``log()``, ``wait_log(text, timeout)``, ``metrics_port()`` (/metrics and the health
    endpoints listen over HTTPS on 127.0.0.1 and a free port, with gpusched's service account
    reviewing tokens, unless ``extra_args`` has ``--secure-port``; secure.py), ``base_url()``
    (``https://127.0.0.1:PORT``), ``get(path, token=...)`` -> (status, body): a GET with a
    metrics reader's token (secure.metrics_reader_token) unless ``token`` is given (``None``:
    no credentials). Every process still running at interpreter exit is killed (atexit), so
    none outlives the test.

``install_pod_groups(cluster)``
    Installs the PodGroup CRD (served) and grants gpusched's service account the chart's RBAC
    for gang policies.

``grant_lease_access(cluster, lease_name, namespace="kube-system")``
    The system:kube-scheduler ClusterRole allows get/update only on the lease named
    kube-scheduler: this adds a Role + RoleBinding for gpusched's service account on ours.

``restart_apiserver(cluster, downtime=0, sig="TERM") -> (down_s, up_s)``
    Runs ``tests/e2e/lib/control-plane restart-apiserver`` (``sig="KILL"``: a crash).

``scheduled_events(cluster, namespace) -> list``: events.k8s.io/v1 events of the namespace.

``kwok_gpu_node(name, group, model, count, memory_mib, zone, extra_labels=None)``
    A kwok Node with the seed GPU labels and ``nvidia.com/gpu`` allocatable.

``gpu_pod(name, gpus, model=None, memory=None, scheduler="gpu-scheduler", group=None,
annotations=None)``: a Pod asking for whole GPUs (limits), optionally restricted to a group.

``wait_nodes_ready(cluster, selector, count, timeout=90)``
    Waits until ``count`` nodes matching ``selector`` are Ready and carry no taint.

``wait_pods_settled(cluster, namespace, what, timeout=120, give_up_after=None) -> dict``
    Waits until every pod of ``namespace`` is bound or Unschedulable and nothing changed for 5 s
    (or, with ``give_up_after``, nothing changed for that many seconds whatever the pods say);
    returns {pod name: node, or None when unbound}. The differentials' end of a phase.
"""

import atexit
import glob
import json
import os
import re
import signal
import subprocess
import sys
import time

from cluster import KubectlError, free_port, make_kwok_node, source_dir  # noqa: E402
from secure import https_get, metrics_reader_token, secure_serving_args  # noqa: E402

GROUP_LABEL = "e2e.gpusched.io/group"
SCHEDULER_NAME = "gpu-scheduler"
GPU = "nvidia.com/gpu"

_procs = []


def _kill_all():
    for p in list(_procs):
        p.kill()


atexit.register(_kill_all)


def gpusched_binary():
    env = os.environ.get("GPUSCHED_BINARY")
    if env:
        if not os.access(env, os.X_OK):
            raise RuntimeError(f"GPUSCHED_BINARY={env} is not an executable")
        return env
    candidates = glob.glob(os.path.join(source_dir(), "build", "*", "cmd", "gpusched", "gpusched"))
    candidates = [c for c in candidates if os.access(c, os.X_OK)]
    if not candidates:
        raise RuntimeError("no gpusched binary: build it or set GPUSCHED_BINARY")
    return max(candidates, key=os.path.getmtime)


def write_config(directory, name="gpusched.yaml", leader_elect=False, lease_name="gpu-scheduler",
                 qps=200, burst=400, lease_duration="15s", renew_deadline="10s",
                 retry_period="2s"):
    text = f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  qps: {qps}
  burst: {burst}
leaderElection:
  leaderElect: {"true" if leader_elect else "false"}
  leaseDuration: {lease_duration}
  renewDeadline: {renew_deadline}
  retryPeriod: {retry_period}
  resourceName: {lease_name}
  resourceNamespace: kube-system
profiles:
- schedulerName: {SCHEDULER_NAME}
"""
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    return path


class Gpusched:
    """One `gpusched scheduler` process; see the module docstring."""

    def __init__(self, cluster, config, name="gpusched", extra_args=()):
        self.cluster = cluster
        self.config = config
        self.name = name
        self.extra_args = list(extra_args)
        self.proc = None
        self.log_path = os.path.join(cluster.dir, "logs", f"{name}.log")

    def start(self):
        # The secure port defaults to 0.0.0.0:10259: give every test process a free loopback
        # port instead, unless the test chose one (metrics_port() tells which).
        serving = ([] if any(a.startswith("--secure-port") for a in self.extra_args)
                   else secure_serving_args(self.cluster, free_port()))
        cmd = [gpusched_binary(), "scheduler", f"--config={self.config}",
               f"--kubeconfig={self.cluster.gpusched_kubeconfig}", "-v", "2"] + serving + self.extra_args
        log = open(self.log_path, "a")
        log.write("+ " + " ".join(cmd) + "\n")
        log.flush()
        env = dict(os.environ)
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        log.close()
        _procs.append(self)
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Sends `sig` and waits; returns the exit code (SIGKILL after `timeout`)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                self.proc.wait(timeout=10)
                rc = self.proc.returncode
                raise AssertionError(f"{self.name} ignored signal {sig} for {timeout}s (killed; rc {rc})")
        if self in _procs:
            _procs.remove(self)
        return self.proc.returncode

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)
        if self in _procs:
            _procs.remove(self)

    def metrics_port(self, timeout=60):
        """The HTTPS port of /metrics, /healthz and /readyz, from the start-up log line."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            for line in self.log().splitlines():
                m = re.search(r"/readyz on https://[^ ]*:(\d+) ", line)
                if m:
                    return int(m.group(1))
            if not self.alive():
                raise AssertionError(f"{self.name} exited before serving:\n{self.log()[-3000:]}")
            time.sleep(0.2)
        raise AssertionError(f"{self.name} never logged its metrics port")

    def base_url(self):
        return f"https://127.0.0.1:{self.metrics_port()}"

    _READER = object()

    def get(self, path, token=_READER, timeout=10):
        """GET ``path`` on the secure port: (status, body); see the module docstring."""
        if token is Gpusched._READER:
            token = metrics_reader_token(self.cluster)
        return https_get(self.base_url() + path, token=token, timeout=timeout)

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def wait_log(self, text, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log():
                return True
            if not self.alive():
                raise AssertionError(f"{self.name} exited (rc {self.proc.returncode}) before logging "
                                     f"{text!r}; log tail:\n{self.log()[-3000:]}")
            time.sleep(0.2)
        raise AssertionError(f"{self.name} did not log {text!r} within {timeout}s; log tail:\n"
                             f"{self.log()[-3000:]}")


def grant_lease_access(cluster, lease_name, namespace="kube-system"):
    cluster.apply([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": f"gpusched-lease-{lease_name}", "namespace": namespace},
         "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                    "resourceNames": [lease_name], "verbs": ["get", "update", "patch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": f"gpusched-lease-{lease_name}", "namespace": namespace},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                     "name": f"gpusched-lease-{lease_name}"},
         "subjects": [{"kind": "ServiceAccount", "name": "gpusched",
                       "namespace": "gpusched-system"}]},
    ])


GANG_RBAC = {
    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
    "metadata": {"name": "e2e-gpusched-gangs"},
    "rules": [
        {"apiGroups": ["scheduling.x-k8s.io", "scheduling.volcano.sh", "scheduling.k8s.io"],
         "resources": ["podgroups"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["scheduling.x-k8s.io", "scheduling.volcano.sh", "scheduling.k8s.io"],
         "resources": ["podgroups/status"], "verbs": ["patch", "update"]},
        {"apiGroups": ["scheduling.k8s.io"], "resources": ["workloads"],
         "verbs": ["get", "list", "watch"]},
    ],
}


def install_pod_groups(cluster):
    """The scheduler-plugins PodGroup CRD (tests/e2e/testdata/podgroup-crd.yaml), served, and the
    chart's RBAC for gang policies granted to gpusched's service account."""
    cluster.kubectl("apply", "-f", os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "testdata", "podgroup-crd.yaml"))
    # Served once a list succeeds (kubectl raises while the type is unknown).
    cluster.wait_for(lambda: cluster.get_json("podgroups.scheduling.x-k8s.io", "-A")["kind"],
                     timeout=60, what="the PodGroup CRD served")
    cluster.apply(GANG_RBAC)
    cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": "e2e-gpusched-gangs"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                               "name": "e2e-gpusched-gangs"},
                   "subjects": [{"kind": "ServiceAccount", "name": "gpusched",
                                 "namespace": "gpusched-system"}]})


def restart_apiserver(cluster, downtime=0, sig="TERM"):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "control-plane")
    out = subprocess.run([script, "restart-apiserver", cluster.dir, str(downtime), sig],
                         stdout=subprocess.PIPE, text=True, check=True).stdout.split()
    return float(out[1]), float(out[3])


def priority_class(cluster, name, value, policy="PreemptLowerPriority"):
    """Creates (or updates) the cluster-scoped PriorityClass `name`; the caller deletes it."""
    cluster.apply({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                   "metadata": {"name": name}, "value": value, "preemptionPolicy": policy})
    return name


def drop_finalizers(cluster, namespace, pod):
    """Removes a pod's finalizers so the API server can delete it; a pod already gone is fine."""
    patch = json.dumps([{"op": "remove", "path": "/metadata/finalizers"}])
    try:
        cluster.kubectl("patch", "pod", pod, "--namespace", namespace, "--type=json", "-p", patch)
    except KubectlError as e:
        if "not found" not in str(e).lower():
            raise


def events(cluster, namespace):
    return cluster.get_json("events.v1.events.k8s.io", "--namespace", namespace)["items"]


def kwok_gpu_node(name, group, model, count, memory_mib, zone, extra_labels=None):
    labels = {
        GROUP_LABEL: group,
        "gpu.nvidia.com/model": model,
        "gpu.nvidia.com/count": str(count),
        "gpu.nvidia.com/memory": str(memory_mib),
        "topology.kubernetes.io/zone": zone,
    }
    labels.update(extra_labels or {})
    return make_kwok_node(name, labels=labels, allocatable={GPU: str(count)})


def gpu_pod(name, gpus, model=None, memory=None, scheduler=SCHEDULER_NAME, group=None,
            annotations=None, cpu="100m"):
    ann = {}
    if model:
        ann["gpu.nvidia.com/model"] = model
    if memory:
        ann["gpu.nvidia.com/memory"] = str(memory)
    ann.update(annotations or {})
    resources = {"requests": {"cpu": cpu, "memory": "128Mi"}}
    if gpus:
        resources["requests"][GPU] = str(gpus)
        resources["limits"] = {GPU: str(gpus)}
    spec = {
        "schedulerName": scheduler,
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "main", "image": "registry.invalid/worker:1", "resources": resources}],
    }
    if group:
        spec["nodeSelector"] = {GROUP_LABEL: group}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": ann}, "spec": spec}


def create_objects(cluster, objects, namespace=None):
    """`kubectl create -f -` of a List (one POST per object, no read-modify-write)."""
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
    args = ["create", "-f", "-"]
    if namespace:
        args += ["--namespace", namespace]
    return cluster.kubectl(*args, input=text, timeout=300)


def wait_nodes_ready(cluster, selector, count, timeout=90):
    def ready():
        nodes = cluster.get_json("nodes", "-l", selector)["items"]
        ok = [n for n in nodes
              if not n.get("spec", {}).get("taints")
              and any(c.get("type") == "Ready" and c.get("status") == "True"
                      for c in n.get("status", {}).get("conditions", []))]
        return len(ok) == count and ok
    return cluster.wait_for(ready, timeout=timeout, what=f"{count} nodes {selector} Ready, untainted")


def wait_pods_settled(cluster, namespace, what, timeout=120, give_up_after=None):
    last = {"state": None, "since": time.monotonic()}

    def settled():
        state, undecided = {}, False
        for p in cluster.get_json("pods", "--namespace", namespace)["items"]:
            node = p["spec"].get("nodeName")
            reason = (pod_condition(p) or {}).get("reason")
            undecided |= not node and reason != "Unschedulable"
            state[p["metadata"]["name"]] = (node, reason)
        if state != last["state"]:
            last["state"], last["since"] = state, time.monotonic()
            return False
        quiet = time.monotonic() - last["since"]
        done = (quiet >= 5 and not undecided) or (give_up_after and quiet >= give_up_after)
        return done and state
    state = cluster.wait_for(settled, timeout=timeout, what=what, interval=1)
    return {name: node for name, (node, _) in state.items()}


def pod_condition(pod, ctype="PodScheduled"):
    for c in pod.get("status", {}).get("conditions", []) or []:
        if c.get("type") == ctype:
            return c
    return None


def log(msg):
    print(msg, file=sys.stderr, flush=True)
