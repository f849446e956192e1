#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# Synthetic stand-ins for the openb pod lists that are not in ../shared (cpu100, cpu200, cpu250,
# gpushare60/80/100, gpuspec20/25/33, multigpu20/40/50), built from the `default` list the way the
# family suffixes are defined (docs/simulator.md, "The trace files"):
#
#   cpuXXX      all GPU tasks of default, plus CPU-only tasks drawn from default's CPU-only tasks
#               until XXX/10 % of the tasks are CPU-only;
#   gpushareXX  default with randomly chosen non-sharing GPU tasks replaced by sharing tasks drawn
#               from default's, until XX % of the GPU request comes from sharing tasks;
#   multigpuXX  default plus multi-GPU tasks drawn from default's, until XX % of the GPU request
#               comes from them;
#   gpuspecXX   default with a model constraint on XX % of the GPU tasks, drawn from the
#               constraints that gpuspec10 puts on tasks of the same (num_gpu, gpu_milli);
#   multigpu30  the real multigpu30 list (shared/ has only its first five columns) with the other
#               columns (qos, times: the replay's durations) of a default task of the same shape
#               (cpu, memory, GPUs, milli), drawn at random: for the saturated replay, which needs
#               durations.
#
# They are NOT the paper's lists (whose generator is not public): they exist so that a policy is
# checked on workloads it was not developed on, and are never read by gpusched itself.
#
#   bench/openb_variants.py --trace-dir ../shared/traces/alibaba-gpu-v2023 --out build/variants \
#       [--seed 7] [--only gpuspec20,cpu250]
import argparse
import csv
import random
from collections import defaultdict
from pathlib import Path

VARIANTS = {
    "cpu100": ("cpu", 10.0), "cpu200": ("cpu", 20.0), "cpu250": ("cpu", 25.0),
    "gpushare60": ("share", 60.0), "gpushare80": ("share", 80.0), "gpushare100": ("share", 100.0),
    "gpuspec20": ("spec", 20.0), "gpuspec25": ("spec", 25.0), "gpuspec33": ("spec", 33.0),
    "multigpu20": ("multi", 20.0), "multigpu40": ("multi", 40.0), "multigpu50": ("multi", 50.0),
    "multigpu30": ("timed", 0.0),
}


def kind(row):
    n, m = int(row["num_gpu"]), int(row["gpu_milli"])
    if n == 0:
        return "cpu"
    if n > 1:
        return "multi"
    return "share" if m < 1000 else "whole"


def gpus(row):
    return int(row["num_gpu"]) * int(row["gpu_milli"]) / 1000.0


def cpu_variant(rows, pct, rng):
    gpu_rows = [r for r in rows if kind(r) != "cpu"]
    cpu_rows = [r for r in rows if kind(r) == "cpu"]
    want = round(pct / (100.0 - pct) * len(gpu_rows))
    pool = cpu_rows[:]
    rng.shuffle(pool)
    extra = [pool[i] if i < len(pool) else rng.choice(cpu_rows) for i in range(want)]
    return gpu_rows + extra


def share_variant(rows, pct, rng):
    out = [dict(r) for r in rows]
    shares = [r for r in rows if kind(r) == "share"]
    candidates = [i for i, r in enumerate(out) if kind(r) in ("whole", "multi")]
    rng.shuffle(candidates)
    share_gpus = sum(gpus(r) for r in out if kind(r) == "share")
    total = sum(gpus(r) for r in out)
    for i in candidates:
        if total > 0 and 100.0 * share_gpus / total >= pct:
            break
        total -= gpus(out[i])
        out[i] = dict(rng.choice(shares))
        share_gpus += gpus(out[i])
        total += gpus(out[i])
    return out


def multi_variant(rows, pct, rng):
    out = list(rows)
    multis = [r for r in rows if kind(r) == "multi"]
    multi_gpus = sum(gpus(r) for r in rows if kind(r) == "multi")
    total = sum(gpus(r) for r in rows)
    while 100.0 * multi_gpus / total < pct:
        r = rng.choice(multis)
        out.append(r)
        multi_gpus += gpus(r)
        total += gpus(r)
    return out


def spec_variant(rows, spec10, pct, rng):
    by_shape = defaultdict(list)
    marginal = []
    for r in spec10:
        if r["gpu_spec"]:
            by_shape[(r["num_gpu"], r["gpu_milli"])].append(r["gpu_spec"])
            marginal.append(r["gpu_spec"])
    out = [dict(r, gpu_spec="") for r in rows]
    gpu_idx = [i for i, r in enumerate(out) if kind(r) != "cpu"]
    rng.shuffle(gpu_idx)
    for i in gpu_idx[: round(pct / 100.0 * len(gpu_idx))]:
        choices = by_shape.get((out[i]["num_gpu"], out[i]["gpu_milli"])) or marginal
        out[i]["gpu_spec"] = rng.choice(choices)
    return out


def timed_variant(rows, five_columns, rng):
    by_shape = defaultdict(list)
    for r in rows:
        by_shape[(r["cpu_milli"], r["memory_mib"], r["num_gpu"], r["gpu_milli"])].append(r)
    out = []
    for r in five_columns:
        same = by_shape.get((r["cpu_milli"], r["memory_mib"], r["num_gpu"], r["gpu_milli"]))
        if not same:
            raise SystemExit(f"multigpu30: {r['name']}: no default task of its shape")
        out.append(dict(rng.choice(same), **r))
    return out


def main():
    ap = argparse.ArgumentParser(description="synthetic stand-ins for the openb lists not in shared/")
    ap.add_argument("--trace-dir", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    with open(args.trace_dir / "openb_pod_list_default.csv", newline="") as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames
        rows = list(reader)
    with open(args.trace_dir / "openb_pod_list_gpuspec10.csv", newline="") as f:
        spec10 = list(csv.DictReader(f))
    args.out.mkdir(parents=True, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    for name, (family, pct) in VARIANTS.items():
        if only and name not in only:
            continue
        rng = random.Random(f"{args.seed}-{name}")
        if family == "cpu":
            out = cpu_variant(rows, pct, rng)
        elif family == "share":
            out = share_variant(rows, pct, rng)
        elif family == "multi":
            out = multi_variant(rows, pct, rng)
        elif family == "timed":
            with open(args.trace_dir / f"openb_pod_list_{name}.csv", newline="") as f:
                out = timed_variant(rows, list(csv.DictReader(f)), rng)
        else:
            out = spec_variant(rows, spec10, pct, rng)
        path = args.out / f"openb_pod_list_{name}.csv"
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            for i, r in enumerate(out):
                w.writerow(dict(r, name=f"openb-pod-{i:04d}"))
        print(f"{path}: {len(out)} pods")


if __name__ == "__main__":
    main()
