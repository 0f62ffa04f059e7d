"""The ingestion gate: schema (done by schemas.py) -> physics -> statistics -> stored.

A batch is stored in the caller's transaction: either every row lands with its status and
reason, or (on any unknown slug) nothing does. The statistics step (service.groups) runs under
per-group locks, so statuses and aggregates stay consistent when two batches hit the same group
at once.
"""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session, col, select

from service.catalog.peaks import peak_rates
from service.core.db import insert_returning_ids
from service.domain.matching import suggest
from service.domain.plausibility import exceeds_peak
from service.ingest.groups import RESULT_TABLE, GroupKey, evaluate, group_key
from service.models import ApiKey, Gpu, Workload, utcnow
from service.schemas.results import ResultIn, ResultOutcome


@dataclass(frozen=True)
class ItemError:
    index: int
    field: str
    message: str
    kind: str
    suggestions: list[str]

    def as_detail(self) -> dict[str, Any]:
        return {
            "loc": ["body", "results", self.index, self.field],
            "msg": self.message,
            "type": self.kind,
            "suggestions": self.suggestions,
        }


class BatchRejected(Exception):
    """Some items reference unknown GPUs or workloads; nothing was stored."""

    def __init__(self, errors: list[ItemError]) -> None:
        super().__init__(f"{len(errors)} invalid items")
        self.errors = errors


def _unknown_slug_errors(
    session: Session, items: Sequence[ResultIn], field: str, known: set[str], model: Any
) -> list[ItemError]:
    missing = [
        (i, getattr(item, field))
        for i, item in enumerate(items)
        if getattr(item, field) not in known
    ]
    if not missing:
        return []
    choices = list(session.exec(select(model.slug)).all())
    return [
        ItemError(
            index, field, f"unknown {field} '{slug}'", f"unknown_{field}", suggest(slug, choices)
        )
        for index, slug in missing
    ]


def _resolve(
    session: Session, items: Sequence[ResultIn]
) -> tuple[dict[str, Gpu], dict[str, Workload]]:
    """GPUs and workloads the batch names, by slug; BatchRejected if any is unknown."""
    gpu_slugs = {item.gpu for item in items}
    workload_slugs = {item.workload for item in items}
    gpus = {g.slug: g for g in session.exec(select(Gpu).where(col(Gpu.slug).in_(gpu_slugs)))}
    workloads = {
        w.slug: w
        for w in session.exec(select(Workload).where(col(Workload.slug).in_(workload_slugs)))
    }
    errors = _unknown_slug_errors(session, items, "gpu", set(gpus), Gpu)
    errors += _unknown_slug_errors(session, items, "workload", set(workloads), Workload)
    if errors:
        raise BatchRejected(sorted(errors, key=lambda e: e.index))
    return gpus, workloads


def store_results(
    session: Session, items: Sequence[ResultIn], submitter: ApiKey
) -> list[ResultOutcome]:
    """Gate and insert `items` in the caller's transaction; their outcomes, in order."""
    gpus, workloads = _resolve(session, items)
    now = utcnow()
    rates = {slug: peak_rates(gpu) for slug, gpu in gpus.items()}
    rows: list[dict[str, Any]] = []
    for item in items:
        gpu, workload = gpus[item.gpu], workloads[item.workload]
        possible = not exceeds_peak(
            item.value, workload.flops_per_unit, item.gpu_count, rates[item.gpu], item.precision
        )
        rows.append(
            {
                **item.model_dump(exclude={"gpu", "workload"}),
                "gpu_id": gpu.id,
                "workload_id": workload.id,
                "status": "accepted" if possible else "rejected",
                "reason": None if possible else "exceeds_peak",
                "status_locked": False,
                "submitter_id": submitter.id,
                "created_at": now,
                "updated_at": now,
            }
        )
    by_group: dict[GroupKey, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["status"] != "rejected":
            by_group[group_key(row)].append(row)
    evaluate(session, by_group)
    ids = insert_returning_ids(session, RESULT_TABLE, rows)
    return [
        ResultOutcome(id=rid, status=row["status"], reason=row["reason"])
        for rid, row in zip(ids, rows, strict=True)
    ]
