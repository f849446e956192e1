# SPDX-License-Identifier: Apache-2.0
"""Harness for gpusched's e2e tests: a real, throw-away Kubernetes control plane.

Standard library only. The control plane is upstream etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and kwok, built from pinned Go modules by
scripts/testbin and started by scripts/test-cluster on 127.0.0.1 ephemeral ports in a
fresh temporary directory. kwok keeps fake nodes (annotated ``kwok.x-k8s.io/node: fake``)
Ready and moves pods bound to them to Running/Ready; deleted pods on them go away at once.

API (keep it small; later tests build on it):

``TestCluster(start_scheduler=True, extra_args=None, kwok_stages=None, kueue=False)``
    Context manager. ``__enter__`` runs ``scripts/test-cluster up`` (which returns once the
    API server is ready and the controllers, scheduler and kwok run); ``__exit__`` prints
    the components' logs if the block raised, and always runs ``down`` and removes the
    directory. ``start()``/``stop(failed=False)`` do the same without ``with``. atexit,
    SIGTERM/SIGHUP handlers and an owner-PID watchdog in scripts/test-cluster make sure no
    process outlives the test even when it is killed.
    ``extra_args`` maps "apiserver"/"kcm"/"scheduler"/"kwok" to extra command-line flags.
    ``kwok_stages`` is a kwok stage file to use instead of the testbin's (other pod life
    cycles, e.g. Job pods that complete after a delay). ``kueue=True`` also installs Kueue's
    CRDs and runs its controller manager with its webhooks (TEST_CLUSTER_KUEUE=1; binaries from
    ``kueue_dir()``); ``extra_args["kueue"]`` adds flags to it.

    Attributes: ``dir``, ``kubeconfig`` (admin, system:masters), ``gpusched_kubeconfig``
    (service account gpusched-system/gpusched, bound to system:kube-scheduler and
    system:volume-scheduler), ``server``, ``bin_dir``.

    ``kubectl(*args, input=None, kubeconfig=None, timeout=120) -> str``
        Runs the real kubectl from the testbin with the admin (or the given) kubeconfig and
        returns stdout; raises ``KubectlError`` (with stderr) on a non-zero exit.
    ``get_json(*args) -> dict``: ``kubectl get <args> -o json``, parsed.
    ``apply(obj_or_yaml, namespace=None) -> str``: ``kubectl apply -f -``; accepts YAML/JSON
        text, a dict, or a list of dicts.
    ``wait_for(predicate, timeout=60, what="condition", interval=0.5)``
        Calls ``predicate()`` until it returns something truthy and returns that; exceptions
        count as "not yet". On timeout raises ``AssertionError`` naming ``what`` and the last
        value or exception, so a unittest reports a failure, not an error.
    ``new_namespace(prefix="e2e") -> str``: creates a uniquely named namespace and waits
        until its default service account exists (pods can be created in it).
    ``sa_kubeconfig(namespace, name) -> str``: creates the service account if needed and
        writes a kubeconfig that authenticates as it with a token from
        ``kubectl create token``; returns its path. RBAC is up to the caller.
    ``logs() -> str``: every component's log.

``make_kwok_node(name, labels=None, allocatable=None, taints=None, annotations=None) -> dict``
    A Node object that kwok manages. ``allocatable`` (also used as capacity) is merged over
    cpu 32, memory 256Gi, pods 110; e.g. ``{"nvidia.com/gpu": "8"}``.

``ClusterTestCase``: a ``unittest.TestCase`` base that starts one ``TestCluster`` per class
    (``cls.cluster``) and prints its logs at teardown when any test in the class failed.

Environment: ``GPUSCHED_SOURCE_DIR`` (repository root; default: derived from this file),
``GPUSCHED_TESTBIN_DIR`` (binaries; default: the output of scripts/testbin),
``GPUSCHED_KUEUE_DIR`` (the Kueue bin directory; default: the output of
``scripts/testbin --kueue``), ``GPUSCHED_E2E_KUBE`` (the Kubernetes release of the API server,
controllers and scheduler: unset for test/testbin/kubernetes's, ``1.35`` for the older control
plane of ``scripts/testbin --kube 1.35``, or ``GPUSCHED_KUBE_BIN_DIR`` when set; see
``kube_minor()``), ``GPUSCHED_E2E_KEEP=1`` (keep the cluster directory after teardown, for its logs),
``GPUSCHED_E2E_LOG_LINES`` (log lines per component printed on failure; default 300, 0 = all).
"""

import atexit
import ctypes
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

__all__ = [
    "ClusterTestCase",
    "KubectlError",
    "TestCluster",
    "kube_minor",
    "kueue_dir",
    "make_kwok_node",
    "source_dir",
    "testbin_dir",
]


def source_dir():
    """The gpusched repository root."""
    env = os.environ.get("GPUSCHED_SOURCE_DIR")
    if env:
        return os.path.abspath(env)
    return os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


_testbin_cache = None


def testbin_dir():
    """Directory holding the upstream binaries; builds them via scripts/testbin if needed."""
    global _testbin_cache
    if _testbin_cache:
        return _testbin_cache
    env = os.environ.get("GPUSCHED_TESTBIN_DIR")
    if env:
        _testbin_cache = os.path.abspath(env)
        return _testbin_cache
    _testbin_cache = _testbin_output()
    return _testbin_cache


def _testbin_output(*args):
    """The last line of scripts/testbin ARGS (a bin directory it built or found)."""
    script = os.path.join(source_dir(), "scripts", "testbin")
    proc = subprocess.run([script, *args], stdout=subprocess.PIPE, text=True)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{script} {' '.join(args)} failed (exit {proc.returncode}); "
                           "see its output above")
    return lines[-1]


def kube_minor():
    """The minor version of the Kubernetes control plane the e2e tests run against: that of
    GPUSCHED_E2E_KUBE (e.g. "1.35") when set, else the one test/testbin/kubernetes/go.mod pins."""
    release = os.environ.get("GPUSCHED_E2E_KUBE")
    if release:
        return int(release.split(".")[1])
    with open(os.path.join(source_dir(), "test", "testbin", "kubernetes", "go.mod")) as f:
        for line in f:  # "require k8s.io/kubernetes v1.37.2" or "\tk8s.io/kubernetes v1.37.2 ..."
            words = line.split()
            if "k8s.io/kubernetes" in words[:2]:
                version = words[words.index("k8s.io/kubernetes") + 1:][:1]
                if version and version[0].startswith("v1."):
                    return int(version[0].split(".")[1])
    raise RuntimeError("no k8s.io/kubernetes version in test/testbin/kubernetes/go.mod")


def kube_bin_dir():
    """Where kube-apiserver, kube-controller-manager and kube-scheduler come from when
    GPUSCHED_E2E_KUBE names another release (GPUSCHED_KUBE_BIN_DIR, else the output of
    scripts/testbin --kube RELEASE); None for the testbin's own."""
    release = os.environ.get("GPUSCHED_E2E_KUBE")
    if not release:
        return None
    env = os.environ.get("GPUSCHED_KUBE_BIN_DIR")
    return os.path.abspath(env) if env else _testbin_output("--kube", release)


_kueue_dir_cache = None


def kueue_dir():
    """The Kueue bin directory: GPUSCHED_KUEUE_DIR or the output of scripts/testbin --kueue."""
    global _kueue_dir_cache
    if _kueue_dir_cache:
        return _kueue_dir_cache
    env = os.environ.get("GPUSCHED_KUEUE_DIR")
    if env:
        _kueue_dir_cache = os.path.abspath(env)
        return _kueue_dir_cache
    _kueue_dir_cache = _testbin_output("--kueue")
    return _kueue_dir_cache


class KubectlError(RuntimeError):
    """A kubectl command exited non-zero."""

    def __init__(self, args, returncode, stdout, stderr):
        self.args_ = list(args)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        super().__init__(
            f"kubectl {' '.join(self.args_)} failed with exit {returncode}: {stderr.strip()}"
        )


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago (another process may still take it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_kwok_node(name, labels=None, allocatable=None, taints=None, annotations=None):
    """Returns a Node (dict) that kwok manages; see the module docstring."""
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"}
    resources.update({k: str(v) for k, v in (allocatable or {}).items()})
    node_labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "type": "kwok",
    }
    node_labels.update(labels or {})
    node_annotations = {
        "kwok.x-k8s.io/node": "fake",
        "node.alpha.kubernetes.io/ttl": "0",
    }
    node_annotations.update(annotations or {})
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": node_labels, "annotations": node_annotations},
        "spec": {},
        # Nodes accept status on create; kwok then adds the conditions and addresses.
        "status": {"allocatable": dict(resources), "capacity": dict(resources)},
    }
    if taints:
        node["spec"]["taints"] = list(taints)
    return node


# Clusters started in this process and not yet stopped, for the atexit/signal safety net.
_live = []


def _cleanup_all():
    for cluster in list(_live):
        try:
            cluster.stop()
        except Exception as e:  # noqa: BLE001 - best effort at exit
            print(f"cluster.py: teardown of {cluster.dir} failed: {e}", file=sys.stderr)


def _on_signal(signum, _frame):
    # Raise in the main thread so that finally blocks and __exit__ run; atexit covers the rest.
    raise SystemExit(128 + signum)


_handlers_installed = False


def _become_subreaper():
    # The components are started by a short-lived script; as a child subreaper this process
    # inherits them, so it can reap them after `down` (no zombies left for pgrep to see).
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _reap(pids, timeout=5.0):
    deadline = time.monotonic() + timeout
    pending = set(pids)
    while pending and time.monotonic() < deadline:
        for pid in list(pending):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not our child (or already reaped)
                done = pid
            if done:
                pending.discard(pid)
        if pending:
            time.sleep(0.1)


def _install_handlers():
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(_cleanup_all)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(sig) in (signal.SIG_DFL, None):
                signal.signal(sig, _on_signal)
        except ValueError:  # not the main thread
            pass


class TestCluster:
    """A real control plane in a temporary directory; see the module docstring."""

    __test__ = False  # not a test class, whatever a collector thinks of the name

    def __init__(self, start_scheduler=True, extra_args=None, kwok_stages=None, kueue=False):
        self.start_scheduler = start_scheduler
        self.kueue = kueue
        self.extra_args = dict(extra_args or {})
        self.kwok_stages = kwok_stages
        self.dir = None
        self.kubeconfig = None
        self.gpusched_kubeconfig = None
        self.server = None
        self.bin_dir = None
        self._script = os.path.join(source_dir(), "scripts", "test-cluster")

    # --- lifecycle -------------------------------------------------------------------------

    def start(self):
        if self.dir:
            raise RuntimeError("cluster already started")
        self.bin_dir = testbin_dir()
        _install_handlers()
        _become_subreaper()
        env = dict(os.environ)
        env["GPUSCHED_TESTBIN_DIR"] = self.bin_dir
        kube_bin = kube_bin_dir()
        if kube_bin:
            env["TEST_CLUSTER_KUBE_BIN_DIR"] = kube_bin
        env["TEST_CLUSTER_OWNER_PID"] = str(os.getpid())
        if os.environ.get("GPUSCHED_E2E_KEEP") != "1":
            env["TEST_CLUSTER_OWNER_PURGE"] = "1"
        if not self.start_scheduler:
            env["TEST_CLUSTER_NO_SCHEDULER"] = "1"
        if self.kwok_stages:
            env["TEST_CLUSTER_KWOK_STAGES"] = self.kwok_stages
        if self.kueue:
            env["TEST_CLUSTER_KUEUE"] = "1"
            env["GPUSCHED_KUEUE_DIR"] = kueue_dir()
        for key, var in (
            ("apiserver", "TEST_CLUSTER_APISERVER_ARGS"),
            ("kcm", "TEST_CLUSTER_KCM_ARGS"),
            ("scheduler", "TEST_CLUSTER_SCHEDULER_ARGS"),
            ("kwok", "TEST_CLUSTER_KWOK_ARGS"),
            ("kueue", "TEST_CLUSTER_KUEUE_ARGS"),
        ):
            if key in self.extra_args:
                value = self.extra_args[key]
                env[var] = value if isinstance(value, str) else " ".join(value)
        t0 = time.monotonic()
        # test-cluster picks free ports and releases them before the components bind them, so
        # another process (a parallel test) can take one in between: then start again, with new
        # ports, at most three times. Any other failure is final.
        for attempt in range(1, 4):
            self.dir = tempfile.mkdtemp(prefix="gpusched-e2e-")
            _live.append(self)
            # stdout is captured (the kubeconfig path); progress and, on failure, the component
            # logs go straight to our stderr.
            proc = subprocess.run(
                [self._script, "up", self.dir], env=env, stdout=subprocess.PIPE, text=True
            )
            if proc.returncode == 0:
                break
            collided = self._logs_mention("address already in use")
            self.stop()
            if not collided or attempt == 3:
                raise RuntimeError(f"scripts/test-cluster up failed (exit {proc.returncode})")
            print(f"cluster.py: a port was taken between picking and binding (attempt {attempt}); "
                  "starting again with new ports", file=sys.stderr)
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.gpusched_kubeconfig = os.path.join(self.dir, "gpusched.kubeconfig")
        with open(os.path.join(self.dir, "cluster.env")) as f:
            values = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
        self.server = values.get("TEST_CLUSTER_SERVER")
        print(
            f"cluster.py: control plane up in {time.monotonic() - t0:.1f}s at {self.server} "
            f"(dir {self.dir})",
            file=sys.stderr,
        )
        return self

    def _logs_mention(self, text):
        """Whether any component log of this start contains `text`."""
        log_dir = os.path.join(self.dir, "logs")
        for name in os.listdir(log_dir) if os.path.isdir(log_dir) else []:
            try:
                with open(os.path.join(log_dir, name), errors="replace") as f:
                    if text in f.read():
                        return True
            except OSError:
                pass
        return False

    def stop(self, failed=False):
        """Prints the logs if ``failed``, stops every component and removes the directory."""
        if not self.dir or self not in _live:
            return
        try:
            if failed:
                self.print_logs()
        finally:
            pids = []
            pid_dir = os.path.join(self.dir, "pids")
            for name in os.listdir(pid_dir) if os.path.isdir(pid_dir) else []:
                if name.endswith(".pid"):
                    with open(os.path.join(pid_dir, name)) as f:
                        pids.append(int(f.read().strip() or 0))
            subprocess.run([self._script, "down", self.dir], stdout=subprocess.DEVNULL)
            _reap([p for p in pids if p > 0])
            _live.remove(self)
            if os.environ.get("GPUSCHED_E2E_KEEP") == "1":
                print(f"cluster.py: kept {self.dir}", file=sys.stderr)
            else:
                shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        self.stop(failed=exc_type is not None)
        return False

    # --- kubectl ---------------------------------------------------------------------------

    def kubectl(self, *args, input=None, kubeconfig=None, timeout=120):
        """Runs kubectl; returns stdout, raises KubectlError on failure."""
        cmd = [os.path.join(self.bin_dir, "kubectl"), f"--kubeconfig={kubeconfig or self.kubeconfig}"]
        cmd += [str(a) for a in args]
        proc = subprocess.run(
            cmd, input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            timeout=timeout,
        )
        if proc.returncode != 0:
            raise KubectlError(args, proc.returncode, proc.stdout, proc.stderr)
        return proc.stdout

    def get_json(self, *args, kubeconfig=None):
        """``kubectl get <args> -o json``, parsed."""
        return json.loads(self.kubectl("get", *args, "-o", "json", kubeconfig=kubeconfig))

    def apply(self, obj_or_yaml, namespace=None, kubeconfig=None):
        """``kubectl apply -f -`` with YAML/JSON text, a dict or a list of dicts."""
        if isinstance(obj_or_yaml, dict):
            text = json.dumps(obj_or_yaml)
        elif isinstance(obj_or_yaml, (list, tuple)):
            text = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(obj_or_yaml)})
        else:
            text = obj_or_yaml
        args = ["apply", "-f", "-"]
        if namespace:
            args += ["--namespace", namespace]
        return self.kubectl(*args, input=text, kubeconfig=kubeconfig)

    # --- helpers ---------------------------------------------------------------------------

    @staticmethod
    def wait_for(predicate, timeout=60, what="condition", interval=0.5):
        """Polls ``predicate`` until it returns a truthy value, which it returns."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            try:
                value = predicate()
                if value:
                    return value
                last = value
            except Exception as e:  # noqa: BLE001 - "not yet"; reported on timeout
                last = e
            if time.monotonic() >= deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")
            time.sleep(interval)

    def new_namespace(self, prefix="e2e"):
        """Creates a fresh namespace and waits for its default service account."""
        name = f"{prefix}-{secrets.token_hex(3)}"
        self.kubectl("create", "namespace", name)
        self.wait_for(
            lambda: self.kubectl("get", "serviceaccount", "default", "--namespace", name),
            timeout=60,
            what=f"service account {name}/default",
        )
        return name

    def sa_kubeconfig(self, namespace, name, duration="2h"):
        """A kubeconfig that authenticates as service account ``namespace/name``."""
        self.apply(
            {"apiVersion": "v1", "kind": "ServiceAccount",
             "metadata": {"name": name, "namespace": namespace}}
        )
        token = self.kubectl(
            "create", "token", name, "--namespace", namespace, f"--duration={duration}"
        ).strip()
        admin = json.loads(self.kubectl("config", "view", "--raw", "--minify", "-o", "json"))
        cluster = admin["clusters"][0]
        user = f"system:serviceaccount:{namespace}:{name}"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [cluster],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": user, "context": {"cluster": cluster["name"], "user": user}}],
            "current-context": user,
        }
        path = os.path.join(self.dir, f"sa-{namespace}-{name}.kubeconfig")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(config, f, indent=1)
        return path

    def logs(self):
        """Every component's log, as scripts/test-cluster logs prints it."""
        proc = subprocess.run(
            [self._script, "logs", self.dir], stdout=subprocess.PIPE, text=True,
            errors="replace",
        )
        return proc.stdout

    def print_logs(self, file=None):
        """Prints the tail of every component's log (GPUSCHED_E2E_LOG_LINES, 0 = all)."""
        file = file or sys.stderr
        lines = int(os.environ.get("GPUSCHED_E2E_LOG_LINES", "300"))
        log_dir = os.path.join(self.dir, "logs")
        print(f"\n=== test cluster logs ({log_dir}) ===", file=file)
        for name in sorted(os.listdir(log_dir)) if os.path.isdir(log_dir) else []:
            with open(os.path.join(log_dir, name), errors="replace") as f:
                content = f.read().splitlines()
            shown = content[-lines:] if lines > 0 else content
            print(f"\n===== {name} (last {len(shown)} of {len(content)} lines) =====", file=file)
            print("\n".join(shown), file=file)
        file.flush()


class ClusterTestCase(unittest.TestCase):
    """One TestCluster per test class (``cls.cluster``); logs are printed if a test failed."""

    cluster = None
    cluster_kwargs = {}
    _failed = False

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls._failed = False
        cls.cluster = TestCluster(**cls.cluster_kwargs).start()

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.cluster:
                cls.cluster.stop(failed=cls._failed)
        finally:
            super().tearDownClass()

    def run(self, result=None):
        before = (len(result.failures), len(result.errors)) if result else None
        outcome = super().run(result)
        if result is not None and (len(result.failures), len(result.errors)) != before:
            type(self)._failed = True
        return outcome
