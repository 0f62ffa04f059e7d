"""Engine construction, session dependencies, and the backend-specific bits.

SQLite: WAL for concurrent readers, foreign keys on, and explicit transactions so that write
transactions can start with BEGIN IMMEDIATE (taking the write lock up front instead of failing
with "database is locked" when two deferred transactions both try to upgrade).
Postgres: writers that must not interleave on one key take a transaction-scoped advisory lock.
"""

import hashlib
import logging
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from operator import itemgetter
from typing import Any

import psycopg
from sqlalchemy import event, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlmodel import Session, create_engine

SQLITE_BEGIN_OPTION = "sqlite_begin"
# SQLite admits one writer at a time. Left to SQLite's busy handler, 40 writers waiting on
# BEGIN IMMEDIATE poll and back off, and some time out ("database unavailable") although the
# database is fine. So within a process, writers queue on one lock (FIFO enough, no polling)
# before BEGIN IMMEDIATE and release it when their transaction ends; across processes the busy
# timeout still applies. Waiting longer than this is reported as unavailable (503).
SQLITE_WRITE_WAIT_S = 60.0
# Connections per engine: one per request in flight (the thread pool has 40) and some spare.
POOL_SIZE = 40
POOL_OVERFLOW = 10
_HOLDS_WRITE_LOCK = "gpu_advisor_write_lock"
log = logging.getLogger(__name__)


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def make_engine(url: str) -> Engine:
    if is_sqlite(url):
        memory = make_url(url).database in (None, "", ":memory:")
        pool: dict[str, Any] = (
            {} if memory else {"pool_size": POOL_SIZE, "max_overflow": POOL_OVERFLOW}
        )
        engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": 30}, **pool
        )
        write_lock = threading.Lock()

        @event.listens_for(engine, "connect")
        def _sqlite_connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # we emit BEGIN ourselves, below
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn: Any) -> None:
            mode = conn.get_execution_options().get(SQLITE_BEGIN_OPTION, "DEFERRED")
            if mode == "IMMEDIATE" and not conn.info.get(_HOLDS_WRITE_LOCK):
                if not write_lock.acquire(timeout=SQLITE_WRITE_WAIT_S):
                    raise OperationalError(
                        "BEGIN IMMEDIATE", None, Exception("write queue wait timed out")
                    )
                conn.info[_HOLDS_WRITE_LOCK] = True
            try:
                conn.exec_driver_sql(f"BEGIN {mode}")
            except BaseException:
                _release(conn)
                raise

        def _release(conn: Any) -> None:
            if conn.info.pop(_HOLDS_WRITE_LOCK, False):
                write_lock.release()

        # A transaction ends by commit or rollback (closing a session rolls back); a
        # connection invalidated mid-transaction is checked in without either, hence reset.
        event.listen(engine, "commit", _release)
        event.listen(engine, "rollback", _release)

        def _release_record(record: Any) -> None:
            if record is not None and record.info.pop(_HOLDS_WRITE_LOCK, False):
                write_lock.release()

        @event.listens_for(engine, "reset")
        def _on_reset(_dbapi_conn: Any, record: Any, _reset_state: Any) -> None:
            _release_record(record)

        @event.listens_for(engine, "invalidate")
        def _on_invalidate(_dbapi_conn: Any, record: Any, _exception: Any) -> None:
            _release_record(record)

        @event.listens_for(engine, "checkin")
        def _on_checkin(_dbapi_conn: Any, record: Any) -> None:
            _release_record(record)

        return engine
    # Enough pooled connections for the thread pool (40) so none are opened and closed per
    # request; pre-ping keeps a restarted Postgres from surfacing as errors.
    return create_engine(url, pool_pre_ping=True, pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW)


def write_engine(engine: Engine) -> Engine:
    """The same engine, whose transactions take SQLite's write lock at BEGIN."""
    if engine.dialect.name == "sqlite":
        return engine.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE"})
    return engine


def session_scope(engine: Engine) -> Iterator[Session]:
    """A session on `engine`, closed at the end (the generator behind the session dependencies)."""
    session = Session(engine)
    try:
        yield session
    finally:
        # Closing rolls back whatever is left open. If the database went away meanwhile, that
        # rollback fails; the connection is already invalidated, and the answer may already be
        # on its way, so a failed close must not turn into a broken response.
        try:
            session.close()
        except DBAPIError:
            log.warning("closing a session on a lost database connection failed", exc_info=True)


def lock_keys(session: Session, keys: Iterable[str]) -> None:
    """Serialize writers per key until the transaction ends (Postgres advisory locks).

    One statement takes all the locks, in sorted order, so that two writers never wait on each
    other in a cycle. SQLite needs nothing: BEGIN IMMEDIATE already admits one writer at a time.
    """
    if session.get_bind().dialect.name != "postgresql":
        return
    ids = sorted(
        {int.from_bytes(hashlib.sha256(k.encode()).digest()[:8], "big", signed=True) for k in keys}
    )
    if ids:
        session.execute(
            text(
                "SELECT count(pg_advisory_xact_lock(k)) FROM "
                "(SELECT unnest(CAST(:ids AS bigint[])) AS k ORDER BY 1) AS sorted_keys"
            ),
            {"ids": ids},
        )


def insert_returning_ids(session: Session, table: Any, rows: list[dict[str, Any]]) -> list[int]:
    """Insert many rows in the session's transaction; their new ids, in the rows' order.

    On Postgres the ids are drawn from the table's sequence in one round trip and the rows go
    in with COPY: SQLAlchemy's insertmanyvalues builds one statement with ~12,000
    placeholders per 1000 rows, and psycopg spends most of a batch's time parsing it. Values
    must already be in database form (aware UTC datetimes, plain numbers and strings); column
    names come from our own code, never from a request.

    On SQLite one executemany without RETURNING (with RETURNING, SQLAlchemy sends one INSERT
    per row to keep the ids in order). The ids are then the ones up to last_insert_rowid():
    SQLite admits one writer at a time (BEGIN IMMEDIATE, see make_engine), and a row inserted
    without an id gets one past the largest rowid (with AUTOINCREMENT, past the largest ever
    used), so a batch's ids are consecutive.
    """
    if not rows:
        return []
    if session.get_bind().dialect.name != "postgresql":
        session.execute(table.insert(), rows)
        last = int(session.scalars(text("SELECT last_insert_rowid()")).one())
        return list(range(last - len(rows) + 1, last + 1))
    ids = [
        int(i)
        for i in session.scalars(
            text(
                "SELECT nextval(pg_get_serial_sequence(:table, 'id')) FROM generate_series(1, :n)"
            ),
            {"table": table.name, "n": len(rows)},
        )
    ]
    columns = list(rows[0])
    pick = itemgetter(*columns) if len(columns) > 1 else lambda row: (row[columns[0]],)
    statement = f"COPY {table.name} (id, {', '.join(columns)}) FROM STDIN"
    with raw_pg_cursor(session, statement) as cursor, cursor.copy(statement) as copy:
        for rid, row in zip(ids, rows, strict=True):
            copy.write_row((rid, *pick(row)))
    return ids


@contextmanager
def raw_pg_cursor(session: Session, statement: str) -> Iterator[Any]:
    """A psycopg cursor on the session's Postgres connection (for COPY and array parameters).

    The driver's errors come out as SQLAlchemy would have raised them (`statement` names what
    failed): a lost connection is then an OperationalError, answered 503 like anywhere else."""
    raw: Any = session.connection().connection.driver_connection
    try:
        with raw.cursor() as cursor:
            yield cursor
    except psycopg.Error as exc:
        raise DBAPIError.instance(statement, None, exc, psycopg.Error) from exc
