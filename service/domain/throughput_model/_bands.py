"""Band widths: run-to-run and framework noise, and the split-conformal quantile.

Design decisions (figures on the shipped corpus where measured):

- Bands: split-conformal. The 80% band's half-width in log space is the conformal quantile of
  the absolute leave-one-GPU-out log errors of the workload (pooled over workloads of the same
  kind when it has fewer than ``MIN_CONFORMAL`` of its own), never below the measured spread of
  the workload's results; a measured value's band is its own spread or, for a single result,
  the pooled spread of that workload's results: never zero-width. In those leave-one-out
  predictions the held-out GPU gets its stack and architecture terms pooled without its own
  residuals, as a card nobody measured would: kept in, a GPU alone in its group (an M1 Max, an
  Arc B580) was predicted with its own efficiency and its band was too narrow (shipped corpus,
  leave-one-GPU-out: median coverage 79.3% -> 80.0%, three workloads from 60-68% to 73-89%,
  errors unchanged). A GPU whose stack has no data of the workload's phase in any suite (an
  Intel card on training or any other workload without a phase: the shipped corpus has none)
  gets the mean of the measured stacks' terms at that phase (`stack_centre`, one vote per
  stack: stacks are groups drawn from one population, and the best guess for a new group is
  their mean, not CUDA's term; on the shipped corpus -0.19 in log without a phase, where CUDA
  is +0.03 and both ROCm stacks -0.3), and its band widens in quadrature by z x s, s^2 = tau^2
  of the (stack, phase) terms around that mean (s = 0.18 in log without a phase, 0.20 for
  decode, 0.89 for prefill): the leave-one-out errors come from GPUs whose stacks are measured
  and do not hold that uncertainty. A GPU alone in its stack is held out the same way in those
  errors. The prediction says so (`stack_measured`) and a recommendation's why names the
  stack. The term was 0 at first, with s^2 = tau^2 + the mean squared (0.23, 0.23, 0.92):
  measured on GPU-Insights' training tables (bench/heldout.py), the Arc A770's mean log error
  went from -0.51 to -0.25 and the M1 Max's from -0.46 to -0.21, both stacks without a training
  result; held-out median MdAPE 11.9% -> 12.1% known, 10.7% -> 10.5% cold, p90 24.2% ->
  22.5% and 24.5% -> 23.7%, coverage 83.3% -> 87.5%; on the corpus one row moved (Llama-2-7B
  Q4_0 tg128, where the Arc B580 is alone in its stack: p90 125.8% -> 117.5%, coverage 50.0%
  -> 66.7%).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from service.domain.throughput_model._constants import (
    DEFAULT_RELATIVE_NOISE,
    MAD_TO_SIGMA,
    MAX_LOG_HALF_WIDTH,
)
from service.domain.throughput_model._specs import Observation, WorkloadSpec


def _relative_sigma(obs: Observation) -> float | None:
    if obs.n >= 2 and math.isfinite(obs.mad) and obs.mad > 0 and obs.median > 0:
        return min(MAD_TO_SIGMA * obs.mad / obs.median, MAX_LOG_HALF_WIDTH)
    return None


def conformal_quantile(errors: Sequence[float] | np.ndarray, coverage: float) -> float:
    """Split-conformal quantile: the ceil((n + 1) coverage)-th smallest |error| (the largest
    when that exceeds n)."""
    e = np.sort(np.abs(np.asarray(errors, dtype=float)))
    if len(e) == 0:
        return math.nan
    k = math.ceil((len(e) + 1) * coverage)
    return float(e[min(k, len(e)) - 1])


def framework_noise(by_w: Mapping[str, list[Observation]]) -> dict[str, tuple[str, float]]:
    """Per workload whose results come from several frameworks: the one most of its GPUs were
    measured with, and the median relative sigma of the GPUs measured with more than one.

    A value measured only with another framework is not what the workload's other GPUs' values
    mean: on GPT-2 training an RX 7900 XTX was measured once, with an llm.c fork, and answered
    $800 at 70,208 tokens/s +-2% (the run-to-run noise of the PyTorch pairs), where the RTX
    4090 and the A100 PCIe 40GB, measured both ways, are 36% and 26% apart. Such a value's band
    is at least this spread at the nominal coverage."""
    out = {}
    for w, rows in by_w.items():
        known = [o for o in rows if o.frameworks and o.per_gpu_of == 1]
        counts: dict[str, int] = {}
        for o in known:
            for f in o.frameworks:
                counts[f] = counts.get(f, 0) + 1
        mixed = [r for o in known if len(o.frameworks) > 1 and (r := _relative_sigma(o))]
        if len(counts) > 1 and mixed:
            main = min(counts, key=lambda f: (-counts[f], f))
            out[w] = (main, float(np.median(mixed)))
    return out


def _pooled_noise(
    by_w: Mapping[str, list[Observation]], wls: Mapping[str, WorkloadSpec]
) -> dict[str, float]:
    """Median relative sigma of the results of each workload; the median over all workloads
    where a workload has no group with two results; DEFAULT_RELATIVE_NOISE without any."""
    per: dict[str, float] = {}
    everything: list[float] = []
    for w, rows in by_w.items():
        rel = [r for r in (_relative_sigma(o) for o in rows) if r is not None]
        everything += rel
        if rel:
            per[w] = float(np.median(rel))
    fallback = float(np.median(everything)) if everything else DEFAULT_RELATIVE_NOISE
    return {w: per.get(w, fallback) for w in wls}
