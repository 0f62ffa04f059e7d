"""/rankings and /recommend answers."""

from datetime import date
from typing import Literal

from pydantic import BaseModel, Field

from service.domain.vocabulary import Basis, Condition, ConditionChoice, Mode, Precision


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
    model: str = Field(
        description="measured | nnls | shape-scaled | borrowed | roofline-prior (see README)"
    )
    n: int = Field(description="Results behind a measured value; measured GPUs behind a fit.")
    mad: float | None
    band: float = Field(0.8, description="Nominal coverage of throughput_low..throughput_high.")
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
    scaling_basis: str = Field(
        description="single | independent | profile:<fw>/<link> | tensor-parallel:<link> | measured"
    )
    why: str
    band: float = Field(0.8, description="Nominal coverage of throughput_low..throughput_high.")


class Recommendations(BaseModel):
    recommendations: list[Recommendation]
    budget_usd: float
    workload: str
    precision: Precision
    unit: str
    min_memory_gb: float
    max_gpus: int
    mode: Mode
    framework: str
    condition: ConditionChoice
    reference_gpu: str
    hint: str | None = Field(None, description="When nothing fits: what would.")
