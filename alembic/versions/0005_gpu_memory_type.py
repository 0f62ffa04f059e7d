"""gpu.memory_type (HBM2e, GDDR6X, ...) and its source

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-05

Existing rows get NULL (not stated); `gpu-advisor seed` then fills the catalog's memory type
into catalog GPUs that have none, as it did for availability.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("gpu") as batch:
        batch.add_column(sa.Column("memory_type", sa.String(16), nullable=True))
        batch.add_column(sa.Column("memory_type_source", sa.String(1024), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("gpu") as batch:
        batch.drop_column("memory_type_source")
        batch.drop_column("memory_type")
