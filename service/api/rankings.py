"""GET /rankings: every GPU for a workload, by performance or performance per dollar."""

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from service.api.csv_format import Format, columns_for, csv_response, wants_csv
from service.api.deps import ReadModelDep
from service.api.presenters import price_info
from service.domain.vocabulary import ConditionChoice, Precision
from service.read_model.reads import snapshot_key
from service.schemas.rankings import RankingItem, Rankings

router = APIRouter(tags=["rankings"])
CSV_COLUMNS = columns_for(RankingItem)


@router.get(
    "/rankings",
    response_model=Rankings,
    responses={200: {"content": {"text/csv": {}}}},
    summary="Rank GPUs for a workload by throughput or throughput per dollar",
)
async def rankings(
    request: Request,
    read_model: ReadModelDep,
    workload: Annotated[str | None, Query(max_length=64)] = None,
    precision: Precision | None = None,
    sort: Literal["performance", "perf_per_dollar"] = "performance",
    min_memory_gb: Annotated[float | None, Query(ge=0, le=10_000)] = None,
    condition: ConditionChoice = "any",
    format: Format | None = None,
) -> Response:
    settings = read_model.settings
    key = snapshot_key(workload or settings.default_workload, precision, condition)
    snapshot = await read_model.snapshot(key)
    min_memory = snapshot.workload.min_memory_gb if min_memory_gb is None else min_memory_gb
    rows = []
    for c in snapshot.candidates:
        if c.memory_gb < min_memory:
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
    if wants_csv(request, format):
        as_csv = csv_response((r.model_dump(mode="json") for r in rows), CSV_COLUMNS)
        return read_model.stored(request.scope, key, snapshot, as_csv)
    answer = Rankings(
        items=rows,
        workload=snapshot.workload.slug,
        precision=snapshot.precision,
        unit=snapshot.workload.unit,
        sort=sort,
        reference_gpu=settings.reference_gpu,
    )
    # Built and validated above: serialize once, skipping FastAPI's second validation pass.
    as_json = Response(answer.model_dump_json(), media_type="application/json")
    return read_model.stored(request.scope, key, snapshot, as_json)
