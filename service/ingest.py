"""The ingestion gate: schema (done by schemas.py) -> physics -> statistics -> stored.

A batch is stored in the caller's transaction: either every row lands with its status and
reason, or (on any unknown slug) nothing does. After the insert, every group the batch touched
is re-evaluated under a per-group lock, so statuses and aggregates stay consistent when two
batches hit the same group at once.
"""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, insert, tuple_, update
from sqlalchemy import select as sa_select
from sqlmodel import Session, SQLModel, col, select

from service.db import lock_keys, upsert
from service.domain.matching import suggest
from service.domain.outliers import outlier_flags, summarize
from service.domain.plausibility import PeakRates, exceeds_peak
from service.models import Aggregate, ApiKey, Gpu, Result, Workload, utcnow
from service.schemas import ResultIn

GroupKey = tuple[int, int, str, int]  # gpu_id, workload_id, precision, gpu_count
STATS_STATUSES = ("accepted", "outlier", "verified")  # values that shape a group's statistics
AGGREGATE_STATUSES = ("accepted", "verified")  # values that feed medians and rankings
RESULT_TABLE: Table = SQLModel.metadata.tables["result"]
AGGREGATE_TABLE: Table = SQLModel.metadata.tables["aggregate"]


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


def peak_rates(gpu: Gpu) -> PeakRates:
    return PeakRates(
        fp32=gpu.fp32_tflops,
        fp16_vector=gpu.fp16_tflops,
        tf32_tensor=gpu.tf32_tensor_tflops,
        fp16_tensor=gpu.fp16_tensor_tflops,
        bf16_tensor=gpu.bf16_tensor_tflops,
        fp8_tensor=gpu.fp8_tensor_tflops,
        int8=gpu.int8_tops,
    )


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


def store_results(session: Session, items: Sequence[ResultIn], submitter: ApiKey) -> list[int]:
    """Gate and insert `items`; return their ids in order. Does not commit."""
    gpus, workloads = _resolve(session, items)
    now = utcnow()
    rows: list[dict[str, Any]] = []
    for item in items:
        gpu, workload = gpus[item.gpu], workloads[item.workload]
        physically_possible = not exceeds_peak(
            item.value, workload.flops_per_unit, item.gpu_count, peak_rates(gpu), item.precision
        )
        rows.append(
            {
                **item.model_dump(exclude={"gpu", "workload"}),
                "gpu_id": gpu.id,
                "workload_id": workload.id,
                "status": "accepted" if physically_possible else "rejected",
                "reason": None if physically_possible else "exceeds_peak",
                "status_locked": False,
                "submitter_id": submitter.id,
                "created_at": now,
                "updated_at": now,
            }
        )
    ids = cast(list[int], list(session.scalars(insert(Result).returning(col(Result.id)), rows)))
    touched = {
        (row["gpu_id"], row["workload_id"], row["precision"], row["gpu_count"])
        for row in rows
        if row["status"] != "rejected"
    }
    refresh_groups(session, touched)
    return ids


def refresh_groups(session: Session, groups: Iterable[GroupKey]) -> None:
    """Re-run the statistics gate on whole groups and rewrite their aggregates.

    Rows an admin set by hand (status_locked) keep their status but still count in the group's
    statistics when their status is one of STATS_STATUSES.
    """
    groups = sorted(set(groups))
    if not groups:
        return
    lock_keys(session, (f"result-group:{g[0]}:{g[1]}:{g[2]}:{g[3]}" for g in groups))
    group_cols = [col(c) for c in (Result.gpu_id, Result.workload_id, Result.precision)]
    group_cols.append(col(Result.gpu_count))
    selected = [col(Result.id), col(Result.value), col(Result.status), col(Result.status_locked)]
    query = sa_select(*selected, *group_cols).where(
        tuple_(*group_cols).in_(groups), col(Result.status).in_(STATS_STATUSES)
    )
    members: dict[GroupKey, list[tuple[int, float, str, bool]]] = defaultdict(list)
    for rid, value, status, locked, gpu_id, workload_id, precision, gpu_count in session.execute(
        query
    ):
        members[(gpu_id, workload_id, precision, gpu_count)].append((rid, value, status, locked))

    to_accept: list[int] = []
    to_flag: list[dict[str, Any]] = []
    now = utcnow()
    for group in groups:
        rows = members.get(group, [])
        flags = outlier_flags([value for _, value, _, _ in rows])
        for (rid, _value, status, locked), z in zip(rows, flags, strict=True):
            if locked:
                continue
            if z is None and status == "outlier":
                to_accept.append(rid)
            elif z is not None:
                to_flag.append({"rid": rid, "reason": f"modified_z={z:+.1f}"})
        _write_aggregate(session, group, rows, flags)

    if to_accept:
        session.execute(
            update(Result)
            .where(col(Result.id).in_(to_accept))
            .values(status="accepted", reason=None, updated_at=now)
        )
    if to_flag:
        # executemany: one statement, one parameter set per flagged row
        session.connection().execute(
            update(RESULT_TABLE)
            .where(RESULT_TABLE.c.id == bindparam("rid"))
            .values(status="outlier", reason=bindparam("reason"), updated_at=now),
            to_flag,
        )


def _write_aggregate(
    session: Session,
    group: GroupKey,
    rows: list[tuple[int, float, str, bool]],
    flags: list[float | None],
) -> None:
    kept = [
        value
        for (_rid, value, status, locked), z in zip(rows, flags, strict=True)
        if (status in AGGREGATE_STATUSES if locked else z is None)
    ]
    gpu_id, workload_id, precision, gpu_count = group
    if not kept:
        session.execute(
            delete(Aggregate).where(
                col(Aggregate.gpu_id) == gpu_id,
                col(Aggregate.workload_id) == workload_id,
                col(Aggregate.precision) == precision,
                col(Aggregate.gpu_count) == gpu_count,
            )
        )
        return
    summary = summarize(kept)
    upsert(
        session,
        AGGREGATE_TABLE,
        {
            "gpu_id": gpu_id,
            "workload_id": workload_id,
            "precision": precision,
            "gpu_count": gpu_count,
            "median": summary.median,
            "n": summary.n,
            "mad": summary.mad,
            "updated_at": utcnow(),
        },
        keys=["gpu_id", "workload_id", "precision", "gpu_count"],
    )
