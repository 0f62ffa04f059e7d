"""What the database already holds for a batch's workloads, read once per batch.

One statement, after the gate has locked the batch's groups: every aggregate row of the
workloads the batch names, joined with its GPU's peak rates and bandwidth. Both later steps
use it: the peers step takes the accepted medians (n > 0) of every GPU as references, and the
statistics step the stored aggregate of each group the batch touches. (Before, these were three
statements: the medians, the peers' GPU rows, and the groups' aggregates.)
"""

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from sqlalchemy import select as sa_select
from sqlmodel import Session, SQLModel

from service.catalog.peaks import RATE_COLUMNS, rates_from_columns
from service.ingest.groups import AGGREGATE_VALUES, Aggregate
from service.ingest.peers import GpuSpec
from service.ingest.rows import GROUP_COLUMNS, GroupKey
from service.ingest.store import AGGREGATE_TABLE

GPU_TABLE = SQLModel.metadata.tables["gpu"]


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


def read_known(session: Session, workload_ids: Collection[int]) -> Known:
    known = Known()
    if not workload_ids:
        return known
    a, g = AGGREGATE_TABLE, GPU_TABLE
    query = (
        sa_select(
            *(a.c[c] for c in GROUP_COLUMNS),
            *(a.c[c] for c in AGGREGATE_VALUES),
            g.c.memory_bandwidth_gbs,
            *(g.c[c] for c in RATE_COLUMNS.values()),
        )
        .join_from(a, g, a.c.gpu_id == g.c.id)
        .where(a.c.workload_id.in_(workload_ids))
    )
    width = len(AGGREGATE_VALUES)
    for gid, wid, prec, count, *rest in session.execute(query).all():
        group = (gid, wid, prec, count)
        stored = tuple(rest[:width])
        known._aggregates[group] = stored
        if stored[1] > 0:  # n: accepted values
            known.medians[group] = stored[0]
        if gid not in known.specs:
            known.specs[gid] = GpuSpec(rates_from_columns(rest[width + 1 :]), rest[width])
    return known
