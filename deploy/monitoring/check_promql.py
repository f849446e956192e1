#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks deploy/monitoring mechanically with promtool (Debian package `prometheus`):

- every PromQL expression of every Grafana dashboard parses: the expressions become recording
  rules of a temp rule file ($__rate_interval and friends replaced by 5m) for
  `promtool check rules`;
- the PrometheusRule's spec.groups pass `promtool check rules`;
- every dashboard panel has at least one query, and dashboard uids are unique.

Exit 0 when all pass; the failures otherwise. Run by ctest as monitoring_promql.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GRAFANA_VARS = re.compile(r"\$__(rate_interval|interval|range)|\$\{__(rate_interval|interval|range)\}")


def promtool():
    p = shutil.which("promtool") or "/usr/bin/promtool"
    if not os.access(p, os.X_OK):
        sys.exit("promtool not found (Debian package prometheus; scripts/bootstrap)")
    return p


def check_rule_file(text, label):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        r = subprocess.run([promtool(), "check", "rules", path], capture_output=True, text=True)
    finally:
        os.unlink(path)
    if r.returncode != 0:
        return [f"{label}: promtool check rules failed:\n{r.stdout}{r.stderr}"]
    return []


def main():
    errors = []
    exprs = []
    uids = set()
    for path in sorted(glob.glob(os.path.join(HERE, "dashboards", "*.json"))):
        name = os.path.basename(path)
        try:
            d = json.load(open(path))
        except json.JSONDecodeError as e:
            errors.append(f"{name}: invalid JSON: {e}")
            continue
        if d.get("uid") in uids:
            errors.append(f"{name}: duplicate uid {d.get('uid')}")
        uids.add(d.get("uid"))
        for p in d.get("panels", []):
            targets = [t for t in p.get("targets", []) if t.get("expr")]
            if not targets:
                errors.append(f"{name}: panel {p.get('title')!r} has no query")
            for t in targets:
                exprs.append((f"{name}: {p.get('title')}", GRAFANA_VARS.sub("5m", t["expr"])))
    if not exprs:
        errors.append("no dashboard expressions found")
    lines = ["groups:", "  - name: dashboards", "    rules:"]
    for i, (_, e) in enumerate(exprs):
        lines.append(f"      - record: dashboard_check_{i}")
        lines.append("        expr: " + json.dumps(e))
    errors += check_rule_file("\n".join(lines) + "\n", f"{len(exprs)} dashboard expressions")

    text = open(os.path.join(HERE, "prometheusrule.yaml")).read()
    body = text[text.index("\nspec:\n") + len("\nspec:\n"):]
    spec = []
    for line in body.splitlines():
        if line and not line.startswith(" "):
            break
        spec.append(line[2:])
    errors += check_rule_file("\n".join(spec) + "\n", "prometheusrule.yaml")

    for e in errors:
        print(e, file=sys.stderr)
    print(f"checked {len(exprs)} dashboard expressions and the PrometheusRule: "
          f"{'FAILED' if errors else 'ok'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
