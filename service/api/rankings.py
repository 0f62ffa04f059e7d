"""GET /rankings: every GPU for a workload, by performance or performance per dollar."""

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from service.api.csv_format import Format, columns_for, csv_response, wants_csv
from service.api.deps import ReadModelDep
from service.api.http_cache import http_cached
from service.domain.vocabulary import ConditionChoice, Precision
from service.read_model.rows import RankingSort
from service.schemas.rankings import RankingItem, Rankings

router = APIRouter(tags=["rankings"])
CSV_COLUMNS = columns_for(RankingItem)


@router.get(
    "/rankings",
    response_model=Rankings,
    responses={200: {"content": {"text/csv": {}}}},
    summary="Rank GPUs for a workload by throughput or throughput per dollar",
)
@http_cached
async def rankings(
    request: Request,
    read_model: ReadModelDep,
    workload: Annotated[str | None, Query(max_length=64)] = None,
    precision: Precision | None = None,
    sort: RankingSort = "performance",
    min_memory_gb: Annotated[float | None, Query(ge=0, le=10_000)] = None,
    condition: ConditionChoice = "any",
    format: Format | None = None,
) -> Response:
    read = await read_model.rankings(workload, precision, condition, min_memory_gb, sort)
    if wants_csv(request, format):
        as_csv = csv_response((r.model_dump(mode="json") for r in read.rows), CSV_COLUMNS)
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
