"""What the database already holds for a batch's workloads, read once per batch.

One statement, after the gate has locked the batch's groups: every aggregate row of the
workloads the batch names, and (UNION ALL, NULL-padded) the peak rates and bandwidth of each
GPU those rows name. Both later steps use it: the peers step takes the accepted medians
(n > 0) of every GPU as references, and the statistics step the stored aggregate of each group
the batch touches. (Before, these were three statements: the medians, the peers' GPU rows, and
the groups' aggregates.) A join would repeat a GPU's 8 spec columns on each of its ~30 groups,
and loading those values was most of the statement's cost (2,400 rows: 13.6 ms against 8.6 ms
on Postgres).
"""

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import literal, null, union_all
from sqlalchemy import select as sa_select
from sqlmodel import Session, SQLModel

from service.catalog.peaks import RATE_COLUMNS, rates_from_columns
from service.ingest.groups import AGGREGATE_VALUES, Aggregate
from service.ingest.peers import GpuSpec
from service.ingest.rows import GROUP_COLUMNS, GroupKey
from service.ingest.store import AGGREGATE_TABLE

GPU_TABLE = SQLModel.metadata.tables["gpu"]
_GROUP, _GPU = 0, 1  # the kinds of row the statement returns


@dataclass
class Known:
    medians: dict[GroupKey, float] = field(default_factory=dict)  # accepted median, n > 0
    specs: dict[int, GpuSpec] = field(default_factory=dict)  # GPUs with an aggregate here
    _aggregates: dict[GroupKey, tuple[object, ...]] = field(default_factory=dict)

    def aggregates(self, groups: Iterable[GroupKey]) -> dict[GroupKey, Aggregate]:
        """The stored aggregate of each of `groups` that has one."""
        return {
            g: Aggregate.from_values(values)
            for g in groups
            if (values := self._aggregates.get(g)) is not None
        }


def _query(workload_ids: Collection[int]) -> Any:
    a, g = AGGREGATE_TABLE, GPU_TABLE
    in_workloads = a.c.workload_id.in_(workload_ids)
    spec_columns = [g.c.memory_bandwidth_gbs, *(g.c[c] for c in RATE_COLUMNS.values())]
    groups = sa_select(
        literal(_GROUP).label("kind"),
        *(a.c[c] for c in GROUP_COLUMNS),
        *(a.c[c] for c in AGGREGATE_VALUES),
        *(null() for _ in spec_columns),
    ).where(in_workloads)
    gpus = sa_select(
        literal(_GPU),
        g.c.id,
        *(null() for _ in GROUP_COLUMNS[1:] + AGGREGATE_VALUES),
        *spec_columns,
    ).where(g.c.id.in_(sa_select(a.c.gpu_id).where(in_workloads)))
    return union_all(groups, gpus)


def read_known(session: Session, workload_ids: Collection[int]) -> Known:
    known = Known()
    if not workload_ids:
        return known
    width = len(AGGREGATE_VALUES)
    for kind, gid, wid, prec, count, *rest in session.execute(_query(workload_ids)).all():
        if kind == _GPU:
            known.specs[gid] = GpuSpec(rates_from_columns(rest[width + 1 :]), rest[width])
            continue
        group = (gid, wid, prec, count)
        stored = tuple(rest[:width])
        known._aggregates[group] = stored
        if stored[1] > 0:  # n: accepted values
            known.medians[group] = stored[0]
    return known
