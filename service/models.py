"""Database tables (SQLModel). Alembic migrations in alembic/versions own the schema."""

from datetime import UTC, date, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.types import TypeDecorator
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite drops the zone on the way back)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _ts(index: bool = False, nullable: bool = False) -> Any:
    return sa.Column(UTCDateTime(), nullable=nullable, index=index)


def timestamp_field() -> Any:
    return Field(default_factory=utcnow, sa_column=_ts())


class Gpu(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    slug: str = Field(max_length=64, unique=True, index=True)
    vendor: str = Field(max_length=16, index=True)
    name: str = Field(max_length=128)
    architecture: str = Field(max_length=32)
    market: str = Field(max_length=16, index=True)
    memory_gb: float
    memory_bandwidth_gbs: float
    memory_type: str | None = Field(default=None, max_length=16, description="HBM3, GDDR6X, ...")
    memory_type_source: str | None = Field(default=None, max_length=1024)
    fp32_tflops: float
    fp16_tflops: float | None = None
    tf32_tensor_tflops: float | None = None
    fp16_tensor_tflops: float | None = None
    bf16_tensor_tflops: float | None = None
    fp8_tensor_tflops: float | None = None
    int8_tops: float | None = None
    tdp_w: float | None = None
    interconnect: str = Field(default="pcie", max_length=32)
    launch_date: date | None = None
    launch_price_usd: float | None = None
    aliases: str = Field(default="", max_length=1024, description="'|'-separated device names")
    source: str = Field(max_length=1024)
    status: str = Field(default="in_production", max_length=16)
    discontinued_on: date | None = None
    sold_as: str = Field(default="card", max_length=16, description="the unit a buyer purchases")
    unit_gpus: int = Field(default=1, description="GPUs in that unit (8 for an HGX platform)")
    stack: str = Field(default="cuda", max_length=16)
    availability_source: str | None = Field(default=None, max_length=1024)
    created_at: datetime = timestamp_field()
    updated_at: datetime = timestamp_field()


class Price(SQLModel, table=True):
    __table_args__ = (
        sa.Index("ix_price_gpu_condition_observed", "gpu_id", "condition", "observed_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    gpu_id: int = Field(foreign_key="gpu.id", ondelete="CASCADE")
    usd: float | None = Field(default=None, description="per card (new, used, msrp)")
    usd_per_hour: float | None = Field(default=None, description="per GPU-hour (cloud)")
    provider: str | None = Field(default=None, max_length=64, description="cloud provider")
    condition: str = Field(default="new", max_length=8)
    source: str = Field(max_length=1024)
    reference: str | None = Field(default=None, max_length=1024, description="URL or citation")
    observed_at: date
    created_at: datetime = timestamp_field()


class Workload(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    slug: str = Field(max_length=64, unique=True, index=True)
    name: str = Field(max_length=128)
    unit: str = Field(max_length=32)
    description: str = Field(default="", max_length=2048)
    precision: str = Field(max_length=8)
    flops_per_unit: float | None = None
    min_memory_gb: float = 0.0
    memory_bound: bool = False
    source: str = Field(default="", max_length=1024)
    model: str | None = Field(default=None, max_length=64, description="LLM model slug")
    quant: str | None = Field(default=None, max_length=16, description="weight format")
    phase: str | None = Field(default=None, max_length=16, description="prefill | decode | train")
    suite: str = Field(default="", max_length=64, description="lab or harness of its results")
    created_at: datetime = timestamp_field()


class ApiKey(SQLModel, table=True):
    __tablename__ = "api_key"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=128)
    prefix: str = Field(max_length=16, unique=True, index=True)
    sha256: str = Field(max_length=64)
    role: str = Field(max_length=16)
    revoked_at: datetime | None = Field(default=None, sa_column=_ts(nullable=True))
    created_at: datetime = timestamp_field()
    last_used_at: datetime | None = Field(default=None, sa_column=_ts(nullable=True))


class Result(SQLModel, table=True):
    __table_args__ = (
        sa.Index("ix_result_group", "gpu_id", "workload_id", "precision", "gpu_count", "status"),
    )

    id: int | None = Field(default=None, primary_key=True)
    gpu_id: int = Field(foreign_key="gpu.id", ondelete="CASCADE")
    workload_id: int = Field(foreign_key="workload.id", ondelete="CASCADE")
    value: float
    precision: str = Field(max_length=8)
    batch_size: int | None = None
    gpu_count: int = 1
    framework: str = Field(max_length=32)
    framework_version: str | None = Field(default=None, max_length=64)
    driver: str | None = Field(default=None, max_length=64)
    cuda: str | None = Field(default=None, max_length=32)
    notes: str | None = Field(default=None, max_length=2000)
    status: str = Field(default="accepted", max_length=16, index=True)
    reason: str | None = Field(default=None, max_length=256)
    status_locked: bool = Field(default=False, description="set by an admin; never re-evaluated")
    submitter_id: int | None = Field(default=None, foreign_key="api_key.id", index=True)
    source: str | None = Field(default=None, max_length=1024, description="URL or table cited")
    importer: str | None = Field(
        default=None, max_length=32, description="json | llama-bench | ..."
    )
    device_string: str | None = Field(default=None, max_length=512, description="as reported")
    system: str | None = Field(default=None, max_length=128, description="vendor/system/node")
    created_at: datetime = timestamp_field()
    updated_at: datetime = timestamp_field()


class ResultAudit(SQLModel, table=True):
    """Who changed a result's status by hand, from what, to what, and why."""

    __tablename__ = "result_audit"

    id: int | None = Field(default=None, primary_key=True)
    result_id: int = Field(foreign_key="result.id", ondelete="CASCADE", index=True)
    old_status: str = Field(max_length=16)
    new_status: str = Field(max_length=16)
    reason: str = Field(max_length=256)
    actor_id: int | None = Field(default=None, foreign_key="api_key.id")
    created_at: datetime = timestamp_field()


class IdempotencyRecord(SQLModel, table=True):
    """One per (API key, Idempotency-Key): the request's hash and the answer it got."""

    __tablename__ = "idempotency_record"
    __table_args__ = (sa.UniqueConstraint("api_key_id", "key", name="uq_idempotency_key"),)

    id: int | None = Field(default=None, primary_key=True)
    api_key_id: int = Field(foreign_key="api_key.id", ondelete="CASCADE")
    key: str = Field(max_length=255)
    request_sha256: str = Field(max_length=64)
    status_code: int
    response: Any = Field(sa_column=sa.Column(sa.JSON, nullable=False))
    created_at: datetime = timestamp_field()


class Aggregate(SQLModel, table=True):
    """Per result group: the public figures (median, n, MAD of accepted + verified results) and
    the statistics gate's state (robust stats of every result that shapes the group, and the
    group size at its last full re-evaluation)."""

    __table_args__ = (
        sa.UniqueConstraint("gpu_id", "workload_id", "precision", "gpu_count", name="uq_aggregate"),
    )

    id: int | None = Field(default=None, primary_key=True)
    gpu_id: int = Field(foreign_key="gpu.id", ondelete="CASCADE")
    workload_id: int = Field(foreign_key="workload.id", ondelete="CASCADE", index=True)
    precision: str = Field(max_length=8)
    gpu_count: int = 1
    median: float
    n: int
    mad: float
    stats_n: int = 0
    stats_median: float = 0.0
    stats_mad: float = 0.0
    stats_mean_ad: float = 0.0
    evaluated_n: int = 0
    updated_at: datetime = timestamp_field()


class ScalingProfile(SQLModel, table=True):
    __tablename__ = "scaling_profile"
    __table_args__ = (
        sa.UniqueConstraint("framework", "interconnect", "gpu_count", name="uq_scaling_profile"),
    )

    id: int | None = Field(default=None, primary_key=True)
    framework: str = Field(max_length=32)
    interconnect: str = Field(max_length=32)
    gpu_count: int
    efficiency: float
    source: str = Field(default="", max_length=1024)
    basis: str = Field(default="assumed", max_length=16, description="measured | fitted | assumed")
    n: int = Field(default=0, description="measured results behind a measured or fitted row")


class Platform(SQLModel, table=True):
    """What a box around N GPUs costs (host, power supply, chassis), for cost of ownership."""

    id: int | None = Field(default=None, primary_key=True)
    gpu_count: int = Field(unique=True)
    host_usd: float | None = None
    psu_w: float | None = None
    psu_usd: float | None = None
    host_w: float | None = None  # the host CPU's TDP: what the supplies carry beside the GPUs
    host_w_source: str | None = Field(default=None, max_length=1024)
    chassis_usd: float | None = None
    source: str = Field(max_length=1024)
    observed_at: date | None = None


class Host(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=128, unique=True)
    token_prefix: str = Field(max_length=16, unique=True, index=True)
    token_sha256: str = Field(max_length=64)
    identity: Any = Field(default=None, sa_column=sa.Column(sa.JSON, nullable=True))
    stack_fingerprint: str | None = Field(default=None, max_length=64)
    gpu_id: int | None = Field(default=None, foreign_key="gpu.id", ondelete="SET NULL")
    interval_s: int = 86400
    state: str = Field(default="pending", max_length=16)
    calibrate_requested: bool = False
    last_seen_at: datetime | None = Field(default=None, sa_column=_ts(nullable=True))
    retired_at: datetime | None = Field(default=None, sa_column=_ts(nullable=True))
    created_at: datetime = timestamp_field()


class Job(SQLModel, table=True):
    __table_args__ = (sa.Index("ix_job_host_status", "host_id", "status"),)

    id: int | None = Field(default=None, primary_key=True)
    host_id: int = Field(foreign_key="host.id", ondelete="CASCADE")
    kind: str = Field(default="calibrate", max_length=32)
    status: str = Field(default="todo", max_length=16)
    reason: str | None = Field(default=None, max_length=64)
    lease_expires_at: datetime | None = Field(default=None, sa_column=_ts(nullable=True))
    attempts: int = 0
    error: str | None = Field(default=None, max_length=2000)
    created_at: datetime = timestamp_field()
    finished_at: datetime | None = Field(default=None, sa_column=_ts(nullable=True))


class Calibration(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    host_id: int = Field(foreign_key="host.id", ondelete="CASCADE", index=True)
    job_id: int | None = Field(default=None, foreign_key="job.id", unique=True)
    gpu_id: int | None = Field(default=None, foreign_key="gpu.id", index=True)
    device: str = Field(max_length=8)
    device_name: str = Field(max_length=128)
    fp32_tflops: float | None = None
    tf32_tflops: float | None = None
    fp16_tflops: float | None = None
    bf16_tflops: float | None = None
    fp8_tflops: float | None = None
    bandwidth_gbs: float | None = None
    h2d_gbs: float | None = None
    stack: Any = Field(default=None, sa_column=sa.Column(sa.JSON, nullable=True))
    stats: Any = Field(default=None, sa_column=sa.Column(sa.JSON, nullable=True))
    status: str = Field(default="accepted", max_length=16)
    reason: str | None = Field(default=None, max_length=256)
    created_at: datetime = timestamp_field()


class RateLimit(SQLModel, table=True):
    """Writes per API key per fixed window; in the database so every process sees one count."""

    __tablename__ = "rate_limit"

    api_key_id: int = Field(foreign_key="api_key.id", ondelete="CASCADE", primary_key=True)
    window_start: int = Field(primary_key=True, description="in windows since the epoch")
    count: int = 0
