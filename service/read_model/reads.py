"""Reads through the caches: the (cached) snapshot for a key, and storing a finished answer."""

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from fastapi.concurrency import run_in_threadpool
from sqlalchemy.engine import Engine
from sqlmodel import Session
from starlette.responses import Response
from starlette.types import Scope

from service.catalog.lookup import workload_by_slug
from service.core.errors import InvalidInput, UnknownSlug
from service.core.settings import Settings
from service.domain import llm_fit
from service.domain.tco import CostSettings
from service.domain.vocabulary import ConditionChoice, precisions_for
from service.models import Workload
from service.read_model import llm as llm_rows
from service.read_model.answer_cache import AnswerCache
from service.read_model.llm import LlmRead
from service.read_model.rows import RecommendationAsk, ranking_rows, recommendation_rows
from service.read_model.snapshot import Snapshot, SnapshotKey, build_snapshot, utc_today
from service.read_model.snapshot_cache import SnapshotCache
from service.schemas.rankings import RankingItem, RankingSort, Recommendation


def _query_workload(session: Session, slug: str) -> Workload:
    """The workload a read asks for; an unknown one is a 422 naming the query parameter."""
    try:
        return workload_by_slug(session, slug)
    except UnknownSlug as exc:
        raise InvalidInput.one(
            ("query", "workload"), exc.detail, "unknown_workload", suggestions=exc.suggestions
        ) from None


def _query_precision(workload: Workload, precision: str | None) -> str:
    """The precision a read asks for (the workload's own by default); one the workload cannot
    run at is a 422 naming the query parameter and the precisions it can."""
    if precision is None:
        return workload.precision
    allowed = precisions_for(workload.precision, workload.quant is not None)
    if precision not in allowed:
        raise InvalidInput.one(
            ("query", "precision"),
            f"{workload.slug} cannot run at {precision}: it is asked at "
            + ", ".join(allowed)
            + (" (its weight format is fixed)" if len(allowed) == 1 else "")
            + "; a model's weight format is asked with model=...&quant=...",
            "precision_not_applicable",
            allowed=list(allowed),
        )
    return precision


def snapshot_key(
    workload_slug: str,
    precision: str | None,
    condition: ConditionChoice,
    allow_stale: bool = False,
) -> SnapshotKey:
    return SnapshotKey(workload_slug, precision, condition, utc_today(), allow_stale)


R = TypeVar("R")


@dataclass(frozen=True)
class Rows(Generic[R]):
    """Finished rows of one read, with the snapshot they came from (for storing the answer)."""

    key: SnapshotKey
    snapshot: Snapshot
    rows: list[R]
    min_memory_gb: float  # the one asked for, else the workload's
    hint: str | None = None  # when there are no rows: which data is missing or what would fit


class ReadModel:
    """What the read routes go through: snapshots from their cache (built once, in the thread
    pool, when missing or stale) and the answer cache that stores finished answers."""

    def __init__(
        self, engine: Engine, settings: Settings, snapshots: SnapshotCache, answers: AnswerCache
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.snapshots = snapshots
        self.answers = answers

    def changed(self) -> None:
        """Data behind the snapshots was written and committed (results, prices, catalog rows,
        an accepted calibration): this process's snapshots and answers are stale from now on.
        Called by the code that wrote, never for writes that no read depends on (heartbeats,
        keys, job leases)."""
        self.snapshots.invalidate()

    async def snapshot(self, key: SnapshotKey) -> Snapshot:
        """The snapshot for `key`: from the cache without touching the database, or built
        (once) in the thread pool with a session of its own."""
        cached = self.snapshots.fresh(key)
        if isinstance(cached, Snapshot):
            return cached
        settings, engine = self.settings, self.engine

        def build() -> Snapshot:
            with Session(engine) as session:
                workload = _query_workload(session, key.workload)
                return build_snapshot(
                    session,
                    workload,
                    _query_precision(workload, key.precision),
                    key.condition,
                    settings.reference_gpu,
                    key.day,
                    settings.price_max_age_days,
                    key.allow_stale,
                    mixed_precision=key.precision is None,
                )

        return await run_in_threadpool(self.snapshots.get, key, build)

    async def _snapshot_for(
        self,
        workload: str | None,
        precision: str | None,
        condition: ConditionChoice,
        allow_stale: bool = False,
    ) -> tuple[SnapshotKey, Snapshot]:
        key = snapshot_key(
            workload or self.settings.default_workload, precision, condition, allow_stale
        )
        return key, await self.snapshot(key)

    async def rankings(
        self,
        workload: str | None,
        precision: str | None,
        condition: ConditionChoice,
        min_memory_gb: float | None,
        sort: RankingSort,
        costs: CostSettings | None = None,
        allow_stale: bool = False,
        stack: str | None = None,
    ) -> Rows[RankingItem]:
        key, snapshot = await self._snapshot_for(workload, precision, condition, allow_stale)
        need = snapshot.min_memory_gb
        min_memory = need if min_memory_gb is None else min_memory_gb
        if snapshot.layer_split:  # a row is one GPU: it must hold the model file, whatever is asked
            min_memory = max(min_memory, need)
        return Rows(
            key, snapshot, ranking_rows(snapshot, min_memory, sort, costs, stack), min_memory
        )

    async def recommendations(self, ask: RecommendationAsk) -> Rows[Recommendation]:
        key, snapshot = await self._snapshot_for(
            ask.workload, ask.precision, ask.condition, ask.allow_stale
        )
        wanted, need = ask.min_memory_gb, snapshot.min_memory_gb
        min_memory = need if wanted is None else wanted
        if snapshot.layer_split:
            # a model file's weights, whatever min_memory_gb asks: split over the GPUs of a
            # configuration (llama.cpp's layer split), or whole on each independent one
            split = ask.mode == "parallel"
            per_gpu = max(wanted or 0.0, 0.0 if split else need)
            rows, hint = recommendation_rows(snapshot, ask, per_gpu, need if split else 0.0)
        else:
            rows, hint = recommendation_rows(snapshot, ask, min_memory)
        return Rows(key, snapshot, rows, min_memory, hint)

    async def llm(
        self, condition: ConditionChoice, ask: llm_fit.Ask, allow_stale: bool = False
    ) -> LlmRead:
        """A language-model ask's data (read_model/llm/), cached beside the snapshots."""
        return await llm_rows.read(
            self.engine, self.settings, self.snapshots, condition, ask, allow_stale
        )

    def stored(self, scope: Scope, read: Rows[Any] | LlmRead, answer: Response) -> Response:
        """`answer` (computed from `read`), kept for repeats of this request
        (ServeCachedAnswers answers them while its snapshot is current)."""
        self.answers.store(scope, read.key, read.snapshot, answer)
        return answer
