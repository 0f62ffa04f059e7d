"""The dependency that hands /rankings and /recommend a (cached) performance snapshot."""

from collections.abc import Callable, Hashable
from datetime import UTC, datetime

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
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


async def snapshot_for(
    request: Request, workload_slug: str, precision: str | None, condition: ConditionChoice
) -> Snapshot:
    """The snapshot for these parameters: from the cache without touching the database, or
    built (once) in the thread pool with a session of its own."""
    cache: SnapshotCache = request.app.state.snapshots
    today = datetime.now(UTC).date()
    key = (workload_slug, precision, condition, today)
    cached = cache.fresh(key)
    if cached is not None:
        return cached
    settings: Settings = request.app.state.settings
    engine = request.app.state.engine

    def build() -> Snapshot:
        with Session(engine) as session:
            workload = workload_or_422(session, workload_slug)
            return build_snapshot(
                session,
                workload,
                precision or workload.precision,
                condition,
                settings.reference_gpu,
                today,
                settings.price_max_age_days,
            )

    return await run_in_threadpool(cache.get, key, build)


MAX_ANSWERS_PER_SNAPSHOT = 4096


def cached_answer(snapshot: Snapshot, key: Hashable, build: Callable[[], Response]) -> Response:
    """The answer for `key` from this snapshot, computed once (common queries such as
    `budget=800` repeat; the cache goes with the snapshot when it is rebuilt)."""
    hit = snapshot.answers.get(key)
    if hit is None:
        response = build()
        extra = {k: v for k, v in response.headers.items() if k.startswith("x-")}
        hit = (bytes(response.body), response.media_type or "application/json", extra)
        if len(snapshot.answers) >= MAX_ANSWERS_PER_SNAPSHOT:
            snapshot.answers.clear()
        snapshot.answers[key] = hit
    body, media_type, headers = hit
    return Response(body, media_type=media_type, headers=headers)
