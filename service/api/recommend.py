"""GET /recommend?budget=800: the best GPU configurations that fit a budget."""

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import Field

from service.api.csv_format import Format, columns_for, csv_response, wants_csv
from service.api.deps import ReadModelDep
from service.api.http_cache import http_cached
from service.api.memory import ask_for
from service.domain.vocabulary import ConditionChoice, Mode, Precision
from service.read_model import llm as llm_rows
from service.read_model.reads import Rows
from service.read_model.rows import RecommendSort
from service.schemas.catalog import Stack
from service.schemas.common import Problem
from service.schemas.llm import TaskName
from service.schemas.rankings import Recommendation, Recommendations
from service.schemas.tco import CostQuery

router = APIRouter(tags=["recommend"])
CSV_COLUMNS = columns_for(Recommendation)
MAX_BUDGET = 100_000_000


class RecommendQuery(CostQuery):
    """/recommend's query parameters, validated as one model (cheaper than one by one)."""

    budget: float = Field(gt=0, le=MAX_BUDGET, allow_inf_nan=False, description="USD for all GPUs")
    workload: str | None = Field(None, max_length=64)
    precision: Precision | None = None
    min_memory_gb: float | None = Field(None, ge=0, le=10_000)
    max_gpus: int = Field(4, ge=1, le=8)
    mode: Mode = "parallel"
    framework: str = Field("pytorch", min_length=1, max_length=32, pattern=r"^[a-z0-9_.+-]+$")
    condition: ConditionChoice = "any"
    allow_stale: bool = Field(False, description="Also rank at prices older than the window.")
    stack: Stack | None = Field(None, description="Only GPUs on this software stack.")
    limit: int = Field(5, ge=1, le=50)
    format: Format | None = None
    sort: RecommendSort = "performance"
    max_power_w: float | None = Field(None, gt=0, le=1_000_000, allow_inf_nan=False)
    # An LLM ask instead of a fixed workload (see GET /memory for the memory model).
    model: str | None = Field(None, max_length=64, description="Model slug (GET /models).")
    task: TaskName = "inference"
    quant: str | None = Field(None, max_length=32, description="Weight format (default per task).")
    context: int | None = Field(None, ge=1, le=10_000_000, description="Tokens per sequence.")
    batch: int = Field(1, ge=1, le=4096)
    min_tokens_per_s: float | None = Field(None, gt=0, le=1e9, allow_inf_nan=False)


@router.get(
    "/recommend",
    response_model=Recommendations,
    responses={200: {"content": {"text/csv": {}}}, 404: {"model": Problem}},
    summary="Best single and multi-GPU configurations for a budget and workload",
)
@http_cached
async def recommend(
    request: Request, read_model: ReadModelDep, q: Annotated[RecommendQuery, Query()]
) -> Response:
    if q.model is not None:
        return await _llm_answer(request, read_model, q)
    read = await read_model.recommendations(
        q.workload,
        q.precision,
        q.condition,
        q.min_memory_gb,
        q.budget,
        q.mode,
        q.framework,
        q.max_gpus,
        q.limit,
        q.settings(),
        q.max_power_w,
        q.sort,
        q.allow_stale,
        q.stack,
    )
    answer = _answer(read, q, wants_csv(request, q.format), read_model.settings.reference_gpu)
    return read_model.stored(request.scope, read, answer)


def _answer(
    read: Rows[Recommendation], q: RecommendQuery, as_csv: bool, reference: str
) -> Response:
    items, hint, snapshot = read.rows, read.hint, read.snapshot
    if as_csv:
        headers = {"X-Hint": hint} if hint else None
        return csv_response((i.model_dump(mode="json") for i in items), CSV_COLUMNS, headers)
    answer = Recommendations(
        recommendations=items,
        budget_usd=q.budget,
        workload=snapshot.workload.slug,
        precision=snapshot.precision,
        unit=snapshot.workload.unit,
        min_memory_gb=read.min_memory_gb,
        max_gpus=q.max_gpus,
        mode=q.mode,
        framework=q.framework,
        condition=q.condition,
        reference_gpu=reference,
        allow_stale=q.allow_stale,
        stack=q.stack,
        hint=hint,
    )
    # Built and validated above: serialize once, skipping FastAPI's second validation pass.
    return Response(answer.model_dump_json(), media_type="application/json")


async def _llm_answer(request: Request, read_model: ReadModelDep, q: RecommendQuery) -> Response:
    """/recommend for a model, task and format: configurations that fit, with headroom."""
    assert q.model is not None
    ask = ask_for(q.model, q.task, q.quant, q.context, q.batch)
    data = await llm_rows.read(read_model.engine, read_model.settings, q.condition, ask)
    items, hint = llm_rows.recommendation_rows(
        ask, data, q.budget, q.max_gpus, q.framework, q.min_tokens_per_s, q.limit
    )
    if wants_csv(request, q.format):
        headers = {"X-Hint": hint} if hint else None
        return csv_response((i.model_dump(mode="json") for i in items), CSV_COLUMNS, headers)
    answer = Recommendations(
        recommendations=items,
        budget_usd=q.budget,
        workload=f"{ask.model.slug}:{ask.task}",
        precision=llm_rows.precision_of(ask.quant),
        unit=llm_rows.UNIT,
        min_memory_gb=round(ask.breakdown(1).total_gb, 3),
        max_gpus=q.max_gpus,
        mode=q.mode,
        framework=q.framework,
        condition=q.condition,
        reference_gpu=read_model.settings.reference_gpu,
        hint=hint,
        model=ask.model.slug,
        task=ask.task,
        quant=ask.quant.name,
        context=ask.context,
        batch=ask.batch,
        min_tokens_per_s=q.min_tokens_per_s,
    )
    return Response(answer.model_dump_json(), media_type="application/json")
