"""Per-API-key write rate limit: a fixed-window counter in the database.

One upsert per write, in a transaction of its own (so refused or failed requests count too),
shared by every API process. Old windows are swept when a key opens a new one.

Kept apart from auth.py on purpose: auth.py is about key secrets (create, find, revoke; no
engine, no commits), this is a counter with its own table and its own transaction on the
engine; only api/security.py uses both, after the bearer check.
"""

import time

from sqlalchemy import delete
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from service.core.db import write_engine
from service.models import RateLimit

TABLE = SQLModel.metadata.tables[str(RateLimit.__tablename__)]


def hit(
    engine: Engine, api_key_id: int, limit: int, window_s: int, now: float | None = None
) -> int:
    """Count one write; 0 when allowed, else the seconds until the window resets."""
    now = time.time() if now is None else now
    window = int(now // window_s)
    insert = pg_insert if engine.dialect.name == "postgresql" else sqlite_insert
    first = insert(TABLE).values(api_key_id=api_key_id, window_start=window, count=1)
    statement = first.on_conflict_do_update(
        index_elements=["api_key_id", "window_start"], set_={"count": TABLE.c.count + 1}
    ).returning(TABLE.c.count)
    with write_engine(engine).begin() as conn:
        count = int(conn.execute(statement).scalar_one())
        if count == 1:
            conn.execute(
                delete(TABLE).where(TABLE.c.api_key_id == api_key_id, TABLE.c.window_start < window)
            )
    if count <= limit:
        return 0
    return max(1, int((window + 1) * window_s - now + 0.999))
