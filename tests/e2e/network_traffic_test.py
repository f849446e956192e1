#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""NetworkLocality's measured traffic matrix against a real control plane and a real Prometheus
(issue #7, item 2, third way).

This test serves Istio-format counters (istio_tcp_sent_bytes_total, reporter="source") for the
pair cart -> db at 5 MB/s; a real Prometheus (/usr/bin/prometheus, scrape interval 1s) scrapes
them; `gpusched scheduler` runs the locality profile with --network-traffic-prometheus-url and the
default (Istio) query, refreshed every second. One node per zone; `db` (16 of the node's 32 CPUs)
is pinned to zone b by a nodeSelector; the two `cart` pods declare nothing (no annotation, no
AppGroup) and must land in zone b, where their measured traffic is free. Without the matrix
NetworkLocality scores every node 0 and LeastAllocated sends cart to zone a or c (checked by
running this test without the flag: it fails), so the test fails if the matrix is not used.

Everything is checked from the API server (pod.spec.nodeName -> node zone label).
"""

import http.server
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import network_locality_test as nl  # noqa: E402  (helpers only; its TestCase is not imported)
from cluster import ClusterTestCase, make_kwok_node  # noqa: E402
from gpusched_harness import Gpusched, create_objects, log, wait_nodes_ready  # noqa: E402
from prometheus import Prometheus  # noqa: E402

RATE = 5_000_000  # bytes/s, cart -> db


class IstioExporter:
    """Serves istio_tcp_sent_bytes_total for one workload pair, growing at RATE bytes/s."""

    def __init__(self, namespace):
        t0 = time.monotonic()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                labels = (f'reporter="source",source_workload="cart",'
                          f'source_workload_namespace="{namespace}",destination_workload="db",'
                          f'destination_workload_namespace="{namespace}"')
                value = int(RATE * (time.monotonic() - t0))
                body = ("# TYPE istio_tcp_sent_bytes_total counter\n"
                        f"istio_tcp_sent_bytes_total{{{labels}}} {value}\n").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class NetworkTrafficE2ETest(ClusterTestCase):

    def test_measured_traffic_draws_pods_to_their_peers_zone(self):
        c = self.cluster
        ns = c.new_namespace("traffic")
        nodes = []
        for z, zone in enumerate(nl.ZONES):  # one 32-CPU node per zone
            nodes.append(make_kwok_node(f"{ns}-{z}", labels={
                nl.GROUP_LABEL: ns, nl.ZONE: zone, nl.REGION: "us-east-1"}))
        create_objects(c, nodes)
        self.addCleanup(lambda: c.kubectl("delete", "nodes", "-l", f"{nl.GROUP_LABEL}={ns}",
                                          "--wait=false"))
        wait_nodes_ready(c, f"{nl.GROUP_LABEL}={ns}", len(nodes))

        exporter = IstioExporter(ns)
        self.addCleanup(exporter.stop)
        prom = Prometheus(c, ns, {"istio": [f"127.0.0.1:{exporter.port}"]}).start()
        self.addCleanup(prom.stop)
        url = prom.url

        def measured():
            for s in prom.try_query("sum by (source_workload, destination_workload) "
                                    "(rate(istio_tcp_sent_bytes_total[5m]))") or []:
                if s["metric"].get("destination_workload") == "db":
                    return float(s["value"][1])
            return None
        rate = c.wait_for(measured, timeout=60, what="Prometheus has a rate for cart -> db")
        # rate()[5m] of a series only seconds old reads far below 5 MB/s (Prometheus divides by
        # the window); it is > 0, which is all this placement needs.
        log(f"MEASURED Prometheus rate cart -> db: {rate / 1e6:.2f} MB/s (young series)")

        g = Gpusched(c, nl.locality_config(c.dir, ns), name=f"gpusched-{ns}", extra_args=[
            f"--network-traffic-prometheus-url={url}",
            "--network-traffic-refresh-interval=1s", "--network-traffic-staleness=1m"]).start()
        self.addCleanup(g.stop)
        g.wait_log("NetworkLocality traffic matrix from Prometheus", timeout=60)

        db = nl.pod("db-0", {"app": "db"}, ns, node_selector={nl.ZONE: nl.ZONES[1]})
        # Half of its node's CPU: LeastAllocated alone would send cart to zone a or c.
        db["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "16"
        create_objects(c, [db], namespace=ns)
        self._wait_scheduled(ns, ["db-0"])
        time.sleep(3)  # a few refresh rounds after the scheduler started
        carts = [nl.pod(f"cart-{i}", {"app": "cart"}, ns) for i in range(2)]
        create_objects(c, carts, namespace=ns)
        placed = self._wait_scheduled(ns, ["cart-0", "cart-1"])

        zone_of = {n["metadata"]["name"]: n["metadata"]["labels"][nl.ZONE]
                   for n in c.get_json("nodes", "-l", f"{nl.GROUP_LABEL}={ns}")["items"]}
        for name, node in placed.items():
            self.assertEqual(nl.ZONES[1], zone_of[node], f"{name} on {node}\n{g.log()}")
        self.assertNotIn("NetworkLocality traffic matrix: query", g.log(),
                         "no failed query and no skipped series")
        self.assertTrue(g.alive(), g.log())
        log(f"MEASURED network traffic e2e: cart-0, cart-1 -> {sorted(set(placed.values()))} "
            f"(zone {nl.ZONES[1]}, db's zone)")

    def _wait_scheduled(self, ns, names, timeout=120):
        def done():
            pods = {p["metadata"]["name"]: p.get("spec", {}).get("nodeName")
                    for p in self.cluster.get_json("pods", "--namespace", ns)["items"]}
            if all(pods.get(n) for n in names):
                return {n: pods[n] for n in names}
            return None
        return self.cluster.wait_for(done, timeout=timeout, what=f"pods {names} scheduled")


if __name__ == "__main__":
    unittest.main()
