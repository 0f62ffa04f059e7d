"""GET /gpus and GET /gpus/{slug}."""

from typing import Annotated

from fastapi import APIRouter, Query

from service import crud
from service.api.deps import SessionDep
from service.api.pagination import decode_cursor, encode_cursor
from service.schemas import GpuRead, Market, Page, Problem, Vendor

router = APIRouter(prefix="/gpus", tags=["gpus"])


@router.get("", response_model=Page[GpuRead])
def list_gpus(
    session: SessionDep,
    vendor: Vendor | None = None,
    market: Market | None = None,
    min_memory_gb: Annotated[float | None, Query(ge=0, le=10_000)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> Page[GpuRead]:
    after = decode_cursor(cursor, str)
    rows = crud.list_gpus(
        session,
        vendor=vendor,
        market=market,
        min_memory_gb=min_memory_gb,
        after_slug=after,
        limit=limit + 1,
    )
    page = rows[:limit]
    next_cursor = encode_cursor(page[-1].slug) if len(rows) > limit else None
    return Page[GpuRead](items=[GpuRead.model_validate(g) for g in page], next_cursor=next_cursor)


@router.get("/{slug}", response_model=GpuRead, responses={404: {"model": Problem}})
def get_gpu(slug: str, session: SessionDep) -> GpuRead:
    return GpuRead.model_validate(crud.gpu_by_slug(session, slug))
