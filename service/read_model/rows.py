"""Ranking rows and recommendation rows: built here, once, from a snapshot.

/rankings, /recommend (JSON and CSV alike) and anything else that lists GPUs for a workload
answer with these rows, so a field means the same in every answer.
"""

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import pairwise
from typing import Any

from service.domain.availability import exclusion
from service.domain.prices import PriceObservation, age_days, is_stale
from service.domain.recommend import (
    Candidate,
    Configuration,
    ExtraFn,
    cheaper_tie_words,
    cheapest_fitting,
    configuration_model,
    paid_usd,
    per_dollar_spent,
    ranked_above_because,
    ranked_above_words,
    why_body,
    why_lead,
    within_budget,
)
from service.domain.tco import CostSettings, affordable_count, budget_extra_usd, per_watt
from service.domain.tiers import cheaper_tie, common_reasons, faster_ones_below, fastest
from service.domain.vocabulary import ConditionChoice, Mode
from service.read_model.costing import (
    cost_key,
    fits_power,
    per_dollar_key,
    per_watt_key,
    ranked_by_cost,
)
from service.read_model.estimates import UNITS_OF
from service.read_model.snapshot import Snapshot
from service.schemas.queries import MAX_GPUS
from service.schemas.rankings import (
    PriceInfo,
    RankingItem,
    RankingSort,
    Recommendation,
    RecommendSort,
)


@dataclass(frozen=True)
class RecommendationAsk:
    """What a recommendation asks: the snapshot it reads (workload, precision, condition,
    allow_stale) and what the rows must meet. Built from /recommend's query (api/asks.py), for
    the API and the web page alike."""

    workload: str | None  # None: the default workload
    precision: str | None  # None: the workload's
    condition: ConditionChoice
    allow_stale: bool
    budget: float
    min_memory_gb: float | None  # None: the workload's
    mode: Mode
    framework: str
    max_gpus: int
    limit: int
    costs: CostSettings | None
    max_power_w: float | None
    sort: RecommendSort
    stack: str | None


def price_info(candidate: Candidate, snapshot: Snapshot) -> PriceInfo | None:
    """The price an answer shows: the usable one, else the newest (stale) one."""
    p = candidate.price or candidate.shown_price
    if p is None:
        return None
    return PriceInfo(
        usd=p.usd,
        condition=p.condition,
        source=p.source,
        observed_at=p.observed_at,
        age_days=age_days(p, snapshot.today),
        stale=is_stale(p, snapshot.today, snapshot.max_price_age_days),
    )


def _availability(c: Candidate) -> dict[str, object]:
    a = c.availability
    return {"stack": c.stack, "status": a.status, "sold_as": a.sold_as, "unit_gpus": a.unit_gpus}


def ranking_rows(
    snapshot: Snapshot,
    min_memory_gb: float,
    sort: RankingSort,
    costs: CostSettings | None = None,
    stack: str | None = None,
) -> list[RankingItem]:
    """Every GPU with at least `min_memory_gb` (on `stack` when given), ranked by `sort` (ties
    by slug); with `costs`, priced rows carry cost of ownership of one GPU (sort=tco: cheapest
    per unit of work). A stale price is shown but gives no perf_per_dollar."""
    rows = []
    for c in snapshot.candidates:
        if c.memory_gb < min_memory_gb or (stack is not None and c.stack != stack):
            continue
        e = c.estimate
        cost_fields, _ = (
            _costs(c, c.price.usd, 1, e.value, snapshot, costs) if c.price else ({}, "")
        )
        rows.append(
            RankingItem(
                rank=0,
                gpu=c.slug,
                name=c.name,
                memory_gb=c.memory_gb,
                throughput=e.value,
                throughput_low=e.low,
                throughput_high=e.high,
                unit=snapshot.workload.unit,
                basis=e.basis,
                model=e.model,
                n=e.n,
                mad=e.mad,
                band=e.band,
                precision=e.precision or None,
                frameworks=list(e.frameworks),
                relative_performance=snapshot.relative(e.value),
                price=price_info(c, snapshot),
                perf_per_dollar=e.value / c.price.usd if c.price else None,
                perf_per_watt=per_watt(e.value, c.tdp_w, 1),
                **_availability(c),
                **cost_fields,
            )
        )
    if sort == "tco":
        rows.sort(key=cost_key)
    elif sort == "performance":
        rows.sort(key=lambda r: (-r.throughput, r.gpu))
    elif sort == "perf_per_watt":
        rows.sort(key=per_watt_key)
    else:
        rows.sort(key=per_dollar_key)
    for rank, row in enumerate(rows, start=1):
        row.rank = rank
    return rows


def recommendation_rows(
    snapshot: Snapshot, ask: RecommendationAsk, min_memory_gb: float, together_gb: float = 0.0
) -> tuple[list[Recommendation], str | None]:
    """The best configurations within the ask's budget (and max_power_w, on its stack when
    given) with `min_memory_gb` per GPU and `together_gb` over a configuration's GPUs, and a
    hint when none fits or when availability or price freshness kept out a GPU faster than the
    fastest answer within the budget. With costs each carries its cost of ownership; sort=tco
    ranks by cost per unit of work."""
    budget, costs, stack, max_power_w = ask.budget, ask.costs, ask.stack, ask.max_power_w
    ranked = snapshot.ranked_configurations(ask.mode, ask.framework, ask.max_gpus)
    if stack is not None:
        ranked = [c for c in ranked if c.candidate.stack == stack]
    if costs is not None and max_power_w is not None:
        ranked = [c for c in ranked if fits_power(c.candidate.tdp_w, c.count, costs, max_power_w)]
    extra = platform_extra(snapshot, costs)
    if costs is None or ask.sort != "tco":
        ordered = within_budget(
            ranked, budget, min_memory_gb, ask.limit, extra, together_gb, tiers=True
        )
        shown = ordered[: ask.limit]
        by_speed = all(a.throughput >= b.throughput for a, b in pairwise(shown))
        items = [
            _recommendation(
                c,
                rank,
                snapshot,
                budget,
                extra,
                costs,
                faster_ones_below(ordered, rank - 1),
                by_speed,
            )
            for rank, c in enumerate(shown, 1)
        ]
        if items:
            paid = partial(paid_usd, extra=extra)
            tie = cheaper_tie(ordered[0], ordered, paid)
            if tie is not None:
                first, unit = ordered[0], snapshot.workload.unit
                words = cheaper_tie_words(tie, first, paid(tie), paid(first), unit)
                items[0] = items[0].model_copy(update={"why": items[0].why + words})
        top = max((c.throughput for c in ordered), default=0.0)
    else:
        fitting = within_budget(ranked, budget, min_memory_gb, len(ranked) or 1, extra, together_gb)
        all_items = [
            _recommendation(c, rank, snapshot, budget, extra, costs)
            for rank, c in enumerate(fitting, 1)
        ]
        items = ranked_by_cost(all_items, ask.limit, "unit of work")
        top = max((c.throughput for c in fitting), default=0.0)
    if not items and together_gb > 0:
        return items, _split_hint(ranked, ask, min_memory_gb, together_gb, extra)
    return items, _hints(snapshot, items, ask, min_memory_gb, top)


def _split_hint(
    ranked: list[Configuration],
    ask: RecommendationAsk,
    min_memory_gb: float,
    together_gb: float,
    extra: ExtraFn,
) -> str:
    """Why no configuration holds a model split over its GPUs within the budget, and the
    cheapest that would (GPUs plus the box several need)."""
    holding = within_budget(ranked, math.inf, min_memory_gb, len(ranked) or 1, extra, together_gb)
    words = f"nothing that holds {together_gb:g} GB over up to {ask.max_gpus} GPU(s)"
    if not holding:
        more = "; raise max_gpus" if ask.max_gpus < MAX_GPUS else ""
        return f"{words} (a llama.cpp layer split) is priced{more}"
    paid = partial(paid_usd, extra=extra)
    cheapest = min(holding, key=lambda c: (paid(c), c.candidate.slug))
    p = cheapest.candidate.price
    assert p is not None  # ranked configurations are priced
    cost = paid(cheapest)
    return (
        f"{words} (a llama.cpp layer split) fits ${ask.budget:,.0f}; the cheapest is "
        f"{cheapest.count} x {cheapest.candidate.slug} at ${cost:,.0f} with the box several "
        f"GPUs need ({p.condition} price of {p.observed_at}, {p.source})"
    )


def _hints(
    snapshot: Snapshot,
    items: list[Recommendation],
    ask: RecommendationAsk,
    min_memory_gb: float,
    top: float,
) -> str | None:
    stack = ask.stack
    pool = snapshot.kept(
        ("pool", min_memory_gb, stack), partial(_pool, snapshot, min_memory_gb, stack)
    )
    unlimited = pool
    if ask.costs is not None and ask.max_power_w is not None:  # what the ask's power limit keeps
        costs, limit = ask.costs, ask.max_power_w
        pool = _Pool.of(
            [
                c
                for c in pool.candidates
                if fits_power(c.tdp_w, max(1, c.availability.unit_gpus), costs, limit)
            ]
        )
    if items:
        parts = []
    elif pool is not unlimited and not pool.candidates:  # the power limit left no GPU
        parts = [_power_hint(unlimited.candidates, ask, min_memory_gb)]
    else:
        parts = [_hint(snapshot, pool.candidates, ask.budget, min_memory_gb, stack)]
    parts += _kept_out(snapshot, pool, ask, top)
    return "; ".join(parts) or None


def _power_hint(pool: list[Candidate], ask: RecommendationAsk, min_memory_gb: float) -> str:
    """The ask's power limit, named where nothing was recommended under it: the lowest draw of
    a priced GPU with the memory, or that none states one."""
    assert ask.costs is not None and ask.max_power_w is not None
    host = ask.costs.host_power_w
    words = f"max_power_w={ask.max_power_w:g} counts each GPU's TDP" + (
        f" + {host:g} W host" if host else ""
    )
    stated = [c for c in pool if c.tdp_w is not None and c.price is not None]
    if not stated:
        return f"{words}; no priced GPU with >= {min_memory_gb:g} GB states a TDP"
    lowest = min(stated, key=lambda c: (c.tdp_w or 0.0, c.slug))
    return (
        f"{words}; the lowest with >= {min_memory_gb:g} GB is {lowest.slug} at {lowest.tdp_w:g} W"
    )


@dataclass(frozen=True, slots=True)
class _Pool:
    """The GPUs an ask could be answered with, their slugs, and the cheapest current price of
    one datacenter GPU among them: kept per snapshot, memory and stack (rebuilding the set and
    the floor on every request was a tenth of a computed answer)."""

    candidates: list[Candidate]
    slugs: frozenset[str]
    datacenter_floor: float | None

    @classmethod
    def of(cls, candidates: list[Candidate]) -> "_Pool":
        slugs = frozenset(c.slug for c in candidates)
        return cls(candidates, slugs, _datacenter_price_floor(candidates))


def _pool(snapshot: Snapshot, min_memory_gb: float, stack: str | None) -> _Pool:
    """The GPUs with enough memory, on the ask's stack when given."""
    return _Pool.of(
        [
            c
            for c in snapshot.candidates
            if c.memory_gb >= min_memory_gb and (stack is None or c.stack == stack)
        ]
    )


def _costs(
    cand: Candidate,
    total_usd: float,
    count: int,
    throughput: float,
    snapshot: Snapshot,
    costs: CostSettings | None,
) -> tuple[dict[str, Any], str]:
    """The cost-of-ownership fields of `count` x `cand` bought for `total_usd`, and their
    account (for `why`); none without cost settings. Passed to a row's constructor: each
    pydantic field set afterwards costs about a microsecond."""
    if costs is None:
        return {}, ""
    cost = snapshot.costed(
        cand.slug,
        total_usd,
        count,
        cand.tdp_w,
        throughput,
        costs,
        cand.availability.platform_included,
    )
    return cost.fields(), cost.sentence()


def platform_extra(snapshot: Snapshot, costs: CostSettings | None) -> ExtraFn:
    """What the budget pays beyond the GPUs (service/domain/tco.py, Budget): the extra box N
    cards need over a one-GPU PC; nothing for GPUs sold as whole platforms or complete
    computers, or when the caller prices the platform (`platform_usd`)."""
    box = _box_extra(snapshot, costs)

    def extra(config: Configuration) -> float | None:
        return box(config.candidate, config.count)

    return extra


def _box_extra(
    snapshot: Snapshot, costs: CostSettings | None
) -> Callable[[Candidate, int], float | None]:
    """budget_extra_usd of `count` of a candidate, kept per (count, what its price includes,
    TDP): one ask scans many configurations."""
    platforms = snapshot.ownership.platforms
    known: dict[tuple[int, str | None, float | None], float | None] = {}

    def extra(cand: Candidate, count: int) -> float | None:
        key = (count, cand.availability.platform_included, cand.tdp_w)
        if key not in known:
            known[key] = budget_extra_usd(platforms, key[0], costs, key[1], key[2])
        return known[key]

    return extra


def _recommendation(
    config: Configuration,
    rank: int,
    snapshot: Snapshot,
    budget: float,
    extra: ExtraFn,
    costs: CostSettings | None,
    below: Sequence[Configuration] = (),
    by_speed: bool = True,
) -> Recommendation:
    """One configuration's row, with its cost of ownership (given cost settings) in its
    fields and at the end of `why`. Only the rank and the start and end of `why` depend on the
    ask (its budget; `below`, the faster configurations ranked below this one, the fastest of
    which `why` then names; `by_speed`, whether the answer's rows are in throughput order):
    the rest of the row is built once per snapshot, configuration and cost settings (answers
    to different budgets show the same rows; building a row was a third of a computed answer)
    and copied."""
    key = ("recommendation", _config_key(config), costs)
    template = snapshot.kept(key, partial(_row_template, config, snapshot, extra, costs))
    faster = fastest(below)
    if faster is None:
        why = why_lead(rank, budget, by_throughput=by_speed) + template.why
    else:
        reasons = ranked_above_because(config, faster)
        above = ranked_above_words(config, faster, reasons, snapshot.workload.unit)
        common = common_reasons(ranked_above_because, config, below)
        why = why_lead(rank, budget, common, by_speed, outranks=True) + template.why + above
    return template.model_copy(update={"rank": rank, "why": why})


def _config_key(config: Configuration) -> tuple[object, ...]:
    """What a row of `config` depends on in its snapshot (the candidate by its slug)."""
    return (
        config.candidate.slug,
        config.count,
        config.throughput,
        config.low,
        config.high,
        config.speedup,
        config.scaling_basis,
        config.basis,
        config.n,
    )


def _row_template(
    config: Configuration, snapshot: Snapshot, extra: ExtraFn, costs: CostSettings | None
) -> Recommendation:
    """A configuration's row without its rank, `why` without its budget-dependent start."""
    cand = config.candidate
    cost_fields, cost_sentence = _costs(
        cand, config.total_price, config.count, config.throughput, snapshot, costs
    )
    unit_price = price_info(cand, snapshot)
    assert unit_price is not None
    unit = snapshot.workload.unit
    reference = snapshot.reference.slug if snapshot.reference else "none"
    return Recommendation(
        rank=1,
        gpu=cand.slug,
        name=cand.name,
        count=config.count,
        unit_price=unit_price,
        total_price_usd=config.total_price,
        throughput=config.throughput,
        throughput_low=config.low,
        throughput_high=config.high,
        unit=unit,
        relative_performance=snapshot.relative(config.throughput),
        perf_per_dollar=per_dollar_spent(config.throughput, config.total_price, extra(config)),
        memory_gb=cand.memory_gb,
        total_memory_gb=cand.memory_gb * config.count,
        tdp_w=cand.tdp_w * config.count if cand.tdp_w is not None else None,
        basis=config.basis,
        model=configuration_model(config),
        n=config.n,
        scaling_factor=config.speedup,
        scaling_basis=config.scaling_basis,
        why=f"{why_body(config, unit, reference, extra(config))} {cost_sentence}".strip(),
        **_availability(cand),
        band=cand.estimate.band,
        precision=cand.estimate.precision or None,
        perf_per_watt=per_watt(config.throughput, cand.tdp_w, config.count),
        frameworks=list(config.frameworks),
        **cost_fields,
    )


_KEPT_OUT_SHOWN = 3


def _condition_phrase(condition: str) -> str:
    return {"new": "new", "used": "used"}.get(condition, "new or used")


def _month(p: PriceObservation) -> str:
    return f"{p.observed_at:%Y-%m}"


def _kept_out(snapshot: Snapshot, pool: _Pool, ask: RecommendationAsk, top: float) -> list[str]:
    """GPUs that availability or a missing fresh price kept out and that would have been
    faster than the first answer: what a buyer would otherwise have been offered. A GPU sold
    in units of N is compared at N GPUs (an upper bound: N x one GPU); a card with an older
    price at as many as that price buys within the budget and max_gpus, scaled as the ask
    scales them (3 x RTX 4090 at its April price beat 4 x RTX 5080 on ResNet-50 at $10,000, and
    the hint named nothing). The candidates come fastest first at their best count, computed
    once per snapshot and (mode, framework, max_gpus), so an ask looks only at those that could
    beat its first answer (scaling every older-priced card on every request cost computed
    answers more than half their rate)."""
    budget, max_gpus = ask.budget, ask.max_gpus
    candidates = snapshot.kept(
        ("may be kept out", ask.mode, ask.framework, max_gpus),
        partial(_may_be_kept_out, snapshot, ask, max_gpus),
    )
    faster = []
    box = _box_extra(snapshot, ask.costs)
    for c, reason, by_count in candidates:
        if max(by_count.values()) <= top:
            break  # none after it reaches the first answer at any count
        old = c.shown_price  # by_count runs to max_gpus only for a card priced that way
        counts = sorted(by_count)
        count = (
            affordable_count(old.usd, counts, budget, partial(box, c))
            if old is not None
            else counts[0]
        )
        if by_count[count] > top:
            faster.append((c, reason))
    if not faster:
        return []  # the common case: nothing kept out beats the first answer
    faster.sort(key=lambda kept: (-_unit_throughput(kept[0]), kept[0].slug))  # named in this order
    in_pool, floor = pool.slugs, pool.datacenter_floor
    parts: list[str] = []
    unpriced: list[tuple[str, bool]] = []  # (how it is named, has an older price)
    for c, reason in faster:
        if c.slug not in in_pool:
            continue
        if reason is not None:
            known = c.price or c.shown_price
            unit_floor = known.usd if known else floor
            if unit_floor is None or unit_floor * c.availability.unit_gpus > budget:
                continue  # would not fit the budget anyway
            if len(parts) < _KEPT_OUT_SHOWN:
                parts.append(reason if known else f"{reason} (no public purchase price yet)")
        else:  # _stale_or_unpriced_unit(c): what _may_be_kept_out keeps besides a reason
            newest = c.shown_price
            unit_floor = newest.usd if newest else floor
            if unit_floor is None or unit_floor * c.availability.unit_gpus > budget:
                continue  # the unit would not fit the budget at its last or lowest price
            unpriced.append(
                (f"{c.slug} (newest ${newest.usd:,.0f} from {_month(newest)})", True)
                if newest
                else (
                    f"{c.slug} (no public purchase price; cloud rates: /prices?gpu={c.slug})",
                    False,
                )
            )
    if unpriced:
        days = snapshot.max_price_age_days
        shown = unpriced[:_KEPT_OUT_SHOWN]
        older = any(has_older for _, has_older in shown)
        parts.append(
            f"no {_condition_phrase(snapshot.condition)} price newer than {days} days for "
            + ", ".join(named for named, _ in shown)
            + (" (allow_stale=true ranks at older prices)" if older else "")
        )
    return parts


def _stale_or_unpriced_unit(c: Candidate) -> bool:
    """No current price, but an older one (an RTX 4090 whose newest used price is 7 months
    old: allow_stale=true would rank it), or none at all for a unit of N GPUs."""
    return c.price is None and (c.shown_price is not None or c.availability.unit_gpus > 1)


def _may_be_kept_out(
    snapshot: Snapshot, ask: RecommendationAsk, max_gpus: int
) -> list[tuple[Candidate, str | None, dict[int, float]]]:
    """The candidates _kept_out may name, each with why availability excludes it: not
    purchasable within `max_gpus` (the reason), or without a current price (None) where it has
    an older one or is sold in units of N; and its throughput by count: a card with only an
    older price at the counts the ask's mode and framework run (snapshot.job_counts, which
    may skip some), anything else one unit, keyed 1 (N x one GPU for a GPU sold in units of
    N). Fastest first at its best count (ties by slug)."""
    kept_out = []
    for c in snapshot.candidates:
        reason = exclusion(c.slug, c.availability, max_gpus)
        if reason is None and not _stale_or_unpriced_unit(c):
            continue
        older_priced_card = (
            c.price is None and c.shown_price is not None and c.availability.unit_gpus <= 1
        )
        counts = (
            snapshot.job_counts(c.availability, max_gpus, ask.mode) if older_priced_card else []
        )
        by_count = {
            n: snapshot.configuration(ask.mode, ask.framework, c, n).throughput for n in counts
        }
        # one unit stands for anything else, and for a cloud-only GPU, which has no count to buy
        kept_out.append((c, reason, by_count or {1: _unit_throughput(c)}))
    return sorted(kept_out, key=lambda kept: (-max(kept[2].values()), kept[0].slug))


def _unit_throughput(c: Candidate) -> float:
    """One purchasable unit's throughput: N x one GPU for a GPU sold in units of N."""
    return c.estimate.value * max(1, c.availability.unit_gpus)


def _datacenter_price_floor(pool: list[Candidate]) -> float | None:
    """The cheapest current price of one datacenter GPU: a lower bound on the per-GPU price of
    a platform nobody has published a price for (used to keep unpriced 8-GPU platforms out of
    the hint of an $800 question)."""
    prices = [
        c.price.usd
        for c in pool
        if c.price is not None and c.availability.status == "datacenter_only"
    ]
    return min(prices, default=None)


def _no_price(
    snapshot: Snapshot, pool: list[Candidate], min_memory_gb: float, stack: str | None
) -> str:
    """Nothing with the memory has a price in the asked condition: say which data is missing
    (only used prices, say), not that no such GPU is priced when another condition prices it,
    and name the filters that narrowed the catalog (a stack; a precision only GPUs with its
    own units run): "no priced GPU in the catalog has 8 GB" was false for stack=rocm-instinct."""
    otherwise = [c for c in pool if c.slug in snapshot.priced_otherwise]
    if not otherwise:
        on = f" on stack {stack}" if stack else ""
        runs = f" that runs {snapshot.precision}" if snapshot.precision in UNITS_OF else ""
        return f"no priced GPU{on}{runs} in the catalog has {min_memory_gb:g} GB or more"
    asked = snapshot.condition
    other = "new" if asked == "used" else "used"
    return (
        f"no {asked} price for any GPU with >= {min_memory_gb:g} GB; {len(otherwise)} of them "
        f"have a {other} price (condition={other} or condition=any ranks them)"
    )


def _hint(
    snapshot: Snapshot,
    pool: list[Candidate],
    budget: float,
    min_memory_gb: float,
    stack: str | None = None,
) -> str:
    cheapest = cheapest_fitting(pool, min_memory_gb)
    if cheapest is None or cheapest.price is None:
        shown = [c.shown_price for c in pool if c.shown_price is not None]
        if not shown:
            return _no_price(snapshot, pool, min_memory_gb, stack)
        slug_of = {id(c.shown_price): c.slug for c in pool}
        newest = max(shown, key=lambda p: (p.observed_at, p.id))
        return (
            f"no {_condition_phrase(snapshot.condition)} price newer than "
            f"{snapshot.max_price_age_days} days for GPUs with >= {min_memory_gb:g} GB; "
            f"allow_stale=true uses older ones (newest: {slug_of[id(newest)]} "
            f"${newest.usd:,.0f} from {_month(newest)})"
        )
    p = cheapest.price
    return (
        f"nothing with >= {min_memory_gb:g} GB fits ${budget:,.0f}; the cheapest that fits the "
        f"memory is {cheapest.slug} at ${p.usd:,.0f} ({p.source}, {p.observed_at})"
    )
