"""GPUs, workloads, scaling profiles and prices: the catalog's part of the API contract."""

from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from service.domain.vocabulary import Condition, Precision
from service.schemas.calibration import CalibrationRead
from service.schemas.common import Input, NonNegative, Positive, Slug

Vendor = Literal["nvidia", "amd", "intel", "apple"]
Market = Literal["consumer", "workstation", "datacenter"]
Interconnect = Literal["pcie", "nvlink", "infinity-fabric"]
Status = Literal["in_production", "discontinued", "datacenter_only"]
SoldAs = Literal["card", "hgx-8", "oam-8", "system", "cloud"]
Stack = Literal["cuda", "rocm-instinct", "rocm-radeon", "oneapi", "metal"]


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


class GpuDetail(GpuRead):
    calibration: CalibrationRead | None = Field(
        None, description="Newest accepted calibration of this GPU model, if any."
    )
