"""Seed the shipped measured corpus through the ingestion gate (issue 11 section 1).

Design decisions:
- Same gate as POST /results (schema via ResultIn, physics, peers, statistics): a shipped
  number earns its status like a posted one.
- One submitter per source: an api_key row named `seed:<source>` (role submitter). Its secret is
  generated and dropped at once: nobody can post as a source.
- Idempotent by content: a corpus row already stored under its source's submitter (same GPU,
  workload, precision, count, value, citation, system, device string) is not sent again, so a
  re-seed stores nothing twice and never touches a status an admin set.
- Rows whose GPU or workload is not in the database are skipped and counted, never guessed;
  rows the schema refuses (e.g. a precision the API does not know yet) are counted as invalid.
- Then the corpus's stored accepted rows are judged again by the peers step
  (service/ingest/rejudge.py), so a database seeded before a stricter rule refuses what a fresh
  seed refuses; counted as `rejudged`.
"""

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from service.auth import create_api_key
from service.catalog.corpus import CorpusRow, load_corpus
from service.domain.vocabulary import precisions_for
from service.ingest.gate import store_results
from service.ingest.rejudge import rejudge_peers
from service.models import ApiKey, Gpu, Result, Workload
from service.schemas.results import MAX_BATCH, ResultIn

SEED_PREFIX = "seed:"

_IDENTITY_COLUMNS = (
    "gpu_id",
    "workload_id",
    "precision",
    "gpu_count",
    "value",
    "source",
    "system",
    "device_string",
)
Identity = tuple[int, int, str, int, float, str | None, str | None, str | None]


@dataclass
class ResultSeedReport:
    stored: int = 0
    already: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    skipped_gpu: Counter[str] = field(default_factory=Counter)
    skipped_workload: Counter[str] = field(default_factory=Counter)
    invalid: int = 0
    rejudged: Counter[str] = field(default_factory=Counter)  # reason -> stored rows now outliers


def _submitter(session: Session, source_key: str, keys: dict[str, ApiKey]) -> ApiKey:
    name = SEED_PREFIX + source_key
    if name not in keys:
        key, _secret = create_api_key(session, name, "submitter")  # secret dropped on purpose
        keys[name] = key
    return keys[name]


def _stored_identities(session: Session, submitter_ids: list[int]) -> set[Identity]:
    if not submitter_ids:
        return set()
    rows = session.execute(
        sa_select(*(col(getattr(Result, c)) for c in _IDENTITY_COLUMNS)).where(
            col(Result.submitter_id).in_(submitter_ids)
        )
    ).all()
    return {tuple(r) for r in rows}


def _item(row: CorpusRow) -> ResultIn:
    return ResultIn.model_validate(
        {
            "gpu": row.gpu,
            "workload": row.workload,
            "value": row.value,
            "precision": row.precision,
            "gpu_count": row.gpu_count,
            "batch_size": row.batch_size,
            "framework": row.framework,
            "framework_version": row.framework_version,
            "notes": row.note,
        }
    )


def _references_first(entry: tuple[ResultIn, dict[str, Any]]) -> tuple[bool, bool]:
    """Single-GPU rows before multi-GPU rows, FP32 before reduced precision (a stable sort):
    the gate's peers step judges a multi-GPU row by the same GPU's single-GPU median and a
    reduced-precision row by its FP32 median, stored or in the same batch, so a source's
    references must not arrive in a later batch than the rows they judge."""
    item = entry[0]
    return item.gpu_count != 1, item.precision != "fp32"


def seed_results(session: Session, rows: list[CorpusRow] | None = None) -> ResultSeedReport:
    """Store corpus rows not stored yet, in the caller's transaction."""
    report = ResultSeedReport()
    corpus = load_corpus() if rows is None else rows
    gpus: dict[str, int] = {s: i for s, i in session.exec(select(Gpu.slug, Gpu.id)) if i}
    workloads: dict[str, int] = {}
    precisions: dict[str, tuple[str, ...]] = {}  # what each workload can run at (the gate's rule)
    for slug, wid, own, quant in session.exec(
        select(Workload.slug, Workload.id, Workload.precision, Workload.quant)
    ):
        if wid:
            workloads[slug] = wid
            precisions[slug] = precisions_for(own, quant is not None)
    keys = {
        k.name: k
        for k in session.exec(select(ApiKey).where(col(ApiKey.name).startswith(SEED_PREFIX)))
    }
    seen = _stored_identities(session, [k.id for k in keys.values() if k.id is not None])
    pending: dict[str, list[tuple[ResultIn, dict[str, Any]]]] = {}
    for row in corpus:
        if row.gpu not in gpus:
            report.skipped_gpu[row.gpu] += 1
            continue
        if row.workload not in workloads:
            report.skipped_workload[row.workload] += 1
            continue
        source = f"{row.source} ({row.source_date})" if row.source_date else row.source
        identity: Identity = (
            gpus[row.gpu],
            workloads[row.workload],
            row.precision,
            row.gpu_count,
            row.value,
            source,
            row.system,
            row.device_string,
        )
        if identity in seen:
            report.already += 1
            continue
        seen.add(identity)
        if row.precision not in precisions[row.workload]:
            report.invalid += 1  # the gate would refuse its whole batch
            continue
        try:
            item = _item(row)
        except ValidationError:
            report.invalid += 1
            continue
        extra = {
            "source": source,
            "importer": "seed",
            "device_string": row.device_string,
            "system": row.system,
        }
        pending.setdefault(row.source_key, []).append((item, extra))
    for source_key, entries in pending.items():
        submitter = _submitter(session, source_key, keys)
        entries.sort(key=_references_first)
        for start in range(0, len(entries), MAX_BATCH):
            chunk = entries[start : start + MAX_BATCH]
            outcomes = store_results(
                session, [i for i, _ in chunk], submitter, [e for _, e in chunk]
            )
            report.stored += len(outcomes)
            report.statuses.update(o.status for o in outcomes)
    submitter_ids = [k.id for k in keys.values() if k.id is not None]
    report.rejudged.update(r.reason or "" for r in rejudge_peers(session, submitter_ids))
    return report
