# SPDX-License-Identifier: Apache-2.0
"""A real Prometheus server for e2e tests (Debian's ``prometheus`` package, installed by
scripts/bootstrap): a generated config with static targets scraped every second, its data
directory in the cluster directory and its log in the cluster's logs/.

    prom = Prometheus(cluster, "mon", {"gpusched": ["127.0.0.1:10259"]}, rule_files=[path])
    # gpusched's secure port: HTTPS with a bearer token (a service account's, see secure.py)
    prom = Prometheus(cluster, "mon", {"gpusched": {"targets": ["127.0.0.1:10259"],
                                                    "scheme": "https", "token": token,
                                                    "ca_file": None}})
    prom.start()                      # returns once /-/ready answers 200
    test.addCleanup(prom.stop)
    prom.query("up")                  # the result vector; raises on an error answer
    prom.try_query("up")              # the same, or None while Prometheus is unreachable
"""

import json
import os
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request

from cluster import free_port

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


class Prometheus:
    def __init__(self, cluster, name, jobs, rule_files=(), extra_args=()):
        """``jobs``: scrape job name -> list of "host:port" targets (plain HTTP), or a dict with
        ``targets``, ``scheme`` ("https"), ``token`` (written to a file Prometheus reads as
        ``authorization.credentials_file``) and ``ca_file`` (None: the server certificate is not
        verified, as for a self-signed one)."""
        self.cluster = cluster
        self.name = name
        self.jobs = dict(jobs)
        self.rule_files = list(rule_files)
        self.extra_args = list(extra_args)
        self.proc = None
        self.url = None

    def start(self, timeout=60):
        if not os.access(PROMETHEUS, os.X_OK):
            raise AssertionError(f"{PROMETHEUS} is missing: install Debian's prometheus package "
                                 "(scripts/bootstrap does)")
        pdir = tempfile.mkdtemp(prefix=f"prometheus-{self.name}-", dir=self.cluster.dir)
        config = os.path.join(pdir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "  evaluation_interval: 1s\n")
            if self.rule_files:
                f.write(f"rule_files: {json.dumps(self.rule_files)}\n")
            f.write("scrape_configs:\n")
            for job, spec in self.jobs.items():
                spec = spec if isinstance(spec, dict) else {"targets": list(spec)}
                f.write(f"  - job_name: {json.dumps(job)}\n")
                if spec.get("scheme"):
                    f.write(f"    scheme: {spec['scheme']}\n")
                if spec.get("token"):
                    token_file = os.path.join(pdir, f"{job}.token")
                    with open(token_file, "w") as t:
                        t.write(spec["token"])
                    f.write(f"    authorization:\n      credentials_file: {json.dumps(token_file)}\n")
                if spec.get("scheme") == "https":
                    tls = ({"ca_file": spec["ca_file"]} if spec.get("ca_file")
                           else {"insecure_skip_verify": True})
                    f.write(f"    tls_config: {json.dumps(tls)}\n")
                f.write(f"    static_configs:\n      - targets: {json.dumps(list(spec['targets']))}\n")
        port = free_port()
        with open(os.path.join(self.cluster.dir, "logs", f"prometheus-{self.name}.log"), "a") as log:
            self.proc = subprocess.Popen(
                [PROMETHEUS, f"--config.file={config}",
                 f"--storage.tsdb.path={os.path.join(pdir, 'data')}",
                 f"--web.listen-address=127.0.0.1:{port}", *self.extra_args],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        self.url = f"http://127.0.0.1:{port}"
        self.cluster.wait_for(self._ready, timeout=timeout, what=f"Prometheus {self.name} ready")
        return self

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"prometheus exited {self.proc.returncode} (see its log in "
                                 f"{self.cluster.dir}/logs)")
        try:
            with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as r:
                return r.status == 200 or None
        except OSError:
            return None

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)

    def get(self, path):
        """GET ``path`` (e.g. "/api/v1/rules"): (status, body). Transport errors raise OSError."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def query(self, promql):
        """The result of an instant query; AssertionError on an error answer."""
        status, body = self.get("/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
        if status != 200:
            raise AssertionError(f"query {promql}: HTTP {status}: {body}")
        data = json.loads(body)
        if data.get("status") != "success":
            raise AssertionError(f"query {promql}: {body}")
        return data["data"]["result"]

    def try_query(self, promql):
        """query(), or None while Prometheus cannot be reached."""
        try:
            return self.query(promql)
        except OSError:
            return None
