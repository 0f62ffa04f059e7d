"""GET /calibrations: every stored calibration run, newest first, with its verdict."""

from typing import Annotated

from fastapi import APIRouter, Query
from sqlmodel import col

from service.api.deps import SessionDep
from service.api.pagination import id_page
from service.api.presenters import calibration_query, calibration_read
from service.catalog.lookup import by_slugs
from service.core.errors import InvalidInput
from service.models import Calibration, Gpu, Host
from service.schemas.calibration import CalibrationRead
from service.schemas.common import Page

router = APIRouter(tags=["calibration"])


@router.get("/calibrations", response_model=Page[CalibrationRead])
def list_calibrations(
    session: SessionDep,
    gpu: Annotated[str | None, Query(max_length=64)] = None,
    host: Annotated[str | None, Query(max_length=128)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> Page[CalibrationRead]:
    query = calibration_query()
    if gpu is not None:
        unknown = by_slugs(session, Gpu, [gpu])[1]
        if unknown:  # as /results: not an empty page that reads as "not calibrated yet"
            raise InvalidInput.one(
                ("query", "gpu"), f"unknown gpu {gpu!r}", "unknown_gpu", suggestions=unknown[gpu]
            )
        query = query.where(Gpu.slug == gpu)
    if host is not None:
        query = query.where(Host.name == host)
    page, next_cursor = id_page(
        session, query, col(Calibration.id), cursor, limit, newest_first=True
    )
    items = [calibration_read(*row) for row in page]
    return Page[CalibrationRead](items=items, next_cursor=next_cursor)
