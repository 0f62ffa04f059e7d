"""Leave-one-GPU-out accuracy of the new throughput model against today's, on public tables.

Usage: .venv/bin/python bench/evaluate_model.py [--data DIR] [--min-gpus 5] [--mode gpu|cell|both]

Data (read here, at bench time only; never by the service):
- Lambda deeplearning-benchmark PyTorch training tables (/work/shared/data/lambda-deeplearning-
  benchmark/, lambdal/deeplearning-benchmark @ aa5addb6, credited to Lambda): fp16 and fp32, v1
  and v2 tables, 1-GPU runs only. Dropped: 0.0 cells (not run), the ncf column (garbage values
  up to 1.3e10 on H100 rows), `_bk` rows (backups of another row), GPUs not in the catalog
  (GH200). Vendor-prefixed rows and v2 node rows are other systems with the same GPU: each
  (GPU, model, precision) is the median over its rows, with n rows and their MAD.
  "LambdaCloud V100 16GB" is taken to be the SXM2 V100 16GB (Lambda Cloud's V100 instances).
- GPU specs and launch prices: service/catalog/gpus.csv (prices only where the catalog has
  one; perf-per-dollar Spearman is over those GPUs).
Today's model is called as service/performance.py calls it: GpuPerf(slug, peak_tflops for the
precision, bandwidth), estimate_all over the GPUs measured on the workload.
"""

from __future__ import annotations

import argparse
import csv
import re
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.domain import estimate as old  # noqa: E402
from service.domain import evaluation as ev  # noqa: E402
from service.domain import throughput_model as tm  # noqa: E402
from service.domain.plausibility import PeakRates, peak_tflops  # noqa: E402

LAMBDA = Path("/work/shared/data/lambda-deeplearning-benchmark")
CATALOG = ROOT / "service" / "catalog" / "gpus.csv"
PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
DROP_COLUMNS = {"ncf", "name_gpu", "num_gpu", "watt", "price", ""}
# Only FLOPs per unit the catalog states (workloads.csv resnet50-train); others unknown.
FLOPS = {"resnet50": 2.45e10}

V1_NAMES = [  # core name (after any vendor/system prefix) -> catalog slug
    ("Quadro RTX 8000", "nvidia-quadro-rtx-8000"),
    ("V100 16GB", "nvidia-v100-sxm2-16gb"),
    ("RTX 3090", "nvidia-rtx-3090"),
    ("A100 40GB PCIe", "nvidia-a100-pcie-40gb"),
    ("A100 80GB PCIe", "nvidia-a100-pcie-80gb"),
    ("A100 80GB SXM4", "nvidia-a100-80gb"),
    ("RTX 6000 Ada", "nvidia-rtx-6000-ada"),
    ("RTX A6000", "nvidia-rtx-a6000"),
    ("RTX 4090", "nvidia-rtx-4090"),
    ("H100 80GB PCIe Gen5", "nvidia-h100-pcie"),
    ("H100 80GB SXM5", "nvidia-h100-sxm"),
    ("A10", "nvidia-a10"),
]
V2_RE = re.compile(r"(?<![0-9])(\d+)x(GH200|H200|H100|B200)_\d+GB(?:_(SXM5?|PCIe))?")
V2_SLUGS = {
    ("H200", "SXM"): "nvidia-h200",
    ("H100", "SXM5"): "nvidia-h100-sxm",
    ("H100", "PCIe"): "nvidia-h100-pcie",
    ("B200", None): "nvidia-b200",
}


def _f(x: str) -> float | None:
    return float(x) if x not in ("", None) else None


def load_catalog() -> tuple[list[tm.GpuSpec], dict[str, float], dict[str, old.GpuPerf]]:
    specs, prices = [], {}
    for r in csv.DictReader(CATALOG.open()):
        rates = PeakRates(
            fp32=float(r["fp32_tflops"]),
            fp16_vector=_f(r["fp16_tflops"]),
            tf32_tensor=_f(r["tf32_tensor_tflops"]),
            fp16_tensor=_f(r["fp16_tensor_tflops"]),
            bf16_tensor=_f(r["bf16_tensor_tflops"]),
            fp8_tensor=_f(r["fp8_tensor_tflops"]),
            int8=_f(r["int8_tops"]),
        )
        specs.append(
            tm.GpuSpec(
                slug=r["slug"],
                vendor=r["vendor"],
                architecture=r["architecture"],
                stack=tm.derive_stack(r["vendor"], r["market"]),
                matrix_tflops={p: peak_tflops(rates, p) for p in PRECISIONS},
                fp32_tflops=rates.fp32,
                bandwidth_gbs=float(r["memory_bandwidth_gbs"]),
                memory_gb=float(r["memory_gb"]),
                tdp_w=_f(r["tdp_w"]),
                memory_type=r.get("memory_type") or None,
            )
        )
        if r["launch_price_usd"]:
            prices[r["slug"]] = float(r["launch_price_usd"])
    return specs, prices, {}


def _v1_slug(name: str) -> str | None:
    for core, slug in V1_NAMES:
        if name == core or name.endswith(" " + core):
            return slug
    return None


def medians(cells: dict[tuple[str, str], list[float]]) -> list[tm.Observation]:
    """One observation per (GPU, workload) cell: the median of its values, with n and MAD."""
    observations = []
    for (slug, w), values in sorted(cells.items()):
        med = statistics.median(values)
        mad = statistics.median(abs(v - med) for v in values)
        observations.append(tm.Observation(slug, w, med, len(values), mad))
    return observations


def load_lambda(folder: Path) -> tuple[list[tm.Observation], list[tm.WorkloadSpec], int]:
    """Observations per (GPU, model-precision), medians over the 1-GPU rows; dropped rows."""
    cells: dict[tuple[str, str], list[float]] = {}
    dropped = 0
    for precision in ("fp16", "fp32"):
        for version in ("", "-v2"):
            path = folder / f"pytorch-train-throughput{version}-{precision}.csv"
            rows = list(csv.reader(path.open()))
            header = rows[0]
            for row in rows[1:]:
                name = row[0]
                if version:
                    m = V2_RE.search(name)
                    if m is None or m.group(1) != "1":
                        continue  # a multi-GPU run
                    if name.endswith("_bk"):
                        dropped += 1
                        continue
                    slug = V2_SLUGS.get((m.group(2), m.group(3)))
                else:
                    if float(row[1]) != 1.0:
                        continue
                    slug = _v1_slug(name)
                if slug is None:
                    dropped += 1
                    continue
                for col, value in zip(header, row, strict=True):
                    if col in DROP_COLUMNS or col == header[0] or not value:
                        continue
                    v = float(value)
                    if v > 0:
                        cells.setdefault((slug, f"{col}-{precision}"), []).append(v)
    observations = medians(cells)
    workloads = []
    for w in sorted({o.workload for o in observations}):
        model, precision = w.rsplit("-", 1)
        workloads.append(tm.WorkloadSpec(w, precision, FLOPS.get(model), False, "train"))
    return observations, workloads, dropped


def new_trainer(specs: Sequence[tm.GpuSpec], workloads: Sequence[tm.WorkloadSpec]) -> ev.Trainer:
    def train(obs: Sequence[tm.Observation]) -> ev.Predictor:
        model = tm.fit(specs, workloads, obs)

        def predict(gpu: str, workload: str) -> tuple[float, float, float] | None:
            p = model.predict(gpu, workload)
            return None if p is None else (p.value, p.low, p.high)

        return predict

    return train


def old_trainer(specs: Sequence[tm.GpuSpec], workloads: Sequence[tm.WorkloadSpec]) -> ev.Trainer:
    wls = {w.slug: w for w in workloads}

    def train(obs: Sequence[tm.Observation]) -> ev.Predictor:
        cache: dict[str, dict[str, old.Estimate]] = {}

        def predict(gpu: str, workload: str) -> tuple[float, float, float] | None:
            if workload not in cache:
                wl = wls[workload]
                perf = [
                    old.GpuPerf(s.slug, s.matrix_tflops[wl.precision], s.bandwidth_gbs)
                    for s in specs
                ]
                measured = {
                    o.gpu: old.Measurement(o.median, o.n, o.mad)
                    for o in obs
                    if o.workload == workload
                }
                cache[workload] = old.estimate_all(
                    perf,
                    measured,
                    old.WorkloadShape(wl.flops_per_unit, wl.memory_bound, wl.precision),
                )
            e = cache[workload].get(gpu)
            return None if e is None else (e.value, e.low, e.high)

        return predict

    return train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=LAMBDA)
    parser.add_argument("--min-gpus", type=int, default=5)
    parser.add_argument("--mode", choices=["gpu", "cell", "both"], default="both")
    args = parser.parse_args()
    specs, prices, _ = load_catalog()
    obs, workloads, dropped = load_lambda(args.data)
    gpus = sorted({o.gpu for o in obs})
    print(
        f"Lambda 1-GPU data: {len(obs)} (GPU, workload) medians over {sum(o.n for o in obs)} "
        f"rows, {len(gpus)} GPUs, {len(workloads)} workloads; {dropped} 1-GPU rows dropped "
        "(_bk backups, GPUs not in the catalog)"
    )
    print("GPUs:", ", ".join(gpus))
    print(f"priced GPUs (catalog launch price): {sorted(g for g in gpus if g in prices)}\n")
    modes = ["gpu", "cell"] if args.mode == "both" else [args.mode]
    for name, trainer in (
        ("old (estimate.py)", old_trainer),
        ("new (throughput_model)", new_trainer),
    ):
        for mode in modes:
            if name.startswith("old") and mode == "cell":
                continue  # the old model shares nothing across workloads: same as gpu
            t0 = time.monotonic()
            held = ev.leave_one_gpu_out(obs, trainer(specs, workloads), args.min_gpus, mode)  # type: ignore[arg-type]
            table = ev.summarise(held, obs, prices, args.min_gpus)
            title = f"{name}, leave-one-GPU-out mode={mode} ({time.monotonic() - t0:.1f}s)"
            print(ev.format_table(table, title), "\n")


if __name__ == "__main__":
    main()
