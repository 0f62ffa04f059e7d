"""/rankings and /recommend answers."""

from datetime import date
from typing import Literal

from pydantic import BaseModel, Field

from service.domain.vocabulary import Basis, Condition, ConditionChoice, Mode, Precision

RankingSort = Literal["performance", "perf_per_dollar", "perf_per_watt", "tco"]
RecommendSort = Literal["performance", "tco"]


class PriceInfo(BaseModel):
    usd: float
    condition: Condition
    source: str
    observed_at: date
    age_days: int | None = Field(None, description="Days between observed_at and today.")
    stale: bool = Field(False, description="Older than the freshness window (price_max_age_days).")


class AnswerRow(BaseModel):
    """What a ranking item and a recommendation share: the GPU, its throughput and band, what
    the estimate rests on, the catalog facts, cost of ownership, and an LLM ask's fit."""

    rank: int
    gpu: str
    name: str
    memory_gb: float = Field(description="Per GPU: what must fit the model.")
    throughput: float = Field(
        description="Throughput in `unit` of `count` GPUs (a fixed workload's ranking: one GPU)."
    )
    throughput_low: float
    throughput_high: float
    unit: str
    basis: Basis
    model: str = Field(
        description="measured | measured-scaled (one GPU measured, N by a scaling) | nnls | "
        "shape-scaled | borrowed | roofline-prior; model= asks "
        "also measured-moved | workload-scaled | llm-train-scaled | roofline-learned "
        "(see README)"
    )
    n: int = Field(description="Results behind a measured value; measured GPUs behind a fit.")
    band: float = Field(0.8, description="Nominal coverage of throughput_low..throughput_high.")
    precision: str | None = Field(
        None,
        description="The precision this row's figure is at where it is not the answer's: fp16 "
        "for a GPU without bf16 units when a bf16 workload is asked without precision= (mixed "
        "precision trains at fp16 there).",
    )
    relative_performance: float | None = Field(
        description="Reference GPU = 1.0 (a model ask: at the fewest reference GPUs that hold it)."
    )
    perf_per_dollar: float | None = Field(
        description="units/s per USD of the current price (a model ask's configuration of N "
        "GPUs: of the N GPUs and the box they need over a one-GPU PC, as /recommend counts "
        "it); None when stale or unknown."
    )
    count: int = Field(
        1,
        description="GPUs in the configuration (LLM asks: the model split over them, by "
        "layers for a GGUF file, tensor-parallel otherwise).",
    )
    stack: str = Field("cuda", description="Software stack (cuda, rocm-instinct, ...).")
    status: str = Field("in_production", description="in_production, discontinued, datacenter_only")
    sold_as: str = Field("card", description="The unit a buyer purchases (card, hgx-8, ...).")
    unit_gpus: int = Field(1, description="GPUs in that unit: counts are multiples of it.")
    draw_w: float | None = Field(None, description="GPUs' TDP x count (+ host_power_w).")
    energy_kwh: float | None = Field(None, description="Over the horizon.")
    energy_usd: float | None = None
    platform_usd: float | None = Field(None, description="Host, PSU, chassis (sourced or given).")
    resale_usd: float | None = None
    tco_usd: float | None = Field(None, description="price + platform + energy - resale.")
    cost_per_million_units: float | None = Field(
        None, description="tco_usd per million `unit` of work over the horizon."
    )
    break_even_hours: float | None = Field(
        None, description="Hours of use after which buying beats the cheapest cloud offer."
    )
    memory_needed_gb: float | None = Field(
        None, description="LLM asks: per GPU, GB (1e9 bytes), from the /memory breakdown."
    )
    headroom_context: int | None = Field(
        None, description="LLM asks: largest context that still fits at the asked batch."
    )
    headroom_batch: int | None = Field(
        None, description="LLM asks: largest batch that still fits at the asked context."
    )


def _frameworks() -> list[str]:
    return Field(
        default_factory=list,
        description="Frameworks of the single-GPU results behind a measured value (llm.c, "
        "pytorch, llama.cpp...): a measurement made with another framework than yours may not "
        "carry over. Empty for an estimate. Last, so that CSV columns before it keep their place.",
    )


def _perf_per_watt() -> float | None:
    return Field(
        None,
        description="Throughput per watt of TDP of the `count` GPUs (units/s per W; the host not "
        "counted); None without a stated TDP. After the other columns, before `frameworks`.",
    )


def _prompt_s() -> float | None:
    return Field(
        None,
        description="Inference asks of a model: seconds the configuration takes to read a prompt "
        "of `context` tokens before its first token (estimated from a measured prompt "
        "workload, as `why` says); None for other asks or where no prompt workload of the "
        "format's kind is measured. After perf_per_watt, before `frameworks`.",
    )


def _prompt_bound(which: str) -> float | None:
    return Field(None, description=f"The {which} end of prompt_s's band (nominal coverage `band`).")


class RankingItem(AnswerRow):
    mad: float | None
    price: PriceInfo | None
    perf_per_watt: float | None = _perf_per_watt()
    prompt_s: float | None = _prompt_s()
    prompt_s_low: float | None = _prompt_bound("fast")
    prompt_s_high: float | None = _prompt_bound("slow")
    frameworks: list[str] = _frameworks()


class AskEcho(BaseModel):
    """Echo of an LLM ask (model=...); null for a fixed workload."""

    model: str | None = None
    task: str | None = None
    quant: str | None = None
    context: int | None = None
    batch: int | None = None
    min_tokens_per_s: float | None = None
    gradient_checkpointing: bool | None = Field(
        None, description="Training asks: whether activations are recomputed (null: inference)."
    )
    optimizer: str | None = Field(None, description="Training asks: the optimizer costed.")
    lora_rank: int | None = Field(None, description="LoRA and QLoRA asks: the adapters' rank.")


class Rankings(AskEcho):
    items: list[RankingItem]
    next_cursor: str | None = None
    workload: str
    precision: Precision
    unit: str
    sort: RankingSort
    reference_gpu: str


class Recommendation(AnswerRow):
    perf_per_dollar: float = Field(
        description="Throughput per USD of what the budget pays: the GPUs plus the box N cards "
        "need over a one-GPU PC (units/s per USD, as `why` says)."
    )
    unit_price: PriceInfo
    total_price_usd: float
    total_memory_gb: float
    tdp_w: float | None = Field(description="All GPUs together.")
    scaling_factor: float = Field(description="Throughput of `count` GPUs / one GPU.")
    scaling_basis: str = Field(
        description="single | independent | measured | fitted:<fw>/<link> (profile fitted from "
        "measured results) | profile:<fw>/<link> (assumed profile) | tensor-parallel:<link>; "
        "model= asks: split:learned@<n> | split:assumed | independent:<copies>x<gpus per copy>"
    )
    why: str
    perf_per_watt: float | None = _perf_per_watt()
    prompt_s: float | None = _prompt_s()
    prompt_s_low: float | None = _prompt_bound("fast")
    prompt_s_high: float | None = _prompt_bound("slow")
    frameworks: list[str] = _frameworks()


class Recommendations(AskEcho):
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
    allow_stale: bool = False
    stack: str | None = None
    hint: str | None = Field(
        None,
        description="When nothing fits: what would, or which data is missing; also which GPUs "
        "availability (platform units, cloud-only) or price freshness kept out.",
    )
