"""The dependency that hands /rankings and /recommend a (cached) performance snapshot."""

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from sqlmodel import Session, select

from service.answer_cache import AnswerCache
from service.domain.matching import suggest
from service.domain.prices import ConditionChoice
from service.models import Workload
from service.performance import Snapshot, SnapshotCache, SnapshotKey, build_snapshot, utc_today
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


def snapshot_key(
    workload_slug: str, precision: str | None, condition: ConditionChoice
) -> SnapshotKey:
    return SnapshotKey(workload_slug, precision, condition, utc_today())


async def snapshot_for(request: Request, key: SnapshotKey) -> Snapshot:
    """The snapshot for `key`: from the cache without touching the database, or built (once)
    in the thread pool with a session of its own."""
    cache: SnapshotCache = request.app.state.snapshots
    cached = cache.fresh(key)
    if cached is not None:
        return cached
    settings: Settings = request.app.state.settings
    engine = request.app.state.engine

    def build() -> Snapshot:
        with Session(engine) as session:
            workload = workload_or_422(session, key.workload)
            return build_snapshot(
                session,
                workload,
                key.precision or workload.precision,
                key.condition,
                settings.reference_gpu,
                key.day,
                settings.price_max_age_days,
            )

    return await run_in_threadpool(cache.get, key, build)


def stored_answer(
    request: Request, key: SnapshotKey, snapshot: Snapshot, answer: Response
) -> Response:
    """`answer`, kept for repeats of this request (ServeCachedAnswers answers them)."""
    answers: AnswerCache = request.app.state.answers
    answers.store(request.scope, key, snapshot, answer)
    return answer
