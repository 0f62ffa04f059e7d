"""Every GPU's configurations that fit an ask (kept per ask shape), ranked, with copies and
larger counts.
"""

import math
from collections.abc import Callable, Hashable
from dataclasses import replace

from service.domain import llm_fit
from service.domain.availability import most_on_one_job
from service.domain.recommend import narrowed, widened
from service.read_model.llm._data import MAX_KEPT_OPTIONS, LlmData, LlmOption, Pool, Priced
from service.read_model.llm._throughput import (
    MOVED,
    _estimate,
    _measured_band,
    _measured_for,
    _moved_measurement,
    _parallel_scaling,
    _reference_estimate,
    _reference_source,
    _transfer,
    held_to_decode_ceiling,
    held_to_training_envelope,
    learn,
    redequantized,
    runs_format,
    with_dequantization,
)
from service.read_model.memo import bounded


def options(
    ask: llm_fit.Ask,
    data: LlmData,
    max_gpus: int,
    framework: str,
    priced: Priced,
    pool: Pool = Pool(),
    whole_units: bool = False,
) -> list[LlmOption]:
    """Every GPU's (of `pool`) fewest-GPU configuration that fits `ask` (unranked), counted in
    whole units of what is sold (8 B200s on a baseboard) when bought (`whole_units`: a
    recommendation and its hints), else from one GPU (a ranking says what one does, as
    rented). What is learned from measurements uses every GPU, whatever the pool.

    Computed once per ask shape and data (kept in `data.kept_options`): the memory fit and
    headroom of every GPU are most of an ask's time (about 10 ms of 11 for an 8B inference ask,
    in process), and asks that differ only in budget, limit, cost settings or sort share
    them."""
    key = _options_key(data, ask, max_gpus, framework, priced, pool, whole_units)
    found = bounded(
        data.kept_options,
        MAX_KEPT_OPTIONS,
        key,
        lambda: tuple(_options(ask, data, max_gpus, framework, priced, pool, whole_units)),
    )
    return list(found)


def ranked_options(
    ask: llm_fit.Ask, data: LlmData, max_gpus: int, framework: str, pool: Pool
) -> list[LlmOption]:
    """ranked(options(...)) of every GPU, priced or not (/rankings), kept alike."""
    key = ("ranked", *_options_key(data, ask, max_gpus, framework, "any", pool, False))
    found = bounded(
        data.kept_options,
        MAX_KEPT_OPTIONS,
        key,
        lambda: tuple(ranked(options(ask, data, max_gpus, framework, "any", pool))),
    )
    return list(found)


def _options_key(data: LlmData, *arguments: Hashable) -> tuple[Hashable, ...]:
    """What options' answer depends on within one LlmData: its arguments and the decode
    reference the ask carries (its workload and context)."""
    reference = data.decode_reference
    return (
        *arguments,
        None if reference is None else (reference.workload, reference.mean_context),
    )


def _options(
    ask: llm_fit.Ask,
    data: LlmData,
    max_gpus: int,
    framework: str,
    priced: Priced,
    pool: Pool,
    whole_units: bool,
) -> list[LlmOption]:
    learned = learn(data, ask.phase)
    measured = _measured_for(ask, data)
    out: dict[tuple[str, int], LlmOption] = {}
    for gpu in data.gpus:
        if not gpu.priced(priced) or not pool.admits(gpu):
            continue
        if not runs_format(gpu, ask):
            continue
        # a complete computer holds the model alone; copies of it serve independently
        # (with_replicas)
        unit = gpu.unit_gpus if whole_units else 1  # bought: whole units of what is sold
        count = llm_fit.gpus_needed(
            ask, gpu.memory_gb, most_on_one_job(gpu.sold_as, max_gpus), unit
        )
        if count is None:
            continue
        m = measured.get((gpu.slug, count))
        if m is not None:
            low, high = _measured_band(m, data.decode_reference)
            value, basis, kind, n = m.value.median, "measured", "measured", m.value.n
            speedup, scaling_basis = 1.0, "measured" if count > 1 else "single"
            width = 0.0
            moved = _moved_measurement(ask, gpu, m, (low, high), data.decode_move_half_width)
            if moved is not None:
                value, low, high = moved
                basis, kind = "estimated", MOVED
        else:
            value, low, high, n, speedup, scaling_basis, kind, width = _estimate(
                ask, gpu, count, learned, data, framework
            )
            basis = "estimated"
        held = None
        if basis == "estimated":
            value, low, high = held_to_decode_ceiling(ask, gpu, count, (value, low, high), data)
            (value, low, high), held = held_to_training_envelope(
                ask, gpu, speedup, (value, low, high), data
            )
            value, low, high = with_dequantization(ask, gpu, count, speedup, (value, low, high))
        if not (math.isfinite(value) and value > 0):
            continue
        reference = _reference_estimate(kind, data, gpu.slug)  # None for a measured value
        out[(gpu.slug, count)] = LlmOption(
            gpu,
            count,
            ask.breakdown(count),
            llm_fit.headroom(ask, gpu.memory_gb, count),
            value,
            low,
            high,
            basis,
            kind,
            n,
            speedup,
            scaling_basis,
            m.workload
            if m
            else _reference_source(
                reference,
                _transfer(data, ask) if kind == "workload-scaled" else None,
                data.decode_reference if kind == "workload-scaled" else None,
            ),
            stack_measured=reference is None or reference[1].stack_measured,
            precision="" if reference is None else reference[1].precision,
            scaling_width=width,
            held_to=held,
        )
    return list(out.values())


def ranked(
    found: list[LlmOption], box: Callable[[LlmOption], float | None] | None = None
) -> list[LlmOption]:
    """`found` in llm_fit.rank's order (throughput; fewer GPUs and headroom inside tied estimates),
    each priced at its cards plus `box` (the box several cards need; None: the cards alone)."""
    by_key = {(o.gpu.slug, o.count): o for o in found}
    options = [o.as_option(box(o) if box else 0.0) for o in found]
    return [by_key[(o.slug, o.count)] for o in llm_fit.rank(options)]


def with_replicas(fitting: list[LlmOption], max_gpus: int) -> list[LlmOption]:
    """`fitting` and, for each configuration of k GPUs, r = 2 .. max_gpus // k independent
    copies of it (k x r GPUs): r x one copy's tokens/s and band, each copy serving its own
    requests or running its own experiment (nothing is shared between copies, so nothing is
    lost to communication)."""
    out = list(fitting)
    for o in fitting:
        for r in range(2, max_gpus // o.count + 1):
            out.append(
                replace(
                    o,
                    count=o.count * r,
                    throughput=o.throughput * r,
                    low=o.low * r,
                    high=o.high * r,
                    speedup=o.speedup * r,
                    scaling_basis=f"independent:{r}x{o.count}",
                    replicas=r,
                )
            )
    return out


def with_more_gpus(
    ask: llm_fit.Ask, fitting: list[LlmOption], data: LlmData, framework: str, max_gpus: int
) -> list[LlmOption]:
    """`fitting` and, for a training ask, each estimated card configuration of k GPUs on
    k + 1 .. max_gpus of them, sharded data parallel at the framework's profile (what a lab
    spends a larger budget on: 8 x H100 PCIe for LoRA on a 70B, not only the fewest cards
    that hold it). Counts that add no speed are left out; the memory and headroom are those
    of the larger count. A complete computer (a Mac Studio, a DGX Spark) runs a job alone: two
    of them are two machines on a network, not one box of GPUs (most_on_one_job)."""
    if ask.phase != "train":
        return fitting
    out = list(fitting)
    for o in fitting:
        gpu = o.gpu
        if o.basis != "estimated" or o.replicas > 1 or gpu.unit_gpus > 1 or not o.speedup > 0:
            continue
        last = o.speedup
        for n in range(o.count + 1, most_on_one_job(gpu.sold_as, max_gpus) + 1):
            s = _parallel_scaling(data, framework, gpu, n)
            if not s.speedup > last:
                continue
            per_gpu = o.throughput / o.speedup
            gain = s.speedup / o.speedup * redequantized(ask, gpu, per_gpu, o.count, n)
            last = s.speedup
            value = o.throughput * gain
            one_low, one_high = narrowed(o.throughput, o.low, o.high, o.scaling_width)
            low, high = widened(value, one_low * gain, one_high * gain, s.log_half_width)
            out.append(
                replace(
                    o,
                    count=n,
                    breakdown=ask.breakdown(n),
                    headroom=llm_fit.headroom(ask, gpu.memory_gb, n),
                    throughput=value,
                    low=low,
                    high=high,
                    speedup=s.speedup,
                    scaling_basis=s.basis,
                    scaling_width=s.log_half_width,
                )
            )
    return out
