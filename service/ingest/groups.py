"""Re-evaluating result groups: the statistics gate's statuses and the group aggregates.

A group is (gpu, workload, precision, gpu_count). Writers lock the groups they touch, then:

- small groups (under FULL_PASS_BELOW results) and groups that grew by REEVALUATE_GROWTH since
  their last full pass are re-evaluated whole: every result's status is decided again from the
  group's median and MAD, and the aggregate is recomputed exactly;
- other groups judge the new results against the stored statistics of their last full pass,
  and only the counts move.

So a batch costs O(batch) plus, amortized, about 1 / (REEVALUATE_GROWTH - 1) = 4 row reads per
new result, instead of re-reading every large group on every write.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Table, and_, or_, tuple_
from sqlalchemy import select as sa_select
from sqlmodel import Session

from service.core.db import lock_keys, raw_pg_cursor
from service.domain.outliers import GroupStats, flag, group_stats, summarize
from service.ingest.rows import GROUP_COLUMNS, GroupKey, NewRow
from service.ingest.store import (
    AGGREGATE_TABLE,
    RESULT_TABLE,
    StatusChange,
    pg_array,
    update_statuses,
    upsert_aggregates,
)
from service.models import utcnow

STATS_STATUSES = ("accepted", "outlier", "verified")  # values that shape a group's statistics
AGGREGATE_STATUSES = ("accepted", "verified")  # values that feed medians and rankings
# Outliers set by the peers step: they keep their status on every later pass and stay out of
# the group's statistics (a group of one garbage value would otherwise accept itself).
STICKY_REASONS = (
    "implausible_vs_peers",
    "superlinear_scaling",
    "slower_than_fp32",
    "no_faster_than_one_gpu",
    "faster_than_multi_gpu",
)
FULL_PASS_BELOW = 64
REEVALUATE_GROWTH = 1.25


class Member(NamedTuple):
    """A stored result of a group, as the statistics step reads it."""

    id: int
    value: float
    status: str
    locked: bool


@dataclass(frozen=True)
class Aggregate:
    """One group's aggregate row: the public figures (accepted and verified values) and the
    statistics of all STATS_STATUSES values, as of `evaluated_n` at its last full pass."""

    median: float
    n: int
    mad: float
    stats: GroupStats
    evaluated_n: int

    @classmethod
    def from_row(cls, row: Any) -> "Aggregate":
        stats = GroupStats(row.stats_n, row.stats_median, row.stats_mad, row.stats_mean_ad)
        return cls(row.median, row.n, row.mad, stats, row.evaluated_n)

    @classmethod
    def from_values(cls, values: Sequence[Any]) -> "Aggregate":
        """From the AGGREGATE_VALUES columns, in that order."""
        median, n, mad, stats_n, stats_median, stats_mad, stats_mean_ad, evaluated_n = values
        stats = GroupStats(stats_n, stats_median, stats_mad, stats_mean_ad)
        return cls(median, n, mad, stats, evaluated_n)

    def as_row(self, group: GroupKey) -> dict[str, Any]:
        """The one place the aggregate table's columns are spelled out (updated_at: the
        writer's)."""
        return {
            **dict(zip(GROUP_COLUMNS, group, strict=True)),
            "median": self.median,
            "n": self.n,
            "mad": self.mad,
            "stats_n": self.stats.n,
            "stats_median": self.stats.median,
            "stats_mad": self.stats.mad,
            "stats_mean_ad": self.stats.mean_ad,
            "evaluated_n": self.evaluated_n,
        }


# The aggregate columns Aggregate.from_values reads, in its order.
AGGREGATE_VALUES = (
    "median",
    "n",
    "mad",
    "stats_n",
    "stats_median",
    "stats_mad",
    "stats_mean_ad",
    "evaluated_n",
)


def group_key(row: Any) -> GroupKey:
    return (row["gpu_id"], row["workload_id"], row["precision"], row["gpu_count"])


def lock_groups(session: Session, groups: Iterable[GroupKey]) -> None:
    """Serialize writers of these groups until the transaction ends (before reading them)."""
    lock_keys(session, ("result-group:{}:{}:{}:{}".format(*g) for g in groups))


def _exact_groups(table: Table, groups: list[GroupKey]) -> Any:
    return tuple_(*(table.c[c] for c in GROUP_COLUMNS)).in_(groups)


def _around_groups(table: Table, groups: list[GroupKey]) -> Any:
    """A superset of the groups' rows, cheap to compile: callers keep only exact matches.
    Right for the small aggregate table; raw results use the exact (row-value IN) filter."""
    return and_(
        table.c.gpu_id.in_({g[0] for g in groups}),
        table.c.workload_id.in_({g[1] for g in groups}),
        table.c.precision.in_({g[2] for g in groups}),
        table.c.gpu_count.in_({g[3] for g in groups}),
    )


def _stored(session: Session, groups: list[GroupKey]) -> dict[GroupKey, Aggregate]:
    rows = session.execute(
        sa_select(AGGREGATE_TABLE).where(_around_groups(AGGREGATE_TABLE, groups))
    )
    wanted = set(groups)
    return {k: Aggregate.from_row(row) for row in rows if (k := group_key(row._mapping)) in wanted}


# Postgres: the groups travel as four arrays (one parameter each), so the statement text is
# the same for every batch and psycopg parses it once, however many groups there are; a row
# names its group by its position in them. Results the peers step flagged (a sticky reason, not
# locked by an admin) are neither re-judged nor part of the statistics.
_MEMBER_TYPES = ("int[]", "int[]", "text[]", "int[]")
_MEMBERS_PG = (
    "SELECT g.i, r.id, r.value, r.status, r.status_locked FROM result AS r"
    " JOIN unnest(%s::int[], %s::int[], %s::text[], %s::int[]) WITH ORDINALITY"
    " AS g(gpu_id, workload_id, precision, gpu_count, i) USING (gpu_id, workload_id, precision,"
    " gpu_count) WHERE r.status = ANY(%s)"
    " AND (r.status_locked OR r.reason IS NULL OR r.reason <> ALL(%s))"
)


def _members(session: Session, groups: list[GroupKey]) -> dict[GroupKey, list[Member]]:
    """Every result that shapes the statistics of `groups`, by group."""
    if not groups:
        return {}
    out: dict[GroupKey, list[Member]] = defaultdict(list)
    if session.get_bind().dialect.name == "postgresql":
        with raw_pg_cursor(session, _MEMBERS_PG) as cursor:
            columns = zip(*groups, strict=True)
            arrays = [pg_array(c, t) for c, t in zip(columns, _MEMBER_TYPES, strict=True)]
            cursor.execute(_MEMBERS_PG, [*arrays, list(STATS_STATUSES), list(STICKY_REASONS)])
            for index, rid, value, status, locked in cursor.fetchall():
                out[groups[index - 1]].append(Member(rid, value, status, locked))
        return out
    t = RESULT_TABLE
    query = sa_select(
        t.c.id, t.c.value, t.c.status, t.c.status_locked, *(t.c[c] for c in GROUP_COLUMNS)
    ).where(
        _exact_groups(t, groups),
        t.c.status.in_(STATS_STATUSES),
        or_(t.c.status_locked, t.c.reason.is_(None), t.c.reason.not_in(STICKY_REASONS)),
    )
    for rid, value, status, locked, gpu, workload, precision, count in session.execute(query):
        out[(gpu, workload, precision, count)].append(Member(rid, value, status, locked))
    return out


def _needs_full_pass(stored: Aggregate | None, new_count: int) -> bool:
    if stored is None:
        return True
    total = stored.stats.n + new_count
    return total < FULL_PASS_BELOW or total >= REEVALUATE_GROWTH * stored.evaluated_n


def _judge(row: NewRow, stats: GroupStats) -> None:
    z = flag(row.value, stats)
    row.status, row.reason = ("outlier", f"modified_z={z:+.1f}") if z else ("accepted", None)


def _full_pass(old: list[Member], new_rows: list[NewRow], changes: list[StatusChange]) -> Aggregate:
    """Decide every status of the group again from its statistics (old and new values);
    status changes of stored results are appended to `changes`."""
    stats = group_stats([m.value for m in old] + [r.value for r in new_rows])
    kept: list[float] = []
    for m in old:
        status = m.status
        if not m.locked:
            z = flag(m.value, stats)
            status = "outlier" if z else "accepted"
            if status != m.status:
                reason = f"modified_z={z:+.1f}" if z else None
                changes.append(StatusChange(m.id, status, reason))
        if status in AGGREGATE_STATUSES:
            kept.append(m.value)
    for row in new_rows:
        _judge(row, stats)
        if row.status == "accepted":
            kept.append(row.value)
    if not kept:
        return Aggregate(0.0, 0, 0.0, stats, stats.n)
    public = summarize(kept)
    return Aggregate(public.median, public.n, public.mad, stats, stats.n)


def _incremental(stored: Aggregate, new_rows: list[NewRow]) -> Aggregate:
    """Judge the new rows against the last full pass's statistics; only the counts move."""
    for row in new_rows:
        _judge(row, stored.stats)
    accepted = sum(r.status == "accepted" for r in new_rows)
    stats = replace(stored.stats, n=stored.stats.n + len(new_rows))
    return replace(stored, n=stored.n + accepted, stats=stats)


def _write(
    session: Session,
    changes: list[StatusChange],
    aggregates: list[dict[str, Any]],
    now: datetime,
) -> None:
    update_statuses(session, changes, now)
    upsert_aggregates(session, aggregates, now)


def evaluate(
    session: Session, new_by_group: Mapping[GroupKey, list[NewRow]], force: bool = False
) -> None:
    """Set the status of each new (not yet inserted) row and bring the groups up to date.

    Rows an admin set by hand (status_locked) keep their status, but count in the statistics
    when it is one of STATS_STATUSES.
    """
    groups = sorted(new_by_group)
    if not groups:
        return
    lock_groups(session, groups)
    evaluate_locked(session, new_by_group, _stored(session, groups), force)


def evaluate_locked(
    session: Session,
    new_by_group: Mapping[GroupKey, list[NewRow]],
    stored: Mapping[GroupKey, Aggregate],
    force: bool = False,
) -> None:
    """evaluate() for a caller that holds the groups' locks and read their `stored`
    aggregates after taking them (the gate reads them with the peers' references)."""
    groups = sorted(new_by_group)
    if not groups:
        return
    full = [g for g in groups if force or _needs_full_pass(stored.get(g), len(new_by_group[g]))]
    full_set = set(full)
    members = _members(session, full)
    now = utcnow()
    aggregates: list[dict[str, Any]] = []
    changes: list[StatusChange] = []
    for group in groups:
        new_rows = new_by_group[group]
        if group in full_set:
            aggregate = _full_pass(members.get(group, []), new_rows, changes)
        else:
            aggregate = _incremental(stored[group], new_rows)
        aggregates.append(aggregate.as_row(group))
    _write(session, changes, aggregates, now)


def refresh_groups(session: Session, groups: Iterable[GroupKey]) -> None:
    """Re-evaluate whole groups now (after an admin changed a status by hand)."""
    evaluate(session, {g: [] for g in groups}, force=True)
