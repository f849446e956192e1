# SPDX-License-Identifier: Apache-2.0
"""A minimal JSON client for a TestCluster's API server (cluster.py), for tests that make many
small reads and writes where one kubectl process per call would dominate their time.

``Api(cluster)`` authenticates with the cluster's admin client certificate. ``call(method,
path, body=None, content_type=...)`` returns the parsed JSON (retrying 409, 429, 500 and 503 a
few times) and raises AssertionError with the status and body otherwise; ``get``,
``merge_patch``, ``pods(ns, selector=None)`` are shorthands. Standard library only.
"""

import json
import os
import ssl
import time
import urllib.error
import urllib.request


class Api:
    """Minimal JSON client for the test cluster's API server (admin client certificate)."""

    def __init__(self, cluster):
        pki = os.path.join(cluster.dir, "pki")
        self.server = cluster.server
        self.ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))

    def call(self, method, path, body=None, content_type="application/json"):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        for attempt in range(5):
            try:
                with urllib.request.urlopen(req, context=self.ctx, timeout=30) as resp:
                    return json.loads(resp.read() or b"{}")
            except urllib.error.HTTPError as e:
                if e.code in (409, 429, 500, 503) and attempt < 4:
                    time.sleep(0.3 * (attempt + 1))
                    continue
                raise AssertionError(f"{method} {path}: HTTP {e.code}: {e.read()[:500]!r}") from None

    def get(self, path):
        return self.call("GET", path)

    def merge_patch(self, path, body):
        return self.call("PATCH", path, body, "application/merge-patch+json")

    def pods(self, ns, selector=None):
        q = f"?labelSelector={selector}" if selector else ""
        return self.get(f"/api/v1/namespaces/{ns}/pods{q}")["items"]
