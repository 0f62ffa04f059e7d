"""The ingestion gate: schema (schemas.py) -> physics -> peers (peers.py) -> statistics -> stored.

A batch is stored in the caller's transaction: either every row lands with its status and
reason, or (on any unknown slug) nothing does. The batch's groups are locked before anything
stored is read (groups.lock_groups), so statuses and aggregates stay consistent when two
batches hit the same group at once.

Statements per batch (Postgres): the GPUs and workloads by slug (2), the group locks (1), what
the batch's workloads already hold (known.py, 1), the members of groups due a full pass (1),
status changes of stored results (0 or 1), the aggregates (1), ids and COPY of the rows (2).
"""

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from sqlmodel import Session

from service.catalog.llm import decode_bytes_floor_of
from service.catalog.lookup import by_slugs
from service.catalog.peaks import peak_rates
from service.core.errors import InvalidInput
from service.domain.plausibility import (
    NO_FP8_UNITS,
    exceeds_bandwidth,
    exceeds_peak,
    gpus_in_parallel,
    lacks_fp8_units,
)
from service.domain.vocabulary import precisions_for
from service.ingest.groups import evaluate_locked, lock_groups
from service.ingest.known import read_known
from service.ingest.peers import GpuSpec, check_peers, workload_traits
from service.ingest.rows import GroupKey, NewRow
from service.ingest.store import insert_results
from service.models import ApiKey, Gpu, Workload, utcnow
from service.schemas.results import ResultIn, ResultOutcome


class BatchRejected(InvalidInput):
    """Some items reference unknown GPUs or workloads or a precision their workload cannot
    run at; nothing was stored. One error per such field per item, in item order, at
    ["body", "results", index, field]."""


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


def _precision_errors(
    items: Sequence[ResultIn], workloads: Mapping[str, Workload]
) -> list[dict[str, Any]]:
    """Rows at a precision their workload cannot run at (ResNet-50 training at q4_k_m, a
    llama-bench Q4_K_M workload at fp16): refused with the batch, as the reads refuse the ask."""
    errors: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        workload = workloads.get(item.workload)
        if workload is None:
            continue
        allowed = precisions_for(workload.precision, workload.quant is not None)
        if item.precision not in allowed:
            errors.append(
                {
                    "loc": ["body", "results", index, "precision"],
                    "msg": f"{workload.slug} cannot run at {item.precision}; it takes "
                    + ", ".join(allowed),
                    "type": "precision_not_applicable",
                    "allowed": list(allowed),
                }
            )
    return errors


def _resolve(
    session: Session, items: Sequence[ResultIn]
) -> tuple[dict[str, Gpu], dict[str, Workload]]:
    """GPUs and workloads the batch names, by slug; BatchRejected if any is unknown."""
    gpus, unknown_gpus = by_slugs(session, Gpu, {item.gpu for item in items})
    workloads, unknown_workloads = by_slugs(session, Workload, {item.workload for item in items})
    errors = _unknown_slug_errors(items, "gpu", unknown_gpus)
    errors += _unknown_slug_errors(items, "workload", unknown_workloads)
    errors += _precision_errors(items, workloads)
    if errors:
        raise BatchRejected(sorted(errors, key=lambda e: e["loc"][2]))
    return gpus, workloads


def _new_rows(
    items: Sequence[ResultIn],
    extras: Sequence[Mapping[str, Any]],
    gpus: Mapping[str, Gpu],
    workloads: Mapping[str, Workload],
    submitter_id: int | None,
    layer_split: Collection[int],
) -> list[NewRow]:
    """The batch as result rows, each with its physics verdict; `layer_split`: the workload
    ids whose multi-GPU decode reads its GPUs in turn (peers.workload_traits)."""
    now = utcnow()
    # What each row needs of its GPU and workload, read off the ORM objects once per batch.
    gpu_of = {
        slug: (gpu.id, peak_rates(gpu), gpu.memory_bandwidth_gbs, gpu.architecture)
        for slug, gpu in gpus.items()
    }
    workload_of = {
        slug: (
            w.id,
            w.flops_per_unit,
            decode_bytes_floor_of(w.model, w.quant, w.phase),
            bool(w.model) and w.memory_bound,  # an LLM's decode: FP8 weights run weight-only
            w.id in layer_split,
        )
        for slug, w in workloads.items()
    }
    rows: list[NewRow] = []
    for item, extra in zip(items, extras, strict=True):
        (
            (gpu_id, rates, bandwidth, architecture),
            (workload_id, flops, bytes_per_unit, decode, layers),
        ) = (
            gpu_of[item.gpu],
            workload_of[item.workload],
        )
        assert gpu_id is not None and workload_id is not None
        reason = None
        reading = gpus_in_parallel(item.gpu_count, layers)  # at once, per decoded token
        if lacks_fp8_units(item.precision, rates, architecture, decode):
            reason = NO_FP8_UNITS
        elif exceeds_peak(item.value, flops, item.gpu_count, rates, item.precision):
            reason = "exceeds_peak"
        elif exceeds_bandwidth(item.value, bytes_per_unit, reading, bandwidth):
            reason = "exceeds_bandwidth"
        possible = reason is None
        rows.append(
            NewRow(
                gpu_id=gpu_id,
                workload_id=workload_id,
                value=item.value,
                precision=item.precision,
                gpu_count=item.gpu_count,
                batch_size=item.batch_size,
                framework=item.framework,
                framework_version=item.framework_version,
                driver=item.driver,
                cuda=item.cuda,
                notes=item.notes,
                status="accepted" if possible else "rejected",
                reason=reason,
                submitter_id=submitter_id,
                created_at=now,
                updated_at=now,
                source=extra.get("source"),
                importer=extra.get("importer", "json"),
                device_string=extra.get("device_string"),
                system=extra.get("system"),
            )
        )
    return rows


def _batch_specs(gpus: Iterable[Gpu]) -> dict[int, GpuSpec]:
    return {g.id: GpuSpec(peak_rates(g), g.memory_bandwidth_gbs) for g in gpus if g.id is not None}


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
    memory_bound, layer_split = workload_traits(
        (w.id, w.memory_bound, w.quant, w.phase) for w in workloads.values()
    )
    extras = provenance or [{}] * len(items)
    rows = _new_rows(items, extras, gpus, workloads, submitter.id, layer_split)
    possible = [row for row in rows if row.status == "accepted"]
    # Lock every group a row may still join, then read what the peers and statistics steps need
    # in one statement; rows the peers step flags leave their group's lock unused.
    lock_groups(session, sorted({row.group for row in possible}))
    known = read_known(session, {row.workload_id for row in possible})
    specs = {**known.specs, **_batch_specs(gpus.values())}
    check_peers(possible, known.medians, specs, memory_bound, layer_split)
    by_group: dict[GroupKey, list[NewRow]] = defaultdict(list)
    for row in possible:
        if row.status == "accepted":  # peer-flagged rows skip statistics
            by_group[row.group].append(row)
    evaluate_locked(session, by_group, known.aggregates(by_group))
    ids = insert_results(session, rows)
    return [
        ResultOutcome(id=rid, status=row.status, reason=row.reason)
        for rid, row in zip(ids, rows, strict=True)
    ]
