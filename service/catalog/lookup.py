"""Database reads and writes shared by routers (no HTTP details beyond typed errors)."""

from collections.abc import Sequence

from fastapi.exceptions import RequestValidationError
from sqlmodel import Session, col, select

from service.core.errors import NotFound
from service.domain.matching import suggest
from service.models import Gpu, Workload


def gpu_by_slug(session: Session, slug: str) -> Gpu:
    gpu = session.exec(select(Gpu).where(Gpu.slug == slug)).first()
    if gpu is None:
        suggestions = suggest(slug, session.exec(select(Gpu.slug)).all())
        raise NotFound(f"unknown GPU '{slug}'", suggestions)
    return gpu


def workload_by_slug(session: Session, slug: str) -> Workload:
    workload = session.exec(select(Workload).where(Workload.slug == slug)).first()
    if workload is None:
        suggestions = suggest(slug, session.exec(select(Workload.slug)).all())
        raise NotFound(f"unknown workload '{slug}'", suggestions)
    return workload


def workload_or_422(session: Session, slug: str) -> Workload:
    workload = session.exec(select(Workload).where(Workload.slug == slug)).first()
    if workload is None:
        choices = session.exec(select(Workload.slug)).all()
        raise RequestValidationError(
            [
                {
                    "loc": ("query", "workload"),
                    "msg": f"unknown workload '{slug}'",
                    "type": "unknown_workload",
                    "suggestions": suggest(slug, choices),
                }
            ]
        )
    return workload


def list_gpus(
    session: Session,
    *,
    vendor: str | None = None,
    market: str | None = None,
    min_memory_gb: float | None = None,
    after_slug: str | None = None,
    limit: int | None = None,
) -> Sequence[Gpu]:
    query = select(Gpu).order_by(col(Gpu.slug))
    if vendor is not None:
        query = query.where(Gpu.vendor == vendor)
    if market is not None:
        query = query.where(Gpu.market == market)
    if min_memory_gb is not None:
        query = query.where(Gpu.memory_gb >= min_memory_gb)
    if after_slug is not None:
        query = query.where(col(Gpu.slug) > after_slug)
    if limit is not None:
        query = query.limit(limit)
    return session.exec(query).all()
