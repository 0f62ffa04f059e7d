"""The dependency that hands /rankings and /recommend a (cached) performance snapshot."""

from datetime import UTC, datetime

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from sqlmodel import Session, select

from service.domain.matching import suggest
from service.domain.prices import ConditionChoice
from service.models import Workload
from service.performance import Snapshot, SnapshotCache, build_snapshot
from service.settings import Settings


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


def snapshot_for(
    request: Request,
    session: Session,
    workload_slug: str,
    precision: str | None,
    condition: ConditionChoice,
) -> Snapshot:
    settings: Settings = request.app.state.settings
    cache: SnapshotCache = request.app.state.snapshots
    workload = workload_or_422(session, workload_slug)
    chosen_precision = precision or workload.precision
    today = datetime.now(UTC).date()
    key = (workload.slug, chosen_precision, condition, today)
    return cache.get(
        key,
        lambda: build_snapshot(
            session,
            workload,
            chosen_precision,
            condition,
            settings.reference_gpu,
            today,
            settings.price_max_age_days,
        ),
    )
