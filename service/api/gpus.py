"""GET /gpus and GET /gpus/{slug}."""

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from service.api.csv_format import columns_for, csv_response, wants_csv
from service.api.deps import SessionDep
from service.api.http_cache import http_cached
from service.api.pagination import decode_cursor, split_page
from service.api.presenters import latest_for_gpu
from service.catalog import lookup
from service.schemas.catalog import GpuDetail, GpuRead, Market, Vendor
from service.schemas.common import Format, Page, Problem

router = APIRouter(prefix="/gpus", tags=["gpus"])
CSV_COLUMNS = columns_for(GpuRead)


@router.get("", response_model=Page[GpuRead], responses={200: {"content": {"text/csv": {}}}})
@http_cached
def list_gpus(
    request: Request,
    session: SessionDep,
    vendor: Vendor | None = None,
    market: Market | None = None,
    min_memory_gb: Annotated[float | None, Query(ge=0, le=10_000, allow_inf_nan=False)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    format: Format | None = None,
) -> Page[GpuRead] | Response:
    after = decode_cursor(cursor, str)
    rows = lookup.list_gpus(
        session,
        vendor=vendor,
        market=market,
        min_memory_gb=min_memory_gb,
        after_slug=after,
        limit=limit + 1,
    )
    page, next_cursor = split_page(rows, limit, key=lambda gpu: gpu.slug)
    items = [GpuRead.model_validate(g) for g in page]
    if wants_csv(request, format):
        headers = {"X-Next-Cursor": next_cursor} if next_cursor else None
        return csv_response((g.model_dump(mode="json") for g in items), CSV_COLUMNS, headers)
    return Page[GpuRead](items=items, next_cursor=next_cursor)


@router.get("/{slug}", response_model=GpuDetail, responses={404: {"model": Problem}})
@http_cached
def get_gpu(slug: str, session: SessionDep) -> GpuDetail:
    gpu = lookup.gpu_by_slug(session, slug)
    assert gpu.id is not None
    read = GpuRead.model_validate(gpu)
    return GpuDetail.model_validate(
        {**read.model_dump(), "calibration": latest_for_gpu(session, gpu.id)}
    )
