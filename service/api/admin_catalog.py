"""Admin writes to the catalog: add/update GPUs and workloads; price observations."""

from typing import Annotated

from fastapi import APIRouter, Query, status
from sqlmodel import col, select

from service.api.deps import ReadModelDep, SessionDep, WriteSessionDep
from service.api.responses import CONFLICT, NOT_FOUND, TOO_LARGE, WRITE_AUTH
from service.api.security import AdminKey
from service.catalog import lookup
from service.catalog.seed import gpu_row
from service.core.errors import Conflict
from service.domain.vocabulary import Condition
from service.models import Gpu, Price, Workload, utcnow
from service.schemas.catalog import (
    GpuCreate,
    GpuRead,
    GpuUpdate,
    PriceCreate,
    PriceRead,
    WorkloadCreate,
    WorkloadRead,
)
from service.schemas.common import Page

router = APIRouter(tags=["admin"])
_WRITE = WRITE_AUTH | NOT_FOUND | CONFLICT | TOO_LARGE


@router.post("/gpus", status_code=status.HTTP_201_CREATED, response_model=GpuRead, responses=_WRITE)
def create_gpu(
    body: GpuCreate, _admin: AdminKey, session: WriteSessionDep, reads: ReadModelDep
) -> GpuRead:
    if session.exec(select(Gpu.id).where(Gpu.slug == body.slug)).first() is not None:
        raise Conflict(f"GPU '{body.slug}' exists; PATCH /gpus/{body.slug} to change it")
    gpu = gpu_row(body)
    session.add(gpu)
    session.commit()
    reads.changed()
    session.refresh(gpu)
    return GpuRead.model_validate(gpu)


@router.patch("/gpus/{slug}", response_model=GpuRead, responses=_WRITE)
def update_gpu(
    slug: str, body: GpuUpdate, _admin: AdminKey, session: WriteSessionDep, reads: ReadModelDep
) -> GpuRead:
    gpu = lookup.gpu_by_slug(session, slug)
    changes = body.model_dump(exclude_unset=True)
    if "aliases" in changes:
        changes["aliases"] = "|".join(changes["aliases"] or [])
    for field, value in changes.items():
        setattr(gpu, field, value)
    gpu.updated_at = utcnow()
    session.add(gpu)
    session.commit()
    reads.changed()
    session.refresh(gpu)
    return GpuRead.model_validate(gpu)


@router.post(
    "/workloads",
    status_code=status.HTTP_201_CREATED,
    response_model=WorkloadRead,
    responses=_WRITE,
)
def create_workload(
    body: WorkloadCreate, _admin: AdminKey, session: WriteSessionDep, reads: ReadModelDep
) -> WorkloadRead:
    if session.exec(select(Workload.id).where(Workload.slug == body.slug)).first() is not None:
        raise Conflict(f"workload '{body.slug}' exists")
    workload = Workload(**body.model_dump())
    session.add(workload)
    session.commit()
    reads.changed()
    session.refresh(workload)
    return WorkloadRead.model_validate(workload)


def _price_read(price: Price, gpu_slug: str) -> PriceRead:
    return PriceRead.model_validate({**price.model_dump(), "gpu": gpu_slug})


@router.post(
    "/prices", status_code=status.HTTP_201_CREATED, response_model=PriceRead, responses=_WRITE
)
def create_price(
    body: PriceCreate, _admin: AdminKey, session: WriteSessionDep, reads: ReadModelDep
) -> PriceRead:
    gpu = lookup.gpu_by_slug(session, body.gpu)
    assert gpu.id is not None
    price = Price(gpu_id=gpu.id, **body.model_dump(exclude={"gpu"}))
    session.add(price)
    session.commit()
    reads.changed()
    session.refresh(price)
    return _price_read(price, gpu.slug)


@router.get("/prices", response_model=Page[PriceRead], tags=["prices"], responses=NOT_FOUND)
def list_prices(
    session: SessionDep,
    gpu: Annotated[str | None, Query(max_length=64)] = None,
    condition: Condition | None = None,
) -> Page[PriceRead]:
    query = (
        select(Price, Gpu.slug)
        .join(Gpu, col(Gpu.id) == Price.gpu_id)
        .order_by(col(Gpu.slug), col(Price.observed_at).desc(), col(Price.id).desc())
    )
    if gpu is not None:
        lookup.gpu_by_slug(session, gpu)  # 404 with suggestions for an unknown slug
        query = query.where(Gpu.slug == gpu)
    if condition is not None:
        query = query.where(Price.condition == condition)
    return Page[PriceRead](items=[_price_read(p, slug) for p, slug in session.exec(query)])
