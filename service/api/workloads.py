"""GET /workloads and GET /workloads/{slug}."""

from fastapi import APIRouter
from sqlmodel import col, select

from service.api.deps import SessionDep
from service.api.http_cache import http_cached
from service.catalog import lookup
from service.models import Workload
from service.read_model.profiles import scaling_data
from service.schemas.catalog import ScalingProfileRead, WorkloadRead
from service.schemas.common import Page, Problem

router = APIRouter(tags=["workloads"])


@router.get("/workloads", response_model=Page[WorkloadRead])
@http_cached
def list_workloads(session: SessionDep) -> Page[WorkloadRead]:
    rows = session.exec(select(Workload).order_by(col(Workload.slug))).all()
    return Page[WorkloadRead](items=[WorkloadRead.model_validate(w) for w in rows])


@router.get("/workloads/{slug}", response_model=WorkloadRead, responses={404: {"model": Problem}})
def get_workload(slug: str, session: SessionDep) -> WorkloadRead:
    return WorkloadRead.model_validate(lookup.workload_by_slug(session, slug))


@router.get("/scaling-profiles", response_model=Page[ScalingProfileRead])
def list_scaling_profiles(session: SessionDep) -> Page[ScalingProfileRead]:
    rows = scaling_data(session).rows()
    return Page[ScalingProfileRead](items=[ScalingProfileRead.model_validate(p) for p in rows])
