"""The fitted model: a measured median where there is one, else an estimate held to the
ceilings, with its band.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from service.domain.throughput_model._bands import (
    _relative_sigma,
    conformal_quantile,
)
from service.domain.throughput_model._borrowing import (
    _borrowed,
    _per_flop,
    _per_flop_errors,
    _twin,
)
from service.domain.throughput_model._ceilings import (
    binding_ceiling,
    borrowed_envelope,
    physics_ceiling,
)
from service.domain.throughput_model._constants import (
    DEFAULT_RELATIVE_NOISE,
    MAX_LOG_HALF_WIDTH,
    NOMINAL_COVERAGE,
    _z,
)
from service.domain.throughput_model._efficiency import Efficiencies
from service.domain.throughput_model._specs import (
    GpuSpec,
    Observation,
    Prediction,
    WorkloadFit,
    WorkloadSpec,
)


@dataclass
class FittedModel:
    gpus: Mapping[str, GpuSpec]
    workloads: Mapping[str, WorkloadSpec]
    observations: Mapping[tuple[str, str], Observation]
    fits: dict[str, WorkloadFit]
    efficiency: Efficiencies
    noise: dict[str, float]  # per workload: relative sigma of results (pooled)
    coverage: float = NOMINAL_COVERAGE
    # memory-bound or not -> log(predicted / measured) of measured workloads of that kind
    # predicted as if nothing were measured on them (borrow_errors): the band of a workload
    # that borrows its work per FLOP
    borrowing: Mapping[bool, tuple[float, ...]] = field(default_factory=dict)
    # workload -> the largest share of its physics ceiling any measured GPU reached on it
    # (measured_envelope): no estimate claims more of its own
    envelope: Mapping[str, float] = field(default_factory=dict)
    # workload -> (the framework most of its GPUs were measured with, the relative sigma of
    # GPUs measured with several): what a value measured with others only leaves open
    # (framework_noise)
    framework_noise: Mapping[str, tuple[str, float]] = field(default_factory=dict)

    def predict(self, gpu: str, workload: str) -> Prediction | None:
        """Measured median where measured, else the model; None without a basis."""
        spec, wl = self.gpus.get(gpu), self.workloads.get(workload)
        if spec is None or wl is None:
            return None
        z = _z(self.coverage)
        obs = self.observations.get((gpu, workload))
        if obs is not None and obs.per_gpu_of == 1:
            rel = _relative_sigma(obs)
            half = (
                self.single_result_half_width(workload)
                if rel is None
                else min(max(z * rel, 1e-6), MAX_LOG_HALF_WIDTH)
            )
            other = self.framework_noise.get(workload)
            if other is not None and obs.frameworks and other[0] not in obs.frameworks:
                half = max(half, min(z * other[1], MAX_LOG_HALF_WIDTH))
            return Prediction(
                gpu,
                workload,
                obs.median,
                obs.median * math.exp(-half),
                obs.median * math.exp(half),
                "measured",
                "measured",
                obs.n,
                self.coverage,
            )
        fit = self.fits.get(workload)
        if fit is None:
            return None
        value = _throughput(fit, spec, wl, self.efficiency)
        if not (math.isfinite(value) and value > 0):
            return None
        ceiling = physics_ceiling(spec, wl)
        half = max(fit.half_width, z * self.noise.get(workload, DEFAULT_RELATIVE_NOISE))
        kind = wl.efficiency_kind
        stack_measured = self.efficiency.stack_measured(spec.stack, kind)
        if not stack_measured:
            half = math.hypot(half, self.efficiency.unmeasured_stack_half_width(kind, z))
        half = min(half, MAX_LOG_HALF_WIDTH) if math.isfinite(half) else MAX_LOG_HALF_WIDTH
        half = max(half, 1e-6)
        low, high = value * math.exp(-half), value * math.exp(half)
        if not (math.isfinite(low) and math.isfinite(high)):
            return None
        reached = self.envelope.get(workload, math.inf) * binding_ceiling(spec, wl)
        if value > reached:  # no more of its ceiling than any measured GPU reached
            value, low, high = reached, reached * math.exp(-half), reached * math.exp(half)
        if value > ceiling:  # the band keeps its width, below the ceiling: never zero-width
            value, low, high = ceiling, ceiling * math.exp(-2 * half), ceiling
        high = min(high, ceiling)
        return Prediction(
            gpu,
            workload,
            value,
            low,
            high,
            "estimated",
            fit.method,
            fit.n_gpus,
            self.coverage,
            stack_measured,
        )

    def single_result_half_width(self, workload: str) -> float:
        """Log half-width of the band of a result measured once (no spread of its own): the
        workload's pooled run-to-run noise at the nominal coverage, never zero."""
        rel = self.noise.get(workload, DEFAULT_RELATIVE_NOISE)
        return min(max(_z(self.coverage) * rel, 1e-6), MAX_LOG_HALF_WIDTH)

    def with_workload(self, wl: WorkloadSpec) -> FittedModel:
        """This model, also covering `wl` (a workload it was not fitted with, nothing measured
        on it): borrowed from the nearest fitted workloads of its kind, as in `fit`."""
        if wl.slug in self.workloads:
            return self
        wls = {**self.workloads, wl.slug: wl}
        fits = dict(self.fits)
        twin = _twin(fits, wls, wl)
        split = _per_flop(fits, wls, wl)
        if twin is not None:
            fits[wl.slug] = _borrowed(twin, wl.slug, twin.half_width)
        elif split is not None:
            loo = _per_flop_errors(fits, wls, wl, self.borrowing)
            q = conformal_quantile(loo, self.coverage) if loo else math.nan
            if not math.isfinite(q):
                q = _z(self.coverage) * DEFAULT_RELATIVE_NOISE * 3
            fits[wl.slug] = WorkloadFit(wl.slug, *split, "borrowed", 0, q, loo)
        envelope = dict(self.envelope)
        if wl.slug in fits and (share := borrowed_envelope(self.envelope, fits, wls, wl)):
            envelope[wl.slug] = share
        noise = dict(self.noise)
        noise.setdefault(
            wl.slug, float(np.median(list(noise.values()))) if noise else DEFAULT_RELATIVE_NOISE
        )
        return FittedModel(
            self.gpus,
            wls,
            self.observations,
            fits,
            self.efficiency,
            noise,
            self.coverage,
            self.borrowing,
            envelope,
            self.framework_noise,
        )

    def predict_all(self) -> dict[tuple[str, str], Prediction]:
        out = {}
        for w in self.workloads:
            for g in self.gpus:
                p = self.predict(g, w)
                if p is not None:
                    out[(g, w)] = p
        return out


def _throughput(
    fit: WorkloadFit, spec: GpuSpec, wl: WorkloadSpec, eff: Efficiencies, own: bool = True
) -> float:
    t = fit.time(spec.rates_for(wl))
    multiplier = eff.log_multiplier(spec, wl.efficiency_kind, own, wl.slug)
    return math.exp(multiplier) / t if t > 0 else math.nan
