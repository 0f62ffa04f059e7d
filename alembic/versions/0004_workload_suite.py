"""workload.suite: the lab or harness whose results measure a workload

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-05

Existing rows get '' (no suite named), what they meant before; `gpu-advisor seed` then names
the suite of each catalog workload that has none.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("workload") as batch:
        batch.add_column(sa.Column("suite", sa.String(64), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("workload") as batch:
        batch.drop_column("suite")
