"""How far apart one lab measures two cards that the specs cannot tell apart: a noise floor.

Usage: .venv/bin/python bench/twins.py [--database-url URL] [--tolerance 0.15]

An estimator that reads a card's datasheet rates (matrix math at the workload's precision,
vector FP32, memory bandwidth) can only tell two cards apart by those rates, by its
architecture-and-die and stack terms, and by board power and memory size. Twins here are two
GPUs of one stack and one architecture/die whose three rates agree within `--tolerance` (the
Quadro RTX 6000 and 8000 share the TU102 die and every rate; the A100 SXM4 and PCIe 40GB, the
V100 SXM2 16GB and PCIe 32GB differ in clocks by a few percent and in board power). For every
workload measuring both, this prints the ratio of their measured single-GPU medians: the spread
no spec-based estimate can follow, which bounds what leave-one-GPU-out can reach on that
workload (issue 13's p90 line is 25%, 0.22 in log). It fits nothing; figures, not pass/fail.
The corpus is the database at --database-url, else a fresh one seeded in a temporary folder.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlmodel import Session, create_engine  # noqa: E402

from service.domain import throughput_model as tm  # noqa: E402
from service.read_model.estimates import load_inputs  # noqa: E402

P90_LINE = math.log(1.25)


def _seeded(folder: str) -> str:
    url = f"sqlite:///{folder}/twins.db"
    env = {**os.environ, "GPU_ADVISOR_DATABASE_URL": url}
    cli = str(ROOT / ".venv" / "bin" / "gpu-advisor")
    for step in ("migrate", "seed"):
        subprocess.run([cli, step], env=env, check=True, capture_output=True)
    return url


def _close(a: float, b: float, tolerance: float) -> bool:
    return abs(math.log(a / b)) <= math.log(1 + tolerance)


def twins(
    specs: dict[str, tm.GpuSpec], wl: tm.WorkloadSpec, gpus: list[str], tolerance: float
) -> list[tuple[str, str]]:
    out = []
    for a, b in itertools.combinations(sorted(gpus), 2):
        sa, sb = specs[a], specs[b]
        if sa.group != sb.group:
            continue
        ra, rb = sa.rates(wl.rate_key), sb.rates(wl.rate_key)
        if all(_close(float(ra[i]), float(rb[i]), tolerance) for i in range(3)):
            out.append((a, b))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url")
    parser.add_argument("--tolerance", type=float, default=0.15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = args.database_url or _seeded(folder)
        with Session(create_engine(url)) as session:
            inputs = load_inputs(session)
    specs = {s.slug: s for s in inputs.gpus}
    workloads = {w.slug: w for w in inputs.workloads}
    single: defaultdict[str, dict[str, float]] = defaultdict(dict)
    for o in inputs.observations:
        if o.per_gpu_of == 1:
            single[o.workload][o.gpu] = o.median
    print(f"twins: one stack and architecture/die, rates within {args.tolerance:.0%}")
    print(f"{'workload':36} {'GPU a':26} {'GPU b':26} {'a/b':>6} {'GB a/b':>9} {'W a/b':>9}")
    apart: defaultdict[str, list[tuple[float, str, str]]] = defaultdict(list)
    for w in sorted(single):
        wl = workloads.get(w)
        if wl is None:
            continue
        for a, b in twins(specs, wl, list(single[w]), args.tolerance):
            ratio = single[w][a] / single[w][b]
            sa, sb = specs[a], specs[b]
            print(
                f"{w:36} {a:26} {b:26} {ratio:6.2f} "
                f"{sa.memory_gb or 0:4.0f}/{sb.memory_gb or 0:<4.0f} "
                f"{sa.tdp_w or 0:4.0f}/{sb.tdp_w or 0:<4.0f}"
            )
            apart[w].append((abs(math.log(ratio)), a, b))
    print()
    print(f"{'workload':36} {'pairs':>5} {'over 25% apart':>14}  farthest pair")
    for w, pairs in sorted(apart.items()):
        far = max(pairs)
        over = sum(d > P90_LINE for d, _, _ in pairs)
        print(f"{w:36} {len(pairs):5d} {over:14d}  x{math.exp(far[0]):.2f} {far[1]} / {far[2]}")


if __name__ == "__main__":
    main()
