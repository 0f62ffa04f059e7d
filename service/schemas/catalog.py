"""GPUs, workloads, scaling profiles and prices: the catalog's part of the API contract."""

from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from service.domain.vocabulary import Condition, Precision
from service.schemas.calibration import CalibrationRead
from service.schemas.common import Input, NonNegative, Positive, Slug, finite

Vendor = Literal["nvidia", "amd", "intel", "apple"]
Market = Literal["consumer", "workstation", "datacenter"]
Interconnect = Literal["pcie", "nvlink", "infinity-fabric"]
Status = Literal["in_production", "discontinued", "datacenter_only"]
SoldAs = Literal["card", "hgx-8", "oam-8", "system", "cloud"]
Stack = Literal["cuda", "rocm-instinct", "rocm-radeon", "oneapi", "metal"]
# The memory technology: HBM comes with a vendor's compute die (A100, H100, B200, Instinct),
# GDDR with its graphics die (RTX, A40, L40S), LPDDR with unified-memory parts (Apple, GB10).
MemoryType = Literal[
    "HBM2",
    "HBM2e",
    "HBM3",
    "HBM3e",
    "GDDR5",
    "GDDR5X",
    "GDDR6",
    "GDDR6X",
    "GDDR7",
    "LPDDR5",
    "LPDDR5X",
]
# Aliases are stored '|'-joined in one 1024-character column: the separator is refused inside
# an alias (422), and the joined list must fit the column.
MAX_ALIASES = 16
ALIASES_COLUMN = 1024


def _aliases_fit(aliases: list[str] | None) -> list[str] | None:
    if aliases is not None and len("|".join(aliases)) > ALIASES_COLUMN:
        raise ValueError(f"aliases joined by '|' must fit {ALIASES_COLUMN} characters")
    return aliases


Alias = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[^|]+$")]
Aliases = Annotated[list[Alias], Field(max_length=MAX_ALIASES), AfterValidator(_aliases_fit)]
# A GPU costs at least $1 (a near-zero price made perf_per_dollar overflow to null).
MIN_GPU_USD = 1.0
GpuUsd = Annotated[float, Field(ge=MIN_GPU_USD, lt=1e9), AfterValidator(finite)]


class GpuSpecs(Input):
    """GPU fields as stored; tensor figures are dense (never sparse) tensor-core rates."""

    model_config = ConfigDict(extra="forbid")

    vendor: Vendor
    name: str = Field(min_length=1, max_length=128)
    architecture: str = Field(min_length=1, max_length=32)
    market: Market
    memory_gb: Positive
    memory_bandwidth_gbs: Positive
    memory_type: MemoryType | None = Field(
        None,
        description="Memory technology. The estimator learns HBM parts (a vendor's compute die) "
        "apart from the rest of their architecture; unset counts as not HBM.",
    )
    memory_type_source: str | None = Field(None, max_length=1024)
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
    launch_price_usd: GpuUsd | None = None
    aliases: Aliases = Field(default_factory=list)
    source: str = Field(min_length=1, max_length=1024)
    status: Status = "in_production"
    discontinued_on: date | None = None
    sold_as: SoldAs = Field("card", description="The unit a buyer must purchase.")
    unit_gpus: int = Field(1, ge=1, le=64, description="GPUs in that unit (8 for HGX/OAM).")
    stack: Stack = "cuda"
    availability_source: str | None = Field(None, max_length=1024)


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
            "status",
            "sold_as",
            "unit_gpus",
            "stack",
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
    memory_type: MemoryType | None = None
    memory_type_source: str | None = Field(None, max_length=1024)
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
    launch_price_usd: GpuUsd | None = None
    aliases: Aliases | None = None
    source: str | None = Field(None, min_length=1, max_length=1024)
    status: Status | None = None
    discontinued_on: date | None = None
    sold_as: SoldAs | None = None
    unit_gpus: int | None = Field(None, ge=1, le=64)
    stack: Stack | None = None
    availability_source: str | None = Field(None, max_length=1024)


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
    model: str | None = Field(None, max_length=64, description="LLM model slug (GET /models)")
    quant: str | None = Field(None, max_length=16, description="LLM weight format")
    phase: Literal["prefill", "decode", "train"] | None = None
    suite: str = Field(
        "",
        max_length=64,
        pattern=r"^([a-z0-9][a-z0-9-]*)?$",
        description="The lab or harness whose results measure this workload (one lab's "
        "scripts, batch sizes and software, e.g. lambda-pytorch, mlperf); '' where none is "
        "named. A GPU's own efficiency is learned and applied within one suite.",
    )


class WorkloadRead(WorkloadCreate):
    model_config = ConfigDict(extra="ignore", from_attributes=True)


class ScalingProfileRead(BaseModel):
    """Multi-GPU efficiency (speedup / count). A `fitted` row (pooled from measured multi-GPU
    results) wins over the `assumed` row of the same framework, interconnect and count."""

    model_config = ConfigDict(from_attributes=True)

    framework: str
    interconnect: str
    gpu_count: int
    efficiency: float
    basis: str = Field(description="fitted (from measured results) | assumed (the guide's)")
    n: int = Field(description="Measured results behind the row (0 when assumed).")
    pairs: int = Field(description="(GPU, workload, precision) scalings pooled (fitted rows).")
    gpus: int = Field(description="Distinct GPUs among those pairs (fitted rows).")
    source: str


class PriceCreate(Input):
    """A price observation of any kind: `new`/`used`/`msrp` carry `usd` per card; `cloud`
    carries `usd_per_hour` per GPU-hour and the `provider`."""

    model_config = ConfigDict(extra="forbid")

    gpu: Slug
    usd: GpuUsd | None = None
    usd_per_hour: Positive | None = Field(None, description="Per GPU-hour (cloud).")
    provider: str | None = Field(None, min_length=1, max_length=64, description="Cloud provider.")
    condition: Condition = "new"
    source: str = Field(min_length=1, max_length=1024, description="Shop, listing or 'msrp'.")
    reference: str | None = Field(None, max_length=1024, description="URL or citation.")
    observed_at: date

    @model_validator(mode="after")
    def _price_fits_kind(self) -> "PriceCreate":
        if self.condition == "cloud":
            if self.usd_per_hour is None or self.provider is None or self.usd is not None:
                raise ValueError("a cloud price needs usd_per_hour and provider, and no usd")
        elif self.usd is None or self.usd_per_hour is not None or self.provider is not None:
            raise ValueError(f"a {self.condition} price needs usd (per card), no usd_per_hour")
        return self


class PriceRead(BaseModel):
    id: int
    gpu: str
    usd: float | None
    usd_per_hour: float | None = None
    provider: str | None = None
    condition: Condition
    source: str
    reference: str | None
    observed_at: date
    created_at: datetime


class GpuDetail(GpuRead):
    calibration: CalibrationRead | None = Field(
        None, description="Newest accepted calibration of this GPU model, if any."
    )
