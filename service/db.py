"""Engine construction, session dependencies, and the backend-specific bits.

SQLite: WAL for concurrent readers, foreign keys on, and explicit transactions so that write
transactions can start with BEGIN IMMEDIATE (taking the write lock up front instead of failing
with "database is locked" when two deferred transactions both try to upgrade).
Postgres: writers that must not interleave on one key take a transaction-scoped advisory lock.
"""

import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

from fastapi import Request
from sqlalchemy import event, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine, make_url
from sqlmodel import Session, create_engine

SQLITE_BEGIN_OPTION = "sqlite_begin"


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def make_engine(url: str) -> Engine:
    if is_sqlite(url):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

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
            conn.exec_driver_sql(f"BEGIN {mode}")

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def write_engine(engine: Engine) -> Engine:
    """The same engine, whose transactions take SQLite's write lock at BEGIN."""
    if engine.dialect.name == "sqlite":
        return engine.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE"})
    return engine


def get_session(request: Request) -> Iterator[Session]:
    """FastAPI dependency: one read session per request on the app's engine."""
    with Session(request.app.state.engine) as session:
        yield session


def get_write_session(request: Request) -> Iterator[Session]:
    """FastAPI dependency: a session for requests that write (BEGIN IMMEDIATE on SQLite)."""
    with Session(write_engine(request.app.state.engine)) as session:
        yield session


def lock_keys(session: Session, keys: Iterable[str]) -> None:
    """Serialize writers per key until the transaction ends (Postgres advisory locks).

    Keys are locked in sorted order so that two writers never wait on each other in a cycle.
    SQLite needs nothing: BEGIN IMMEDIATE already admits one writer at a time.
    """
    if session.get_bind().dialect.name != "postgresql":
        return
    for key in sorted(set(keys)):
        digest = hashlib.sha256(key.encode()).digest()
        lock_id = int.from_bytes(digest[:8], "big", signed=True)
        session.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": lock_id})


def upsert(session: Session, table: Any, values: dict[str, Any], keys: list[str]) -> None:
    """INSERT ... ON CONFLICT (keys) DO UPDATE on SQLite and Postgres."""
    dialect = session.get_bind().dialect.name
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    statement = insert(table).values(**values)
    updates = {k: statement.excluded[k] for k in values if k not in keys}
    session.execute(statement.on_conflict_do_update(index_elements=keys, set_=updates))
