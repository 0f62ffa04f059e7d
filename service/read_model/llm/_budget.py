"""What fits within an ask's limits: budget (GPUs plus the box several need), speed, power."""

from dataclasses import dataclass, field, replace

from service.domain import llm_fit
from service.domain.availability import platform_included
from service.domain.prices import PriceObservation
from service.domain.tco import CostSettings, budget_extra_usd
from service.domain.vocabulary import Mode
from service.read_model.costing import fits_power
from service.read_model.llm._configurations import (
    _options_key,
    options,
    with_more_gpus,
    with_replicas,
)
from service.read_model.llm._data import MAX_KEPT_OPTIONS, LlmData, LlmOption, Pool, Priced
from service.read_model.memo import bounded


@dataclass(frozen=True)
class Limits:
    """What a recommendation must stay within besides fitting the model: the budget (GPUs
    plus the box several need), GPU count, a throughput floor, a power cap (GPUs' TDP x count
    plus the costs' `host_power_w`; unknown TDPs are kept, as for fixed workloads) and the GPU
    pool; and how rows are costed and ordered."""

    budget: float
    max_gpus: int
    min_tokens_per_s: float | None = None
    max_power_w: float | None = None
    pool: Pool = field(default_factory=Pool)
    # independent: also r copies of each configuration that fits (serving, or experiments)
    mode: Mode = "parallel"
    # cost of ownership of each row (host power, electricity, horizon, resale, platform)
    costs: CostSettings = field(default_factory=CostSettings)
    sort: str = "performance"  # or tco: cheapest per million tokens over the horizon

    def fast_enough(self, o: LlmOption) -> bool:
        return self.min_tokens_per_s is None or o.throughput >= self.min_tokens_per_s

    def within_power(self, o: LlmOption) -> bool:
        return fits_power(o.gpu.tdp_w, o.count, self.costs, self.max_power_w)


def platform_extra(o: LlmOption, data: LlmData, costs: CostSettings | None) -> float | None:
    """The box `o.count` cards need beyond a one-GPU PC (service/domain/tco.py, Budget);
    0 for one GPU, for whole platforms and complete computers, and when the caller prices the
    platform (`platform_usd`); None where no sourced box holds them (the budget then counts the
    GPUs only, and the why says so)."""
    included = platform_included(o.gpu.sold_as, o.gpu.unit_gpus)
    return budget_extra_usd(data.ownership.platforms, o.count, costs, included, o.gpu.tdp_w)


def _cost(
    o: LlmOption, data: LlmData, costs: CostSettings, unit: PriceObservation | None = None
) -> float:
    """What `o` costs within a budget: its cards (at `unit`, else their current price) plus
    the box several of them need."""
    unit = unit or o.gpu.price
    cards = unit.usd * o.count if unit else 0.0
    return cards + (platform_extra(o, data, costs) or 0.0)


def _undominated(found: list[LlmOption], data: LlmData, costs: CostSettings) -> list[LlmOption]:
    """`found` less the configurations another of them dominates (llm_fit.undominated), each
    priced at what it costs within a budget (its cards plus the box several of them need)."""
    priced = [replace(o.as_option(), price=_cost(o, data, costs)) for o in found]
    kept = {id(p) for p in llm_fit.undominated(priced)}
    return [o for o, p in zip(found, priced, strict=True) if id(p) in kept]


def _affordable(fitting: list[LlmOption], data: LlmData, limits: Limits) -> list[LlmOption]:
    """The priced options within the budget, speed and power limits; N cards that no sourced
    box holds are left out, as for a workload ask (recommend.within_budget), unless the caller
    prices the platform."""
    return [
        o
        for o in fitting
        if o.gpu.price is not None
        and (o.count == 1 or platform_extra(o, data, limits.costs) is not None)
        and _cost(o, data, limits.costs) <= limits.budget
        and limits.fast_enough(o)
        and limits.within_power(o)
    ]


def _offered(
    ask: llm_fit.Ask,
    data: LlmData,
    limits: Limits,
    framework: str,
    priced: Priced = "current",
) -> list[LlmOption]:
    """The configurations of the pool that fit, of GPUs priced `priced` way (those with a
    current price: what /recommend offers), with their copies in independent mode and, for
    training, more GPUs than the fewest that hold the model (with_more_gpus)."""
    fitting = options(ask, data, limits.max_gpus, framework, priced, limits.pool, whole_units=True)
    if limits.mode == "independent":
        return with_replicas(fitting, limits.max_gpus)
    key = ("more", *_options_key(data, ask, limits.max_gpus, framework, priced, limits.pool))
    more = bounded(
        data.kept_options,
        MAX_KEPT_OPTIONS,
        key,
        lambda: tuple(with_more_gpus(ask, fitting, data, framework, limits.max_gpus)),
    )
    return list(more)
