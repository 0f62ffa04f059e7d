"""The estimator on held-out public data: a community table that is not in the shipped corpus.

Usage: .venv/bin/python bench/heldout.py [--database-url URL] [--data CSV] [--min-gpus 5]
                                         [--today YYYY-MM-DD]

`gpu-advisor evaluate` scores the model on the corpus it was designed against; this bench asks
whether what the model learned there carries to a table from another lab, other scripts and
other batch sizes. Data: bench/data/heldout_gpu_insights.csv (written by
tools/build_heldout_gpu_insights.py from xiaoran007/GPU-Insights, with a source per row and the
dropped rows listed there): ResNet-50 (CIFAR-sized inputs, two benchmark versions), ViT-B/16,
UNet and DDPM training, FP32 and half precision, one table per (model, version, precision),
6-12 catalog GPUs each. Scores are proportional to throughput within a table.

Each table is a new workload the corpus has never seen (no FLOPs stated; its work split is
fitted from the table's other GPUs), of suite `gpu-insights` (one lab's scripts, as an admin
names the suite of a lab's own workloads in POST /workloads). For every GPU in the held-out
tables, the model is fitted on the corpus plus the tables without that GPU, and predicts the
GPU's score in each table:

- `known`: the GPU keeps its corpus results (a card the service knows, that this lab did not
  run): its own efficiency, learned from the corpus, must carry to the new lab's scripts.
- `cold`: the GPU is removed from the corpus too (a card nobody has measured anywhere).

The old model (service/domain/estimate.py, the spec-only prior scaled to the table's measured
GPUs, as bench/evaluate_model.py calls it) is scored in the same run. Perf per dollar uses the
current prices of the seeded database, as /rankings does. The corpus is a fresh database
migrated and seeded in a temporary folder unless --database-url names one.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from evaluate_model import medians, new_trainer, old_trainer  # noqa: E402
from sqlmodel import Session, create_engine  # noqa: E402

from service.domain import evaluation as ev  # noqa: E402
from service.domain import throughput_model as tm  # noqa: E402
from service.read_model.accuracy import (  # noqa: E402
    TARGET_MIN_GPUS,
    current_prices,
    meets_targets,
)
from service.read_model.estimates import ModelInputs, load_inputs  # noqa: E402

DATA = ROOT / "bench" / "data" / "heldout_gpu_insights.csv"
PREFIX = "heldout:"
SUITE = "gpu-insights"
PRICE_MAX_AGE_DAYS = 365


def load_heldout(path: Path) -> tuple[list[tm.Observation], list[tm.WorkloadSpec]]:
    """One observation per (GPU, table): the median of its rows, with n and MAD."""
    cells: dict[tuple[str, str], list[float]] = {}
    precision: dict[str, str] = {}
    for r in csv.DictReader(path.open()):
        table = PREFIX + r["table"]
        cells.setdefault((r["gpu"], table), []).append(float(r["value"]))
        precision[table] = r["precision"]
    specs = [
        tm.WorkloadSpec(t, p, None, False, "", "images/s", suite=SUITE)
        for t, p in sorted(precision.items())
    ]
    return medians(cells), specs


def corpus(url: str | None, today: date) -> tuple[ModelInputs, dict[str, float], str]:
    """The shipped corpus as the service loads it, and the prices current on `today`."""
    tmp = None
    if url is None:
        tmp = tempfile.TemporaryDirectory()
        url = f"sqlite:///{tmp.name}/corpus.db"
        env = {**os.environ, "GPU_ADVISOR_DATABASE_URL": url}
        cli = str(Path(sys.executable).with_name("gpu-advisor"))  # this venv's console script
        for step in ("migrate", "seed"):
            subprocess.run([cli, step], env=env, check=True, capture_output=True)
    engine = create_engine(url)
    with Session(engine) as session:
        inputs = load_inputs(session)
        prices = current_prices(session, today, PRICE_MAX_AGE_DAYS)
    engine.dispose()
    if tmp is not None:
        tmp.cleanup()
    return inputs, prices, "fresh seeded database" if tmp else url


def held_out(
    train: ev.Trainer,
    corpus_obs: Sequence[tm.Observation],
    table_obs: Sequence[tm.Observation],
    targets: set[str],
    cold: bool,
) -> list[ev.HeldOut]:
    """Each GPU of the eligible tables predicted without its table results (and, cold, without
    its corpus results)."""
    out: list[ev.HeldOut] = []
    for gpu in sorted({o.gpu for o in table_obs if o.workload in targets}):
        kept = [o for o in corpus_obs if not (cold and o.gpu == gpu)]
        kept += [o for o in table_obs if o.gpu != gpu]
        predict = train(kept)
        for o in table_obs:
            if o.gpu == gpu and o.workload in targets:
                p = predict(o.gpu, o.workload)
                if p is not None:
                    out.append(ev.HeldOut(o.gpu, o.workload, o.median, *p))
    return out


def per_gpu_log_error(held: Sequence[ev.HeldOut]) -> dict[str, float]:
    """GPU -> mean log(measured / estimated) over its held-out tables."""
    errors: dict[str, list[float]] = {}
    for h in held:
        errors.setdefault(h.gpu, []).append(math.log(h.measured / h.value))
    return {g: statistics.fmean(e) for g, e in errors.items()}


def worst(held: Sequence[ev.HeldOut], n: int = 8) -> str:
    rows = sorted(held, key=lambda h: -h.ape)[:n]
    return "  ".join(
        f"{h.gpu}/{h.workload[len(PREFIX) :]} {h.measured / h.value:.2f}" for h in rows
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--min-gpus", type=int, default=5)
    parser.add_argument("--today", type=date.fromisoformat, default=datetime.now(UTC).date())
    args = parser.parse_args()
    t0 = time.monotonic()
    inputs, prices, where = corpus(args.database_url, args.today)
    table_obs, tables = load_heldout(args.data)
    catalog = {g.slug for g in inputs.gpus}
    unknown = sorted({o.gpu for o in table_obs} - catalog)
    if unknown:
        sys.exit(f"held-out GPUs not in the catalog: {unknown}")
    eligible = ev.eligible_workloads(table_obs, args.min_gpus)
    targets = set(eligible)
    print(
        f"corpus: {where}, {len(inputs.observations)} (GPU, workload) medians "
        f"({time.monotonic() - t0:.0f} s to load)\nheld-out: {args.data.name}, "
        f"{len(table_obs)} (GPU, table) medians, {len(tables)} tables, "
        f"{len({o.gpu for o in table_obs})} GPUs; {len(targets)} tables with "
        f">= {args.min_gpus} GPUs scored; prices current on {args.today}\n"
    )
    workloads = [*inputs.workloads, *tables]
    old, new = old_trainer(inputs.gpus, workloads), new_trainer(inputs.gpus, workloads)
    runs = [
        ("old (estimate.py), spec prior scaled to the table", old, False),
        ("new (throughput_model), GPU known from the corpus", new, False),
        ("new (throughput_model), GPU cold", new, True),
    ]
    by_gpu: dict[str, dict[str, float]] = {}
    for name, train, cold in runs:
        t1 = time.monotonic()
        held = held_out(train, inputs.observations, table_obs, targets, cold)
        by_gpu[name] = per_gpu_log_error(held)
        rows = ev.summarise(held, table_obs, prices, args.min_gpus)
        title = f"{name} ({time.monotonic() - t1:.0f} s)"
        print(ev.format_table(rows, title))
        judged = [ok for ok in (meets_targets(r) for r in rows) if ok is not None]
        print(
            f"{sum(judged)} of {len(judged)} tables with {TARGET_MIN_GPUS}+ GPUs meet all "
            f"targets; worst measured/estimated: {worst(held)}\n"
        )
    corpus_n = {g: 0 for g in by_gpu[runs[1][0]]}
    for o in inputs.observations:
        if o.gpu in corpus_n:
            corpus_n[o.gpu] += 1
    print("mean log(measured / estimated) per GPU over its tables: old, known, cold")
    for gpu in sorted(corpus_n):
        cells = "  ".join(f"{by_gpu[name].get(gpu, math.nan):+.2f}" for name, _, _ in runs)
        print(f"{gpu:34} {cells}   ({corpus_n[gpu]} corpus medians)")


if __name__ == "__main__":
    main()
