"""The peers step again, on stored accepted results: a stricter gate reaches an older database.

The gate judges a result once, when it arrives. When a peers rule gets stricter (the FP32
comparison across GPU counts that refuses Lambda's failed 16-GPU RTX A4000 WaveGlow fp16 cell),
a database seeded before keeps the row `accepted` and the model keeps learning from it, while a
fresh seed refuses it. The seed calls `rejudge_peers` on the shipped corpus's rows (its `seed:`
submitters) after storing new ones, so every `make run` converges on what a fresh seed holds.

- Only `accepted` rows that no admin has set (`status_locked`) are judged, and a row only ever
  moves to `outlier` with the peers step's sticky reason: nothing is deleted, and a verdict an
  admin gave is never undone.
- References are the medians of the corpus's own accepted rows, as when a fresh seed judged
  them in one batch, never what was posted since: one posted one-GPU result would otherwise
  move the median that a seeded multi-GPU cell is judged against (superlinear,
  no_faster_than_one_gpu) and flag cited data at the next seed. A row's own group is never
  its reference (the rules compare with the FP32 group, the 1-GPU group and other GPUs), so
  a fresh seed is a fixed point: judged again, its corpus gives no new outlier.
- The groups the flagged rows leave are re-evaluated whole (aggregates recomputed).
- Posted results are not re-judged here: a lab's accepted result does not change status
  behind its back when the service is upgraded.
"""

from collections.abc import Collection

from sqlmodel import Session, col, select

from service.ingest.groups import lock_groups, refresh_groups
from service.ingest.known import read_known
from service.ingest.peers import check_peers, workload_traits
from service.ingest.rows import GroupKey, NewRow
from service.models import Result, Workload, utcnow


def _as_new_row(r: Result) -> NewRow:
    return NewRow(
        gpu_id=r.gpu_id,
        workload_id=r.workload_id,
        value=r.value,
        precision=r.precision,
        gpu_count=r.gpu_count,
        batch_size=r.batch_size,
        framework=r.framework,
        framework_version=r.framework_version,
        driver=r.driver,
        cuda=r.cuda,
        notes=r.notes,
        status="accepted",
        reason=None,
        submitter_id=r.submitter_id,
        created_at=r.created_at,
        updated_at=r.updated_at,
    )


def rejudge_peers(session: Session, submitter_ids: Collection[int]) -> list[Result]:
    """Flag, in the caller's transaction, the accepted results of `submitter_ids` that the
    peers step refuses today; the flagged results, with their new status and reason."""
    if not submitter_ids:
        return []
    stored = session.exec(
        select(Result).where(
            Result.status == "accepted",
            col(Result.status_locked).is_(False),
            col(Result.submitter_id).in_(list(submitter_ids)),
        )
    ).all()
    if not stored:
        return []
    rows = [_as_new_row(r) for r in stored]
    lock_groups(session, sorted({row.group for row in rows}))
    # an accepted row's group has an aggregate, so known.specs holds every GPU judged here
    known = read_known(session, {r.workload_id for r in stored})
    memory_bound, layer_split = workload_traits(
        session.exec(select(Workload.id, Workload.memory_bound, Workload.quant, Workload.phase))
    )
    check_peers(rows, {}, known.specs, memory_bound, layer_split)  # the corpus judges itself
    flagged: list[Result] = []
    groups: set[GroupKey] = set()
    now = utcnow()
    for result, row in zip(stored, rows, strict=True):
        if row.status == "accepted":
            continue
        result.status, result.reason, result.updated_at = row.status, row.reason, now
        session.add(result)
        flagged.append(result)
        groups.add(row.group)
    if flagged:
        session.flush()
        refresh_groups(session, sorted(groups))
    return flagged
