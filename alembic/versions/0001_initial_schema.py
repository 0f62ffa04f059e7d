"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "api_key",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("api_key", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_key_prefix"), ["prefix"], unique=True)

    op.create_table(
        "gpu",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("vendor", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("architecture", sa.String(length=32), nullable=False),
        sa.Column("market", sa.String(length=16), nullable=False),
        sa.Column("memory_gb", sa.Float(), nullable=False),
        sa.Column("memory_bandwidth_gbs", sa.Float(), nullable=False),
        sa.Column("fp32_tflops", sa.Float(), nullable=False),
        sa.Column("fp16_tflops", sa.Float(), nullable=True),
        sa.Column("tf32_tensor_tflops", sa.Float(), nullable=True),
        sa.Column("fp16_tensor_tflops", sa.Float(), nullable=True),
        sa.Column("bf16_tensor_tflops", sa.Float(), nullable=True),
        sa.Column("fp8_tensor_tflops", sa.Float(), nullable=True),
        sa.Column("int8_tops", sa.Float(), nullable=True),
        sa.Column("tdp_w", sa.Float(), nullable=True),
        sa.Column("interconnect", sa.String(length=32), nullable=False),
        sa.Column("launch_date", sa.Date(), nullable=True),
        sa.Column("launch_price_usd", sa.Float(), nullable=True),
        sa.Column("aliases", sa.String(length=1024), nullable=False),
        sa.Column("source", sa.String(length=1024), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("gpu", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_gpu_market"), ["market"], unique=False)
        batch_op.create_index(batch_op.f("ix_gpu_slug"), ["slug"], unique=True)
        batch_op.create_index(batch_op.f("ix_gpu_vendor"), ["vendor"], unique=False)

    op.create_table(
        "scaling_profile",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("framework", sa.String(length=32), nullable=False),
        sa.Column("interconnect", sa.String(length=32), nullable=False),
        sa.Column("gpu_count", sa.Integer(), nullable=False),
        sa.Column("efficiency", sa.Float(), nullable=False),
        sa.Column("source", sa.String(length=1024), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("framework", "interconnect", "gpu_count", name="uq_scaling_profile"),
    )
    op.create_table(
        "workload",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("unit", sa.String(length=32), nullable=False),
        sa.Column("description", sa.String(length=2048), nullable=False),
        sa.Column("precision", sa.String(length=8), nullable=False),
        sa.Column("flops_per_unit", sa.Float(), nullable=True),
        sa.Column("min_memory_gb", sa.Float(), nullable=False),
        sa.Column("memory_bound", sa.Boolean(), nullable=False),
        sa.Column("source", sa.String(length=1024), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("workload", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_workload_slug"), ["slug"], unique=True)

    op.create_table(
        "aggregate",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("gpu_id", sa.Integer(), nullable=False),
        sa.Column("workload_id", sa.Integer(), nullable=False),
        sa.Column("precision", sa.String(length=8), nullable=False),
        sa.Column("gpu_count", sa.Integer(), nullable=False),
        sa.Column("median", sa.Float(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("mad", sa.Float(), nullable=False),
        sa.Column("stats_n", sa.Integer(), nullable=False),
        sa.Column("stats_median", sa.Float(), nullable=False),
        sa.Column("stats_mad", sa.Float(), nullable=False),
        sa.Column("stats_mean_ad", sa.Float(), nullable=False),
        sa.Column("evaluated_n", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["gpu_id"], ["gpu.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["workload_id"], ["workload.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("gpu_id", "workload_id", "precision", "gpu_count", name="uq_aggregate"),
    )
    with op.batch_alter_table("aggregate", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_aggregate_workload_id"), ["workload_id"], unique=False)

    op.create_table(
        "host",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("token_prefix", sa.String(length=16), nullable=False),
        sa.Column("token_sha256", sa.String(length=64), nullable=False),
        sa.Column("identity", sa.JSON(), nullable=True),
        sa.Column("stack_fingerprint", sa.String(length=64), nullable=True),
        sa.Column("gpu_id", sa.Integer(), nullable=True),
        sa.Column("interval_s", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("calibrate_requested", sa.Boolean(), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("retired_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["gpu_id"], ["gpu.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    with op.batch_alter_table("host", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_host_token_prefix"), ["token_prefix"], unique=True)

    op.create_table(
        "idempotency_record",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("api_key_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("request_sha256", sa.String(length=64), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("response", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["api_key_id"], ["api_key.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("api_key_id", "key", name="uq_idempotency_key"),
    )
    op.create_table(
        "price",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("gpu_id", sa.Integer(), nullable=False),
        sa.Column("usd", sa.Float(), nullable=False),
        sa.Column("condition", sa.String(length=8), nullable=False),
        sa.Column("source", sa.String(length=256), nullable=False),
        sa.Column("reference", sa.String(length=1024), nullable=True),
        sa.Column("observed_at", sa.Date(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["gpu_id"], ["gpu.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("price", schema=None) as batch_op:
        batch_op.create_index(
            "ix_price_gpu_condition_observed", ["gpu_id", "condition", "observed_at"], unique=False
        )

    op.create_table(
        "result",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("gpu_id", sa.Integer(), nullable=False),
        sa.Column("workload_id", sa.Integer(), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("precision", sa.String(length=8), nullable=False),
        sa.Column("batch_size", sa.Integer(), nullable=True),
        sa.Column("gpu_count", sa.Integer(), nullable=False),
        sa.Column("framework", sa.String(length=32), nullable=False),
        sa.Column("framework_version", sa.String(length=64), nullable=True),
        sa.Column("driver", sa.String(length=64), nullable=True),
        sa.Column("cuda", sa.String(length=32), nullable=True),
        sa.Column("notes", sa.String(length=2000), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=256), nullable=True),
        sa.Column("status_locked", sa.Boolean(), nullable=False),
        sa.Column("submitter_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["gpu_id"], ["gpu.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["submitter_id"],
            ["api_key.id"],
        ),
        sa.ForeignKeyConstraint(["workload_id"], ["workload.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("result", schema=None) as batch_op:
        batch_op.create_index(
            "ix_result_group",
            ["gpu_id", "workload_id", "precision", "gpu_count", "status"],
            unique=False,
        )
        batch_op.create_index(batch_op.f("ix_result_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_result_submitter_id"), ["submitter_id"], unique=False)

    op.create_table(
        "job",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("host_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=64), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("error", sa.String(length=2000), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["host_id"], ["host.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.create_index("ix_job_host_status", ["host_id", "status"], unique=False)

    op.create_table(
        "result_audit",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("result_id", sa.Integer(), nullable=False),
        sa.Column("old_status", sa.String(length=16), nullable=False),
        sa.Column("new_status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=256), nullable=False),
        sa.Column("actor_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["actor_id"],
            ["api_key.id"],
        ),
        sa.ForeignKeyConstraint(["result_id"], ["result.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("result_audit", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_result_audit_result_id"), ["result_id"], unique=False)

    op.create_table(
        "calibration",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("host_id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=True),
        sa.Column("gpu_id", sa.Integer(), nullable=True),
        sa.Column("device", sa.String(length=8), nullable=False),
        sa.Column("device_name", sa.String(length=128), nullable=False),
        sa.Column("fp32_tflops", sa.Float(), nullable=True),
        sa.Column("tf32_tflops", sa.Float(), nullable=True),
        sa.Column("fp16_tflops", sa.Float(), nullable=True),
        sa.Column("bf16_tflops", sa.Float(), nullable=True),
        sa.Column("fp8_tflops", sa.Float(), nullable=True),
        sa.Column("bandwidth_gbs", sa.Float(), nullable=True),
        sa.Column("h2d_gbs", sa.Float(), nullable=True),
        sa.Column("stack", sa.JSON(), nullable=True),
        sa.Column("stats", sa.JSON(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=256), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["gpu_id"],
            ["gpu.id"],
        ),
        sa.ForeignKeyConstraint(["host_id"], ["host.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["job.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("job_id"),
    )
    with op.batch_alter_table("calibration", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_calibration_gpu_id"), ["gpu_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_calibration_host_id"), ["host_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("calibration", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_calibration_host_id"))
        batch_op.drop_index(batch_op.f("ix_calibration_gpu_id"))

    op.drop_table("calibration")
    with op.batch_alter_table("result_audit", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_result_audit_result_id"))

    op.drop_table("result_audit")
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.drop_index("ix_job_host_status")

    op.drop_table("job")
    with op.batch_alter_table("result", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_result_submitter_id"))
        batch_op.drop_index(batch_op.f("ix_result_status"))
        batch_op.drop_index("ix_result_group")

    op.drop_table("result")
    with op.batch_alter_table("price", schema=None) as batch_op:
        batch_op.drop_index("ix_price_gpu_condition_observed")

    op.drop_table("price")
    op.drop_table("idempotency_record")
    with op.batch_alter_table("host", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_host_token_prefix"))

    op.drop_table("host")
    with op.batch_alter_table("aggregate", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_aggregate_workload_id"))

    op.drop_table("aggregate")
    with op.batch_alter_table("workload", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_workload_slug"))

    op.drop_table("workload")
    op.drop_table("scaling_profile")
    with op.batch_alter_table("gpu", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_gpu_vendor"))
        batch_op.drop_index(batch_op.f("ix_gpu_slug"))
        batch_op.drop_index(batch_op.f("ix_gpu_market"))

    op.drop_table("gpu")
    with op.batch_alter_table("api_key", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_key_prefix"))

    op.drop_table("api_key")
