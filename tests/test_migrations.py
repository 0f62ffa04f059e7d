"""One Alembic chain: upgrades, downgrades and upgrades again; matches the models exactly."""

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect
from sqlmodel import SQLModel

from service.core import migrations
from service.core.db import make_engine
from tests.conftest import drop_database, new_database_url


def test_upgrade_downgrade_upgrade(tmp_path):
    url = new_database_url(str(tmp_path))
    engine = make_engine(url)
    try:
        migrations.upgrade(url)
        tables = set(inspect(engine).get_table_names())
        assert set(SQLModel.metadata.tables) <= tables
        assert migrations.current_revision(engine) == migrations.head_revision(url)

        migrations.downgrade(url, "base")
        engine.dispose()
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
        assert migrations.current_revision(engine) is None

        migrations.upgrade(url)
        engine.dispose()
        assert set(SQLModel.metadata.tables) <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
        drop_database(url)


def test_models_and_migrations_agree(engine):
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        diff = compare_metadata(context, SQLModel.metadata)
    assert diff == []
