"""Ranking and recommendation rows of a language-model ask."""

from collections.abc import Sequence
from functools import partial
from typing import Any

from service.domain import llm_fit, memory, tiers
from service.domain.availability import platform_included
from service.domain.prices import age_days, is_stale
from service.domain.recommend import per_dollar_spent
from service.domain.tco import CostSettings, per_watt
from service.domain.vocabulary import PRECISIONS
from service.read_model.costing import (
    Costed,
    cost_key,
    costed,
    per_dollar_key,
    per_watt_key,
    ranked_by_cost,
)
from service.read_model.llm._budget import (
    Limits,
    _affordable,
    _offered,
    _undominated,
    platform_extra,
)
from service.read_model.llm._configurations import ranked, ranked_options
from service.read_model.llm._data import MAX_REFERENCE_GPUS, UNIT, GpuRow, LlmData, LlmOption, Pool
from service.read_model.llm._hints import (
    faster_at_older_price,
    hint,
    older_price,
    other_asks,
    smaller_quant,
)
from service.read_model.llm._prompt import PromptTime, prompt_move, prompt_time
from service.read_model.llm._words import cheaper_tie_words, why
from service.schemas.rankings import PriceInfo, RankingItem, Recommendation


def precision_of(quant: memory.Quantization) -> str:
    """The vocabulary word for a format: its name or an alias, else its compute precision."""
    for name in (quant.name, *quant.aliases):
        if name in PRECISIONS:
            return name
    return quant.compute_precision


def _price_info(gpu: GpuRow, data: LlmData) -> PriceInfo | None:
    """The price a row shows: the usable one, else the newest (stale) one."""
    p = gpu.price or gpu.shown_price
    if p is None:
        return None
    today = data.today
    return PriceInfo(
        usd=p.usd,
        condition=p.condition,
        source=p.source,
        observed_at=p.observed_at,
        age_days=age_days(p, today) if today is not None else None,
        stale=today is not None and is_stale(p, today, data.max_age_days),
    )


def _row_fields(o: LlmOption) -> dict[str, Any]:
    """What a ranking item and a recommendation take alike from an option."""
    return {
        "gpu": o.gpu.slug,
        "name": o.gpu.name,
        "count": o.count,
        "memory_gb": o.gpu.memory_gb,
        "throughput": o.throughput,
        "throughput_low": o.low,
        "throughput_high": o.high,
        "unit": UNIT,
        "basis": o.basis,
        "model": o.model,
        "n": o.n,
        "relative_performance": None,
        "memory_needed_gb": round(o.breakdown.total_gb, 3),
        "headroom_context": o.headroom.max_context,
        "headroom_batch": o.headroom.max_batch,
        "stack": o.gpu.stack,
        "status": o.gpu.status,
        "sold_as": o.gpu.sold_as,
        "unit_gpus": o.gpu.unit_gpus,
        "perf_per_watt": per_watt(o.throughput, o.gpu.tdp_w, o.count),
        "precision": o.precision or None,
    }


def _prompt_fields(prompt: PromptTime | None) -> dict[str, Any]:
    if prompt is None:
        return {}
    return {"prompt_s": prompt.seconds, "prompt_s_low": prompt.low, "prompt_s_high": prompt.high}


def relative_to(
    rows: Sequence[RankingItem | Recommendation],
    ask: llm_fit.Ask,
    data: LlmData,
    framework: str,
    reference: str,
) -> None:
    """Set each row's relative_performance: its tokens/s over the reference GPU's on the same
    ask, at the fewest reference GPUs that hold the model (of any stack, priced or not: the
    same yardstick whatever the filters); left None when no count up to 8 holds it."""
    options_ = ranked_options(ask, data, MAX_REFERENCE_GPUS, framework, Pool())
    base = next((o.throughput for o in options_ if o.gpu.slug == reference), None)
    for row in rows:
        row.relative_performance = row.throughput / base if base else None


def recommendation_rows(
    ask: llm_fit.Ask, data: LlmData, limits: Limits, framework: str, limit: int
) -> tuple[list[Recommendation], str | None]:
    """The configurations within `limits`, by throughput (fewer GPUs and headroom inside tied
    estimates, never above a faster one that costs less) less the dominated ones, or with
    sort=tco by cost per million tokens over the costs' horizon; each row carries its cost of
    ownership and says it in `why`, and the first names the cheapest configuration tied with
    it that costs less by more than tiers.TIE_RATIO (tiers.cheaper_tie)."""
    fitting = _offered(ask, data, limits, framework)
    by_cost = limits.sort == "tco"
    affordable = _affordable(fitting, data, limits)
    if not by_cost:  # by cost of ownership, a dearer, slower card may still own for less
        affordable = _undominated(affordable, data, limits.costs)
    affordable = ranked(affordable, partial(platform_extra, data=data, costs=limits.costs))
    chosen = affordable if by_cost else affordable[:limit]  # by cost: cost them all, then cut
    move = prompt_move(ask, data)
    rows = [  # the faster one a row ranks above may lie past the limit
        _recommendation(
            o,
            ask,
            data,
            limits,
            rank,
            by_cost,
            tiers.faster_ones_below(affordable, rank - 1),
            prompt_time(ask, o, data, move),
        )
        for rank, o in enumerate(chosen, 1)
    ]
    if by_cost:
        rows = ranked_by_cost(rows, limit, "million tokens")
    elif rows:  # as it ranks them: within their bands less the scaling's width, at their cost
        box = partial(platform_extra, data=data, costs=limits.costs)
        priced = [o.as_option(box(o)) for o in affordable]
        tie = tiers.cheaper_tie(priced[0], priced, lambda p: p.price)
        if tie is not None:
            named = affordable[priced.index(tie)]
            rows[0].why += cheaper_tie_words(
                named, affordable[0], tie.price, priced[0].price, ask.phase
            )
    if rows:  # the fastest within the budget, shown or not (sort=tco, limit)
        top = max(o.throughput for o in affordable)
        return rows, faster_at_older_price(ask, data, limits, framework, top)
    return rows, (
        hint(ask, fitting, limits, data)
        + smaller_quant(ask, data, limits, framework)
        + other_asks(ask, data, limits, framework)
        + older_price(ask, data, limits, framework, fitting)
    )


def _costed(o: LlmOption, total: float, data: LlmData, costs: CostSettings) -> Costed:
    """Cost of ownership of `o` bought for `total`: the same costing as fixed workloads."""
    return costed(
        data.ownership,
        UNIT,
        o.gpu.slug,
        total,
        o.count,
        o.gpu.tdp_w,
        o.throughput,
        costs,
        platform_included(o.gpu.sold_as, o.gpu.unit_gpus),
    )


def _recommendation(
    o: LlmOption,
    ask: llm_fit.Ask,
    data: LlmData,
    limits: Limits,
    rank: int,
    by_cost: bool,
    below: Sequence[LlmOption] = (),
    prompt: PromptTime | None = None,
) -> Recommendation:
    price = _price_info(o.gpu, data)
    assert price is not None
    total = price.usd * o.count
    cost = _costed(o, total, data, limits.costs)
    extra = platform_extra(o, data, limits.costs)
    return Recommendation(
        rank=rank,
        unit_price=price,
        total_price_usd=total,
        perf_per_dollar=per_dollar_spent(o.throughput, total, extra),
        total_memory_gb=o.gpu.memory_gb * o.count,
        tdp_w=o.gpu.tdp_w * o.count if o.gpu.tdp_w is not None else None,
        scaling_factor=o.speedup,
        scaling_basis=o.scaling_basis,
        why=" ".join(
            part
            for part in (
                why(o, ask, rank, limits.budget, extra, by_cost, below),
                prompt.words(ask.context) if prompt is not None else "",
                cost.sentence(),
            )
            if part
        ),
        **_row_fields(o),
        **cost.fields(),
        **_prompt_fields(prompt),
    )


def ranking_rows(
    ask: llm_fit.Ask,
    data: LlmData,
    max_gpus: int,
    framework: str,
    sort: str,
    pool: Pool = Pool(),
    costs: CostSettings | None = None,
) -> list[RankingItem]:
    """Every GPU's (of `pool`) fewest-GPU configuration that fits, by throughput, perf per
    dollar, or cost per million tokens (sort=tco); with `costs`, priced rows carry their cost
    of ownership. By throughput is by the value, as a fixed workload's ranking is: the order
    /recommend takes (fewer GPUs, then more headroom first inside overlapping bands) had put
    an H100 SXM (164 tokens/s) twelfth, below an H20 (140), on Qwen3 30B-A3B at 32k tokens,
    and procurement tooling reads a list sorted by performance as sorted by it. Equal values
    keep that order."""
    rows = []
    move = prompt_move(ask, data)
    for o in ranked_options(ask, data, max_gpus, framework, pool):
        total = o.gpu.price.usd * o.count if o.gpu.price else None
        cost = None
        if costs is not None and total is not None:
            cost = _costed(o, total, data, costs)
        rows.append(
            RankingItem(
                rank=0,
                mad=None,
                price=_price_info(o.gpu, data),
                # per USD of the GPUs and the box several need, as /recommend's rows count it
                perf_per_dollar=(
                    per_dollar_spent(o.throughput, total, platform_extra(o, data, costs))
                    if total
                    else None
                ),
                **_row_fields(o),
                **(cost.fields() if cost is not None else {}),
                **_prompt_fields(prompt_time(ask, o, data, move)),
            )
        )
    if sort == "performance":
        rows.sort(key=lambda row: -row.throughput)
    elif sort == "perf_per_dollar":
        rows.sort(key=per_dollar_key)
    elif sort == "perf_per_watt":
        rows.sort(key=per_watt_key)
    elif sort == "tco":
        rows.sort(key=cost_key)
    for rank, row in enumerate(rows, 1):
        row.rank = rank
    return rows
