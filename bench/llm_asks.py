"""Leave-one-GPU-out accuracy of a model= decode ask's estimate, before and after it took the
throughput model's estimate of the measured workload.

Usage: .venv/bin/python bench/llm_asks.py [--database-url URL] [--min-gpus 6]

A model= ask (`/recommend?model=llama-3-8b&quant=q4_k_m`) for a GPU nobody measured on that
model was answered with the decode roofline x ONE efficiency, the median measured / roofline
over every measured LLM decode group (every model, format and GPU alike). It now takes the
throughput model's estimate for the measured decode workload of that model and format (its
per-workload work split, its GPU, stack and board-power terms, its conformal band), moved to
the asked context by the roofline (service/read_model/llm/, DecodeReference).

For every single-GPU decode workload with at least `--min-gpus` measured GPUs, each GPU is held
out of everything (a card nobody measured), and both are asked for it at the workload's own mean
context (so the roofline's context move is 1 and the two are compared on the measured value):

- `old`: roofline x the efficiency learned from the other GPUs' decode groups, its band
  (1.4826 x MAD of their log ratios);
- `new`: the throughput model refitted without the GPU (what `gpu-advisor evaluate` scores).

Prints per workload the median and 90th percentile absolute error and the 80%-band coverage of
both. The corpus is a fresh seeded database in a temporary folder unless --database-url names
one. About three minutes on two cores (one throughput-model fit per GPU).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlmodel import Session, create_engine  # noqa: E402

from service.catalog import llm  # noqa: E402
from service.domain import evaluation as ev  # noqa: E402
from service.domain import llm_fit, memory  # noqa: E402
from service.read_model import accuracy  # noqa: E402
from service.read_model import llm as asks  # noqa: E402
from service.read_model.estimates import load_inputs, model_key  # noqa: E402

Error = tuple[float, bool]  # (predicted / measured - 1, measured inside the band)


def database(url: str | None) -> tuple[str, tempfile.TemporaryDirectory[str] | None]:
    if url is not None:
        return url, None
    tmp = tempfile.TemporaryDirectory()
    url = f"sqlite:///{tmp.name}/corpus.db"
    env = {**os.environ, "GPU_ADVISOR_DATABASE_URL": url}
    cli = str(Path(sys.executable).with_name("gpu-advisor"))
    for step in ("migrate", "seed"):
        subprocess.run([cli, step], env=env, check=True, capture_output=True)
    return url, tmp


def llm_data(url: str) -> asks.LlmData:
    """The LLM read model's data of the database at `url` (every price, any condition)."""
    engine = create_engine(url)
    with Session(engine) as session:
        data = asks.load(session, "any", date.today(), 10**6)
    engine.dispose()
    return data


def old_errors(data: asks.LlmData, min_gpus: int) -> dict[str, list[Error]]:
    """The roofline x pooled efficiency, each GPU held out of the efficiency it is given."""
    singles = [m for m in data.measured if m.phase == "decode" and m.count == 1]
    by_workload: dict[str, set[str]] = defaultdict(set)
    for m in singles:
        by_workload[m.workload].add(m.gpu)
    eligible = {w for w, gpus in by_workload.items() if len(gpus) >= min_gpus}
    gpus = {g.slug: g for g in data.gpus}
    out: dict[str, list[Error]] = defaultdict(list)
    for slug in sorted({m.gpu for m in singles if m.workload in eligible}):
        rest = replace(data, measured=[m for m in data.measured if m.gpu != slug])
        eff = asks.learn(rest, "decode").efficiency
        gpu = gpus[slug]
        for m in singles:
            if m.gpu != slug or m.workload not in eligible:
                continue
            spec = llm.models()[m.model]
            quant = memory.find_quantization(m.quant, list(llm.quantizations()))
            assert quant is not None
            roof = llm_fit.roofline_tokens_per_s(
                spec,
                quant,
                "decode",
                m.tokens / 2,
                1,
                gpu.bandwidth_gbs,
                asks._peak(gpu, quant),
            )
            value = eff.value * roof
            low, high = value * math.exp(-eff.log_band), value * math.exp(eff.log_band)
            measured = m.value.median
            out[m.workload].append((value / measured - 1, low <= measured <= high))
    return out


def new_errors(url: str, workloads: set[str], min_gpus: int) -> dict[str, list[Error]]:
    """The throughput model refitted without each GPU (gpu-advisor evaluate's predictions)."""
    engine = create_engine(url)
    with Session(engine) as session:
        inputs = load_inputs(session)
    engine.dispose()
    held = ev.leave_one_gpu_out(inputs.observations, accuracy._trainer(inputs), min_gpus)
    out: dict[str, list[Error]] = defaultdict(list)
    for h in held:
        if h.workload in workloads:
            out[h.workload].append((h.value / h.measured - 1, h.covered))
    return out


def summary(errors: list[Error]) -> str:
    if not errors:
        return f"{'-':>6} {'-':>6} {'-':>6}"
    ape = sorted(abs(e) for e, _ in errors)
    p90 = ape[min(len(ape) - 1, math.ceil(0.9 * len(ape)) - 1)]
    cover = sum(c for _, c in errors) / len(errors)
    return f"{100 * statistics.median(ape):5.1f}% {100 * p90:5.1f}% {100 * cover:5.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--min-gpus", type=int, default=6)
    args = parser.parse_args()
    start = time.perf_counter()
    url, tmp = database(args.database_url)
    data = llm_data(url)
    old = old_errors(data, args.min_gpus)
    precision = {m.workload: m.precision for m in data.measured}
    keys = {model_key(w, precision[w]): w for w in old}
    new_by_key = new_errors(url, set(keys), args.min_gpus)
    new = {keys[k]: v for k, v in new_by_key.items()}
    if tmp is not None:
        tmp.cleanup()
    print(
        f"model= decode asks, leave-one-GPU-out, {len(old)} workloads with "
        f"{args.min_gpus}+ GPUs, {time.perf_counter() - start:.0f} s"
    )
    print(
        f"{'workload':34} {'gpus':>4}  {'old: MdAPE':>12} {'p90':>6} {'cover':>6}  "
        f"{'new: MdAPE':>12} {'p90':>6} {'cover':>6}"
    )
    for w in sorted(old):
        print(f"{w:34} {len(old[w]):4}  {summary(old[w]):>26}  {summary(new.get(w, [])):>26}")
    everything_old = [e for v in old.values() for e in v]
    everything_new = [e for v in new.values() for e in v]
    print(
        f"{'all held-out GPUs':34} {len(everything_old):4}  {summary(everything_old):>26}  "
        f"{summary(everything_new):>26}"
    )


if __name__ == "__main__":
    main()
