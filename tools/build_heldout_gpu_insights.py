"""Build bench/data/heldout_gpu_insights.csv from GPU-Insights' community table (run by hand).

Held-out public data for bench/heldout.py: training throughputs the shipped corpus does not
contain, from a different lab setup than Lambda's, so the estimator can be checked on a table it
was never designed against. The service never reads the output; nothing is downloaded.

Input: `docs-src/public/data/benchmark-data.json` of xiaoran007/GPU-Insights (BSD-3-Clause, numbers
copied as facts with attribution), given as a path (a checkout or `git show` of commit SOURCE_AT).
The table's "score" is (samples / seconds) x (epochs / 10) x 100 (the repo's
benchmark/scoring.py): 10 x throughput in the version-1 runner, 10 x epochs x throughput in the
current one, where the epoch count is a run flag the table does not record. Taken here as
proportional to throughput within one (model, version), which assumes submitters ran the
default epochs: an assumption, stated. The "fp16" column holds BF16 runs where the run's note says
"BF16" (`main_auto`, which picks BF16 on BF16-capable GPUs, per the README): those cells are
bf16 tables here, as the service keeps a workload's precisions apart; the other half-precision
cells are FP16 runs (the older `-dt FP16` command).

Rows kept: one stock, single-GPU catalog product per row. Dropped, each with its reason in
GARBAGE below and printed by the script: GPUs outside the catalog (TPU, Ascend, Moore Threads,
MI50, Apple M1/M4, Jetson, laptop parts, RTX 4090 D, RTX PRO 6000 Server, A2, P104-100, TITAN X
Pascal), multi-GPU runs, vGPU slices, memory-modified boards (2080 Ti 22 GB, 3080 20 GB, 4080 and
4080 SUPER 32 GB: not the product as sold), half-precision cells the table's own note marks as
broken or absent (Pascal FP16, Arc A770 "GradScaler Not Work"), a half-precision cell equal to
its FP32 cell (M1 Max: not a half-precision run), a "partial precision run", and in version 2
an explicit-batch run of a GPU that also has the version's default auto-batch run.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

SOURCE_REPO = "xiaoran007/GPU-Insights"
SOURCE_AT = "f4f228e05b14"  # 2026-06-25; the data file's metadata says lastUpdated 2026-05-24
SOURCE_FILE = "docs-src/public/data/benchmark-data.json"
OUT = Path(__file__).resolve().parents[1] / "bench" / "data" / "heldout_gpu_insights.csv"
COLUMNS = [
    "table",
    "gpu",
    "precision",
    "value",
    "batch_size",
    "device_string",
    "memory",
    "source",
    "source_date",
    "note",
]

# The device string as the table prints it -> catalog slug (stock single-GPU products only).
DEVICE_SLUG = {
    "NVIDIA GeForce RTX 5090": "nvidia-rtx-5090",
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": "nvidia-rtx-pro-6000-blackwell",
    "NVIDIA H20": "nvidia-h20",
    "NVIDIA GeForce RTX 4090": "nvidia-rtx-4090",
    "NVIDIA GeForce RTX 4080": "nvidia-rtx-4080",
    "NVIDIA GeForce RTX 4080 SUPER": "nvidia-rtx-4080-super",
    "NVIDIA GeForce RTX 4070 SUPER": "nvidia-rtx-4070-super",
    "NVIDIA A100-PCIE": "nvidia-a100-pcie-40gb",
    "NVIDIA A100-SXM4-40GB": "nvidia-a100-40gb",
    "NVIDIA H100 80GB HBM3": "nvidia-h100-sxm",  # the SXM5 part's NVML name
    "NVIDIA L40S": "nvidia-l40s",
    "NVIDIA GeForce RTX 3090": "nvidia-rtx-3090",
    "NVIDIA GeForce RTX 3080": "nvidia-rtx-3080",
    "NVIDIA RTX A5000": "nvidia-rtx-a5000",
    "NVIDIA RTX A5500": "nvidia-rtx-a5500",
    "NVIDIA GeForce RTX 2080 Ti": "nvidia-rtx-2080-ti",
    "Quadro RTX 6000": "nvidia-quadro-rtx-6000",
    "Tesla T4": "nvidia-t4",
    "Tesla V100S-PCIE": "nvidia-v100s-pcie",
    "Tesla V100-PCIE-32GB": "nvidia-v100-pcie-32gb",
    "NVIDIA TITAN Xp": "nvidia-titan-xp",
    "Intel Arc A770 Graphics": "intel-arc-a770",
    "Apple M1 Max GPU": "apple-m1-max",
}
# Memory as sold, for the boards the table also lists with a modified memory size.
STOCK_MEMORY = {
    "nvidia-rtx-2080-ti": "11GB",
    "nvidia-rtx-3080": "10GB",
    "nvidia-rtx-4080": "16GB",
    "nvidia-rtx-4080-super": "16GB",
}


def garbage(row: dict[str, object], column: str, slug: str | None) -> str | None:
    """Why a cell is left out, or None to keep it."""
    note = str(row.get("note", ""))
    if slug is None:
        return "not a single stock catalog GPU (other device, multi-GPU run or vGPU)"
    if slug in STOCK_MEMORY and row["memory"] != STOCK_MEMORY[slug]:
        return "memory-modified board, not the product as sold"
    if "partial precision run" in note:
        return "partial precision run (the table's note)"
    if column == "fp16":
        if "FP16 Not Officially Supported" in note:
            return "no half-precision path on Pascal (the table's note)"
        if "GradScaler Not Work" in note:
            return "mixed precision broken on this run (the table's note)"
        if row["fp16"] == row["fp32"]:
            return "half-precision score equal to the FP32 score: not a half-precision run"
    return None


def build(data: dict) -> tuple[list[dict[str, object]], list[str]]:
    rows = data["benchmarks"]
    auto_batch = {
        (r["model"], r["version"], r["device"])
        for r in rows
        if r.get("version") == "ver2" and not r.get("fp32bs")
    }
    kept: list[dict[str, object]] = []
    dropped: list[str] = []
    for i, r in enumerate(rows):
        slug = DEVICE_SLUG.get(r["device"])
        for column in ("fp32", "fp16"):
            value = r.get(column)
            if not value:
                continue
            why = garbage(r, column, slug)
            batch = r.get(f"{column}bs") or 0
            if why is None and batch and (r["model"], r["version"], r["device"]) in auto_batch:
                why = "explicit-batch run of a GPU that also has the default auto-batch run"
            where = f"benchmarks[{i}] ({r['device']}, {r['date']})"
            if why:
                dropped.append(f"{where} {r['model']} {r['version']} {column}={value}: {why}")
                continue
            y, m, d = (int(x) for x in str(r["date"]).split("."))
            precision = "bf16" if column == "fp16" and "BF16" in str(r.get("note")) else column
            kept.append(
                {
                    "table": f"{r['model']}-{r['version']}-{precision}",
                    "gpu": slug,
                    "precision": precision,
                    "value": value,
                    "batch_size": batch or "auto",
                    "device_string": r["device"],
                    "memory": r["memory"],
                    "source": f"{SOURCE_REPO}@{SOURCE_AT} {SOURCE_FILE} {where}",
                    "source_date": f"{y:04d}-{m:02d}-{d:02d}",
                    "note": r.get("note", ""),
                }
            )
    return kept, dropped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("json", type=Path, help=f"a copy of {SOURCE_FILE} at {SOURCE_AT}")
    args = parser.parse_args()
    kept, dropped = build(json.loads(args.json.read_text()))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(kept)
    tables: dict[str, set[object]] = {}
    for r in kept:
        tables.setdefault(str(r["table"]), set()).add(r["gpu"])
    print(f"{len(kept)} cells kept in {OUT}, {len(dropped)} dropped:", file=sys.stderr)
    for line in dropped:
        print("  " + line, file=sys.stderr)
    sizes = statistics.median(len(g) for g in tables.values())
    print(f"{len(tables)} tables, median {sizes:g} GPUs each", file=sys.stderr)


if __name__ == "__main__":
    main()
