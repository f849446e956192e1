#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`gpusched simulate -o html` renders in a real browser (issue #20, item 7).

The page for the docs' example cluster and workloads (with --replay, so the time chart is there)
is loaded by headless Chromium (Debian's `chromium`, installed by scripts/bootstrap) from a file,
with no network. From the DOM after the scripts ran: the page says it rendered and that no chart
text runs past its chart (its own getBBox check), bar labels are whole, every chart is an
<svg data-chart> with marks (bars or points) drawn, and the pod table has one row per pod. From a
screenshot: the chart colour is on the page, so the charts were painted, not only built. The page
must load nothing from elsewhere. The gangs (docs/examples/gang) and the ResourceClaims
(docs/examples/dra) are listed, so are the warnings and rejected objects, and the pod table
keeps the rows that contain the text of its filter (#filter=TEXT in the page's address fills it). A
second page (docs/consolidation.md's fragmented cluster and an
8-GPU pod) lists the consolidation and each moved pod's destination. The per-node, per-GPU view
has a box for every GPU, the partly used ones marked, and the pods of each device in its tooltip,
adding up to the cluster's own count. A run without --replay charts the allocation attempt by
attempt.

Environment: GPUSCHED_BINARY (the binary; ctest sets it), GPUSCHED_SOURCE_DIR.
"""

import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import unittest
import zlib

ROOT = os.environ.get("GPUSCHED_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXAMPLES = os.path.join(ROOT, "docs", "examples", "simulate")
CHART_RGB = (0x3B, 0x6F, 0xB6)  # the bars' and the line's colour (src/sim/html_report.cc)
CHARTS = ("allocation-over-time", "allocation-over-time-by-group", "allocation-by-group",
          "allocation-by-model", "fragmentation", "unschedulable-reasons")


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise RuntimeError("headless Chromium not found: run scripts/bootstrap (Debian package chromium)")


def browser(*args):
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-extensions", "--hide-scrollbars", *args]
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=120)


def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), f"unexpected PNG format {depth}/{color}"
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        filt, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if filt == 1:
                line[i] = (line[i] + a) & 255
            elif filt == 2:
                line[i] = (line[i] + b) & 255
            elif filt == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif filt == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, bpp, rows


class SimulateHtmlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        binary = os.environ.get("GPUSCHED_BINARY")
        if not binary or not os.access(binary, os.X_OK):
            raise RuntimeError(f"GPUSCHED_BINARY={binary!r} is not an executable")
        cls.tmp = tempfile.mkdtemp(prefix="gpusched-html-")
        cls.page = os.path.join(cls.tmp, "report.html")
        proc = subprocess.run(
            [binary, "simulate", "-f", os.path.join(EXAMPLES, "cluster.yaml"),
             "-f", os.path.join(EXAMPLES, "workloads.yaml"), "-f", os.path.join(EXAMPLES, "timed.yaml"),
             "--replay", "-o", "html"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"simulate -o html exited {proc.returncode}: {proc.stderr}")
        with open(cls.page, "w") as f:
            f.write(proc.stdout)
        cls.html = proc.stdout

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_page_is_self_contained(self):
        self.assertNotRegex(self.html, r"(src|href)\s*=\s*[\"']?(https?:)?//")
        self.assertNotIn("@import", self.html)

    def test_the_browser_draws_every_chart_and_the_pod_table(self):
        proc = browser("--virtual-time-budget=5000", "--dump-dom", "file://" + self.page)
        dom = proc.stdout
        self.assertIn('data-rendered="true"', dom, proc.stderr[-2000:])
        self.assertIn('data-overflow="0"', dom)  # no chart text runs past its chart
        self.assertIn(">Insufficient nvidia.com/gpu<", dom)  # whole bar labels
        for name in CHARTS:
            m = re.search(r'<svg[^>]*data-chart="%s"[^>]*data-marks="(\d+)"' % name, dom)
            self.assertIsNotNone(m, f"chart {name} was not drawn")
            self.assertGreater(int(m.group(1)), 0, f"chart {name} has no marks")
        self.assertGreaterEqual(dom.count('class="mark"'), 8)
        body = re.search(r'<table id="preemptions">.*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
        self.assertIn("<td>none</td>", body)  # nothing preempted in the docs' example
        body = re.search(r'<table id="pods">.*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
        self.assertEqual(body.count("<tr>"), 13)  # 9 from the workloads, 4 timed pods
        self.assertIn("infer/vectordb-1", body)
        problems = re.search(r'<ul id="problems">(.*?)</ul>', dom, re.S).group(1)
        self.assertEqual(problems, "<li>none</li>")  # the docs' example is clean

    @staticmethod
    def report(html):
        """The report JSON a page carries."""
        m = re.search(r'<script type="application/json" id="report">(.*?)</script>', html, re.S)
        return json.loads(m.group(1).replace("<\\/", "</"))

    SHARES = """apiVersion: v1
kind: Node
metadata: {name: a100-0, labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}}
status: {allocatable: {cpu: "32", memory: 256Gi, pods: "110", nvidia.com/gpu: "4"}}
""" + "".join(f"""---
apiVersion: v1
kind: Pod
metadata: {{name: share-{i}, namespace: ml, annotations: {{gpusched.io/gpu-milli: "{m}"}}}}
spec: {{containers: [{{name: c, resources: {{limits: {{nvidia.com/gpu: "1"}}}}}}]}}
""" for i, m in enumerate((500, 300, 500, 700, 250)))

    def test_the_page_shows_every_gpu_of_every_node_and_its_pods(self):
        """The per-node, per-GPU view (on the docs' page and on a node whose GPUs five pods
        share): one row per GPU node and one box per GPU, the partly used ones marked, the pods
        of a device in its tooltip; the pods each placement puts on a device add up to what the
        cluster's ledger says is allocated there (the view and the pod table tell one story)."""
        shares = os.path.join(self.tmp, "shares.yaml")
        with open(shares, "w") as f:
            f.write(self.SHARES)
        page = os.path.join(self.tmp, "shares.html")
        proc = subprocess.run([os.environ["GPUSCHED_BINARY"], "simulate", "-f", shares, "-o", "html"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(page, "w") as f:
            f.write(proc.stdout)
        self.check_gpu_view(self.page, self.report(self.html))
        partly = self.check_gpu_view(page, self.report(proc.stdout))
        self.assertGreater(partly, 0)

    def test_a_run_without_a_clock_charts_how_the_gpus_filled(self):
        """Without --replay the page charts GPU allocation attempt by attempt (the report's
        `fill`): it ends at the run's allocation, never falls when nothing left or was evicted,
        and is drawn."""
        page = os.path.join(self.tmp, "static.html")
        proc = subprocess.run(
            [os.environ["GPUSCHED_BINARY"], "simulate", "-f", os.path.join(EXAMPLES, "cluster.yaml"),
             "-f", os.path.join(EXAMPLES, "workloads.yaml"), "-o", "html"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(page, "w") as f:
            f.write(proc.stdout)
        report = self.report(proc.stdout)
        fill = report["fill"]
        self.assertEqual(fill[-1]["decisions"], report["decisions"])
        total = sum(m["milliTotal"] for m in report["gpuModels"])
        used = sum(m["milliAllocated"] for m in report["gpuModels"])
        self.assertAlmostEqual(fill[-1]["gpuAllocation"], 100 * used / total)
        self.assertEqual(report["preemptions"], [])
        values = [f["gpuAllocation"] for f in fill]
        self.assertEqual(values, sorted(values))
        self.assertGreater(values[-1], values[0])
        dom = browser("--virtual-time-budget=5000", "--dump-dom", "file://" + page).stdout
        self.assertIn('data-overflow="0"', dom)
        m = re.search(r'<svg[^>]*data-chart="allocation-by-attempt"[^>]*data-marks="(\d+)"', dom)
        self.assertIsNotNone(m, "no allocation chart without --replay")
        self.assertEqual(int(m.group(1)), len(fill))
        self.assertNotIn('data-chart="allocation-over-time"', dom)

    def check_gpu_view(self, page, report):
        """Checks the view of one page; returns the number of partly used GPUs."""
        nodes = report["gpuNodes"]
        self.assertTrue(nodes)
        on_device = {}
        for p in report["placements"]:
            if p["node"] and p["state"] in ("Scheduled", "PreBound"):
                for d in p["gpuDevices"]:
                    key = (p["node"], d)
                    on_device[key] = on_device.get(key, 0) + p["gpuMilli"]
        for n in nodes:
            for d, used in enumerate(n["usedMilli"]):
                self.assertEqual(on_device.pop((n["node"], d), 0), used, f"{n['node']} GPU {d}")
        self.assertEqual(on_device, {}, "pods on devices the view does not have")
        boxes = sum(len(n["usedMilli"]) for n in nodes)
        partly = sum(1 for n in nodes for m in n["usedMilli"] if 0 < m < 1000)
        self.assertEqual(partly, report["gpusPartlyUsed"])
        dom = browser("--virtual-time-budget=5000", "--dump-dom", "file://" + page).stdout
        table = re.search(r'<table id="gpu-nodes"([^>]*)>.*?<tbody>(.*?)</tbody>', dom, re.S)
        self.assertIn(f'data-boxes="{boxes}"', table.group(1))
        self.assertIn(f'data-partly="{partly}"', table.group(1))
        self.assertEqual(table.group(2).count("<tr>"), len(nodes))
        self.assertEqual(table.group(2).count('class="part"'), partly)
        placed = [p for p in report["placements"] if p["gpuDevices"] and p["state"] == "Scheduled"]
        self.assertTrue(placed)
        for p in placed:  # each placed pod is in the tooltip of its devices
            self.assertRegex(table.group(2), r"<title>%s GPU %d: [0-9.]+ of 1 allocated\n[^<]*%s %s GPU" % (
                re.escape(p["node"]), p["gpuDevices"][0], re.escape(p["pod"]), "%g" % (p["gpuMilli"] / 1000)))
        return partly

    def test_a_page_of_20000_pods_renders_in_under_5_s(self):
        """The docs' page with its report scaled to 2,000 nodes and 20,000 pods (the JSON the
        simulator would write, made here: simulating 20,000 pods takes minutes in the sanitizer
        build): Chromium renders it, every section is there, the page's own clock says it was
        drawn within 5 s of navigation, the table holds the first 1,000 rows and the filter finds
        the last pod."""
        m = re.search(r'(<script type="application/json" id="report">)(.*?)(</script>)', self.html, re.S)
        report = json.loads(m.group(2).replace("<\\/", "</"))
        rows = report["placements"]
        report["placements"] = [dict(rows[i % len(rows)], pod=f"ml/pod-{i}", node=f"node-{i % 2000}")
                                for i in range(20000)]
        report["nodes"] = 2000
        report["pods"]["total"] = 20000
        gpu_nodes = report["gpuNodes"]
        report["gpuNodes"] = [dict(gpu_nodes[i % len(gpu_nodes)], node=f"node-{i:04d}")
                              for i in range(2000)]
        page = os.path.join(self.tmp, "big.html")
        with open(page, "w") as f:
            f.write(self.html[:m.start(2)] + json.dumps(report).replace("</", "<\\/") + self.html[m.end(2):])
        dom = browser("--virtual-time-budget=10000", "--dump-dom", "file://" + page).stdout
        self.assertIn('data-rendered="true"', dom)
        self.assertIn('data-overflow="0"', dom)
        ms = int(re.search(r'data-render-ms="(\d+)"', dom).group(1))
        self.assertLess(ms, 5000, f"rendered in {ms} ms")
        body = re.search(r'<table id="pods">.*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
        self.assertEqual(body.count("<tr>"), 1000)  # the first 1,000; the rest by sort or filter
        self.assertIn("20000 rows; the first 1000 are shown", dom)
        self.assertIn("The first 1000 of 2000 GPU nodes", dom)
        for section in ("gpu-nodes", "preemptions", "gangs", "claims", "problems", "pod-filter"):
            self.assertIn(f'id="{section}"', dom)
        dom = browser("--virtual-time-budget=10000", "--dump-dom", "file://" + page + "#filter=pod-19999").stdout
        body = re.search(r'<table id="pods">.*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
        self.assertEqual(body.count("<tr>"), 1)
        self.assertIn("<td>ml/pod-19999</td>", body)

    def test_the_page_lists_gangs_and_claims(self):
        pages = {"gang": [os.path.join(ROOT, "docs", "examples", "gang", "training.yaml")],
                 "dra": [os.path.join(ROOT, "docs", "examples", "dra", "shared-gpu.yaml")]}
        doms = {}
        for name, files in pages.items():
            page = os.path.join(self.tmp, name + ".html")
            args = [a for f in files for a in ("-f", f)]
            proc = subprocess.run([os.environ["GPUSCHED_BINARY"], "simulate", *args, "-o", "html"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(page, "w") as f:
                f.write(proc.stdout)
            doms[name] = browser("--virtual-time-budget=5000", "--dump-dom", "file://" + page).stdout
            self.assertIn('data-rendered="true"', doms[name])
        gangs = re.search(r'<table id="gangs">.*?<tbody>(.*?)</tbody>', doms["gang"], re.S).group(1)
        self.assertRegex(gangs, r"<td>[^<]*PodGroup [^<]+</td><td>\w+</td><td>\d+ / \d+</td>")
        claims = re.search(r'<table id="claims">.*?<tbody>(.*?)</tbody>', doms["dra"], re.S).group(1)
        self.assertNotIn("<td>none</td>", claims)
        self.assertRegex(claims, r"<td>[a-z0-9-]+/[a-z0-9-]+</td><td>[a-z0-9-]+</td><td>[^<]*/[^<]*/")
        empty = re.search(r'<table id="claims">.*?<tbody>(.*?)</tbody>', doms["gang"], re.S).group(1)
        self.assertIn("<td>none</td>", empty)

    def test_the_page_lists_warnings_and_rejections_and_filters_the_pods(self):
        page = os.path.join(self.tmp, "mistakes.html")
        proc = subprocess.run(
            [os.environ["GPUSCHED_BINARY"], "simulate", "-f", os.path.join(EXAMPLES, "cluster.yaml"),
             "-f", os.path.join(EXAMPLES, "mistakes.yaml"), "-o", "html"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertEqual(proc.returncode, 1, proc.stderr)  # objects were rejected
        self.assertNotIn("warning:", proc.stderr)  # the page lists the warnings
        self.assertIn("3 object(s) rejected", proc.stderr)
        with open(page, "w") as f:
            f.write(proc.stdout)
        dom = browser("--virtual-time-budget=5000", "--dump-dom", "file://" + page + "#filter=TYPO").stdout
        self.assertIn('data-rendered="true"', dom)
        problems = re.findall(r"<li>(.*?)</li>", re.search(r'<ul id="problems">(.*?)</ul>', dom, re.S).group(1))
        self.assertEqual(sum(p.startswith("rejected: ") for p in problems), 3, problems)
        self.assertTrue(any(p.startswith("warning: ") and "unknown field" in p for p in problems), problems)
        self.assertTrue(any("Train_Job" in p for p in problems), problems)
        body = re.search(r'<table id="pods">.*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
        self.assertEqual(body.count("<tr>"), 1, body)  # the filter (case-insensitive) keeps ml/typo
        self.assertIn("<td>ml/typo</td>", body)

    def test_the_page_lists_a_consolidation_with_each_move(self):
        """The fragmented cluster of docs/consolidation.md and an 8-GPU pod: the plugin moves
        two replicas, and the page's table lists them with their destinations."""
        train = os.path.join(self.tmp, "train.yaml")
        with open(train, "w") as f:
            f.write("apiVersion: v1\nkind: Pod\nmetadata: {name: train}\nspec:\n"
                    "  tolerations: [{key: nvidia.com/gpu, operator: Exists}]\n"
                    "  containers: [{name: c, resources: {limits: {nvidia.com/gpu: \"8\"}}}]\n")
        page = os.path.join(self.tmp, "moves.html")
        proc = subprocess.run(
            [os.environ["GPUSCHED_BINARY"], "simulate", "-f",
             os.path.join(ROOT, "docs", "examples", "consolidate", "fragmented.yaml"), "-f", train,
             "-o", "html"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(page, "w") as f:
            f.write(proc.stdout)
        dom = browser("--virtual-time-budget=5000", "--dump-dom", "file://" + page).stdout
        self.assertIn('data-rendered="true"', dom)
        body = re.search(r'<table id="preemptions">.*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
        self.assertEqual(body.count("<tr>"), 1, body)
        self.assertIn("<td>default/train</td>", body)
        self.assertIn("<td>moved</td>", body)
        self.assertEqual(len(re.findall(r"default/embed-7d9f-\d \u2192 gpu-\d", body)), 2, body)

    def test_a_screenshot_shows_the_charts(self):
        shot = os.path.join(self.tmp, "shot.png")
        proc = browser("--virtual-time-budget=5000", f"--screenshot={shot}",
                       "--window-size=1280,1400", "file://" + self.page)
        self.assertTrue(os.path.exists(shot), proc.stderr[-2000:])
        width, height, bpp, rows = png_pixels(shot)
        painted = 0
        for line in rows:
            for x in range(0, width * bpp, bpp):
                if abs(line[x] - CHART_RGB[0]) + abs(line[x + 1] - CHART_RGB[1]) + \
                        abs(line[x + 2] - CHART_RGB[2]) < 30:
                    painted += 1
        # Bars of 16 px height and a 2 px line: thousands of pixels when the charts are painted.
        self.assertGreater(painted, 2000, f"only {painted} pixels in the chart colour")


if __name__ == "__main__":
    unittest.main(verbosity=2)
