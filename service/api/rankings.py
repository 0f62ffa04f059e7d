"""GET /rankings: every GPU for a workload, by performance or performance per dollar."""

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from service.api.asks import (
    MODEL_ASK_PARAMS,
    ask_for,
    check_ask_kind,
    training_echo,
)
from service.api.csv_format import columns_for, csv_response, wants_csv
from service.api.deps import CostQueryDep, ReadModelDep
from service.api.http_cache import http_cached
from service.domain import llm_fit
from service.domain.tco import CostSettings
from service.domain.vocabulary import ConditionChoice, Precision
from service.read_model import llm as llm_rows
from service.schemas.catalog import Stack
from service.schemas.common import Format, Problem
from service.schemas.llm import GRADIENT_CHECKPOINTING_DOC, OptimizerName, TaskName
from service.schemas.rankings import RankingItem, Rankings, RankingSort

router = APIRouter(tags=["rankings"])
# /rankings of a workload rank single GPUs at the workload's own framework profile.
MODEL_RANKING_PARAMS = (
    *[p for p in MODEL_ASK_PARAMS if p != "min_tokens_per_s"],
    "max_gpus",
    "framework",
)
CSV_COLUMNS = [*columns_for(RankingItem), "workload"]  # each row states the answer's workload


@router.get(
    "/rankings",
    response_model=Rankings,
    responses={200: {"content": {"text/csv": {}}}, 404: {"model": Problem}},
    summary="Rank GPUs for a workload or model by throughput, per dollar, per watt or cost of "
    "ownership",
)
@http_cached
async def rankings(
    request: Request,
    read_model: ReadModelDep,
    costs: CostQueryDep,
    workload: Annotated[str | None, Query(min_length=1, max_length=64)] = None,
    precision: Precision | None = None,
    sort: RankingSort = "performance",
    min_memory_gb: Annotated[float | None, Query(ge=0, le=10_000, allow_inf_nan=False)] = None,
    condition: ConditionChoice = "any",
    allow_stale: bool = False,
    stack: Stack | None = None,
    format: Format | None = None,
    model: Annotated[
        str | None, Query(min_length=1, max_length=64, description="Model slug")
    ] = None,
    task: TaskName = "inference",
    quant: Annotated[str | None, Query(min_length=1, max_length=32)] = None,
    context: Annotated[int | None, Query(ge=1, le=10_000_000)] = None,
    batch: Annotated[int, Query(ge=1, le=4096)] = 1,
    max_gpus: Annotated[int, Query(ge=1, le=8)] = 8,
    framework: Annotated[str, Query(pattern=r"^[a-z0-9_.+-]+$", max_length=32)] = "pytorch",
    gradient_checkpointing: Annotated[
        bool | None, Query(description=GRADIENT_CHECKPOINTING_DOC)
    ] = None,
    optimizer: OptimizerName | None = None,
    lora_rank: Annotated[int | None, Query(ge=1, le=4096)] = None,
) -> Response:
    check_ask_kind(request.query_params.keys(), MODEL_RANKING_PARAMS)
    if model is not None:
        return await _llm_rankings(
            request,
            read_model,
            ask_for(
                model, task, quant, context, batch, gradient_checkpointing, optimizer, lora_rank
            ),
            max_gpus,
            framework,
            condition,
            sort,
            format,
            llm_rows.Pool(stack, min_memory_gb or 0.0),
            allow_stale,
            costs.settings(),
        )
    read = await read_model.rankings(
        workload, precision, condition, min_memory_gb, sort, costs.settings(), allow_stale, stack
    )
    if wants_csv(request, format):
        as_csv = csv_response(
            (r.model_dump(mode="json") for r in read.rows),
            CSV_COLUMNS,
            answer={"workload": read.snapshot.workload.slug, "precision": read.snapshot.precision},
        )
        return read_model.stored(request.scope, read, as_csv)
    answer = Rankings(
        items=read.rows,
        workload=read.snapshot.workload.slug,
        precision=read.snapshot.precision,
        unit=read.snapshot.workload.unit,
        sort=sort,
        reference_gpu=read_model.settings.reference_gpu,
    )
    # Built and validated above: serialize once, skipping FastAPI's second validation pass.
    as_json = Response(answer.model_dump_json(), media_type="application/json")
    return read_model.stored(request.scope, read, as_json)


async def _llm_rankings(
    request: Request,
    read_model: ReadModelDep,
    ask: llm_fit.Ask,
    max_gpus: int,
    framework: str,
    condition: ConditionChoice,
    sort: RankingSort,
    format: Format | None,
    pool: llm_rows.Pool,
    allow_stale: bool,
    costs: CostSettings,
) -> Response:
    """Every GPU's (of `pool`) fewest-GPU configuration that fits the model, by tokens/s, per
    dollar or by cost of ownership per million tokens (sort=tco)."""
    read = await read_model.llm(condition, ask, allow_stale)
    rows = llm_rows.ranking_rows(ask, read.data, max_gpus, framework, sort, pool, costs)
    llm_rows.relative_to(rows, ask, read.data, framework, read_model.settings.reference_gpu)
    if wants_csv(request, format):
        as_csv = csv_response(
            (r.model_dump(mode="json") for r in rows),
            CSV_COLUMNS,
            answer={
                "workload": f"{ask.model.slug}:{ask.task}",
                "precision": llm_rows.precision_of(ask.quant),
            },
        )
        return read_model.stored(request.scope, read, as_csv)
    answer = Rankings(
        items=rows,
        workload=f"{ask.model.slug}:{ask.task}",
        precision=llm_rows.precision_of(ask.quant),
        unit=llm_rows.UNIT,
        sort=sort,
        reference_gpu=read_model.settings.reference_gpu,
        model=ask.model.slug,
        task=ask.task,
        quant=ask.quant.name,
        context=ask.context,
        batch=ask.batch,
        **training_echo(ask),
    )
    as_json = Response(answer.model_dump_json(), media_type="application/json")
    return read_model.stored(request.scope, read, as_json)
