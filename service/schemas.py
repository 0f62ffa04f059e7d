"""Request and response models: the API contract. Validation of input happens here."""

import math
from datetime import date, datetime
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

SLUG_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
Precision = Literal["fp32", "tf32", "fp16", "bf16", "fp8", "int8"]
PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
Vendor = Literal["nvidia", "amd", "intel"]
Market = Literal["consumer", "workstation", "datacenter"]
Interconnect = Literal["pcie", "nvlink", "infinity-fabric"]
Condition = Literal["new", "used"]

Slug = Annotated[str, Field(min_length=2, max_length=64, pattern=SLUG_PATTERN)]


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("must be a finite number (no NaN or infinity)")
    return value


Positive = Annotated[float, Field(gt=0, lt=1e12), AfterValidator(_finite)]
NonNegative = Annotated[float, Field(ge=0, lt=1e12), AfterValidator(_finite)]

T = TypeVar("T")


def _check_text(value: Any) -> None:
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("NUL characters are not allowed")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("lone surrogate characters are not allowed") from None
    elif isinstance(value, list):
        for item in value:
            _check_text(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(key)
            _check_text(item)


class Input(BaseModel):
    """Base of every request body: text must be storable as-is in any database (Postgres
    refuses NUL in text; UTF-8 cannot encode a lone surrogate), so such input is a 422."""

    @field_validator("*", mode="after")
    @classmethod
    def _storable_text(cls, value: Any) -> Any:
        _check_text(value)
        return value


class Page(BaseModel, Generic[T]):
    """A page of a list; pass `next_cursor` back as `cursor` for the next page (null at the end)."""

    items: list[T]
    next_cursor: str | None = None


class Problem(BaseModel):
    """Error body for 4xx/5xx answers that are not request-validation errors."""

    detail: str
    suggestions: list[str] = Field(default_factory=list)


class GpuSpecs(Input):
    """GPU fields as stored; tensor figures are dense (never sparse) tensor-core rates."""

    model_config = ConfigDict(extra="forbid")

    vendor: Vendor
    name: str = Field(min_length=1, max_length=128)
    architecture: str = Field(min_length=1, max_length=32)
    market: Market
    memory_gb: Positive
    memory_bandwidth_gbs: Positive
    fp32_tflops: Positive
    fp16_tflops: Positive | None = Field(None, description="Non-tensor (vector) FP16 rate.")
    tf32_tensor_tflops: Positive | None = None
    fp16_tensor_tflops: Positive | None = Field(None, description="Dense tensor-core FP16 rate.")
    bf16_tensor_tflops: Positive | None = None
    fp8_tensor_tflops: Positive | None = None
    int8_tops: Positive | None = None
    tdp_w: Positive | None = None
    interconnect: Interconnect = "pcie"
    launch_date: date | None = None
    launch_price_usd: Positive | None = None
    aliases: list[Annotated[str, Field(min_length=1, max_length=128)]] = Field(
        default_factory=list, max_length=16
    )
    source: str = Field(min_length=1, max_length=1024)


class _HasSlug(Input):
    slug: Slug


class GpuCreate(GpuSpecs, _HasSlug):
    """A new GPU (slug first in answers: bases' fields come in reverse MRO order)."""


class GpuUpdate(Input):
    """Partial update: only the fields given change; required specs cannot be set to null."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="after")
    def _required_stay_set(self) -> "GpuUpdate":
        required = {
            "name",
            "architecture",
            "market",
            "memory_gb",
            "memory_bandwidth_gbs",
            "fp32_tflops",
            "interconnect",
            "aliases",
            "source",
        }
        nulled = sorted(f for f in self.model_fields_set & required if getattr(self, f) is None)
        if nulled:
            raise ValueError(f"cannot be null: {', '.join(nulled)}")
        return self

    name: str | None = Field(None, min_length=1, max_length=128)
    architecture: str | None = Field(None, min_length=1, max_length=32)
    market: Market | None = None
    memory_gb: Positive | None = None
    memory_bandwidth_gbs: Positive | None = None
    fp32_tflops: Positive | None = None
    fp16_tflops: Positive | None = None
    tf32_tensor_tflops: Positive | None = None
    fp16_tensor_tflops: Positive | None = None
    bf16_tensor_tflops: Positive | None = None
    fp8_tensor_tflops: Positive | None = None
    int8_tops: Positive | None = None
    tdp_w: Positive | None = None
    interconnect: Interconnect | None = None
    launch_date: date | None = None
    launch_price_usd: Positive | None = None
    aliases: list[Annotated[str, Field(min_length=1, max_length=128)]] | None = None
    source: str | None = Field(None, min_length=1, max_length=1024)


class GpuRead(GpuCreate):
    model_config = ConfigDict(extra="ignore", from_attributes=True)

    @field_validator("aliases", mode="before")
    @classmethod
    def _split_aliases(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [a for a in value.split("|") if a]
        return value


class WorkloadCreate(Input):
    model_config = ConfigDict(extra="forbid")

    slug: Slug
    name: str = Field(min_length=1, max_length=128)
    unit: str = Field(min_length=1, max_length=32, description="e.g. images/s, tokens/s")
    description: str = Field("", max_length=2048)
    precision: Precision
    flops_per_unit: Annotated[float, Field(ge=1e3, le=1e21)] | None = Field(
        None, description="Training/inference FLOPs for one unit (image, sequence, token)."
    )
    min_memory_gb: NonNegative = 0.0
    memory_bound: bool = False
    source: str = Field("", max_length=1024)


class WorkloadRead(WorkloadCreate):
    model_config = ConfigDict(extra="ignore", from_attributes=True)


class ScalingProfileRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    framework: str
    interconnect: str
    gpu_count: int
    efficiency: float
    source: str


class PriceCreate(Input):
    model_config = ConfigDict(extra="forbid")

    gpu: Slug
    usd: Positive
    condition: Condition = "new"
    source: str = Field(min_length=1, max_length=256, description="Shop, listing or 'msrp'.")
    reference: str | None = Field(None, max_length=1024, description="URL or citation.")
    observed_at: date


class PriceRead(BaseModel):
    id: int
    gpu: str
    usd: float
    condition: Condition
    source: str
    reference: str | None
    observed_at: date
    created_at: datetime


class Health(BaseModel):
    status: Literal["ok"]


class Readiness(BaseModel):
    status: Literal["ready", "unavailable"]
    database: str
    revision: str | None
    head: str | None


# ---- benchmark results -------------------------------------------------------------------

MAX_BATCH = 1000
ResultStatus = Literal["accepted", "outlier", "rejected", "verified"]
RESULT_STATUSES: tuple[str, ...] = ("accepted", "outlier", "rejected", "verified")
ShortText = Annotated[str, Field(min_length=1, max_length=64)]


class ResultIn(Input):
    """One benchmark result: `value` units/s (the workload's unit) on `gpu_count` GPUs."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    gpu: Slug
    workload: Slug
    value: Annotated[float, Field(gt=0, lt=1e9, strict=True), AfterValidator(_finite)]
    precision: Precision
    batch_size: Annotated[int, Field(ge=1, le=1_000_000, strict=True)] | None = None
    gpu_count: Annotated[int, Field(ge=1, le=64, strict=True)] = 1
    framework: str = Field(min_length=1, max_length=32, pattern=r"^[A-Za-z0-9_.+-]+$")
    framework_version: ShortText | None = None
    driver: ShortText | None = None
    cuda: Annotated[str, Field(min_length=1, max_length=32)] | None = None
    notes: Annotated[str, Field(max_length=2000)] | None = None

    @field_validator("framework")
    @classmethod
    def _lowercase(cls, value: str) -> str:
        return value.lower()


class ResultBatchIn(Input):
    model_config = ConfigDict(extra="forbid")

    results: list[ResultIn] = Field(min_length=1, max_length=MAX_BATCH)


class ResultOutcome(BaseModel):
    id: int
    status: ResultStatus
    reason: str | None


class ResultBatchOut(BaseModel):
    results: list[ResultOutcome]


class ResultRead(BaseModel):
    id: int
    gpu: str
    workload: str
    value: float
    precision: Precision
    batch_size: int | None
    gpu_count: int
    framework: str
    framework_version: str | None
    driver: str | None
    cuda: str | None
    notes: str | None
    status: ResultStatus
    reason: str | None
    status_locked: bool
    submitter: str | None = Field(description="Public prefix of the submitting API key.")
    created_at: datetime
    updated_at: datetime


class ResultPatch(Input):
    model_config = ConfigDict(extra="forbid")

    status: ResultStatus
    reason: str = Field(min_length=1, max_length=256)


# ---- API keys ------------------------------------------------------------------------------

Role = Literal["submitter", "admin"]


class ApiKeyCreate(Input):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=128)
    role: Role


class ApiKeyRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    prefix: str
    role: Role
    revoked_at: datetime | None
    created_at: datetime


class ApiKeyCreated(ApiKeyRead):
    key: str = Field(description="The secret. Shown once; store it now.")


# ---- rankings and recommendations --------------------------------------------------------

Basis = Literal["measured", "estimated"]


class PriceInfo(BaseModel):
    usd: float
    condition: Condition
    source: str
    observed_at: date


class RankingItem(BaseModel):
    rank: int
    gpu: str
    name: str
    memory_gb: float
    throughput: float = Field(description="Single-GPU throughput in `unit`.")
    throughput_low: float
    throughput_high: float
    unit: str
    basis: Basis
    model: str = Field(description="measured | fit | spec-ratio | roofline-prior")
    n: int = Field(description="Results behind a measured value; measured GPUs behind a fit.")
    mad: float | None
    relative_performance: float | None = Field(description="Reference GPU = 1.0.")
    price: PriceInfo | None
    perf_per_dollar: float | None = Field(description="Throughput per USD of the current price.")


class Rankings(BaseModel):
    items: list[RankingItem]
    next_cursor: str | None = None
    workload: str
    precision: Precision
    unit: str
    sort: Literal["performance", "perf_per_dollar"]
    reference_gpu: str


class Recommendation(BaseModel):
    rank: int
    gpu: str
    name: str
    count: int
    unit_price: PriceInfo
    total_price_usd: float
    throughput: float
    throughput_low: float
    throughput_high: float
    unit: str
    relative_performance: float | None
    perf_per_dollar: float
    memory_gb: float = Field(description="Per GPU: what must fit the model.")
    total_memory_gb: float
    tdp_w: float | None = Field(description="All GPUs together.")
    basis: Basis
    model: str
    n: int
    scaling_factor: float = Field(description="Throughput of `count` GPUs / one GPU.")
    scaling_basis: str = Field(description="single | independent | profile:<fw>/<link> | measured")
    why: str


class Recommendations(BaseModel):
    recommendations: list[Recommendation]
    budget_usd: float
    workload: str
    precision: Precision
    unit: str
    min_memory_gb: float
    max_gpus: int
    mode: Literal["parallel", "independent"]
    framework: str
    condition: Literal["new", "used", "any"]
    reference_gpu: str
    hint: str | None = Field(None, description="When nothing fits: what would.")


# ---- calibration: hosts, agent protocol, microbenchmark reports ---------------------------

Finite = Annotated[float, Field(ge=0, lt=1e9), AfterValidator(_finite)]
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
    device: Literal["cuda", "cpu"]
    gpus: list[GpuIdentity] = Field(min_length=1, max_length=16)
    agent_version: str = Field("", max_length=32)


class Telemetry(Input):
    """Device state read just before or after a run (NVML); None where not available."""

    model_config = ConfigDict(extra="forbid")

    sm_clock_mhz: Finite | None = None
    memory_clock_mhz: Finite | None = None
    temperature_c: Annotated[float, Field(ge=-50, le=200)] | None = None
    power_w: Finite | None = None


class MatmulMeasurement(Input):
    model_config = ConfigDict(extra="forbid")

    dtype: MatmulDtype
    m: int = Field(ge=1, le=1_000_000)
    n: int = Field(ge=1, le=1_000_000)
    k: int = Field(ge=1, le=1_000_000)
    repeats: int = Field(ge=1, le=100_000)
    tflops_median: Annotated[float, Field(gt=0, lt=1e6), AfterValidator(_finite)]
    tflops_iqr: Annotated[float, Field(ge=0, lt=1e6), AfterValidator(_finite)]


class CalibrationReport(Input):
    """What `gpu-advisor agent` measured: matmul TFLOPS per dtype and shape, bandwidths."""

    model_config = ConfigDict(extra="forbid")

    device: Literal["cuda", "cpu"]
    device_name: str = Field(min_length=1, max_length=128)
    gpu_uuid: str | None = Field(None, max_length=128)
    matmul: list[MatmulMeasurement] = Field(min_length=1, max_length=200)
    bandwidth_gbs: Annotated[float, Field(gt=0, lt=1e6), AfterValidator(_finite)]
    h2d_gbs: Annotated[float, Field(gt=0, lt=1e6), AfterValidator(_finite)] | None = None
    before: Telemetry = Field(default_factory=Telemetry)
    after: Telemetry = Field(default_factory=Telemetry)
    stack: dict[str, Annotated[str, Field(max_length=64)]] = Field(
        default_factory=dict, max_length=16
    )
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
    device: Literal["cuda", "cpu"]
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
    created_at: datetime


class GpuDetail(GpuRead):
    calibration: CalibrationRead | None = Field(
        None, description="Newest accepted calibration of this GPU model, if any."
    )


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
