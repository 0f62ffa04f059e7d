"""The ingestion gate: schema (schemas.py) -> physics -> peers (peers.py) -> statistics -> stored.

A batch is stored in the caller's transaction: either every row lands with its status and
reason, or (on any unknown slug) nothing does. The statistics step (service.groups) runs under
per-group locks, so statuses and aggregates stay consistent when two batches hit the same group
at once.
"""

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from sqlmodel import Session

from service.catalog.lookup import by_slugs
from service.catalog.peaks import peak_rates
from service.core.db import insert_returning_ids
from service.core.errors import InvalidInput
from service.domain.plausibility import exceeds_peak
from service.ingest.groups import RESULT_TABLE, GroupKey, evaluate, group_key
from service.ingest.peers import check_peers
from service.models import ApiKey, Gpu, Workload, utcnow
from service.schemas.results import ResultIn, ResultOutcome


class BatchRejected(InvalidInput):
    """Some items reference unknown GPUs or workloads; nothing was stored. One error per
    unknown slug per item, in item order, each with suggestions."""


def _unknown_slug_errors(
    items: Sequence[ResultIn], field: str, unknown: dict[str, list[str]]
) -> list[dict[str, Any]]:
    return [
        {
            "loc": ["body", "results", index, field],
            "msg": f"unknown {field} '{slug}'",
            "type": f"unknown_{field}",
            "suggestions": unknown[slug],
        }
        for index, item in enumerate(items)
        if (slug := getattr(item, field)) in unknown
    ]


def _resolve(
    session: Session, items: Sequence[ResultIn]
) -> tuple[dict[str, Gpu], dict[str, Workload]]:
    """GPUs and workloads the batch names, by slug; BatchRejected if any is unknown."""
    gpus, unknown_gpus = by_slugs(session, Gpu, {item.gpu for item in items})
    workloads, unknown_workloads = by_slugs(session, Workload, {item.workload for item in items})
    errors = _unknown_slug_errors(items, "gpu", unknown_gpus)
    errors += _unknown_slug_errors(items, "workload", unknown_workloads)
    if errors:
        raise BatchRejected(sorted(errors, key=lambda e: e["loc"][2]))
    return gpus, workloads


def store_results(
    session: Session,
    items: Sequence[ResultIn],
    submitter: ApiKey,
    provenance: Sequence[Mapping[str, Any]] | None = None,
) -> list[ResultOutcome]:
    """Gate and insert `items` in the caller's transaction; their outcomes, in order.

    `provenance` (one mapping per item, optional) fills the result's source, importer,
    device_string and system: importers and the seed know them, a plain JSON post does not.
    """
    gpus, workloads = _resolve(session, items)
    now = utcnow()
    rates = {slug: peak_rates(gpu) for slug, gpu in gpus.items()}
    rows: list[dict[str, Any]] = []
    extras = provenance or [{} for _ in items]
    for item, extra in zip(items, extras, strict=True):
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
                "source": extra.get("source"),
                "importer": extra.get("importer", "json"),
                "device_string": extra.get("device_string"),
                "system": extra.get("system"),
            }
        )
    check_peers(session, rows, {w.id: w for w in workloads.values() if w.id is not None})
    by_group: dict[GroupKey, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["status"] == "accepted":  # rejected and peer-flagged rows skip statistics
            by_group[group_key(row)].append(row)
    evaluate(session, by_group)
    ids = insert_returning_ids(session, RESULT_TABLE, rows)
    return [
        ResultOutcome(id=rid, status=row["status"], reason=row["reason"])
        for rid, row in zip(ids, rows, strict=True)
    ]
