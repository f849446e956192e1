#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Secure serving end to end (issue #21): `gpusched scheduler`'s /metrics over HTTPS with
delegated authentication (TokenReview) and authorization (SubjectAccessReview), against the
real API server and RBAC of the test control plane.

gpusched runs with a serving certificate from a test CA (a copy of it in tls.crt/tls.key),
--client-ca-file of a second CA, and its own service account's kubeconfig for the reviews
(system:kube-scheduler may create tokenreviews and subjectaccessreviews). Checked:

- /metrics without credentials: 401 (Status reason Unauthorized); with a token that does not
  authenticate: 401;
- with the token of a service account without `get /metrics`: 403, upstream's message;
- with the token of one granted it (a ClusterRole with nonResourceURLs /metrics): 200, the
  exposition;
- /healthz, /livez, /readyz without credentials: 200;
- a client certificate of the client CA in system:masters: 200; one from another CA: no answer;
- the serving certificate verifies against its CA; rotated (new files renamed into place, as a
  Secret volume does), a new connection gets the new certificate within seconds, without a
  restart (same process, still serving);
- a missing --tls-cert-file: exit 1 and a message naming the flag and the path;
- the deletion-cost controller's secure port answers the same way (401, 200 with the token).
"""

import os
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from cluster import ClusterTestCase, free_port  # noqa: E402
from gpusched_harness import Gpusched, gpusched_binary, log, write_config  # noqa: E402
from secure import (  # noqa: E402
    grant_metrics_reader, https_get, make_ca, make_cert, sa_token, secure_serving_args,
    server_cert_sha256)


class SecureServingE2ETest(ClusterTestCase):
    cluster_kwargs = {"start_scheduler": False}

    def setUp(self):
        self.ns = self.cluster.new_namespace("secure")
        self.pki = os.path.join(self.cluster.dir, f"{self.ns}-pki")
        os.makedirs(self.pki)
        self.ca = make_ca(self.pki, "serving-ca")
        self.first = make_cert(self.pki, self.ca, "first", "127.0.0.1")
        self.second = make_cert(self.pki, self.ca, "second", "127.0.0.1")
        self.client_ca = make_ca(self.pki, "client-ca")
        self.admin_cert = make_cert(self.pki, self.client_ca, "admin", "e2e-admin",
                                    orgs=("system:masters",), usage="clientAuth", sans=())
        other_ca = make_ca(self.pki, "other-ca")
        self.other_cert = make_cert(self.pki, other_ca, "other", "e2e-admin",
                                    orgs=("system:masters",), usage="clientAuth", sans=())
        self.crt = os.path.join(self.pki, "tls.crt")
        self.key = os.path.join(self.pki, "tls.key")
        shutil.copy(self.first[0], self.crt)
        shutil.copy(self.first[1], self.key)

    def rotate(self, pair):
        for src, dst in ((pair[1], self.key), (pair[0], self.crt)):
            shutil.copy(src, dst + ".new")
            os.replace(dst + ".new", dst)

    def test_metrics_need_a_token_with_get_metrics_and_certificates_rotate(self):
        port = free_port()
        sched = Gpusched(self.cluster, write_config(self.cluster.dir, name=f"{self.ns}.yaml"),
                         name=f"{self.ns}-gpusched",
                         extra_args=secure_serving_args(self.cluster, port) + [
                             f"--tls-cert-file={self.crt}", f"--tls-private-key-file={self.key}",
                             f"--client-ca-file={self.client_ca[0]}"]).start()
        self.addCleanup(sched.kill)
        self.assertEqual(sched.metrics_port(), port)
        base = f"https://127.0.0.1:{port}"
        self.cluster.wait_for(lambda: https_get(base + "/readyz", ca=self.ca[0])[0] == 200 or None,
                              timeout=90, what="/readyz 200 over verified HTTPS")

        status, body = https_get(base + "/metrics")
        self.assertEqual(status, 401, body)
        self.assertIn('"reason":"Unauthorized"', body)
        self.assertEqual(https_get(base + "/metrics", token="not-a-token")[0], 401)

        nobody = sa_token(self.cluster, self.ns, "nobody")
        status, body = https_get(base + "/metrics", token=nobody)
        self.assertEqual(status, 403, body)
        self.assertIn(f'User \\"system:serviceaccount:{self.ns}:nobody\\" cannot get path '
                      '\\"/metrics\\"', body)

        grant_metrics_reader(self.cluster, self.ns, "reader")
        reader = sa_token(self.cluster, self.ns, "reader")
        # RBAC changes reach the authorizer's informers within a moment.
        got = self.cluster.wait_for(
            lambda: (lambda r: r if r[0] == 200 else None)(https_get(base + "/metrics", token=reader)),
            timeout=30, what="/metrics 200 with the reader's token")
        self.assertIn("gpusched_build_info", got[1])
        self.assertIn("scheduler_schedule_attempts_total", got[1])

        for path in ("/healthz", "/livez", "/readyz"):
            self.assertEqual(https_get(base + path), (200, "ok\n"), path)

        self.assertEqual(https_get(base + "/metrics", cert=self.admin_cert[0],
                                   key=self.admin_cert[1])[0], 200)
        status, why = https_get(base + "/metrics", cert=self.other_cert[0], key=self.other_cert[1])
        self.assertEqual(status, 0, f"a certificate from another CA was answered: {why}")

        # Rotation: new files renamed into place; the next connection gets the new certificate.
        before = server_cert_sha256("127.0.0.1", port)
        pid = sched.proc.pid
        self.rotate(self.second)
        t0 = time.monotonic()
        self.cluster.wait_for(lambda: server_cert_sha256("127.0.0.1", port) != before or None,
                              timeout=30, interval=0.2, what="the rotated certificate served")
        log(f"MEASURED secure serving: rotated certificate served after "
            f"{time.monotonic() - t0:.2f} s")
        self.assertTrue(sched.alive())
        self.assertEqual(sched.proc.pid, pid)
        self.assertEqual(https_get(base + "/metrics", token=reader, ca=self.ca[0])[0], 200)
        self.assertIn("gpusched_build_info", https_get(base + "/metrics", token=reader)[1])

    def test_unreadable_certificate_names_the_flag_and_path(self):
        missing = os.path.join(self.pki, "missing.crt")
        r = subprocess.run([gpusched_binary(), "scheduler",
                            f"--kubeconfig={self.cluster.gpusched_kubeconfig}",
                            f"--secure-port={free_port()}", f"--tls-cert-file={missing}",
                            f"--tls-private-key-file={self.key}"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(f"--tls-cert-file: {missing}: cannot read the file", r.stderr)

    def test_deletion_cost_controller_serves_metrics_securely(self):
        policy = os.path.join(self.cluster.dir, f"{self.ns}-policy.yaml")
        with open(policy, "w") as f:
            f.write("apiVersion: gpusched.io/v1alpha1\nkind: DeletionCostPolicy\n"
                    "controller: {dryRun: true}\npolicies:\n- name: labels\n"
                    f"  selector: {{namespaces: [{self.ns}]}}\n"
                    "  terms:\n  - {label: tier, value: web, cost: 1}\n")
        port = free_port()
        log_path = os.path.join(self.cluster.dir, "logs", f"{self.ns}-deletion-cost.log")
        with open(log_path, "w") as logf:
            proc = subprocess.Popen(
                [gpusched_binary(), "deletion-cost", "controller", f"--config={policy}",
                 f"--kubeconfig={self.cluster.kubeconfig}"] +
                secure_serving_args(self.cluster, port),
                stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
        self.addCleanup(lambda: (proc.poll() is None and proc.kill(), proc.wait()))
        base = f"https://127.0.0.1:{port}"

        def healthy():
            if proc.poll() is not None:
                raise AssertionError(f"controller exited {proc.returncode}: "
                                     f"{open(log_path).read()[-2000:]}")
            return https_get(base + "/healthz")[0] == 200 or None
        self.cluster.wait_for(healthy, timeout=60, what="deletion-cost /healthz")
        self.assertEqual(https_get(base + "/metrics")[0], 401)
        grant_metrics_reader(self.cluster, self.ns, "dc-reader")
        token = sa_token(self.cluster, self.ns, "dc-reader")
        got = self.cluster.wait_for(
            lambda: (lambda r: r if r[0] == 200 else None)(https_get(base + "/metrics", token=token)),
            timeout=30, what="deletion-cost /metrics 200 with a token")
        self.assertIn("gpusched_build_info", got[1])


if __name__ == "__main__":
    unittest.main()
