"""Ranking rows and recommendation rows: built here, once, from a snapshot.

/rankings, /recommend (JSON and CSV alike) and anything else that lists GPUs for a workload
answer with these rows, so a field means the same in every answer.
"""

from typing import Literal

from service.domain.recommend import (
    Candidate,
    Configuration,
    cheapest_fitting,
    why,
    within_budget,
)
from service.domain.vocabulary import Mode
from service.read_model.snapshot import Snapshot
from service.schemas.rankings import PriceInfo, RankingItem, Recommendation

RankingSort = Literal["performance", "perf_per_dollar"]


def price_info(candidate: Candidate) -> PriceInfo | None:
    p = candidate.price
    if p is None:
        return None
    return PriceInfo(usd=p.usd, condition=p.condition, source=p.source, observed_at=p.observed_at)


def ranking_rows(snapshot: Snapshot, min_memory_gb: float, sort: RankingSort) -> list[RankingItem]:
    """Every GPU with at least `min_memory_gb`, ranked by `sort` (ties by slug)."""
    rows = []
    for c in snapshot.candidates:
        if c.memory_gb < min_memory_gb:
            continue
        e = c.estimate
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
                relative_performance=snapshot.relative(e.value),
                price=price_info(c),
                perf_per_dollar=e.value / c.price.usd if c.price else None,
            )
        )
    if sort == "performance":
        rows.sort(key=lambda r: (-r.throughput, r.gpu))
    else:
        rows.sort(key=lambda r: (r.perf_per_dollar is None, -(r.perf_per_dollar or 0), r.gpu))
    for rank, row in enumerate(rows, start=1):
        row.rank = rank
    return rows


def recommendation_rows(
    snapshot: Snapshot,
    budget: float,
    min_memory_gb: float,
    mode: Mode,
    framework: str,
    max_gpus: int,
    limit: int,
) -> tuple[list[Recommendation], str | None]:
    """The best configurations within `budget`, and a hint when none fits."""
    ranked = snapshot.ranked_configurations(mode, framework, max_gpus)
    chosen = within_budget(ranked, budget, min_memory_gb, limit)
    items = [_recommendation(c, rank, snapshot, budget) for rank, c in enumerate(chosen, 1)]
    return items, None if items else _hint(snapshot, budget, min_memory_gb)


def _recommendation(
    config: Configuration, rank: int, snapshot: Snapshot, budget: float
) -> Recommendation:
    cand = config.candidate
    unit_price = price_info(cand)
    assert unit_price is not None
    unit = snapshot.workload.unit
    reference = snapshot.reference.slug if snapshot.reference else "none"
    return Recommendation(
        rank=rank,
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
        perf_per_dollar=config.perf_per_dollar,
        memory_gb=cand.memory_gb,
        total_memory_gb=cand.memory_gb * config.count,
        tdp_w=cand.tdp_w * config.count if cand.tdp_w is not None else None,
        basis=config.basis,
        model="measured" if config.scaling_basis == "measured" else cand.estimate.model,
        n=config.n,
        scaling_factor=config.speedup,
        scaling_basis=config.scaling_basis,
        why=why(config, rank, budget, unit, reference),
        band=cand.estimate.band,
    )


def _hint(snapshot: Snapshot, budget: float, min_memory_gb: float) -> str:
    cheapest = cheapest_fitting(snapshot.candidates, min_memory_gb)
    if cheapest is None or cheapest.price is None:
        return f"no priced GPU in the catalog has {min_memory_gb:g} GB or more"
    p = cheapest.price
    return (
        f"nothing with >= {min_memory_gb:g} GB fits ${budget:,.0f}; the cheapest that fits the "
        f"memory is {cheapest.slug} at ${p.usd:,.0f} ({p.source}, {p.observed_at})"
    )
