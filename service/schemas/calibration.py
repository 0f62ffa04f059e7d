"""Calibration: hosts, the agent protocol and microbenchmark reports."""

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from service.domain.vocabulary import Device
from service.schemas.common import Finite, Input, finite

MatmulDtype = Literal["fp32", "tf32", "fp16", "bf16", "fp8"]


class GpuIdentity(Input):
    """One device as the host sees it (NVML + torch on CUDA hosts, the CPU on CPU hosts)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=128)
    uuid: str | None = Field(None, max_length=128)
    memory_gb: Finite | None = None
    driver: str | None = Field(None, max_length=64)
    cuda: str | None = Field(None, max_length=32)
    torch: str | None = Field(None, max_length=64)


class HostIdentity(Input):
    model_config = ConfigDict(extra="forbid")

    hostname: str = Field(min_length=1, max_length=255)
    device: Device
    gpus: list[GpuIdentity] = Field(min_length=1, max_length=16)
    agent_version: str = Field("", max_length=32)


class Telemetry(Input):
    """Device state read just before or after a run (NVML); None where not available."""

    model_config = ConfigDict(extra="forbid")

    sm_clock_mhz: Finite | None = None
    memory_clock_mhz: Finite | None = None
    temperature_c: Annotated[float, Field(ge=-50, le=200, allow_inf_nan=False)] | None = None
    power_w: Finite | None = None


class MatmulMeasurement(Input):
    model_config = ConfigDict(extra="forbid")

    dtype: MatmulDtype
    m: int = Field(ge=1, le=1_000_000)
    n: int = Field(ge=1, le=1_000_000)
    k: int = Field(ge=1, le=1_000_000)
    repeats: int = Field(ge=1, le=100_000)
    tflops_median: Annotated[float, Field(gt=0, lt=1e6), AfterValidator(finite)]
    tflops_iqr: Annotated[float, Field(ge=0, lt=1e6), AfterValidator(finite)]


class CalibrationReport(Input):
    """What `gpu-advisor agent` measured: matmul TFLOPS per dtype and shape, bandwidths."""

    model_config = ConfigDict(extra="forbid")

    device: Device
    device_name: str = Field(min_length=1, max_length=128)
    gpu_uuid: str | None = Field(None, max_length=128)
    matmul: list[MatmulMeasurement] = Field(min_length=1, max_length=200)
    bandwidth_gbs: Annotated[float, Field(gt=0, lt=1e6), AfterValidator(finite)]
    h2d_gbs: Annotated[float, Field(gt=0, lt=1e6), AfterValidator(finite)] | None = None
    before: Telemetry = Field(default_factory=Telemetry)
    after: Telemetry = Field(default_factory=Telemetry)
    stack: dict[
        Annotated[str, Field(min_length=1, max_length=64)], Annotated[str, Field(max_length=64)]
    ] = Field(default_factory=dict, max_length=16)
    duration_s: Finite = 0.0


class HostCreate(Input):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.-]+$")
    interval_s: int | None = Field(None, ge=60, le=90 * 86400, description="Default 24 h.")


class JobRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    kind: str
    status: Literal["todo", "running", "done", "failed"]
    reason: str | None
    attempts: int
    lease_expires_at: datetime | None
    error: str | None = None


class CalibrationRead(BaseModel):
    id: int
    host: str
    gpu: str | None = Field(description="Catalog GPU it applies to; null for CPU/unmapped runs.")
    device: Device
    device_name: str
    fp32_tflops: float | None
    tf32_tflops: float | None
    fp16_tflops: float | None
    bf16_tflops: float | None
    fp8_tflops: float | None
    bandwidth_gbs: float | None
    h2d_gbs: float | None
    efficiency: dict[str, float] = Field(description="Achieved / spec peak per dtype.")
    noise: float | None
    status: Literal["accepted", "rejected"]
    reason: str | None
    stack: dict[str, str] | None
    source: str | None = Field(
        None, description="Where a published calibration comes from; null for agent runs."
    )
    created_at: datetime


class HostRead(BaseModel):
    id: int
    name: str
    state: Literal["pending", "healthy", "stale", "failing", "retired"]
    interval_s: int
    identity: dict[str, Any] | None
    gpu: str | None
    mapping: str | None = Field(description="How the device was mapped, or why it was not.")
    last_seen_at: datetime | None
    last_calibration: CalibrationRead | None
    open_job: JobRead | None
    created_at: datetime


class HostCreated(HostRead):
    token: str = Field(description="The host token. Shown once; give it to the agent.")


class Heartbeat(BaseModel):
    host_id: int
    state: str
    job_due: bool
    poll_interval_s: int


class JobFailure(Input):
    model_config = ConfigDict(extra="forbid")

    error: str = Field(min_length=1, max_length=2000)
