"""GET /recommend?budget=800: the best GPU configurations that fit a budget."""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from service.api.asks import (
    MODEL_ASK_PARAMS,
    check_ask_kind,
    llm_limits,
    model_ask,
    recommendation_ask,
    training_echo,
)
from service.api.csv_format import columns_for, csv_response, header_value, wants_csv
from service.api.deps import ReadModelDep
from service.api.direct_route import DirectRoute
from service.api.http_cache import http_cached
from service.api.query_model import QueryModel
from service.domain.scaling import unprofiled_note
from service.read_model import llm as llm_rows
from service.read_model.reads import Rows
from service.schemas.common import Problem
from service.schemas.queries import RecommendQuery
from service.schemas.rankings import Recommendation, Recommendations

router = APIRouter(tags=["recommend"], route_class=DirectRoute)
CSV_COLUMNS = [*columns_for(Recommendation), "workload"]  # each row states the answer's workload
RecommendQueryDep = Annotated[RecommendQuery, Depends(QueryModel(RecommendQuery))]


@router.get(
    "/recommend",
    response_model=Recommendations,
    responses={200: {"content": {"text/csv": {}}}, 404: {"model": Problem}},
    summary="Best single and multi-GPU configurations for a budget and workload",
)
@http_cached
async def recommend(request: Request, read_model: ReadModelDep, q: RecommendQueryDep) -> Response:
    check_ask_kind(q.model_fields_set, MODEL_ASK_PARAMS)
    if q.model is not None:
        return await _llm_answer(request, read_model, q)
    read = await read_model.recommendations(recommendation_ask(q))
    answer = _answer(read, q, wants_csv(request, q.format), read_model.settings.reference_gpu)
    return read_model.stored(request.scope, read, answer)


def _answer(
    read: Rows[Recommendation], q: RecommendQuery, as_csv: bool, reference: str
) -> Response:
    snapshot = read.snapshot
    return _respond(
        q,
        read.rows,
        read.hint,
        as_csv,
        reference,
        workload=snapshot.workload.slug,
        precision=snapshot.precision,
        unit=snapshot.workload.unit,
        min_memory_gb=read.min_memory_gb,
        allow_stale=q.allow_stale,
        stack=q.stack,
    )


async def _llm_answer(request: Request, read_model: ReadModelDep, q: RecommendQuery) -> Response:
    """/recommend for a model, task and format: configurations that fit, with headroom."""
    ask = model_ask(q)
    limits = llm_limits(q)
    read = await read_model.llm(q.condition, ask, q.allow_stale)
    items, hint = llm_rows.recommendation_rows(ask, read.data, limits, q.framework, q.limit)
    llm_rows.relative_to(items, ask, read.data, q.framework, read_model.settings.reference_gpu)
    answer = _respond(
        q,
        items,
        hint,
        wants_csv(request, q.format),
        read_model.settings.reference_gpu,
        workload=f"{ask.model.slug}:{ask.task}",
        precision=llm_rows.precision_of(ask.quant),
        unit=llm_rows.UNIT,
        min_memory_gb=round(ask.breakdown(1).total_gb, 3),
        model=ask.model.slug,
        task=ask.task,
        quant=ask.quant.name,
        context=ask.context,
        batch=ask.batch,
        min_tokens_per_s=q.min_tokens_per_s,
        **training_echo(ask),
        allow_stale=q.allow_stale,
        stack=q.stack,
    )
    return read_model.stored(request.scope, read, answer)


def _respond(
    q: RecommendQuery,
    items: list[Recommendation],
    hint: str | None,
    as_csv: bool,
    reference: str,
    **answer: Any,
) -> Response:
    """Either ask's answer: CSV rows (the hint in X-Hint), or JSON with the query's echo and
    `answer`'s fields (what the ask read). Built and validated here and serialized once,
    skipping FastAPI's second validation pass."""
    note = unprofiled_note(q.framework, (i.scaling_basis for i in items))
    if note is not None:
        hint = f"{hint}; {note}" if hint else note
    if as_csv:
        headers = {"X-Hint": header_value(hint)} if hint else None
        stated = {k: answer.get(k) for k in ("workload", "precision")}
        return csv_response(
            (i.model_dump(mode="json") for i in items), CSV_COLUMNS, headers, answer=stated
        )
    body = Recommendations(
        recommendations=items,
        hint=hint,
        budget_usd=q.budget,
        max_gpus=q.max_gpus,
        mode=q.mode,
        framework=q.framework,
        condition=q.condition,
        reference_gpu=reference,
        **answer,
    )
    return Response(body.model_dump_json(), media_type="application/json")
