"""The gate's bulk writes, one statement each per batch on either backend.

- New results: core.db.insert_returning_ids (COPY on Postgres, one executemany on SQLite).
- Status changes of stored results: on Postgres one UPDATE ... FROM unnest(arrays).
- Aggregates: on Postgres one INSERT ... SELECT FROM unnest(arrays) ON CONFLICT DO UPDATE, so
  the statement text is the same for every batch (parsed once) whatever the number of groups;
  on SQLite an executemany upsert.
- Arrays go to Postgres as array literals built here (pg_array): psycopg's list dumper costs
  about 1 us per element in Python (a regex per string), 13 arrays of ~750 elements per batch.
  A float's repr round-trips exactly and Postgres parses it correctly rounded, so the stored
  doubles are the same bits.

Values must already be in database form (aware UTC datetimes, plain numbers and strings);
column names come from our own code, never from a request.
"""

from collections.abc import Iterable
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Table, bindparam, update
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session, SQLModel

from service.core.db import insert_returning_ids, raw_pg_cursor
from service.ingest.rows import COLUMNS, GROUP_COLUMNS, NewRow, values

RESULT_TABLE: Table = SQLModel.metadata.tables["result"]
AGGREGATE_TABLE: Table = SQLModel.metadata.tables["aggregate"]
# The aggregate columns but updated_at (one value for the batch), with their array types.
_AGGREGATE_ARRAYS = (
    ("gpu_id", "int[]"),
    ("workload_id", "int[]"),
    ("precision", "text[]"),
    ("gpu_count", "int[]"),
    ("median", "float8[]"),
    ("n", "int[]"),
    ("mad", "float8[]"),
    ("stats_n", "int[]"),
    ("stats_median", "float8[]"),
    ("stats_mad", "float8[]"),
    ("stats_mean_ad", "float8[]"),
    ("evaluated_n", "int[]"),
)
_AGGREGATE_COLUMNS = [c for c, _t in _AGGREGATE_ARRAYS]
_ARRAY_PARAMETERS = ", ".join(f"%s::{t}" for _c, t in _AGGREGATE_ARRAYS)
_UPSERT_AGGREGATES_PG = (
    f"INSERT INTO aggregate ({', '.join(_AGGREGATE_COLUMNS)}, updated_at)"
    f" SELECT u.*, %s::timestamptz FROM unnest({_ARRAY_PARAMETERS})"
    f" AS u({', '.join(_AGGREGATE_COLUMNS)})"
    f" ON CONFLICT ({', '.join(GROUP_COLUMNS)}) DO UPDATE SET "
    + ", ".join(
        f"{c} = EXCLUDED.{c}" for c in [*_AGGREGATE_COLUMNS, "updated_at"] if c not in GROUP_COLUMNS
    )
)
_UPDATE_STATUSES_PG = (
    "UPDATE result AS r SET status = c.status, reason = c.reason, updated_at = %s"
    " FROM unnest(%s::int[], %s::text[], %s::text[]) AS c(id, status, reason) WHERE r.id = c.id"
)


def _postgres(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def insert_results(session: Session, rows: list[NewRow]) -> list[int]:
    """Insert the rows in the session's transaction; their new ids, in the rows' order."""
    params = [dict(zip(COLUMNS, values(r), strict=True)) for r in rows]
    return insert_returning_ids(session, RESULT_TABLE, params)


def pg_array(values: Iterable[Any], kind: str) -> str:
    """A Postgres array literal of ints ("int[]"), finite floats ("float8[]") or strings."""
    if kind == "int[]":
        items: Iterable[str] = map(str, values)
    elif kind == "float8[]":
        items = map(float.__repr__, values)
    else:  # text; None is NULL
        items = (
            "NULL" if v is None else '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
            for v in values
        )
    return "{" + ",".join(items) + "}"


class StatusChange(NamedTuple):
    """A stored result's new status and reason (a full pass re-judged it)."""

    id: int
    status: str
    reason: str | None


def update_statuses(session: Session, changes: list[StatusChange], now: datetime) -> None:
    if not changes:
        return
    if not _postgres(session):
        session.execute(
            update(RESULT_TABLE)
            .where(RESULT_TABLE.c.id == bindparam("rid"))
            .values(status=bindparam("new_status"), reason=bindparam("new_reason"), updated_at=now),
            [{"rid": c.id, "new_status": c.status, "new_reason": c.reason} for c in changes],
        )
        return
    ids, statuses, reasons = zip(*changes, strict=True)
    arrays = [pg_array(ids, "int[]"), pg_array(statuses, "text[]"), pg_array(reasons, "text[]")]
    with raw_pg_cursor(session, _UPDATE_STATUSES_PG) as cursor:
        cursor.execute(_UPDATE_STATUSES_PG, [now, *arrays])


def upsert_aggregates(session: Session, rows: list[dict[str, Any]], now: datetime) -> None:
    """Insert or replace the aggregate rows (one per group; keys: the aggregate's columns
    but updated_at, which is `now` for all)."""
    if not rows:
        return
    if not _postgres(session):
        statement = sqlite_insert(AGGREGATE_TABLE)
        updates = {k: statement.excluded[k] for k in [*rows[0], "updated_at"]}
        for key in GROUP_COLUMNS:
            del updates[key]
        session.execute(
            statement.on_conflict_do_update(index_elements=GROUP_COLUMNS, set_=updates),
            [{**r, "updated_at": now} for r in rows],
        )
        return
    arrays = [pg_array((r[c] for r in rows), t) for c, t in _AGGREGATE_ARRAYS]
    with raw_pg_cursor(session, _UPSERT_AGGREGATES_PG) as cursor:
        cursor.execute(_UPSERT_AGGREGATES_PG, [now, *arrays])
