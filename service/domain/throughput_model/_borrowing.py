"""Work for a workload with few or no measured GPUs, borrowed from the most similar fitted ones.

Design decisions (figures on the shipped corpus where measured):

- Nothing measured for a workload: pooled work per FLOP of the nearest measured workloads of the
  same memory-bound kind (same phase first, then the same unit, then the same precision width,
  then nearest FLOPs per unit in log space). The unit says what a step processes: GPT-2 training
  (tokens/s) borrowing from ResNet-50 and SSD (images/s, nearer in FLOPs per unit) took their
  memory- and batch-heavy split and put an RTX 3090 at 0.86 of a measured RTX 4090, where
  Lambda's token-counting training rows (Transformer-XL, GNMT) measure 0.52-0.54 (held-out
  median MdAPE 10.2% -> 9.9%, p90 22.9% -> 22.8%). Its band is the conformal quantile of how
  far such borrowing misses (`borrow_errors`: each measured workload with FLOPs stated,
  estimated from its nearest others as if nothing were measured on it), per memory-bound
  kind: on the shipped corpus x1.93 either way memory-bound, x2.63 otherwise, mostly one
  factor per workload (offsets -1.5 to +1.3 in log, spread within a workload 0.05-0.3).
- Few data and nothing to borrow from (fewer than ``MIN_NNLS_GPUS`` GPUs, no other workload
  fitted): a stated prior shape, all work on the tensor unit (memory for a memory-bound
  workload), scaled to the data: a spec ratio.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace

import numpy as np

from service.domain.estimate import BYTES_PER_PARAM
from service.domain.throughput_model._constants import (
    NARROW_STEP_PRECISIONS,
    RESOURCES,
    SAME_STEP_PRECISIONS,
    SIMILAR_WORKLOADS,
)
from service.domain.throughput_model._efficiency import Efficiencies
from service.domain.throughput_model._specs import (
    GpuSpec,
    Observation,
    WorkloadFit,
    WorkloadSpec,
    _split,
)


def _width(precision: str) -> float | str:
    """Bytes per parameter (bf16 and fp16 alike); the name itself where the table lacks it."""
    return BYTES_PER_PARAM.get(precision, precision)


def _similar(wl: WorkloadSpec, candidates: Iterable[WorkloadSpec]) -> list[WorkloadSpec]:
    """The nearest workloads of the same memory-bound kind: same phase first (training with
    training, prompt processing with prompt processing: a llama.cpp prefill is not a training
    step), then the same unit (tokens with tokens, images with images), then the same precision
    width (bf16 with fp16), then the nearest FLOPs per unit in log space."""

    def key(c: WorkloadSpec) -> tuple[bool, bool, bool, bool, float]:
        if wl.flops_per_unit and c.flops_per_unit:
            d = abs(math.log(wl.flops_per_unit / c.flops_per_unit))
        else:
            d = math.inf
        return (
            bool(wl.suite) and c.suite != wl.suite,
            c.kind != wl.kind,
            c.unit != wl.unit,
            _width(c.precision) != _width(wl.precision),
            d,
        )

    same_kind = [c for c in candidates if c.memory_bound == wl.memory_bound and c.slug != wl.slug]
    return sorted(same_kind, key=key)[:SIMILAR_WORKLOADS]


def _twin(
    fits: Mapping[str, WorkloadFit], workloads: Mapping[str, WorkloadSpec], wl: WorkloadSpec
) -> WorkloadFit | None:
    """The fit of the same workload at a 16-bit precision, for the other 16-bit one or fp8,
    where one was fitted to data: the same step, whose work terms differ only in the rates they
    run at (NARROW_STEP_PRECISIONS). A workload nothing is measured on borrows it whole (llm-train
    at fp16 had averaged its bf16 fit per FLOP with two other suites' and put the H100 SXM,
    measured at 461,678 tokens/s at bf16, at 185,047; at fp8, borrowed per FLOP, a B200 came
    out at 1,716,104, 2.17 times its bf16 measurement where its fp8 rate is twice its bf16
    one)."""
    if not wl.step or wl.precision not in SAME_STEP_PRECISIONS | NARROW_STEP_PRECISIONS:
        return None
    for slug, f in fits.items():
        c = workloads[slug]
        if (
            c.step == wl.step
            and c.slug != wl.slug
            and c.precision in SAME_STEP_PRECISIONS
            and f.method != "borrowed"
        ):
            return f
    return None


def _borrowed(twin: WorkloadFit, workload: str, half_width: float) -> WorkloadFit:
    """`twin`'s work terms and leave-one-out errors as `workload`'s borrowed fit."""
    return replace(twin, workload=workload, method="borrowed", n_gpus=0, half_width=half_width)


def _shape(
    fits: Mapping[str, WorkloadFit],
    workloads: Mapping[str, WorkloadSpec],
    wl: WorkloadSpec,
    per_flop: bool,
) -> np.ndarray | None:
    """Mean work vector (a term per resource, then the overhead) of similar fitted workloads, each
    normalised to sum 1 (or per FLOP when `per_flop`)."""
    cands = [workloads[s] for s in fits if fits[s].method == "nnls"]
    if per_flop:
        cands = [c for c in cands if c.flops_per_unit]
    sims = _similar(wl, cands)
    if not sims:
        return None
    vecs = []
    for c in sims:
        f = fits[c.slug]
        v = np.array([*f.work, f.overhead_s])
        norm = c.flops_per_unit if per_flop else float(v.sum())
        if norm:
            vecs.append(v / norm)
    return np.mean(vecs, axis=0) if vecs else None


def prior_shape(wl: WorkloadSpec) -> np.ndarray:
    """Stated prior work split (tensor, vector, memory, overhead): all tensor math, or all memory
    traffic for a memory-bound workload. Used only with too few data and nothing to borrow."""
    shape = np.zeros(len(RESOURCES) + 1)
    shape[2 if wl.memory_bound else 0] = 1.0
    return shape


def _per_flop(
    fits: Mapping[str, WorkloadFit], wls: Mapping[str, WorkloadSpec], wl: WorkloadSpec
) -> tuple[tuple[float, float, float, float], float] | None:
    """`wl`'s (work, overhead) borrowed per FLOP from its nearest fitted workloads (_shape);
    None without FLOPs per unit or anything to borrow from."""
    if not wl.flops_per_unit or wl.flops_per_unit <= 0:
        return None
    shape = _shape(fits, wls, wl, per_flop=True)
    return None if shape is None else _split(shape * wl.flops_per_unit)


def _per_flop_errors(
    fits: Mapping[str, WorkloadFit],
    wls: Mapping[str, WorkloadSpec],
    wl: WorkloadSpec,
    borrowing: Mapping[bool, tuple[float, ...]],
) -> tuple[float, ...]:
    """The errors a per-FLOP borrowed band is the conformal quantile of: how far borrowing
    misses for its memory-bound kind (borrow_errors), else (none measured) the leave-one-out
    errors of the workloads it borrows from."""
    free = [wls[k] for k, f in fits.items() if f.method == "nnls"]
    return borrowing.get(wl.memory_bound) or tuple(
        e for s in _similar(wl, free) for e in fits[s.slug].loo_log_errors
    )


def borrow_errors(
    specs: Mapping[str, GpuSpec],
    wls: Mapping[str, WorkloadSpec],
    by_w: Mapping[str, list[Observation]],
    eff: Efficiencies,
    fits: Mapping[str, WorkloadFit],
) -> dict[bool, tuple[float, ...]]:
    """Memory-bound or not -> log(predicted / measured) for every measured GPU of every
    workload of that kind fitted to its own data with FLOPs per unit stated, predicted as a
    workload nothing is measured on would be: the work per FLOP of its nearest other fitted
    workloads (not its own step at another precision; compared as a workload of no suite, as
    a new one is) x its FLOPs, with each GPU's efficiency terms at the phase and no workload
    term. The band of a borrowed workload
    is the conformal quantile of these errors: the leave-one-out errors of the workloads it
    borrows from say how well their own fits place one GPU, not how far another workload's
    split carries, and gave ViT-B/16 training, nothing measured on it, a band of x1.10 either
    way."""
    free = {k: f for k, f in fits.items() if f.method == "nnls"}
    out: dict[bool, list[float]] = {}
    for w in free:
        wl = wls[w]
        others = {k: g for k, g in free.items() if not (wl.step and wls[k].step == wl.step)}
        as_new = replace(wl, suite="", step="")
        split = _per_flop(others, wls, as_new)
        if split is None:
            continue
        borrowed = WorkloadFit(w, *split, "borrowed", 0, math.nan, ())
        for o in by_w.get(w, []):
            spec = specs[o.gpu]
            t = borrowed.time(spec.rates_for(wl))
            multiplier = eff.log_multiplier(spec, as_new.efficiency_kind)
            if t > 0 and math.isfinite(t):
                error = math.log(math.exp(multiplier) / t / o.median)
                out.setdefault(wl.memory_bound, []).append(error)
    return {kind: tuple(errors) for kind, errors in out.items()}
