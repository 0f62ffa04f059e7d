"""GET /recommend?budget=800: the best GPU configurations that fit a budget."""

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from service.api.csv_format import Format, columns_for, csv_response, wants_csv
from service.api.deps import ReadModelDep
from service.api.presenters import price_info
from service.core.settings import Settings
from service.domain.recommend import Configuration, cheapest_fitting, why, within_budget
from service.domain.vocabulary import ConditionChoice, Precision
from service.read_model.reads import snapshot_key
from service.read_model.snapshot import Snapshot
from service.schemas.rankings import Recommendation, Recommendations

router = APIRouter(tags=["recommend"])
CSV_COLUMNS = columns_for(Recommendation)
MAX_BUDGET = 100_000_000


def _item(config: Configuration, rank: int, snapshot: Snapshot, budget: float) -> Recommendation:
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


class RecommendQuery(BaseModel):
    """/recommend's query parameters, validated as one model (cheaper than one by one)."""

    budget: float = Field(gt=0, le=MAX_BUDGET, allow_inf_nan=False, description="USD for all GPUs")
    workload: str | None = Field(None, max_length=64)
    precision: Precision | None = None
    min_memory_gb: float | None = Field(None, ge=0, le=10_000)
    max_gpus: int = Field(4, ge=1, le=8)
    mode: Literal["parallel", "independent"] = "parallel"
    framework: str = Field("pytorch", min_length=1, max_length=32, pattern=r"^[a-z0-9_.+-]+$")
    condition: ConditionChoice = "any"
    limit: int = Field(5, ge=1, le=50)
    format: Format | None = None


@router.get(
    "/recommend",
    response_model=Recommendations,
    responses={200: {"content": {"text/csv": {}}}},
    summary="Best single and multi-GPU configurations for a budget and workload",
)
async def recommend(
    request: Request, read_model: ReadModelDep, q: Annotated[RecommendQuery, Query()]
) -> Response:
    settings = read_model.settings
    key = snapshot_key(q.workload or settings.default_workload, q.precision, q.condition)
    snapshot = await read_model.snapshot(key)
    answer = _answer(snapshot, q, wants_csv(request, q.format), settings)
    return read_model.stored(request.scope, key, snapshot, answer)


def _answer(snapshot: Snapshot, q: RecommendQuery, as_csv: bool, settings: Settings) -> Response:
    min_memory = snapshot.workload.min_memory_gb if q.min_memory_gb is None else q.min_memory_gb
    ranked = snapshot.ranked_configurations(q.mode, q.framework, q.max_gpus)
    chosen = within_budget(ranked, q.budget, min_memory, q.limit)
    items = [_item(c, rank, snapshot, q.budget) for rank, c in enumerate(chosen, start=1)]
    hint = None if items else _hint(snapshot, q.budget, min_memory)
    if as_csv:
        headers = {"X-Hint": hint} if hint else None
        return csv_response((i.model_dump(mode="json") for i in items), CSV_COLUMNS, headers)
    answer = Recommendations(
        recommendations=items,
        budget_usd=q.budget,
        workload=snapshot.workload.slug,
        precision=snapshot.precision,
        unit=snapshot.workload.unit,
        min_memory_gb=min_memory,
        max_gpus=q.max_gpus,
        mode=q.mode,
        framework=q.framework,
        condition=q.condition,
        reference_gpu=settings.reference_gpu,
        hint=hint,
    )
    # Built and validated above: serialize once, skipping FastAPI's second validation pass.
    return Response(answer.model_dump_json(), media_type="application/json")
