"""Leave-one-GPU-out evaluation of a throughput model: pure, model-agnostic.

A *trainer* takes the training observations and returns a *predictor*, (gpu, workload) ->
(value, low, high) or None. Two hold-out modes:

- ``gpu`` (cold GPU): the held-out GPU is removed from every workload, as for a GPU nobody has
  measured at all; one fit per GPU serves every workload it was measured on.
- ``cell``: only the (GPU, workload) result is removed; the GPU's results on other workloads
  stay, so its own efficiency is learned from them (a GPU measured elsewhere).

Per workload with at least ``min_gpus`` measured GPUs: median and 90th percentile absolute
percentage error, the fraction of held-out measurements inside their bands, and Spearman's rank
correlation of predicted against measured perf per dollar over the held-out GPUs with a price
(and of throughput over all of them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from service.domain.throughput_model import Observation

Predictor = Callable[[str, str], "tuple[float, float, float] | None"]
Trainer = Callable[[Sequence[Observation]], Predictor]
Mode = Literal["gpu", "cell"]


@dataclass(frozen=True)
class HeldOut:
    gpu: str
    workload: str
    measured: float
    value: float
    low: float
    high: float

    @property
    def ape(self) -> float:
        return abs(self.value - self.measured) / self.measured

    @property
    def covered(self) -> bool:
        return self.low <= self.measured <= self.high


@dataclass(frozen=True)
class WorkloadAccuracy:
    workload: str
    n_gpus: int  # measured GPUs (held out one at a time)
    n_predicted: int  # of those, how many the model gave a number for
    mdape: float
    p90_ape: float
    coverage: float
    spearman_ppd: float | None  # over held-out GPUs with a price
    n_priced: int
    spearman_throughput: float | None


def rankdata(values: Sequence[float]) -> np.ndarray:
    """Ranks 1..n, ties get their mean rank."""
    a = np.asarray(values, dtype=float)
    order = np.argsort(a, kind="mergesort")
    ranks = np.empty(len(a))
    sorted_a = a[order]
    i = 0
    while i < len(a):
        j = i
        while j + 1 < len(a) and sorted_a[j + 1] == sorted_a[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho (Pearson correlation of ranks); None with fewer than 3 pairs or a
    constant side."""
    if len(x) != len(y) or len(x) < 3:
        return None
    rx, ry = rankdata(x), rankdata(y)
    if float(np.std(rx)) == 0 or float(np.std(ry)) == 0:
        return None
    # Ranks are small rationals: rounding drops the float noise that put one swap in five
    # (exactly 0.9) at 0.8999999999999998, below a >= 0.9 target.
    return round(float(np.corrcoef(rx, ry)[0, 1]), 12)


def eligible_workloads(observations: Iterable[Observation], min_gpus: int) -> dict[str, set[str]]:
    """workload -> measured GPUs, for workloads with at least `min_gpus` of them."""
    by_w: dict[str, set[str]] = {}
    for o in observations:
        by_w.setdefault(o.workload, set()).add(o.gpu)
    return {w: g for w, g in by_w.items() if len(g) >= min_gpus}


def leave_one_gpu_out(
    observations: Sequence[Observation], train: Trainer, min_gpus: int = 5, mode: Mode = "gpu"
) -> list[HeldOut]:
    """Every measured (GPU, workload) of an eligible workload, predicted without it."""
    eligible = eligible_workloads(observations, min_gpus)
    targets = [o for o in observations if o.workload in eligible]
    out: list[HeldOut] = []
    if mode == "gpu":
        for gpu in sorted({o.gpu for o in targets}):
            predict = train([o for o in observations if o.gpu != gpu])
            for o in targets:
                if o.gpu == gpu:
                    out += _held(o, predict)
    else:
        for o in targets:
            predict = train([x for x in observations if x is not o])
            out += _held(o, predict)
    return out


def _held(o: Observation, predict: Predictor) -> list[HeldOut]:
    p = predict(o.gpu, o.workload)
    if p is None:
        return []
    return [HeldOut(o.gpu, o.workload, o.median, *p)]


def summarise(
    held: Sequence[HeldOut],
    observations: Sequence[Observation],
    prices: Mapping[str, float],
    min_gpus: int = 5,
) -> list[WorkloadAccuracy]:
    eligible = eligible_workloads(observations, min_gpus)
    out = []
    for w in sorted(eligible):
        rows = [h for h in held if h.workload == w]
        if not rows:
            out.append(
                WorkloadAccuracy(
                    w, len(eligible[w]), 0, math.nan, math.nan, math.nan, None, 0, None
                )
            )
            continue
        ape = np.array([h.ape for h in rows])
        priced = [h for h in rows if prices.get(h.gpu, 0) > 0]
        rho_ppd = spearman(
            [h.value / prices[h.gpu] for h in priced], [h.measured / prices[h.gpu] for h in priced]
        )
        rho = spearman([h.value for h in rows], [h.measured for h in rows])
        out.append(
            WorkloadAccuracy(
                w,
                len(eligible[w]),
                len(rows),
                float(np.median(ape)),
                float(np.percentile(ape, 90)),
                float(np.mean([h.covered for h in rows])),
                rho_ppd,
                len(priced),
                rho,
            )
        )
    return out


def format_table(rows: Sequence[WorkloadAccuracy], title: str) -> str:
    def f(x: float | None, pct: bool = True) -> str:
        if x is None or not math.isfinite(x):
            return "-"
        return f"{100 * x:.1f}%" if pct else f"{x:.2f}"

    lines = [
        title,
        f"{'workload':28} {'gpus':>4} {'pred':>4} {'MdAPE':>7} {'p90':>7} {'cover':>6} "
        f"{'rho$':>5} {'n$':>3} {'rho':>5}",
    ]
    for r in rows:
        lines.append(
            f"{r.workload:28} {r.n_gpus:4d} {r.n_predicted:4d} {f(r.mdape):>7} {f(r.p90_ape):>7} "
            f"{f(r.coverage):>6} {f(r.spearman_ppd, False):>5} {r.n_priced:3d} "
            f"{f(r.spearman_throughput, False):>5}"
        )
    done = [r for r in rows if r.n_predicted]
    if done:
        lines.append(
            f"{'median over workloads':28} {'':4} {'':4} "
            f"{f(float(np.median([r.mdape for r in done]))):>7} "
            f"{f(float(np.median([r.p90_ape for r in done]))):>7} "
            f"{f(float(np.median([r.coverage for r in done]))):>6}"
        )
    return "\n".join(lines)
