"""availability, cloud prices, LLM workloads, result provenance, scaling basis, platforms

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03

Every new NOT NULL column carries a server default so that existing rows stay valid; the
defaults are what an old row meant (a GPU in production sold as one card on CUDA, a scaling
profile that was assumed).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("gpu") as batch:
        batch.add_column(
            sa.Column("status", sa.String(16), nullable=False, server_default="in_production")
        )
        batch.add_column(sa.Column("discontinued_on", sa.Date(), nullable=True))
        batch.add_column(sa.Column("sold_as", sa.String(16), nullable=False, server_default="card"))
        batch.add_column(sa.Column("unit_gpus", sa.Integer(), nullable=False, server_default="1"))
        batch.add_column(sa.Column("stack", sa.String(16), nullable=False, server_default="cuda"))
        batch.add_column(sa.Column("availability_source", sa.String(1024), nullable=True))
    with op.batch_alter_table("price") as batch:
        batch.alter_column("usd", existing_type=sa.Float(), nullable=True)
        batch.alter_column(
            "source", existing_type=sa.String(256), type_=sa.String(1024), existing_nullable=False
        )
        batch.add_column(sa.Column("usd_per_hour", sa.Float(), nullable=True))
        batch.add_column(sa.Column("provider", sa.String(64), nullable=True))
    with op.batch_alter_table("workload") as batch:
        batch.add_column(sa.Column("model", sa.String(64), nullable=True))
        batch.add_column(sa.Column("quant", sa.String(16), nullable=True))
        batch.add_column(sa.Column("phase", sa.String(16), nullable=True))
    with op.batch_alter_table("result") as batch:
        batch.add_column(sa.Column("source", sa.String(1024), nullable=True))
        batch.add_column(sa.Column("importer", sa.String(32), nullable=True))
        batch.add_column(sa.Column("device_string", sa.String(512), nullable=True))
        batch.add_column(sa.Column("system", sa.String(128), nullable=True))
    with op.batch_alter_table("scaling_profile") as batch:
        batch.add_column(
            sa.Column("basis", sa.String(16), nullable=False, server_default="assumed")
        )
        batch.add_column(sa.Column("n", sa.Integer(), nullable=False, server_default="0"))
    op.create_table(
        "platform",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("gpu_count", sa.Integer(), nullable=False),
        sa.Column("host_usd", sa.Float(), nullable=True),
        sa.Column("psu_w", sa.Float(), nullable=True),
        sa.Column("psu_usd", sa.Float(), nullable=True),
        sa.Column("chassis_usd", sa.Float(), nullable=True),
        sa.Column("source", sa.String(1024), nullable=False),
        sa.Column("observed_at", sa.Date(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("gpu_count"),
    )


def downgrade() -> None:
    op.drop_table("platform")
    with op.batch_alter_table("scaling_profile") as batch:
        batch.drop_column("n")
        batch.drop_column("basis")
    with op.batch_alter_table("result") as batch:
        for name in ("system", "device_string", "importer", "source"):
            batch.drop_column(name)
    with op.batch_alter_table("workload") as batch:
        for name in ("phase", "quant", "model"):
            batch.drop_column(name)
    op.execute("DELETE FROM price WHERE usd IS NULL")
    with op.batch_alter_table("price") as batch:
        batch.drop_column("provider")
        batch.drop_column("usd_per_hour")
        batch.alter_column(
            "source", existing_type=sa.String(1024), type_=sa.String(256), existing_nullable=False
        )
        batch.alter_column("usd", existing_type=sa.Float(), nullable=False)
    with op.batch_alter_table("gpu") as batch:
        for name in (
            "availability_source",
            "stack",
            "unit_gpus",
            "sold_as",
            "discontinued_on",
            "status",
        ):
            batch.drop_column(name)
