"""platform.host_w (the host CPU's TDP) and its source

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-07

Existing rows get NULL (not stated); `gpu-advisor seed` then fills the catalog's host power
into the stored platform row of the same source, as it did for memory types.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("platform") as batch:
        batch.add_column(sa.Column("host_w", sa.Float(), nullable=True))
        batch.add_column(sa.Column("host_w_source", sa.String(1024), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("platform") as batch:
        batch.drop_column("host_w_source")
        batch.drop_column("host_w")
