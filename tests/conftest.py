"""Test fixtures: a real database (SQLite file, or Postgres when GPU_ADVISOR_TEST_DATABASE_URL
is set), migrated once per session with Alembic and reset + re-seeded before each test."""

import os
import uuid
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url
from sqlmodel import SQLModel

from service.catalog.seed import seed
from service.core import migrations
from service.core.db import is_sqlite, make_engine
from service.core.settings import Settings
from service.main import create_app

POSTGRES_URL = os.environ.get("GPU_ADVISOR_TEST_DATABASE_URL")


def new_database_url(tmp_dir: str) -> str:
    """A fresh, empty database of the backend under test; the caller drops it with drop_database."""
    if not POSTGRES_URL:
        return f"sqlite:///{tmp_dir}/gpu-advisor-{uuid.uuid4().hex[:8]}.db"
    base = make_url(POSTGRES_URL)
    name = f"gpu_advisor_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return base.set(database=name).render_as_string(hide_password=False)


def drop_database(url: str) -> None:
    if is_sqlite(url):
        return
    parsed = make_url(url)
    admin = create_engine(make_url(POSTGRES_URL or url), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{parsed.database}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = new_database_url(str(tmp_path_factory.mktemp("db")))
    migrations.upgrade(url)
    yield url
    drop_database(url)


@pytest.fixture(scope="session")
def engine(database_url: str) -> Iterator[Engine]:
    eng = make_engine(database_url)
    yield eng
    eng.dispose()


def reset(engine: Engine) -> None:
    """Empty every table (keeping alembic_version), then load the shipped catalog."""
    tables = list(reversed(SQLModel.metadata.sorted_tables))
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            names = ", ".join(f'"{t.name}"' for t in tables)
            conn.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
        else:
            for table in tables:
                conn.execute(table.delete())
    seed(engine, results=False)  # the measured corpus: tests/api/test_seed_corpus.py seeds it


@pytest.fixture
def db(engine: Engine) -> Engine:
    reset(engine)
    return engine


@pytest.fixture
def settings(database_url: str) -> Settings:
    # The ranking tests rank the shipped catalog, whose prices are dated (many years back): a
    # long window keeps them usable; the freshness tests build settings with the default window.
    return Settings(database_url=database_url, price_max_age_days=36500, warm_on_start=False)


@pytest.fixture
def client(db: Engine, settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as test_client:
        yield test_client


@pytest.fixture
def fresh_client(db: Engine, database_url: str) -> Iterator[TestClient]:
    """The default 180-day price window (`client` widens it for the catalog's old prices)."""
    with TestClient(create_app(Settings(database_url=database_url))) as test_client:
        yield test_client


class Keys:
    """Secrets of freshly created API keys, and Authorization headers for them."""

    def __init__(self, engine: Engine) -> None:
        from sqlmodel import Session

        from service.auth import create_api_key

        with Session(engine) as session, session.begin():
            self.submitter = create_api_key(session, "lab-a", "submitter")[1]
            self.other_submitter = create_api_key(session, "lab-b", "submitter")[1]
            self.admin = create_api_key(session, "ops", "admin")[1]

    @staticmethod
    def auth(secret: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {secret}"}


@pytest.fixture
def keys(db: Engine) -> Keys:
    return Keys(db)
