#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# The saturated replay (`gpusched simulate --load`, docs/simulator.md) over openb pod lists and
# seeds: one Markdown row per list, mean ± sd over the seeds, per config when several are given
# (e.g. with and without a plugin). It reads only what `-o json` reports.
#
#   bench/saturated_replay.py --binary build/release/cmd/gpusched/gpusched \
#       --trace-dir ../shared/traces/alibaba-gpu-v2023 [--lists default,cpu050] \
#       [--seeds 42,43,44] [--load 1.2] [--window 2h] [--config A.yaml --config B.yaml] [--jobs 2]
#       [--movable-qos none --movable-qos LS]
#
# --movable-qos (repeatable; "none" for none): the trace pods of these qos classes are movable
# (`simulate --movable-qos`), so Consolidation, in the default profile, may move them: one row
# per value, e.g. without and with consolidation (issue #41).
# A list without creation and deletion times (the multigpu files) has no durations: under a load
# its pods would never leave, so it is refused.
import argparse
import csv
import json
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

MULTI = ("2", "4", "8")  # the waits rows of multi-GPU pods in the openb lists


def run_once(args, pods, seed, config, movable):
    cmd = [args.binary, "simulate", "--trace-nodes", str(args.nodes), "--trace-pods", str(pods),
           "--load", str(args.load), "--load-window", args.window, "--seed", str(seed), "-o", "json"]
    if config:
        cmd += ["--config", config]
    if movable != "none":
        cmd += ["--movable-qos", movable]
    start = time.monotonic()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall = time.monotonic() - start
    report = json.loads(out)
    replay = report["replay"]
    waits = {w["gpus"]: w for w in replay["waits"]}
    eight = waits.get("8", {})
    return {
        "arrivals": replay["arrivals"],
        "decisions": report["decisions"],
        "decisions/s": report["decisionsPerSecond"],
        "wall s": wall,
        "mean alloc %": replay["meanGpuAllocation"],
        "pending GPU-h": waits["total"]["pendingGpuHours"],
        "multi-GPU pending GPU-h": sum(waits[k]["pendingGpuHours"] for k in MULTI if k in waits),
        "8-GPU wait p90 min": eight.get("p90Seconds", 0) / 60,
        "never placed": waits["total"]["neverPlaced"],
        "fit no node": waits["total"].get("fitNoNode", 0),
        "moves": replay["moves"],
        "moves % of placements": 100 * replay["moves"] / max(1, replay["placements"]),
    }


def has_times(path):
    with open(path, newline="") as f:
        return "deletion_time" in next(csv.reader(f))


def cell(values):
    if len(values) == 1:
        return f"{values[0]:.1f}"
    return f"{statistics.mean(values):.1f} ± {statistics.stdev(values):.1f}"


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--binary", required=True)
    p.add_argument("--trace-dir", required=True, type=Path)
    p.add_argument("--lists", default="default,cpu050,gpushare40,gpuspec10")
    p.add_argument("--seeds", default="42,43,44")
    p.add_argument("--load", type=float, default=1.2)
    p.add_argument("--window", default="2h")
    p.add_argument("--config", action="append", default=[])
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--movable-qos", action="append", default=[])
    args = p.parse_args()
    args.nodes = args.trace_dir / "openb_node_list_gpu_node.csv"
    seeds = [int(s) for s in args.seeds.split(",")]
    configs = args.config or [""]
    movables = args.movable_qos or ["none"]
    runs = []
    for name in args.lists.split(","):
        pods = args.trace_dir / f"openb_pod_list_{name}.csv"
        if not has_times(pods):
            raise SystemExit(f"{pods}: no creation_time/deletion_time columns: no durations")
        for config in configs:
            for movable in movables:
                runs += [(name, config, movable, pods, seed) for seed in seeds]
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda r: run_once(args, r[3], r[4], r[1], r[2]), runs))
    keys = list(results[0].keys())
    print(f"Load {args.load}, window {args.window}, seeds {args.seeds}; mean ± sd over the seeds.\n")
    print("| list | config | movable qos | " + " | ".join(keys) + " |")
    print("|---|---|---|" + "---:|" * len(keys))
    for name in args.lists.split(","):
        for config in configs:
            for movable in movables:
                rows = [res for (n, c, m, _, _), res in zip(runs, results)
                        if n == name and c == config and m == movable]
                cells = [cell([r[k] for r in rows]) for k in keys]
                print(f"| {name} | {config or 'default profile'} | {movable} | "
                      + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
