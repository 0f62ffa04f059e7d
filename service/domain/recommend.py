"""Ranking and recommendation over estimates and prices: pure, no I/O."""

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from service.domain.availability import Availability, purchase_counts
from service.domain.estimate import (
    Estimate,
    counted,
    figure,
    precision_note,
    unmeasured_stack_note,
)
from service.domain.prices import PriceObservation
from service.domain.scaling import Scaling
from service.domain.tco import no_box_phrase
from service.domain.tiers import TIE_RATIO, tiered
from service.domain.vocabulary import Measurement


@dataclass(frozen=True)
class Candidate:
    """One GPU with its single-GPU estimate and current price (None when none is usable:
    unknown, or stale and stale prices not allowed); `shown_price` is the newest whatever its
    age, what an answer shows."""

    slug: str
    name: str
    memory_gb: float
    tdp_w: float | None
    interconnect: str
    estimate: Estimate
    price: PriceObservation | None
    stack: str = "cuda"
    availability: Availability = field(default_factory=Availability)
    shown_price: PriceObservation | None = None


@dataclass(frozen=True)
class Configuration:
    candidate: Candidate
    count: int
    throughput: float
    low: float
    high: float
    speedup: float
    scaling_basis: str  # single | independent | profile:<fw>/<link> | measured
    basis: str  # measured | estimated
    n: int

    @property
    def frameworks(self) -> tuple[str, ...]:
        """Frameworks of the single-GPU results behind a measured single-GPU configuration
        (a multi-GPU measurement is another group of results: none named)."""
        if self.basis == "measured" and self.count == 1:
            return self.candidate.estimate.frameworks
        return ()

    @cached_property
    def total_price(self) -> float:
        """Kept once computed: a budget's scan of the ranked list reads it for every
        configuration, on every request (a snapshot's configurations serve many)."""
        assert self.candidate.price is not None
        return self.candidate.price.usd * self.count

    @cached_property
    def perf_per_dollar(self) -> float:
        return self.throughput / self.total_price


ScalingFn = Callable[[Candidate, int], Scaling]


def configuration(
    cand: Candidate,
    count: int,
    scaling_for: ScalingFn,
    measured_multi: Mapping[tuple[str, int], Measurement],
    use_measured_multi: bool = True,
    result_noise: float = 0.0,
) -> Configuration:
    """`count` x `cand`: the measured value of that many where there is one (and the mode
    uses it), else the single-GPU value x the scaling profile's speedup. A measured value's
    band is its results' spread, never narrower than `result_noise` x the median either way
    (one result has no spread of its own)."""
    single = cand.estimate
    measured = measured_multi.get((cand.slug, count)) if count > 1 else None
    if measured is not None and use_measured_multi:
        low, high = measured_band(measured, result_noise)
        return Configuration(
            cand,
            count,
            measured.median,
            low,
            high,
            measured.median / single.value,
            "measured",
            "measured",
            measured.n,
        )
    s = scaling_for(cand, count)
    # N copies of one measured GPU are measured; N GPUs on one job by a scaling are not
    basis = single.basis if s.basis in ("single", "independent") else "estimated"
    value = single.value * s.speedup
    low, high = widened(value, single.low * s.speedup, single.high * s.speedup, s.log_half_width)
    return Configuration(
        cand,
        count,
        value,
        low,
        high,
        s.speedup,
        s.basis,
        basis,
        single.n,
    )


def widened(value: float, low: float, high: float, log_half_width: float) -> tuple[float, float]:
    """`low`..`high` around `value` with a further independent log half-width added in
    quadrature (a scaling's band on top of one GPU's)."""
    if log_half_width <= 0 or value <= 0 or low <= 0:
        return low, high
    below = math.hypot(math.log(value / low), log_half_width)
    above = math.hypot(math.log(high / value), log_half_width)
    return value * math.exp(-below), value * math.exp(above)


def narrowed(value: float, low: float, high: float, log_half_width: float) -> tuple[float, float]:
    """`widened`'s inverse: `low`..`high` less a log half-width it holds in quadrature."""
    if log_half_width <= 0 or value <= 0 or low <= 0:
        return low, high
    below = math.sqrt(max(math.log(value / low) ** 2 - log_half_width**2, 0.0))
    above = math.sqrt(max(math.log(high / value) ** 2 - log_half_width**2, 0.0))
    return value * math.exp(-below), value * math.exp(above)


def configurations(
    candidates: Iterable[Candidate],
    max_gpus: int,
    scaling_for: ScalingFn,
    measured_multi: Mapping[tuple[str, int], Measurement],
    use_measured_multi: bool = True,
    result_noise: float = 0.0,
    memory_splits: bool = False,
    one_job: bool = False,
    count_allowed: Callable[[int], bool] = lambda _count: True,
) -> list[Configuration]:
    """Every priced (GPU, count) that can be bought (`configuration` of each), best
    throughput first, then cheapest. N GPUs no faster than one (a llama.cpp layer split:
    each token passes the GPUs in turn) are left out, they buy nothing for one job, unless
    `memory_splits`: then they buy the memory to hold a model that one GPU cannot
    (within_budget keeps them only for that). `one_job`: the counts run one job together
    (parallel mode), so a complete computer is offered alone (availability.purchase_counts).
    `count_allowed`: the counts one job can be split over (a model's heads)."""
    every = (
        configuration(cand, count, scaling_for, measured_multi, use_measured_multi, result_noise)
        for cand in candidates
        if cand.price is not None
        for count in purchase_counts(cand.availability, max_gpus, one_job)
        if count_allowed(count)
    )
    configs = [c for c in every if c.count == 1 or c.speedup > 1.0 or memory_splits]
    configs.sort(key=lambda c: (-c.throughput, c.total_price, c.candidate.slug))
    return configs


def measured_band(measured: Measurement, result_noise: float) -> tuple[float, float]:
    """The results' median -+ 1.4826 x MAD, at least -+ `result_noise` x the median."""
    low, high = measured.band()
    spread = result_noise * measured.median
    return max(min(low, measured.median - spread), 0.0), max(high, measured.median + spread)


ExtraFn = Callable[[Configuration], "float | None"]


def no_extra(_config: Configuration) -> float | None:
    return 0.0


def paid_usd(config: Configuration, extra: ExtraFn) -> float:
    """What a budget pays for a configuration: its cards plus the box several of them need
    (`extra`; a count no sourced box holds counts none here: within_budget leaves it out)."""
    return _paid(config, extra(config))


def _paid(config: Configuration, box: float | None) -> float:
    return config.total_price + (box or 0.0)


def within_budget(
    configs: Sequence[Configuration],
    budget: float,
    min_memory_gb: float,
    limit: int,
    extra: ExtraFn = no_extra,
    together_gb: float = 0.0,
    tiers: bool = False,
) -> list[Configuration]:
    """The first `limit` configurations (already ranked) that fit the budget and memory: each
    GPU `min_memory_gb`, and all of them together `together_gb` (a model file split by layers
    over them; N GPUs no faster than one only where N - 1 cannot hold that); the budget pays for
    the GPUs plus `extra` (the bigger box N cards need, >= 0). N cards no sourced box holds
    (`extra` None: 8 x RTX 5090 draw 4,600 W, more than any sourced rig supplies) are not
    offered: counted at $0 of platform they undercut every box that can be priced (the eighth
    card lowered the cost of ownership); a caller who prices the box (`platform_usd`) gets
    them. `tiers`: every configuration that can rank in the first `limit` by
    fewest_gpus_first, the first `limit` in that order and the rest after them, for the caller
    to cut; those after the `limit`th say which faster configuration a row ranks above
    (faster_below) and which cheaper one ties with the first (tiers.cheaper_tie). Scanned down
    to TIE_RATIO^2 below the `limit`th taken: a place among the first `limit` goes to one within
    TIE_RATIO of the fastest unplaced, no slower than the `limit`th, and a tie of the first row
    is within TIE_RATIO of it. The scan had gone on while each next one was within TIE_RATIO
    of the last taken, a chain down most of the list, and ordered all of it: a computed
    ResNet-50 answer took 0.9 ms in process against 0.2 ms before ties were ordered."""
    chosen: list[Configuration] = []
    paid: dict[int, float] = {}  # id(config) -> paid_usd, priced once per configuration
    floor = 0.0  # below this no later configuration can rank in the first `limit` or tie them
    for config in configs:
        if len(chosen) >= limit and (not tiers or config.throughput < floor):
            break
        memory = config.candidate.memory_gb
        if (
            config.total_price > budget
            or memory < min_memory_gb
            or memory * config.count < together_gb
            or (
                config.count > 1
                and config.speedup <= 1.0
                and memory * (config.count - 1) >= together_gb
            )
        ):
            continue  # the extra is never negative: no need to price the box
        box = extra(config)
        if box is None and config.count > 1:
            continue
        cost = _paid(config, box)
        if cost <= budget:
            chosen.append(config)
            paid[id(config)] = cost
            if len(chosen) == limit:  # configs come fastest first
                floor = config.throughput / TIE_RATIO**2
    if not tiers:
        return chosen
    return fewest_gpus_first(chosen, lambda c: paid[id(c)], limit)


def fewest_gpus_first(
    configs: Sequence[Configuration],
    paid: Callable[[Configuration], float],
    places: int | None = None,
) -> list[Configuration]:
    """`configs` (fastest first) with each tier of tied estimates in the order an expert buys
    in when the estimates cannot tell them apart: fewer GPUs (one card is simpler, draws less
    and scales later), then more memory per GPU (memory decides what fits), then throughput,
    but never above a faster configuration of the tier that costs less, in what the budget
    `paid` (tiers.tiered; an LLM ask breaks its ties the same way, by fewer GPUs and more
    headroom). $1,500 had bought 2 x RTX 3080 10 GB (~93,853 tokens/s, likely 72,031-122,285)
    over one RTX 5080 16 GB (~80,981, likely 64,338-101,930). `places`: order only the first
    so many (tiers.tiered)."""
    return tiered(
        configs,
        lambda c: (
            c.count,
            -c.candidate.memory_gb,
            -c.throughput,
            paid(c),
            c.candidate.slug,
        ),
        lambda c: c.candidate.slug,
        paid,
        places,
    )


def ranked_above_because(first: Configuration, faster: Configuration) -> tuple[str, ...]:
    """Why fewest_gpus_first put `first` above `faster`, a faster configuration of its tier:
    "fewer GPUs", "more memory per GPU", each only where it holds."""
    reasons = []
    if first.count < faster.count:
        reasons.append("fewer GPUs")
    if first.candidate.memory_gb > faster.candidate.memory_gb:
        reasons.append("more memory per GPU")
    return tuple(reasons)


def cheapest_fitting(candidates: Iterable[Candidate], min_memory_gb: float) -> Candidate | None:
    """The cheapest priced GPU with enough memory: what a too-small budget would need."""
    priced = [c for c in candidates if c.price is not None and c.memory_gb >= min_memory_gb]
    return min(priced, key=lambda c: (c.price.usd if c.price else 0.0, c.slug), default=None)


def configuration_model(config: Configuration) -> str:
    """The `model` field of a configuration's row: `measured` for a measured value (one GPU,
    or N measured together), `measured-scaled` for one measured GPU times a scaling, else the
    estimate's model."""
    if config.basis == "measured":
        return "measured"
    if config.candidate.estimate.basis == "measured":
        return "measured-scaled"
    return config.candidate.estimate.model


def basis_phrase(config: Configuration, unit: str) -> str:
    """Where the configuration's figure comes from, with its band."""
    likely = f"likely {figure(config.low)}-{figure(config.high)} {unit}"
    if config.basis == "measured":
        with_ = f" ({', '.join(config.frameworks)})" if config.frameworks else ""
        return f"median of {counted(config.n, 'accepted result')}{with_}, {likely}"
    if config.candidate.estimate.basis == "measured":  # one GPU measured, N by a scaling
        one = counted(config.n, "accepted result")
        return f"one GPU measured (median of {one}), {config.count} by the scaling, {likely}"
    model = config.candidate.estimate.model
    band = f"{config.candidate.estimate.band:.0%} band"
    if not config.candidate.estimate.stack_measured:
        band += "; " + unmeasured_stack_note(config.candidate.stack)
    if model in ("nnls", "fit"):
        return f"estimated by a model fitted on {config.n} measured GPUs, {likely} ({band})"
    if model in ("shape-scaled", "spec-ratio"):
        return f"estimated from specs relative to {config.n} measured GPU(s), {likely} ({band})"
    if model == "borrowed":
        return f"estimated from similar measured workloads, none on this one, {likely} ({band})"
    return f"estimated from specs alone, no results yet, {likely}"


def _platform_phrase(config: Configuration, extra: float | None) -> str:
    if config.count == 1:
        return ""
    if extra is None:
        no_box = no_box_phrase(config.count, config.candidate.tdp_w)
        return f" ({no_box}: the budget counts the GPUs only)"
    if extra > 0:
        total = config.total_price + extra
        return (
            f" + ${extra:,.0f} for the box of {config.count} GPUs over a one-GPU PC = ${total:,.0f}"
        )
    return ""


def why(
    config: Configuration,
    rank: int,
    budget: float,
    unit: str,
    reference: str,
    extra: float | None = 0.0,
) -> str:
    """One plain-language sentence on what this configuration is and why it ranks here."""
    return why_lead(rank, budget) + why_body(config, unit, reference, extra)


def why_lead(
    rank: int,
    budget: float,
    reasons: tuple[str, ...] = (),
    by_throughput: bool = True,
    outranks: bool | None = None,
) -> str:
    """The part of `why` that depends on the ask's rank and budget; `reasons` this one ranks
    above every faster configuration below it (tiers.common_reasons of ranked_above_because),
    where `outranks` one (default: where reasons are given); `by_throughput` False where the
    tie-break reordered the answer (a row's place is then not its speed's)."""
    outranks = bool(reasons) if outranks is None else outranks
    if rank == 1 and not outranks:
        lead = "Most throughput"
    elif rank == 1 and "fewer GPUs" in reasons:
        lead = "Fewest GPUs among the fastest"
    elif rank == 1 and "more memory per GPU" in reasons:
        lead = "Most memory among the fastest"
    elif rank == 1:
        lead = "Tied with the fastest"
    else:
        lead = f"#{rank}" if outranks or not by_throughput else f"#{rank} by throughput"
    return f"{lead} within ${budget:,.0f}: "


def ranked_above_words(
    first: Configuration, faster: Configuration, reasons: tuple[str, ...], unit: str
) -> str:
    """' Ranked above 2 x GPU, faster at ~X unit/s: their estimates are tied, and this one
    needs fewer GPUs (1 against 2)...' for a configuration a tie-break put above a faster one."""
    parts = []
    if "fewer GPUs" in reasons:
        parts.append(f"needs fewer GPUs ({first.count} against {faster.count})")
    if "more memory per GPU" in reasons:
        parts.append(
            f"has more memory per GPU ({first.candidate.memory_gb:g} GB against "
            f"{faster.candidate.memory_gb:g})"
        )
    return (
        f" Ranked above {_named(faster)}, faster at ~{figure(faster.throughput)} {unit}: their "
        f"estimates are tied, and this one "
        f"{' and '.join(parts) or 'comes first on the tie-break'}."
    )


def cheaper_tie_words(
    tie: Configuration, first: Configuration, paid: float, first_paid: float, unit: str
) -> str:
    """' As fast within the estimates: 2 x GPU (16 GB per GPU against 24), ~X unit, for $Y, Z%
    less.' for the first row of an answer, naming the cheapest configuration tied with it
    that gives more per dollar (tiers.cheaper_tie); `paid` and `first_paid`: what the budget
    pays for each. The memory is said where it differs: the cheaper card may hold less."""
    memory = tie.candidate.memory_gb
    differs = memory != first.candidate.memory_gb
    held = f" ({memory:g} GB per GPU against {first.candidate.memory_gb:g})" if differs else ""
    return (
        f" As fast within the estimates: {_named(tie)}{held}, ~{figure(tie.throughput)} {unit}, "
        f"for ${paid:,.0f}, {1 - paid / first_paid:.0%} less."
    )


def _named(config: Configuration) -> str:
    """'2 x nvidia-rtx-3080', or the slug alone for one GPU."""
    slug = config.candidate.slug
    return slug if config.count == 1 else f"{config.count} x {slug}"


def why_body(config: Configuration, unit: str, reference: str, extra: float | None) -> str:
    """The part of `why` that depends on the configuration alone (kept per snapshot)."""
    cand = config.candidate
    what = f"{_named(config)} ({cand.stack})"
    scaling = scaling_phrase(config)
    source = basis_phrase(config, unit) + precision_note(cand.estimate.precision)
    return (
        f"{what} for ${config.total_price:,.0f}"
        f"{_platform_phrase(config, extra)}{scaling} gives "
        f"~{figure(config.throughput)} {unit} ({source}), "
        f"{figure(per_dollar_spent(config.throughput, config.total_price, extra))} {unit} per "
        f"USD; reference {reference} = 1.0."
    )


def scaling_phrase(config: Configuration) -> str:
    """How `count` GPUs relate to one ('' for one GPU): measured (and whether above linear),
    fitted, an assumed profile, or independent experiments."""
    if config.scaling_basis == "measured":
        scaling = f", {config.speedup:.2f}x one GPU as measured"
        if config.speedup > config.count:
            # Lambda's 8 x RTX 3090 BERT-base fp16: 1,402 against one GPU's 166 (8.45x), where
            # its own 4 x run measured 547 (3.30x); the gate lets per-GPU gains up to 1.2x pass
            scaling += (
                f" (above {config.count}x linear: the {config.count}-GPU and one-GPU medians "
                "are different runs, and their ratio is no scaling to count on)"
            )
    elif config.scaling_basis == "independent":
        scaling = f" running {config.count} independent experiments"
    elif config.scaling_basis.startswith("fitted:"):
        fw_link = config.scaling_basis.removeprefix("fitted:")
        scaling = f", {config.speedup:.2f}x one GPU ({fw_link} scaling fitted to measured results)"
    elif config.scaling_basis.startswith("profile:"):
        fw_link = config.scaling_basis.removeprefix("profile:")
        scaling = f", {config.speedup:.2f}x one GPU ({fw_link} scaling profile, assumed)"
    elif config.count > 1:
        scaling = f", {config.speedup:.2f}x one GPU ({config.scaling_basis})"
    else:
        scaling = ""
    return scaling


def per_dollar_spent(throughput: float, gpus_usd: float, extra: float | None) -> float:
    """Throughput per USD of what the budget pays: the GPUs plus the box N cards need over a
    one-GPU PC (unknown: 0). Per USD of the GPUs alone favoured many cheap cards: 4 x RTX 3080
    read 155 tokens/s per USD on $1,220 of cards, 66 on the $2,840 the budget paid."""
    return throughput / (gpus_usd + (extra or 0.0))
