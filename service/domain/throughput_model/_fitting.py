"""Fitting the model: work per workload, efficiencies and leave-one-out errors.

Design decisions (figures on the shipped corpus where measured):

- Fit. ``work_w`` is fitted per workload by non-negative least squares on errors in log space,
  solved by iteratively reweighted NNLS: each pass minimises sum ((p_new - t) / p_old)^2 with
  p_old the previous prediction (the first pass uses the measured time), i.e. relative errors,
  which equal log errors to first order; the pass with the lowest sum of squared log errors is
  kept. Gauss-Newton on log t would need a bounded step; IRLS keeps every pass a plain NNLS.
  With few measured GPUs a workload borrows the shape (work split) of the most similar measured
  workloads and fits only a scale; with enough GPUs both that and the free fit are tried and the
  one with the lower leave-one-out log error is kept (a choice made by the data).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from service.domain.throughput_model._bands import (
    _pooled_noise,
    conformal_quantile,
    framework_noise,
)
from service.domain.throughput_model._borrowing import (
    _borrowed,
    _per_flop,
    _per_flop_errors,
    _shape,
    _twin,
    borrow_errors,
    prior_shape,
)
from service.domain.throughput_model._ceilings import borrowed_envelope, measured_envelope
from service.domain.throughput_model._constants import (
    BACKFIT_ROUNDS,
    DEFAULT_RELATIVE_NOISE,
    MIN_CONFORMAL,
    MIN_NNLS_GPUS,
    NOMINAL_COVERAGE,
    _z,
)
from service.domain.throughput_model._efficiency import Efficiencies, pool_efficiencies
from service.domain.throughput_model._model import FittedModel
from service.domain.throughput_model._nnls import _design, fit_work_log
from service.domain.throughput_model._specs import (
    GpuSpec,
    Observation,
    WorkloadFit,
    WorkloadSpec,
    _split,
    _usable,
)


def _fit_one(
    design: np.ndarray, times: np.ndarray, shape: np.ndarray | None, method: str
) -> np.ndarray | None:
    if method == "nnls":
        return fit_work_log(design, times)
    if shape is None:
        return None
    base = design @ shape
    if not (base > 0).all():
        return None
    return shape * math.exp(float(np.mean(np.log(times / base))))


def fit(
    gpus: Sequence[GpuSpec],
    workloads: Sequence[WorkloadSpec],
    observations: Iterable[Observation],
    coverage: float = NOMINAL_COVERAGE,
) -> FittedModel:
    """Fit work per workload, efficiencies and conformal bands from measured medians."""
    specs = {g.slug: g for g in gpus}
    wls = {w.slug: w for w in workloads}
    obs = {
        (o.gpu, o.workload): o
        for o in observations
        if o.gpu in specs and o.workload in wls and _usable(o)
    }
    by_w: dict[str, list[Observation]] = {}
    for o in obs.values():
        by_w.setdefault(o.workload, []).append(o)
    noise = _pooled_noise(by_w, wls)

    eff = Efficiencies({}, {}, {})
    fits: dict[str, WorkloadFit] = {}
    for _round in range(BACKFIT_ROUNDS):
        fits = _fit_workloads(specs, wls, by_w, eff, fits, with_loo=False)
        residuals = {}
        for w, rows in by_w.items():
            f = fits.get(w)
            if f is None or f.method == "borrowed":
                continue
            for o in rows:
                t = f.time(specs[o.gpu].rates_for(wls[w]))
                if math.isfinite(t) and t > 0:
                    residuals[(o.gpu, w)] = math.log(o.median * t)
        eff = pool_efficiencies(residuals, specs, {w: wl.efficiency_kind for w, wl in wls.items()})
    fits = _fit_workloads(specs, wls, by_w, eff, fits, with_loo=True)
    borrowing = borrow_errors(specs, wls, by_w, eff, fits)
    for w, f in list(fits.items()):
        if f.method == "borrowed" and _twin(fits, wls, wls[w]) is None:
            fits[w] = replace(f, loo_log_errors=_per_flop_errors(fits, wls, wls[w], borrowing))
    z = _z(coverage)
    # Split-conformal half-widths from the leave-one-out errors, pooled where few.
    for w, f in list(fits.items()):
        errors: Sequence[float] = f.loo_log_errors
        if len(errors) < MIN_CONFORMAL:
            errors = [  # borrowed fits hold others' errors, or borrowing's: not these
                e
                for other, g in fits.items()
                if wls[other].memory_bound == wls[w].memory_bound and g.method != "borrowed"
                for e in g.loo_log_errors
            ]
        q = conformal_quantile(errors, coverage) if errors else math.nan
        if not math.isfinite(q):
            q = z * noise.get(w, DEFAULT_RELATIVE_NOISE) * 3  # no errors anywhere: wide
        fits[w] = WorkloadFit(
            f.workload, f.work, f.overhead_s, f.method, f.n_gpus, q, f.loo_log_errors
        )
    measured = measured_envelope(specs, wls, obs.values())
    envelope = dict(measured)
    for w, f in fits.items():
        if f.method == "borrowed" and (share := borrowed_envelope(measured, fits, wls, wls[w])):
            envelope[w] = share
    return FittedModel(
        specs, wls, obs, fits, eff, noise, coverage, borrowing, envelope, framework_noise(by_w)
    )


def _fit_workloads(
    specs: Mapping[str, GpuSpec],
    wls: Mapping[str, WorkloadSpec],
    by_w: Mapping[str, list[Observation]],
    eff: Efficiencies,
    previous: Mapping[str, WorkloadFit],
    with_loo: bool,
) -> dict[str, WorkloadFit]:
    fits: dict[str, WorkloadFit] = {}
    # Free fits first, so that shapes can be borrowed from them.
    order = sorted(wls, key=lambda w: -len(by_w.get(w, [])))
    for w in order:
        rows = by_w.get(w, [])
        if not rows:
            continue
        wl = wls[w]
        rates = np.array([specs[o.gpu].rates_for(wl) for o in rows])
        design = _design(rates)
        # Measured time, adjusted by each GPU's efficiency: model time = measured x e_g.
        kind = wl.efficiency_kind
        mult = np.array(
            [math.exp(eff.log_multiplier(specs[o.gpu], kind, workload=w)) for o in rows]
        )
        times = mult / np.array([o.median for o in rows])
        shape_source = {k: v for k, v in {**previous, **fits}.items() if k != w}
        shape = _shape(shape_source, wls, wl, per_flop=False)
        if shape is None and len(rows) < MIN_NNLS_GPUS:
            shape = prior_shape(wl)
        methods = ["shape-scaled"] if shape is not None else []
        if len(rows) >= MIN_NNLS_GPUS or shape is None:
            methods.append("nnls")
        best: tuple[float, str, np.ndarray, tuple[float, ...]] | None = None
        for method in methods:
            try:
                with np.errstate(all="ignore"):
                    x = _fit_one(design, times, shape, method)
            except (np.linalg.LinAlgError, ValueError, FloatingPointError):
                x = None
            if x is None or not np.isfinite(x).all():
                continue
            loo: tuple[float, ...] = ()
            score = 0.0
            if with_loo or len(methods) > 1:
                loo = _loo_errors(rows, specs, wl, eff, shape, method)
                score = float(np.mean(np.square(loo))) if loo else math.inf
            if best is None or score < best[0]:
                best = (score, method, x, loo)
        if best is None:
            continue
        _, method, x, loo = best
        fits[w] = WorkloadFit(
            w,
            *_split(x),
            method,
            len(rows),
            math.nan,
            loo,
        )
    # Workloads nothing is measured on: pooled work per FLOP of the nearest measured ones.
    for w, wl in wls.items():
        if w in fits:
            continue
        twin = _twin(fits, wls, wl)
        if twin is not None:
            fits[w] = _borrowed(twin, w, math.nan)
            continue
        split = _per_flop(fits, wls, wl)
        if split is not None:
            loo = _per_flop_errors(fits, wls, wl, {})
            fits[w] = WorkloadFit(w, *split, "borrowed", 0, math.nan, loo)
    return fits


def _loo_errors(
    rows: Sequence[Observation],
    specs: Mapping[str, GpuSpec],
    wl: WorkloadSpec,
    eff: Efficiencies,
    shape: np.ndarray | None,
    method: str,
) -> tuple[float, ...]:
    """log(predicted / measured) for each GPU, predicted from a fit on the others, as for a
    GPU without data of its own (stack and architecture efficiency pooled from the other GPUs:
    Efficiencies.held_out_log_multiplier)."""
    if len(rows) < 2:
        return ()
    rates = np.array([specs[o.gpu].rates_for(wl) for o in rows])
    design = _design(rates)
    kind, w = wl.efficiency_kind, wl.slug
    mult = np.array([math.exp(eff.log_multiplier(specs[o.gpu], kind, workload=w)) for o in rows])
    cold = np.array([math.exp(eff.held_out_log_multiplier(specs[o.gpu], kind, w)) for o in rows])
    measured = np.array([o.median for o in rows])
    times = mult / measured
    out = []
    for i in range(len(rows)):
        keep = np.arange(len(rows)) != i
        try:
            with np.errstate(all="ignore"):
                x = _fit_one(design[keep], times[keep], shape, method)
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            x = None
        if x is None or not np.isfinite(x).all():
            continue
        t = float(design[i] @ x)
        if t <= 0:
            out.append(math.inf)
            continue
        out.append(math.log(cold[i] / t / measured[i]))
    return tuple(out)
