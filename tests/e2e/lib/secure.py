# SPDX-License-Identifier: Apache-2.0
"""Helpers for gpusched's secure serving in e2e tests (HTTPS, delegated authentication and
authorization; docs/monitoring.md). Standard library and the openssl command line tool only.

``https_get(url, token=None, cert=None, key=None, ca=None, timeout=10) -> (status, body)``
    GET over HTTPS; ``status`` 0 when the connection or the TLS handshake fails (then ``body``
    says why). The server certificate is verified only when ``ca`` is given. ``token`` is sent as
    ``Authorization: Bearer``; ``cert``/``key`` are a client certificate.

``server_cert_sha256(host, port) -> str``: the SHA-256 of the certificate a new connection gets.

``sa_token(cluster, namespace, name, duration="2h") -> str``
    Creates the service account if needed and returns a token for it (``kubectl create token``).

``grant_metrics_reader(cluster, namespace, name)``
    Lets service account ``namespace/name`` ``get`` the non-resource URL ``/metrics`` (a
    ClusterRole ``gpusched-e2e-metrics-reader`` and a ClusterRoleBinding per account), what
    Prometheus needs to scrape gpusched's secure port.

``make_ca(directory, name) -> (cert_path, key_path)``
``make_cert(directory, ca, name, cn, orgs=(), usage="serverAuth", sans=("IP:127.0.0.1",
"DNS:localhost")) -> (cert_path, key_path)``
    A CA and a leaf certificate signed by it (EC P-256, 2 days), with openssl.

``metrics_reader_token(cluster, namespace="default", name="gpusched-e2e-metrics") -> str``: a
    token of that service account, granted ``get /metrics`` (made once per cluster and account).

``secure_serving_args(cluster, port)``: the scheduler's flags for a test: ``--bind-address``
    127.0.0.1, ``--secure-port``, the review kubeconfigs (gpusched's service account, whose
    system:kube-scheduler role may create tokenreviews and subjectaccessreviews).
"""

import hashlib
import os
import socket
import ssl
import subprocess
import urllib.error
import urllib.request

METRICS_READER_ROLE = "gpusched-e2e-metrics-reader"


def https_get(url, token=None, cert=None, key=None, ca=None, timeout=10):
    ctx = ssl.create_default_context(cafile=ca) if ca else ssl._create_unverified_context()
    if cert:
        ctx.load_cert_chain(cert, key)
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except (urllib.error.URLError, OSError, ssl.SSLError) as e:
        return 0, str(e)


def server_cert_sha256(host, port, timeout=10):
    ctx = ssl._create_unverified_context()
    with socket.create_connection((host, port), timeout=timeout) as sock:
        with ctx.wrap_socket(sock, server_hostname=host) as tls:
            return hashlib.sha256(tls.getpeercert(binary_form=True)).hexdigest()


def sa_token(cluster, namespace, name, duration="2h"):
    cluster.apply({"apiVersion": "v1", "kind": "ServiceAccount",
                   "metadata": {"name": name, "namespace": namespace}})
    return cluster.kubectl("create", "token", name, "--namespace", namespace,
                           f"--duration={duration}").strip()


def grant_metrics_reader(cluster, namespace, name):
    cluster.apply([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": METRICS_READER_ROLE},
         "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": f"{METRICS_READER_ROLE}-{namespace}-{name}"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": METRICS_READER_ROLE},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]},
    ])


def _openssl(directory, *args):
    subprocess.run(["openssl", *args], cwd=directory, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


def make_ca(directory, name):
    cert, key = os.path.join(directory, f"{name}.pem"), os.path.join(directory, f"{name}.key")
    _openssl(directory, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-nodes", "-days", "2", "-subj", f"/CN={name}", "-keyout", key, "-out", cert)
    return cert, key


def make_cert(directory, ca, name, cn, orgs=(), usage="serverAuth",
              sans=("IP:127.0.0.1", "DNS:localhost")):
    cert, key = os.path.join(directory, f"{name}.pem"), os.path.join(directory, f"{name}.key")
    csr, ext = os.path.join(directory, f"{name}.csr"), os.path.join(directory, f"{name}.ext")
    subject = "".join(f"/O={o}" for o in orgs) + f"/CN={cn}"
    _openssl(directory, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-subj", subject, "-keyout", key, "-out", csr)
    with open(ext, "w") as f:
        f.write(f"extendedKeyUsage={usage}\n")
        if sans:
            f.write("subjectAltName=" + ",".join(sans) + "\n")
    _openssl(directory, "x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1],
             "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", cert)
    return cert, key


def secure_serving_args(cluster, port):
    kc = cluster.gpusched_kubeconfig
    return ["--bind-address=127.0.0.1", f"--secure-port={port}",
            f"--authentication-kubeconfig={kc}", f"--authorization-kubeconfig={kc}"]


def metrics_reader_token(cluster, namespace="default", name="gpusched-e2e-metrics"):
    """A token of a service account allowed to get /metrics (created and granted once per
    cluster)."""
    cache = cluster.__dict__.setdefault("_gpusched_metrics_tokens", {})
    if (namespace, name) not in cache:
        grant_metrics_reader(cluster, namespace, name)
        cache[(namespace, name)] = sa_token(cluster, namespace, name)
    return cache[(namespace, name)]
