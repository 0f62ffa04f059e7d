"""GET /calibrations: every stored calibration run, newest first, with its verdict."""

from typing import Annotated

from fastapi import APIRouter, Query
from sqlmodel import col

from service.api.deps import SessionDep
from service.api.pagination import decode_cursor, split_page
from service.api.presenters import calibration_query, calibration_read
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
    query = calibration_query().order_by(col(Calibration.id).desc())
    if gpu is not None:
        query = query.where(Gpu.slug == gpu)
    if host is not None:
        query = query.where(Host.name == host)
    before = decode_cursor(cursor, int)
    if before is not None:
        query = query.where(col(Calibration.id) < before)
    rows = session.exec(query.limit(limit + 1)).all()
    page, next_cursor = split_page(rows, limit, key=lambda row: row[0].id)
    items = [calibration_read(*row) for row in page]
    return Page[CalibrationRead](items=items, next_cursor=next_cursor)
