"""Build service/catalog/measured_results.csv from public benchmark tables (run by hand).

Inputs are local copies of public tables, given as arguments; nothing is downloaded and the
service never runs this script. One output row per (system row, model, precision) cell.

Design decisions (see service/catalog/MEASURED.md for the reasoning and the counts):
- `0.0` cells mean "not run" and give no row; `_bk` rows are backups of another row: dropped.
- NCF and Mask R-CNN columns are dropped: no matching workload, and NCF holds garbage values.
- Vendor/cloud prefixes (Dell, SMC, 1CC, LambdaCloud, LambdaOD ...) are separate systems: kept,
  named in `system`; the trailing node address of v2 run names stays in `device_string` only.
- v2 run names carry the GPU count as the `Nx<GPU>` token; `LambdaOD_4x_..._2xH100` is a 2-GPU
  run on a 4-GPU node.
- Multi-GPU cells whose per-GPU throughput is far from the same system's 1-GPU cell are kept
  (the ingestion gate judges them) but get a `suspect scaling` note.
- With --lambda-git (a clone of lambdal/deeplearning-benchmark), v0/v1 rows are dated by the
  commit that last wrote the row (git blame) and v2 cells by the run date in the log file
  name under results_v2/; without it, every row gets its table commit's date.
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from pathlib import Path

from service.ingest.importers.lambda_csv import MODEL_WORKLOAD  # one column -> workload map

COLUMNS = [
    "gpu",
    "workload",
    "value",
    "precision",
    "gpu_count",
    "batch_size",
    "framework",
    "framework_version",
    "source",
    "source_date",
    "device_string",
    "system",
    "note",
]

HEAD_COMMIT = "aa5addb6"
HEAD_DATE = "2025-12-17"
V0_COMMIT = "67a9bb51"
V0_DATE = "2022-07-06"
DLE_COMMIT = "729963dd"
DLE_RESNET_DATE = "2022-10-03"

DROPPED_MODELS = {"ncf": "no workload; garbage values up to 1.3e10", "maskrcnn": "no workload"}

# Lambda log folder per (model, precision) in results_v2/<run>/.
V2_TASK = {
    "ssd": "SSD",
    "bert_base_squad": "bert_base_squad",
    "bert_large_squad": "bert_large_squad",
    "gnmt": "gnmt",
    "resnet50": "resnet50",
    "tacotron2": "tacotron2",
    "waveglow": "waveglow",
}

# GPU names as Lambda writes them (after the system prefix and count) -> catalog slug.
# Form factors follow the table's `watt` column where the name omits them (V100 16GB at 300 W
# is SXM2, V100 32GB at 250 W is PCIe).
GPU_SLUG = {
    "quadro rtx 8000": "nvidia-quadro-rtx-8000",
    "quadro rtx 8000 v1": "nvidia-quadro-rtx-8000",
    "rtx quadro 8000": "nvidia-quadro-rtx-8000",
    "quadro rtx 6000": "nvidia-quadro-rtx-6000",
    "quadro rtx 5000": "nvidia-quadro-rtx-5000",
    "titan rtx": "nvidia-titan-rtx",
    "rtx 2080ti": "nvidia-rtx-2080-ti",
    "gtx 1080ti": "nvidia-gtx-1080-ti",
    "rtx 2080 super max-q": "nvidia-rtx-2080-super-max-q",
    "rtx 2080 max-q": "nvidia-rtx-2080-max-q",
    "rtx 2070 max-q": "nvidia-rtx-2070-max-q",
    "rtx 3080 max-q": "nvidia-rtx-3080-max-q",
    "rtx 3070": "nvidia-rtx-3070",
    "rtx 3080": "nvidia-rtx-3080",
    "rtx 3090": "nvidia-rtx-3090",
    "rtx 4090": "nvidia-rtx-4090",
    "v100 16gb": "nvidia-v100-sxm2-16gb",
    "v100 32gb": "nvidia-v100-pcie-32gb",
    "a10": "nvidia-a10",
    "rtx a40": "nvidia-a40",
    "rtx a4000": "nvidia-rtx-a4000",
    "rtx a4500": "nvidia-rtx-a4500",
    "rtx a5000": "nvidia-rtx-a5000",
    "rtx a5500": "nvidia-rtx-a5500",
    "rtx a6000": "nvidia-rtx-a6000",
    "rtx 6000 ada": "nvidia-rtx-6000-ada",
    "a100 40gb pcie": "nvidia-a100-pcie-40gb",
    "a100 80gb pcie": "nvidia-a100-pcie-80gb",
    "a100 40gb sxm4": "nvidia-a100-40gb",
    "a100 80gb sxm4": "nvidia-a100-80gb",
    "h100 80gb pcie gen5": "nvidia-h100-pcie",
    "h100 80gb sxm5": "nvidia-h100-sxm",
    # v2 tokens
    "h100_80gb_sxm5": "nvidia-h100-sxm",
    "h100_80gb_pcie": "nvidia-h100-pcie",
    "h200_140gb_sxm": "nvidia-h200",
    "gh200_96gb": "nvidia-gh200-96gb",
    "gh200_80gb": "nvidia-gh200-96gb",
    "b200_192gb": "nvidia-b200",
}

# Whole cloud instances named only by type: (GPU name, count, system).
INSTANCES = {
    "p3.16xlarge": ("v100 16gb", 8, "AWS p3.16xlarge"),
    "p3.8xlarge": ("v100 16gb", 4, "AWS p3.8xlarge"),
    "p4d.24xlarge": ("a100 40gb sxm4", 8, "AWS p4d.24xlarge"),
}

V1_PREFIXES = ("LambdaCloud", "DellTexas", "Dell", "SMC", "1CC", "RAIDZ1")
V0_NAME = re.compile(
    r"^(?:(?P<sys>Lambda Cloud|Linode Cloud) — )?(?:(?P<n>\d+)x\s*)?(?P<gpu>.+?)(?P<nvl> NVLink)?$"
)
V1_NAME = re.compile(
    r"^(?:(?P<sys>" + "|".join(V1_PREFIXES) + r")\s+)?(?:(?P<n>\d+)x\s*)?(?P<gpu>.+)$"
)
V2_NAME = re.compile(
    r"^(?P<sys>.*?)_?(?P<n>\d+)x(?P<gpu>(?:GH|H|B)\d+_\d+GB(?:_(?:SXM5?|PCIe))?)_(?P<tail>.+)_v2$"
)


@dataclass(frozen=True)
class Row:
    gpu: str
    workload: str
    value: float
    precision: str
    gpu_count: int
    batch_size: int | None
    framework: str
    framework_version: str
    source: str
    source_date: str
    device_string: str
    system: str
    note: str = ""

    def as_csv(self) -> dict[str, str]:
        out = {k: getattr(self, k) for k in COLUMNS}
        out["value"] = f"{self.value:g}" if self.value < 1e6 else f"{self.value:.0f}"
        out["batch_size"] = "" if self.batch_size is None else str(self.batch_size)
        return {k: str(v) for k, v in out.items()}


@dataclass
class Drops:
    counts: dict[str, int]

    def add(self, reason: str, n: int = 1) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + n


def parse_v0_v1_name(name: str, table_count: int, v0: bool) -> tuple[str, int, str]:
    """(gpu slug, gpu count, system) of a v0/v1 row name; KeyError for an unknown GPU."""
    if name in INSTANCES:
        gpu, n, system = INSTANCES[name]
        return GPU_SLUG[gpu], n, system
    m = (V0_NAME if v0 else V1_NAME).match(name)
    if m is None:
        raise KeyError(name)
    gpu = m.group("gpu").strip().lower()
    n = int(m.group("n") or 1)
    system = m.group("sys") or "Lambda"
    if v0 and m.group("nvl"):
        system += " (NVLink)"
    if n != table_count:
        raise ValueError(f"{name}: name says {n} GPUs, num_gpu says {table_count}")
    return GPU_SLUG[gpu], n, system


def parse_v2_name(name: str) -> tuple[str, int, str]:
    """(gpu slug, gpu count, system) of a v2 run name: the `Nx<GPU>` token gives the count."""
    m = V2_NAME.match(name)
    if m is None:
        raise KeyError(name)
    return GPU_SLUG[m.group("gpu").lower()], int(m.group("n")), m.group("sys")


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _blame_dates(git_dir: Path | None, commit: str, repo_path: str) -> dict[str, str]:
    """First CSV field of each line -> author date of the commit that last wrote that line."""
    if git_dir is None:
        return {}
    out = subprocess.run(
        ["git", "--git-dir", str(git_dir), "blame", "--line-porcelain", commit, "--", repo_path],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    dates: dict[str, str] = {}
    when = ""
    for line in out.splitlines():
        if line.startswith("author-time "):
            when = datetime.fromtimestamp(int(line.split()[1]), tz=UTC).date().isoformat()
        elif line.startswith("\t"):
            dates[line[1:].split(",")[0]] = when
    return dates


def _v2_log_dates(git_dir: Path | None) -> dict[tuple[str, str], str]:
    """(run name, task folder) -> latest run date in the log file names (dd-mm-yyyy_...)."""
    if git_dir is None:
        return {}
    out = subprocess.run(
        [
            "git",
            "--git-dir",
            str(git_dir),
            "ls-tree",
            "-r",
            "--name-only",
            HEAD_COMMIT,
            "pytorch/results_v2/",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    dates: dict[tuple[str, str], str] = {}
    for path in out.splitlines():
        parts = path.split("/")
        m = re.match(r"(\d\d)-(\d\d)-(\d{4})_", parts[-1]) if len(parts) == 5 else None
        if m:
            day = date(int(m.group(3)), int(m.group(2)), int(m.group(1))).isoformat()
            key = (parts[2], parts[3])
            dates[key] = max(dates.get(key, day), day)
    return dates


def _value(cell: str | None) -> float | None:
    if cell is None or cell.strip() == "":
        return None
    v = float(cell)
    return v if v > 0 else None


def table_rows(
    throughput: Path,
    bs: Path | None,
    precision: str,
    *,
    commit: str,
    repo_file: str,
    default_date: str,
    v0: bool,
    drops: Drops,
    row_dates: dict[str, str],
) -> Iterator[Row]:
    """Rows of one v0/v1 table (`name_gpu`, `num_gpu`, one column per model)."""
    batch = {r["name_gpu"]: r for r in _read(bs)} if bs else {}
    for rec in _read(throughput):
        name = rec["name_gpu"]
        slug, n, system = parse_v0_v1_name(name, int(float(rec["num_gpu"])), v0)
        for model, cell in rec.items():
            if model in ("name_gpu", "num_gpu", "watt", "price"):
                continue
            if model in DROPPED_MODELS:
                if _value(cell) is not None:
                    drops.add(f"{model} column ({DROPPED_MODELS[model]})")
                continue
            value = _value(cell)
            if value is None:
                drops.add("0.0 = not run")
                continue
            bs_cell = batch.get(name, {}).get(model)
            yield Row(
                gpu=slug,
                workload=MODEL_WORKLOAD[model],
                value=value,
                precision=precision,
                gpu_count=n,
                batch_size=int(float(bs_cell)) if bs_cell and float(bs_cell) > 0 else None,
                framework="pytorch",
                framework_version="",
                source=(
                    f"Lambda deeplearning-benchmark @ {commit}, {repo_file}, row {name}, "
                    f"column {model}"
                ),
                source_date=row_dates.get(name, default_date),
                device_string=name,
                system=system,
            )


def v2_rows(
    throughput: Path,
    precision: str,
    *,
    repo_file: str,
    drops: Drops,
    log_dates: dict[tuple[str, str], str],
) -> Iterator[Row]:
    """Rows of one v2 table (first column: run name)."""
    suffix = {"fp16": {"ssd": "AMP", "resnet50": "AMP"}, "fp32": {}}[precision]
    for rec in _read(throughput):
        name = rec[""]
        if name.endswith("_bk"):
            drops.add("_bk backup row", sum(1 for k, v in rec.items() if k and _value(v)))
            continue
        slug, n, system = parse_v2_name(name)
        for model, cell in rec.items():
            if not model:
                continue
            value = _value(cell)
            if value is None:
                drops.add("0.0 = not run")
                continue
            task = f"PyTorch_{V2_TASK[model]}_{suffix.get(model, precision.upper())}"
            yield Row(
                gpu=slug,
                workload=MODEL_WORKLOAD[model],
                value=value,
                precision=precision,
                gpu_count=n,
                batch_size=None,
                framework="pytorch",
                framework_version="",
                source=(
                    f"Lambda deeplearning-benchmark @ {HEAD_COMMIT}, {repo_file}, row {name}, "
                    f"column {model}"
                ),
                source_date=log_dates.get((name, task), HEAD_DATE),
                device_string=name,
                system=system,
            )


DLE_TABLE = re.compile(
    r"^##### Training performance: NVIDIA (?P<sys>.+?) \((?P<n>\d+)x (?P<gpu>.+)\)"
)
DLE_GPU = {
    "A100 80GB": "nvidia-a100-80gb",
    "V100 16GB": "nvidia-v100-sxm2-16gb",
    "V100 32GB": "nvidia-v100-sxm2-32gb",
}


def dle_resnet_rows(readme: Path) -> Iterator[Row]:
    """NVIDIA DeepLearningExamples ResNet-50 v1.5 (PyTorch) training tables, DGX systems."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        m = DLE_TABLE.match(line)
        if not m or "Training performance results" in line:
            continue
        header = [c.strip(" *") for c in lines[i + 2].strip("|").split("|")]
        for body in lines[i + 4 : i + 12]:
            if not body.startswith("|"):
                break
            cells = [c.strip() for c in body.strip("|").split("|")]
            count = int(cells[0])
            for col, cell in zip(header, cells, strict=False):
                if not col.startswith("Throughput - "):
                    continue
                label = col.removeprefix("Throughput - ")
                precision = {"mixed precision": "fp16", "TF32": "tf32", "FP32": "fp32"}[label]
                yield Row(
                    gpu=DLE_GPU[m.group("gpu")],
                    workload="resnet50-train",
                    value=float(cell.split()[0]),
                    precision=precision,
                    gpu_count=count,
                    batch_size=256 if precision == "fp16" else None,
                    framework="pytorch",
                    framework_version="",
                    source=(
                        f"NVIDIA DeepLearningExamples @ {DLE_COMMIT}, PyTorch/Classification/"
                        f"ConvNets/resnet50v1.5/README.md, table '{line.lstrip('# ')}', "
                        f"row {count} GPUs, column {col}"
                    ),
                    source_date=DLE_RESNET_DATE,
                    device_string=f"NVIDIA {m.group('sys')} ({m.group('n')}x {m.group('gpu')})",
                    system=f"NVIDIA {m.group('sys')}",
                )


def flag_scaling(rows: list[Row], low: float = 0.35, high: float = 1.15) -> list[Row]:
    """Note multi-GPU cells whose per-GPU value is far from the same system's 1-GPU cell."""
    single: dict[tuple[str, str, str, str, str], float] = {}
    for r in rows:
        if r.gpu_count == 1:
            single.setdefault(
                (r.source.split(",")[1], r.system, r.gpu, r.workload, r.precision), r.value
            )
    out = []
    for r in rows:
        key = (r.source.split(",")[1], r.system, r.gpu, r.workload, r.precision)
        base = single.get(key)
        if r.gpu_count > 1 and base:
            eff = r.value / (r.gpu_count * base)
            if not low <= eff <= high:
                r = replace(r, note=f"suspect scaling: {eff:.2f} x linear vs the 1-GPU cell")
        out.append(r)
    return out


def build(args: argparse.Namespace, drops: Drops) -> list[Row]:
    data = Path(args.lambda_dir)
    git_dir = Path(args.lambda_git) if args.lambda_git else None
    log_dates = _v2_log_dates(git_dir)
    rows: list[Row] = []
    for precision in ("fp16", "fp32"):
        f = f"pytorch/pytorch-train-throughput-{precision}.csv"
        rows += table_rows(
            data / f"pytorch-train-throughput-{precision}.csv",
            data / f"pytorch-train-bs-{precision}.csv",
            precision,
            commit=HEAD_COMMIT,
            repo_file=f,
            default_date=HEAD_DATE,
            v0=False,
            drops=drops,
            row_dates=_blame_dates(git_dir, HEAD_COMMIT, f),
        )
        rows += v2_rows(
            data / f"pytorch-train-throughput-v2-{precision}.csv",
            precision,
            repo_file=f"pytorch/pytorch-train-throughput-v2-{precision}.csv",
            drops=drops,
            log_dates=log_dates,
        )
        if args.v0_dir:
            v0 = Path(args.v0_dir)
            rows += table_rows(
                v0 / f"v0-pytorch-train-throughput-{precision}.csv",
                v0 / f"v0-pytorch-train-bs-{precision}.csv",
                precision,
                commit=V0_COMMIT,
                repo_file=f,
                default_date=V0_DATE,
                v0=True,
                drops=drops,
                row_dates=_blame_dates(git_dir, V0_COMMIT, f),
            )
    if args.dle_resnet:
        rows += dle_resnet_rows(Path(args.dle_resnet))
    return flag_scaling(rows)


def write(rows: Iterable[Row], out: Path) -> int:
    n = 0
    with out.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow(r.as_csv())
            n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("lambda_dir", help="folder with Lambda's pytorch-train-*.csv (aa5addb6)")
    p.add_argument("--v0-dir", help="folder with v0-pytorch-train-*.csv (git show 67a9bb51:...)")
    p.add_argument("--dle-resnet", help="DeepLearningExamples resnet50v1.5 README.md")
    p.add_argument("--lambda-git", help="git dir of lambdal/deeplearning-benchmark (dates)")
    p.add_argument("--out", default="service/catalog/measured_results.csv")
    args = p.parse_args(argv)
    drops = Drops({})
    n = write(build(args, drops), Path(args.out))
    print(f"wrote {n} rows to {args.out}")
    for reason, count in sorted(drops.counts.items()):
        print(f"dropped {count:4d} cells: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
