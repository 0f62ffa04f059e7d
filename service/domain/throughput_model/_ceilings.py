"""What no estimate passes: the physics ceilings and the measured envelope.

Design decisions (figures on the shipped corpus where measured):

- Physics: no estimate passes the GPU's compute ceiling, its fastest unit's spec rate (calibrated
  where measured) / FLOPs per unit, which the gate holds results to as well (plausibility.py),
  nor for a decode workload whose model and format are known its bandwidth ceiling, datasheet
  bandwidth / the layer weights a token reads (`bandwidth_ceiling`); value and band stop
  there, the band keeping its width below it (`physics_ceiling`). Measured decode results reach
  at most 81% of that bandwidth ceiling (RTX 4000 Ada, Llama 3 8B F16 tg512); of 1,859 served
  decode estimates on the shipped corpus 136 bands and 7 values stop at it, and the
  leave-one-GPU-out figures are unchanged (no held-out prediction reached it). A fit is
  of the GPUs measured: the MLPerf Llama-2-70B offline fit puts all its work on memory traffic,
  which put a GTX 1080 Ti at 6.4 times what its arithmetic can do, and the llm.c GPT-2 fit
  V100s at 1.5-1.7 times and an H20 at 1.6 times. Of 7,057 estimates on the shipped corpus 226
  stop at the ceiling; no held-out prediction of a measured GPU did, so the leave-one-out
  figures are unchanged.
- Measured envelope: below the physics, no estimate claims a larger share of its binding
  ceiling (bandwidth for a memory-bound workload with bytes per unit stated, else compute)
  than any GPU measured on the workload reached (`measured_envelope`, with 5+ GPUs measured);
  the value stops there and its band keeps its width around it. The GPT-2 training fit had put
  34 cards at their full compute peak: an H20 at 172,695 tokens/s (all of its 148 dense BF16
  TFLOPS) and a GTX 1080 Ti at 13,232, where the best measured card, the RTX 5090, reaches
  79%; now 136,337 and 10,446. Shares of the other ceiling say nothing (a decode workload's
  cards use a few percent of their compute). On the shipped corpus 342 of 7,920 served values
  stop at it (40 of them on GPT-2 training), and leave-one-GPU-out, same corpus and run: 26 ->
  28 of 47 workloads meeting all targets (`llm-train` MdAPE 11.0% -> 9.0%; Llama-3-70B Q4_K_M
  tg4096 9.9% -> 8.5%, p90 22.7% -> 17.7%), median MdAPE 8.4% either way, p90 21.0% -> 20.9%;
  the held-out GPU-Insights tables state no FLOPs and are unchanged. Pooled per phase over
  every workload instead of per workload: 27 of 47. A workload nothing is measured on takes
  the envelope of where it borrows from (`borrowed_envelope`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from service.domain import plausibility
from service.domain.throughput_model._borrowing import _similar, _twin
from service.domain.throughput_model._constants import MIN_ENVELOPE_GPUS
from service.domain.throughput_model._specs import GpuSpec, Observation, WorkloadFit, WorkloadSpec


def compute_ceiling(spec: GpuSpec, wl: WorkloadSpec) -> float:
    """Units/s the GPU could do if every FLOP of a unit ran at its fastest unit's spec rate
    (calibrated where measured): the physics gate's ceiling for results (plausibility.py),
    which no estimate may pass either; inf where the workload states no FLOPs per unit."""
    if not wl.flops_per_unit or wl.flops_per_unit <= 0:
        return math.inf
    tensor, vector = spec.rates(wl.rate_key)[:2]
    return float(max(tensor, vector)) * 1e12 / wl.flops_per_unit


def bandwidth_ceiling(spec: GpuSpec, wl: WorkloadSpec) -> float:
    """Units/s the GPU could do if it read the least bytes a unit needs at its datasheet
    bandwidth; inf where the workload states none. A fit of decode workloads puts a card with
    little bandwidth where its siblings' efficiency says, which passed it: the DGX Spark's band
    on Llama 3 70B Q4_K_M tg512 reached 8.4 tokens/s on 273 GB/s, where 41 GB of layer weights
    per token allow 6.6."""
    return plausibility.bandwidth_ceiling(spec.bandwidth_gbs, wl.bytes_per_unit)


def binding_ceiling(spec: GpuSpec, wl: WorkloadSpec) -> float:
    """The ceiling of the resource that limits the workload: bandwidth for a memory-bound one
    (inf where it states no bytes per unit), else compute. Measured shares of the other one say
    nothing about how much of it a card can use: a decode workload's measured cards use a few
    percent of their compute, and a card with little compute would use all of it."""
    return bandwidth_ceiling(spec, wl) if wl.memory_bound else compute_ceiling(spec, wl)


def physics_ceiling(spec: GpuSpec, wl: WorkloadSpec) -> float:
    """What no estimate passes: the compute ceiling, and the bandwidth one where stated."""
    return min(compute_ceiling(spec, wl), bandwidth_ceiling(spec, wl))


def measured_envelope(
    specs: Mapping[str, GpuSpec],
    wls: Mapping[str, WorkloadSpec],
    observations: Iterable[Observation],
) -> dict[str, float]:
    """Workload -> the largest share of its binding ceiling (binding_ceiling) that any measured
    GPU reached on it, per-GPU shares of N-GPU systems included (they understate their GPU's
    own), with at least MIN_ENVELOPE_GPUS measured; none where no ceiling is stated. An
    estimate claims no more of its own: the GPT-2 training fit put cards at their full compute
    peak (an H20 at 172,695 tokens/s, all of its 148 dense BF16 TFLOPS; a GTX 1080 Ti at
    13,232), where no measured card passes 79%."""
    shares: dict[str, list[float]] = {}
    for o in observations:
        spec, wl = specs.get(o.gpu), wls.get(o.workload)
        if spec is None or wl is None:
            continue
        ceiling = binding_ceiling(spec, wl)
        if math.isfinite(ceiling) and ceiling > 0 and math.isfinite(o.median):
            shares.setdefault(o.workload, []).append(o.median / ceiling)
    return {w: max(s) for w, s in shares.items() if len(s) >= MIN_ENVELOPE_GPUS}


def borrowed_envelope(
    envelope: Mapping[str, float],
    fits: Mapping[str, WorkloadFit],
    wls: Mapping[str, WorkloadSpec],
    wl: WorkloadSpec,
) -> float | None:
    """The envelope of a workload nothing is measured on, from where it borrows its work: its
    twin's (the same step at another precision, _twin), else the largest of its nearest fitted
    workloads' (_similar, the same memory-bound kind, so the same binding ceiling). Without
    it llm-inference, borrowed, put a DGX Spark at 94% of its bandwidth on Llama 2 7B, where
    no card measured on a decode workload passes 81%; None where none of them has one."""
    twin = _twin(fits, wls, wl)
    if twin is not None:
        return envelope.get(twin.workload)
    free = [wls[k] for k, f in fits.items() if f.method == "nnls"]
    shares = [envelope[s.slug] for s in _similar(wl, free) if s.slug in envelope]
    return max(shares) if shares else None
