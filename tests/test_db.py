"""service.db helpers on the real database under test."""

from datetime import date

import pytest
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, func, select

from service.core.db import insert_returning_ids
from service.models import Gpu, Price, utcnow

PRICE_TABLE = Price.__table__  # type: ignore[attr-defined]


def price_row(gpu_id: int, usd: float) -> dict[str, object]:
    return {
        "gpu_id": gpu_id,
        "usd": usd,
        "condition": "used",
        "source": "test",
        "reference": None,
        "observed_at": date(2026, 12, 1),
        "created_at": utcnow(),
    }


def test_insert_returning_ids_gives_ids_in_row_order(db):
    with Session(db) as session:
        gpu_id = session.exec(select(Gpu.id).where(Gpu.slug == "nvidia-rtx-4090")).one()
        ids = insert_returning_ids(session, PRICE_TABLE, [price_row(gpu_id, u) for u in (1, 2, 3)])
        session.commit()
        stored = {p.id: p.usd for p in session.exec(select(Price).where(Price.source == "test"))}
    assert stored == {ids[0]: 1, ids[1]: 2, ids[2]: 3}


def test_a_driver_error_in_insert_returning_ids_is_sqlalchemys_and_writes_nothing(db):
    """On Postgres the rows go in with the raw driver's COPY; its errors must come out as
    SQLAlchemy's (so a lost connection is a 503 like anywhere else, never a 500)."""
    with Session(db) as session:
        before = session.exec(select(func.count()).select_from(Price)).one()
        gpu_id = session.exec(select(Gpu.id).where(Gpu.slug == "nvidia-rtx-4090")).one()
        rows = [price_row(gpu_id, 1.0), price_row(10**9, 2.0)]  # no such GPU
        with pytest.raises(IntegrityError):
            insert_returning_ids(session, PRICE_TABLE, rows)
            session.flush()
        session.rollback()
        assert session.exec(select(func.count()).select_from(Price)).one() == before
