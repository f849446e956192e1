#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Side-by-side benchmark: upstream kube-scheduler vs `gpusched scheduler` on a real API server.

Standard library only (issue #10, part 2). One throw-away control plane (scripts/test-cluster,
started WITHOUT its own kube-scheduler), N kwok nodes in mixed GPU/CPU node groups, then for each
scheduler in turn: start it with the same client limits (clientConnection qps/burst, default
5000/5000) and percentageOfNodesToScore 100, create a burst of P pods (same templates for every
run) in a fresh namespace from several creator processes, and measure from a pod watch:

  - pods/s from the first create to the last bind, and from the first to the last bind
    (bind time = when a watch event first shows spec.nodeName);
  - the creation rate (pods ÷ first-to-last create), so a slow creator is visible;
  - CPU seconds of the scheduler process (utime+stime of /proc/PID/stat) from t0 until the last
    Scheduled event is in the API (both schedulers may write events after the bind), per 1,000
    pods; also to the last bind, and the kube-apiserver's to the last bind, for context;
  - peak RSS of the scheduler (VmHWM of /proc/PID/status);
  - pods bound (watch, and a LIST afterwards) and Scheduled events per reportingController.

With --mode backlog the pods are created first and the scheduler started afterwards (t0 = its
start instead of the first create), which measures the scheduler's own pipeline rather than the
creation rate. Then the namespace is deleted (pods with grace period 0) and the scheduler stopped
before the next run; kwok keeps the nodes. Prints a table and the ratios (gpusched ÷ kube-scheduler for pods/s,
kube-scheduler ÷ gpusched for CPU seconds per 1,000 pods and peak RSS), medians over --repeat.

See README.md next to this file for the flags and an example.
"""

import argparse
import http.client
import json
import multiprocessing
import os
import random
import signal
import ssl
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e", "lib"))

from cluster import TestCluster, free_port, make_kwok_node, testbin_dir  # noqa: E402

BENCH_LABEL = "side-by-side.gpusched.io/bench"
GPU = "nvidia.com/gpu"
SCHEDULERS = ("kube-scheduler", "gpusched")
PROFILE_NAME = {"kube-scheduler": "bench-kube", "gpusched": "bench-gpusched"}
ZONES = ("zone-a", "zone-b", "zone-c")
CLK_TCK = os.sysconf("SC_CLK_TCK")
# The node lifecycle controller removes the not-ready taint of each new node with one API call;
# at kube-controller-manager's default client limits (20 qps) 1,000 nodes take minutes.
KCM_ARGS = "--kube-api-qps=1000 --kube-api-burst=1000"

# Node groups (as bench/synthetic.cc): name, nodes per 72, cpu, memory GiB, max pods, GPUs, model,
# GPU memory MiB. GPU nodes carry the taint nvidia.com/gpu=present:NoSchedule.
NODE_GROUPS = (
    ("p4d.24xlarge", 6, 96, 1152, 110, 8, "A100", 40960),
    ("p3.8xlarge", 6, 32, 244, 110, 4, "V100", 16384),
    ("p3.2xlarge", 6, 8, 61, 58, 1, "V100", 16384),
    ("g4dn.12xlarge", 6, 48, 192, 110, 4, "T4", 15360),
    ("g4dn.xlarge", 9, 4, 16, 29, 1, "T4", 15360),
    ("g5.12xlarge", 6, 48, 192, 110, 4, "A10G", 23028),
    ("m5.4xlarge", 9, 16, 64, 110, 0, "", 0),
    ("m5.12xlarge", 24, 48, 192, 110, 0, "", 0),
)

# Pod templates. CPU pods (~90 %): cpu, memory. GPU pods (~10 %, 1-8 GPUs): cpu, memory, GPUs,
# model ("" = any model but A100; A100 nodes are kept for the 4- and 8-GPU pods), weight. The mix
# leaves room, so that every pod of the burst fits whatever node each scheduler picks.
CPU_SHAPES = (("250m", "512Mi"), ("500m", "1Gi"), ("1", "2Gi"), ("2", "4Gi"), ("4", "16Gi"),
              ("1", "1Gi"))
GPU_SHAPES = (("2", "8Gi", 1, "", 45), ("2", "8Gi", 1, "T4", 5), ("4", "16Gi", 1, "V100", 5),
              ("4", "16Gi", 1, "A10G", 5), ("4", "16Gi", 2, "", 25), ("8", "64Gi", 4, "A100", 12),
              ("16", "128Gi", 8, "A100", 3))


def log(msg):
    print(f"side_by_side: {msg}", file=sys.stderr, flush=True)


# --- the API ----------------------------------------------------------------------------------

class ApiError(RuntimeError):
    pass


class Api:
    """A minimal HTTPS client of the API server (admin client certificate, one kept-alive
    connection). Not thread-safe: one per thread or process."""

    def __init__(self, server, pki_dir, user="admin"):
        u = urllib.parse.urlsplit(server)
        self.host, self.port = u.hostname, u.port
        self.ctx = ssl.create_default_context(cafile=os.path.join(pki_dir, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(pki_dir, f"{user}.crt"), os.path.join(pki_dir, f"{user}.key"))
        self.conn = None

    def connect(self, timeout=60):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def request(self, method, path, body=None, ok=(200, 201, 202), tries=6):
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        last = None
        for attempt in range(tries):
            if self.conn is None:
                self.conn = self.connect()
            try:
                self.conn.request(method, path, body=data, headers={
                    "Content-Type": "application/json", "Accept": "application/json"})
                resp = self.conn.getresponse()
                payload = resp.read()
            except (OSError, http.client.HTTPException) as e:
                self.conn.close()
                self.conn = None
                last = f"{type(e).__name__}: {e}"
                time.sleep(0.2 * (attempt + 1))
                continue
            if resp.status in ok:
                return resp.status, payload
            last = f"HTTP {resp.status}: {payload[:300]!r}"
            if resp.status in (429, 500, 503, 504):
                time.sleep(0.2 * (attempt + 1))
                continue
            raise ApiError(f"{method} {path}: {last}")
        raise ApiError(f"{method} {path}: gave up after {tries} tries: {last}")

    def get(self, path, **kw):
        return json.loads(self.request("GET", path, **kw)[1])


# --- cluster and workload -----------------------------------------------------------------------

def bench_nodes(n):
    """n kwok Node objects in the NODE_GROUPS proportions (groups spread evenly over the 72 slots,
    so that any n keeps the proportions), zones drawn at random (fixed seed)."""
    slots = sorted(((k + 0.5) / g[1], gi) for gi, g in enumerate(NODE_GROUPS) for k in range(g[1]))
    rng = random.Random(7)
    nodes = []
    for i in range(n):
        name, _, cpu, mem, pods, gpus, model, gmem = NODE_GROUPS[slots[i % len(slots)][1]]
        zone = rng.choice(ZONES)
        labels = {BENCH_LABEL: "1", "node.kubernetes.io/instance-type": name,
                  "topology.kubernetes.io/zone": zone}
        alloc = {"cpu": str(cpu), "memory": f"{mem}Gi", "pods": str(pods)}
        taints = None
        if gpus:
            labels.update({"gpu.nvidia.com/model": model, "gpu.nvidia.com/count": str(gpus),
                           "gpu.nvidia.com/memory": str(gmem)})
            alloc[GPU] = str(gpus)
            taints = [{"key": GPU, "value": "present", "effect": "NoSchedule"}]
        nodes.append(make_kwok_node(f"side-n{i:05d}", labels=labels, allocatable=alloc, taints=taints))
    return nodes


def bench_pods(p, seed, scheduler_name):
    """p Pod objects (deterministic for a seed; only schedulerName differs between schedulers)."""
    rng = random.Random(seed)
    pods = []
    for i in range(p):
        spec = {"schedulerName": scheduler_name, "terminationGracePeriodSeconds": 0}
        if rng.random() < 0.10:
            cpu, mem, gpus, model, _ = rng.choices(GPU_SHAPES, weights=[g[4] for g in GPU_SHAPES])[0]
            spec["tolerations"] = [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]
            if model:
                spec["nodeSelector"] = {"gpu.nvidia.com/model": model}
            else:
                spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "gpu.nvidia.com/model", "operator": "NotIn", "values": ["A100"]}]}]}}}
            res = {"requests": {"cpu": cpu, "memory": mem, GPU: str(gpus)}, "limits": {GPU: str(gpus)}}
        else:
            cpu, mem = rng.choice(CPU_SHAPES)
            res = {"requests": {"cpu": cpu, "memory": mem}}
            if rng.random() < 0.20:  # a required zone affinity, one or two zones
                zones = rng.sample(ZONES, rng.choice((1, 2)))
                spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": zones}]}]}}}
        spec["containers"] = [{"name": "main", "image": "registry.invalid/app:1", "resources": res}]
        pods.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": f"p-{i:05d}", "labels": {"app": f"app-{i % 50}"}},
                     "spec": spec})
    return pods


def create_nodes(api_factory, nodes, threads=8):
    """Parallel POSTs; an existing node (409) is fine (a reused cluster)."""
    chunks = [nodes[i::threads] for i in range(threads)]
    errors = []

    def work(chunk):
        api = api_factory()
        for n in chunk:
            try:
                api.request("POST", "/api/v1/nodes", n, ok=(201, 409))
            except ApiError as e:
                errors.append(str(e))
    ts = [threading.Thread(target=work, args=(c,)) for c in chunks]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise ApiError(f"{len(errors)} node creates failed, first: {errors[0]}")


def wait_nodes_ready(api, n, timeout):
    deadline = time.monotonic() + timeout
    sel = urllib.parse.quote(f"{BENCH_LABEL}=1")
    while True:
        items = api.get(f"/api/v1/nodes?labelSelector={sel}")["items"]
        ready = sum(1 for x in items
                    if any(c.get("type") == "Ready" and c.get("status") == "True"
                           for c in x.get("status", {}).get("conditions", []))
                    and not any(t["key"].startswith("node.kubernetes.io/")
                                for t in x.get("spec", {}).get("taints", []) or []))
        if len(items) > n:
            raise ApiError(f"the cluster has {len(items)} bench nodes, more than --nodes {n}")
        if ready == n:
            return
        if time.monotonic() > deadline:
            raise ApiError(f"only {ready}/{n} nodes Ready and untainted after {timeout}s")
        time.sleep(1)


# --- process accounting ------------------------------------------------------------------------

def cpu_seconds(pid):
    """utime+stime of a process (all threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def vm_hwm_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


# --- schedulers ----------------------------------------------------------------------------------

def config_text(kind, kubeconfig, qps, burst):
    return f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: {kubeconfig}
  qps: {qps}
  burst: {burst}
leaderElection:
  leaderElect: false
percentageOfNodesToScore: 100
profiles:
- schedulerName: {PROFILE_NAME[kind]}
"""


class Scheduler:
    """One scheduler process started for one run, in its own process group."""

    def __init__(self, kind, cluster_dir, bin_dir, gpusched_binary, qps, burst, run_id, verbosity):
        self.kind = kind
        kubeconfig = os.path.join(cluster_dir, "kube-scheduler.kubeconfig")
        cfg = os.path.join(cluster_dir, f"side-{run_id}-{kind}.yaml")
        with open(cfg, "w") as f:
            f.write(config_text(kind, kubeconfig, qps, burst))
        if kind == "kube-scheduler":
            # As scripts/test-cluster starts it, with the config file instead of --kubeconfig.
            self.cmd = [os.path.join(bin_dir, "kube-scheduler"), f"--config={cfg}",
                        f"--authentication-kubeconfig={kubeconfig}",
                        f"--authorization-kubeconfig={kubeconfig}",
                        "--bind-address=127.0.0.1", f"--secure-port={free_port()}",
                        f"--cert-dir={os.path.join(cluster_dir, f'side-{run_id}-certs')}",
                        "--profiling=false", f"--v={verbosity}"]
        else:
            # The same serving as kube-scheduler above: HTTPS with delegated authn/authz.
            self.cmd = [gpusched_binary, "scheduler", f"--config={cfg}", "--bind-address=127.0.0.1",
                        f"--secure-port={free_port()}",
                        f"--authentication-kubeconfig={kubeconfig}",
                        f"--authorization-kubeconfig={kubeconfig}", "-v", str(verbosity)]
        self.log_path = os.path.join(cluster_dir, "logs", f"side-{run_id}-{kind}.log")
        self.proc = None

    def start(self):
        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        with open(self.log_path, "w") as log_file:
            log_file.write("+ " + " ".join(self.cmd) + "\n")
            log_file.flush()
            self.proc = subprocess.Popen(self.cmd, stdout=log_file, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n=3000):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-n:]
        except OSError:
            return ""

    def stop(self, timeout=30):
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(timeout=10)


# --- one run -----------------------------------------------------------------------------------

def lines(resp):
    """The lines of a streamed (chunked) response as they arrive (iterating an HTTPResponse
    would wait for a full buffer and hold back the last events)."""
    buf = b""
    while True:
        data = resp.read1(65536)
        if not data:
            return
        buf += data
        *complete, buf = buf.split(b"\n")
        for line in complete:
            if line.strip():
                yield line


class Watcher(threading.Thread):
    """Watches the namespace's pods from `rv`; records when spec.nodeName first appears."""

    def __init__(self, api, ns, rv, want):
        super().__init__(daemon=True)
        self.api, self.ns, self.rv, self.want = api, ns, rv, want
        self.bound = {}  # pod name -> (monotonic time, node)
        self.done = threading.Event()
        self.stop = False
        self.error = None
        self.conn = None

    def run(self):
        try:
            while not self.stop and len(self.bound) < self.want:
                self.conn = self.api.connect(timeout=120)
                self.conn.request("GET", f"/api/v1/namespaces/{self.ns}/pods?watch=1&timeoutSeconds=60"
                                  f"&allowWatchBookmarks=true&resourceVersion={self.rv}")
                resp = self.conn.getresponse()
                if resp.status != 200:
                    raise ApiError(f"watch: HTTP {resp.status}: {resp.read()[:300]!r}")
                for line in lines(resp):
                    now = time.monotonic()
                    ev = json.loads(line)
                    obj = ev.get("object", {})
                    if ev.get("type") == "ERROR":  # e.g. 410 Gone: list again from now
                        lst = self.api.get(f"/api/v1/namespaces/{self.ns}/pods")
                        self.rv = lst["metadata"]["resourceVersion"]
                        for p in lst["items"]:
                            self._seen(p, time.monotonic())
                        break
                    self.rv = obj.get("metadata", {}).get("resourceVersion", self.rv)
                    if ev.get("type") in ("ADDED", "MODIFIED"):
                        self._seen(obj, now)
                    if len(self.bound) >= self.want or self.stop:
                        break
                self.conn.close()
        except Exception as e:  # noqa: BLE001 - reported by the run
            if not self.stop:
                self.error = e
        finally:
            self.done.set()

    def _seen(self, pod, now):
        name = pod["metadata"]["name"]
        node = pod.get("spec", {}).get("nodeName")
        if node and name not in self.bound and name.startswith("p-"):
            self.bound[name] = (now, node)

    def cancel(self):
        self.stop = True
        try:
            if self.conn is not None and self.conn.sock is not None:
                self.conn.sock.shutdown(2)
        except OSError:
            pass


def creator(server, pki, ns, bodies, go, out, index):
    """A creator process: POSTs its pods (pre-encoded JSON) once `go` is set."""
    api = Api(server, pki)
    api.request("GET", "/version")  # connect before the clock starts
    go.wait()
    t0 = time.monotonic()
    errors = []
    ok = 0
    for b in bodies:
        try:
            api.request("POST", f"/api/v1/namespaces/{ns}/pods", b, ok=(201,))
            ok += 1
        except ApiError as e:
            errors.append(str(e))
    out.put((index, ok, errors[:3], len(errors), t0, time.monotonic()))


def list_all(api, path):
    items, cont = [], ""
    while True:
        sep = "&" if "?" in path else "?"
        page = api.get(f"{path}{sep}limit=1000" + (f"&continue={urllib.parse.quote(cont)}" if cont else ""))
        items += page["items"]
        cont = page["metadata"].get("continue")
        if not cont:
            return items


def scheduled_events(api, ns, want, timeout):
    """Scheduled events by reportingController, waiting (up to timeout) for `want` of them."""
    deadline = time.monotonic() + timeout
    while True:
        by = {}
        for e in list_all(api, f"/apis/events.k8s.io/v1/namespaces/{ns}/events"):
            if e.get("reason") == "Scheduled" and e.get("regarding", {}).get("name", "").startswith("p-"):
                key = e.get("reportingController") or e.get("deprecatedSource", {}).get("component", "?")
                by[key] = by.get(key, 0) + 1
        if sum(by.values()) >= want or time.monotonic() > deadline:
            return by
        time.sleep(1)


def delete_namespace(api, ns, timeout=300):
    try:
        api.request("DELETE", f"/api/v1/namespaces/{ns}/pods?gracePeriodSeconds=0", ok=(200,))
        api.request("DELETE", f"/api/v1/namespaces/{ns}", ok=(200, 202))
    except ApiError as e:
        log(f"deleting namespace {ns}: {e}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            api.request("GET", f"/api/v1/namespaces/{ns}", ok=(200,), tries=1)
        except ApiError as e:
            if "HTTP 404" in str(e):
                return
        time.sleep(1)
    log(f"namespace {ns} still there after {timeout}s")


def wait_warmup(api, ns, kind, sched, args):
    """Creates a warm-up pod and waits until `sched` bound it (informers synced, profile working);
    returns the seconds that took."""
    warm = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "warmup"},
            "spec": {"schedulerName": PROFILE_NAME[kind], "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "registry.invalid/app:1",
                                     "resources": {"requests": {"cpu": "10m"}}}]}}
    t_start = time.monotonic()
    api.request("POST", f"/api/v1/namespaces/{ns}/pods", warm, ok=(201,))
    while not api.get(f"/api/v1/namespaces/{ns}/pods/warmup")["spec"].get("nodeName"):
        if not sched.alive():
            raise RuntimeError(f"{kind} exited (rc {sched.proc.returncode}):\n{sched.log_tail()}")
        if time.monotonic() - t_start > args.start_timeout:
            raise RuntimeError(f"{kind} did not bind a warm-up pod in {args.start_timeout}s:\n"
                               f"{sched.log_tail()}")
        time.sleep(0.2)
    return round(time.monotonic() - t_start, 2)


def run_one(args, cluster_dir, server, bin_dir, kind, run_id):
    pki = os.path.join(cluster_dir, "pki")
    api = Api(server, pki)
    ns = f"side-{run_id}-{'kube' if kind == 'kube-scheduler' else 'gpusched'}"
    api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": ns}}, ok=(201,))
    # Pods need the namespace's default service account (admission) before they can be created.
    deadline = time.monotonic() + 60
    while True:
        try:
            api.request("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default", ok=(200,), tries=1)
            break
        except ApiError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)

    sched = Scheduler(kind, cluster_dir, bin_dir, args.gpusched_binary, args.qps, args.burst, run_id,
                      args.verbosity)
    backlog = args.mode == "backlog"
    result = {"scheduler": kind, "profile": PROFILE_NAME[kind], "mode": args.mode, "nodes": args.nodes,
              "pods": args.pods, "qps": args.qps, "burst": args.burst, "namespace": ns, "run": run_id}
    try:
        if not backlog:
            sched.start()
            result["ready_s"] = wait_warmup(api, ns, kind, sched, args)
            time.sleep(args.settle)

        # Creator processes, forked before the watcher thread starts; they wait for `go`.
        bodies = [json.dumps(p).encode() for p in bench_pods(args.pods, args.seed, PROFILE_NAME[kind])]
        ctx = multiprocessing.get_context("fork")
        go, out = ctx.Event(), ctx.Queue()
        procs = [ctx.Process(target=creator, args=(server, pki, ns, bodies[i::args.creators], go, out, i),
                             daemon=True) for i in range(args.creators)]
        for p in procs:
            p.start()
        created = None
        if backlog:  # every pod exists before the scheduler starts
            go.set()
            created = [out.get(timeout=max(60, args.timeout)) for _ in procs]
        rv = api.get(f"/api/v1/namespaces/{ns}/pods")["metadata"]["resourceVersion"]
        watcher = Watcher(Api(server, pki), ns, rv, args.pods)
        watcher.start()
        time.sleep(1.0)  # creators connected, watch open

        apiserver_pid = None
        try:
            with open(os.path.join(cluster_dir, "pids", "kube-apiserver.pid")) as f:
                apiserver_pid = int(f.read().strip())
            api_cpu0 = cpu_seconds(apiserver_pid)
        except (OSError, ValueError):
            apiserver_pid = None
        load0 = loadavg()
        if backlog:
            t_go = time.monotonic()
            sched.start()
            cpu0 = 0.0  # a new process: its whole life counts (start-up, informer sync included)
        else:
            cpu0 = cpu_seconds(sched.proc.pid)
            go.set()
            t_go = time.monotonic()
        # Until every pod is bound, or nothing was bound for --stall seconds (pods that fit
        # nowhere), or --timeout.
        last_change = t_go
        last_count = 0
        while not watcher.done.wait(timeout=1.0):
            now = time.monotonic()
            if len(watcher.bound) != last_count:
                last_count, last_change = len(watcher.bound), now
            if now - last_change > args.stall or now - t_go > args.timeout:
                log(f"stopping the run: {last_count}/{args.pods} bound, none for {now - last_change:.0f}s")
                break
        cpu1 = cpu_seconds(sched.proc.pid) if sched.alive() else float("nan")
        api_cpu1 = cpu_seconds(apiserver_pid) if apiserver_pid else float("nan")
        load1 = loadavg()
        watcher.cancel()
        if created is None:
            created = [out.get(timeout=max(10, args.timeout)) for _ in procs]
        for p in procs:
            p.join(timeout=10)
        if watcher.error:
            raise watcher.error
        if not sched.alive():
            raise RuntimeError(f"{kind} exited during the run (rc {sched.proc.returncode}):\n"
                               f"{sched.log_tail()}")

        n_created = sum(c[1] for c in created)
        create_errors = sum(c[3] for c in created)
        t_first_create = min(c[4] for c in created)
        t_last_create = max(c[5] for c in created)
        times = sorted(t for t, _ in watcher.bound.values())
        # t0: the first create (burst) or the scheduler's start (backlog).
        t0 = t_go if backlog else t_first_create
        bound = len(times)
        result.update({
            "created": n_created, "create_errors": create_errors,
            "create_error_samples": [e for c in created for e in c[2]][:3],
            "create_s": round(t_last_create - t_first_create, 3),
            "create_pods_per_s": round(n_created / max(1e-9, t_last_create - t_first_create), 1),
            "bound": bound,
            "load_before": load0, "load_after": load1,
        })
        if bound:
            span_all = times[-1] - t0
            span_bind = times[-1] - times[0]
            result.update({
                "t0_to_first_bind_s": round(times[0] - t0, 3),
                "t0_to_last_bind_s": round(span_all, 3),
                "pods_per_s": round(bound / max(1e-9, span_all), 1),
                "first_to_last_bind_s": round(span_bind, 3),
                "bind_pods_per_s": round((bound - 1) / span_bind, 1) if span_bind > 0 else None,
            })
        # Cross-checks from the API: a LIST of the pods, and who reported Scheduled.
        pods = list_all(api, f"/api/v1/namespaces/{ns}/pods")
        ours = [p for p in pods if p["metadata"]["name"].startswith("p-")]
        result["bound_by_list"] = sum(1 for p in ours if p["spec"].get("nodeName"))
        result["scheduler_names"] = sorted({p["spec"].get("schedulerName") for p in ours})
        # Both schedulers may write Scheduled events after the bind (kube-scheduler's event
        # broadcaster, gpusched's AsyncEventClient): the CPU figure runs until every event is in.
        result["scheduled_events"] = scheduled_events(api, ns, result["bound_by_list"], args.events_timeout)
        cpu2 = cpu_seconds(sched.proc.pid) if sched.alive() else float("nan")
        cpu = cpu2 - cpu0
        result.update({
            "cpu_s": round(cpu, 2),
            "cpu_s_per_1000_pods": round(cpu * 1000.0 / max(1, bound), 3),
            "cpu_s_to_last_bind": round(cpu1 - cpu0, 2),
            "apiserver_cpu_s": round(api_cpu1 - api_cpu0, 2) if apiserver_pid else None,
            "peak_rss_mib": round(vm_hwm_mib(sched.proc.pid), 1),
        })
    finally:
        result["exit_code"] = sched.stop()
        if kind == "gpusched" and result["exit_code"] not in (0, None):
            log(f"gpusched exited {result['exit_code']}; log tail:\n{sched.log_tail()}")
        delete_namespace(api, ns)
    return result


# --- report ------------------------------------------------------------------------------------

def fmt(v, digits=1):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def print_report(results, mode="burst", out=sys.stdout):
    cols = ("scheduler", "run", "bound", "create_pods_per_s", "pods_per_s", "bind_pods_per_s",
            "cpu_s_to_last_bind", "cpu_s", "cpu_s_per_1000_pods", "peak_rss_mib", "apiserver_cpu_s",
            "load_before")
    t0 = "first create" if mode == "burst" else "scheduler start"
    heads = ("scheduler", "run", "bound", "create/s", f"pods/s ({t0}->last bind)",
             "pods/s (first->last bind)", "CPU s to last bind", "CPU s to last event",
             "CPU s/1000 pods (to last event)", "peak RSS MiB", "apiserver CPU s (to last bind)",
             "load avg (1/5/15)")
    print("| " + " | ".join(heads) + " |", file=out)
    print("|" + "---|" * len(heads), file=out)
    for r in results:
        vals = []
        for c in cols:
            v = r.get(c)
            if c == "load_before":
                v = "/".join(f"{x:.1f}" for x in v) if v else "-"
            elif c == "bound":
                v = f"{v}/{r['pods']}"
            elif c == "cpu_s_per_1000_pods":
                v = fmt(v, 3)
            vals.append(fmt(v))
        print("| " + " | ".join(vals) + " |", file=out)
    ratios = compute_ratios(results, t0)
    if ratios:
        print("", file=out)
        for k, v in ratios.items():
            print(f"{k}: {v:.2f}", file=out)
    return ratios


def compute_ratios(results, t0="first create"):
    med = {}
    for kind in SCHEDULERS:
        rs = [r for r in results if r["scheduler"] == kind and r.get("pods_per_s")]
        if rs:
            med[kind] = {k: statistics.median(r[k] for r in rs)
                         for k in ("pods_per_s", "bind_pods_per_s", "cpu_s_per_1000_pods", "peak_rss_mib")
                         if all(r.get(k) for r in rs)}
    if len(med) < 2:
        return {}
    g, k = med["gpusched"], med["kube-scheduler"]
    out = {}
    if "pods_per_s" in g and "pods_per_s" in k:
        out[f"pods/s {t0}->last bind, gpusched / kube-scheduler (median)"] = g["pods_per_s"] / k["pods_per_s"]
    if "bind_pods_per_s" in g and "bind_pods_per_s" in k:
        out["pods/s first->last bind, gpusched / kube-scheduler (median)"] = \
            g["bind_pods_per_s"] / k["bind_pods_per_s"]
    if "cpu_s_per_1000_pods" in g and "cpu_s_per_1000_pods" in k:
        out["CPU s per 1000 pods, kube-scheduler / gpusched (median)"] = \
            k["cpu_s_per_1000_pods"] / g["cpu_s_per_1000_pods"]
    if "peak_rss_mib" in g and "peak_rss_mib" in k:
        out["peak RSS, kube-scheduler / gpusched (median)"] = k["peak_rss_mib"] / g["peak_rss_mib"]
    return out


# --- main --------------------------------------------------------------------------------------

def default_gpusched_binary():
    for d in ("side-release", "release"):
        p = os.path.join(REPO, "build", d, "cmd", "gpusched", "gpusched")
        if os.access(p, os.X_OK):
            return p
    return None


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=1000, help="kwok nodes (default 1000)")
    ap.add_argument("--pods", type=int, default=5000, help="pods per run (default 5000)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per scheduler (default 1)")
    ap.add_argument("--order", default="kube-scheduler,gpusched",
                    help="which scheduler first (comma list of kube-scheduler,gpusched); the order "
                         "alternates between repeats")
    ap.add_argument("--only", choices=SCHEDULERS, help="run only this scheduler")
    ap.add_argument("--mode", choices=("burst", "backlog"), default="burst",
                    help="burst: the scheduler runs, then the pods are created (t0 = first create); "
                         "backlog: the pods are created, then the scheduler starts (t0 = its start)")
    ap.add_argument("--gpusched-binary", default=os.environ.get("GPUSCHED_BINARY") or default_gpusched_binary(),
                    help="gpusched binary (default $GPUSCHED_BINARY, else build/side-release or "
                         "build/release)")
    ap.add_argument("--qps", type=float, default=5000, help="clientConnection.qps of both (5000)")
    ap.add_argument("--burst", type=int, default=5000, help="clientConnection.burst of both (5000)")
    ap.add_argument("--creators", type=int, default=4, help="pod creator processes (4)")
    ap.add_argument("--seed", type=int, default=42, help="pod template mix (42)")
    ap.add_argument("--verbosity", type=int, default=0, help="-v of both schedulers (0)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds a run may take to bind all (900)")
    ap.add_argument("--stall", type=float, default=60,
                    help="end a run when no pod was bound for this many seconds (60)")
    ap.add_argument("--start-timeout", type=float, default=120,
                    help="seconds a scheduler may take to bind the warm-up pod (120)")
    ap.add_argument("--settle", type=float, default=3.0, help="seconds idle before the burst (3)")
    ap.add_argument("--events-timeout", type=float, default=30,
                    help="seconds to wait for the Scheduled events after a run (30)")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    ap.add_argument("--cluster-dir", help="use this running test cluster (scripts/test-cluster up "
                                          "with TEST_CLUSTER_NO_SCHEDULER=1) instead of starting one")
    ap.add_argument("--keep-cluster", action="store_true",
                    help="start the cluster without an owner watchdog and leave it running (its "
                         "directory is printed; pass it to --cluster-dir next time)")
    args = ap.parse_args(argv)
    order = [s.strip() for s in args.order.split(",") if s.strip()]
    if sorted(order) != sorted(SCHEDULERS):
        ap.error(f"--order: want both of {','.join(SCHEDULERS)}, got {args.order!r}")
    args.order = order
    for name in ("nodes", "pods", "repeat", "creators"):
        if getattr(args, name) < 1:
            ap.error(f"--{name}: must be >= 1, got {getattr(args, name)}")
    if args.qps <= 0 or args.burst < 1:
        ap.error(f"--qps/--burst: must be positive, got {args.qps}/{args.burst}")
    if args.only != "kube-scheduler" and not (args.gpusched_binary and os.access(args.gpusched_binary, os.X_OK)):
        ap.error(f"--gpusched-binary: not an executable: {args.gpusched_binary!r} (build it: cmake "
                 "--preset release -B build/side-release && cmake --build build/side-release --target gpusched)")
    return args


def start_kept_cluster():
    import tempfile
    d = tempfile.mkdtemp(prefix="gpusched-side-")
    env = dict(os.environ, TEST_CLUSTER_NO_SCHEDULER="1", GPUSCHED_TESTBIN_DIR=testbin_dir(),
               TEST_CLUSTER_KCM_ARGS=KCM_ARGS)
    env.pop("TEST_CLUSTER_OWNER_PID", None)
    subprocess.run([os.path.join(REPO, "scripts", "test-cluster"), "up", d], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    log(f"cluster kept at {d} (stop it: scripts/test-cluster down {d})")
    return d


def cluster_server(d):
    with open(os.path.join(d, "cluster.env")) as f:
        values = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
    return values["TEST_CLUSTER_SERVER"]


def main(argv=None):
    args = parse_args(argv if argv is not None else sys.argv[1:])
    cluster = None
    if args.cluster_dir:
        cdir = os.path.abspath(args.cluster_dir)
    elif args.keep_cluster:
        cdir = start_kept_cluster()
    else:
        cluster = TestCluster(start_scheduler=False, extra_args={"kcm": KCM_ARGS}).start()
        cdir = cluster.dir
    failed = True
    try:
        server = cluster_server(cdir)
        pki = os.path.join(cdir, "pki")
        bin_dir = testbin_dir()
        t0 = time.monotonic()
        create_nodes(lambda: Api(server, pki), bench_nodes(args.nodes))
        t1 = time.monotonic()
        wait_nodes_ready(Api(server, pki), args.nodes, timeout=max(180, args.nodes / 2))
        log(f"{args.nodes} nodes created in {t1 - t0:.1f}s, all Ready after {time.monotonic() - t0:.1f}s")
        results = []
        for rep in range(args.repeat):
            order = args.order if rep % 2 == 0 else list(reversed(args.order))
            for kind in order:
                if args.only and kind != args.only:
                    continue
                run_id = f"{rep + 1}{secrets_suffix()}"
                log(f"run {rep + 1}/{args.repeat}: {kind}, {args.pods} pods on {args.nodes} nodes "
                    f"(load {loadavg()})")
                r = run_one(args, cdir, server, bin_dir, kind, run_id)
                log("result: " + json.dumps(r))
                results.append(r)
        print(f"\n{args.mode}: {args.nodes} nodes, {args.pods} pods per run, qps/burst {args.qps:g}/{args.burst}, "
              f"percentageOfNodesToScore 100, {os.cpu_count()} CPUs\n")
        ratios = print_report(results, args.mode)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"mode": args.mode, "nodes": args.nodes, "pods": args.pods, "qps": args.qps, "burst": args.burst,
                           "gpusched_binary": args.gpusched_binary, "results": results,
                           "ratios": ratios}, f, indent=1)
        failed = False
        return 0
    finally:
        if cluster is not None:
            cluster.stop(failed=failed)


def secrets_suffix():
    return "-" + os.urandom(2).hex()


if __name__ == "__main__":
    sys.exit(main())
