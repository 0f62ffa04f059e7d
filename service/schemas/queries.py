"""Query models read by more than one route: /recommend's query, also the web page's form.

Validated as one model (cheaper than one parameter at a time); the routes that read them and
the HTML page import them from here, so no router imports another router.
"""

from pydantic import Field

from service.domain.vocabulary import ConditionChoice, Mode, Precision
from service.schemas.catalog import Stack
from service.schemas.common import Format
from service.schemas.llm import GRADIENT_CHECKPOINTING_DOC, OptimizerName, TaskName
from service.schemas.rankings import RecommendSort
from service.schemas.tco import CostQuery

MAX_BUDGET = 100_000_000
MAX_GPUS = 8  # the most GPUs a /recommend configuration may have


class RecommendQuery(CostQuery):
    """/recommend's query parameters, validated as one model (cheaper than one by one)."""

    budget: float = Field(gt=0, le=MAX_BUDGET, allow_inf_nan=False, description="USD for all GPUs")
    workload: str | None = Field(None, min_length=1, max_length=64)
    precision: Precision | None = None
    min_memory_gb: float | None = Field(None, ge=0, le=10_000, allow_inf_nan=False)
    max_gpus: int = Field(4, ge=1, le=MAX_GPUS)
    mode: Mode = "parallel"
    framework: str = Field("pytorch", min_length=1, max_length=32, pattern=r"^[a-z0-9_.+-]+$")
    condition: ConditionChoice = "any"
    allow_stale: bool = Field(False, description="Also rank at prices older than the window.")
    stack: Stack | None = Field(None, description="Only GPUs on this software stack.")
    limit: int = Field(5, ge=1, le=50)
    format: Format | None = None
    sort: RecommendSort = "performance"
    max_power_w: float | None = Field(None, gt=0, le=1_000_000, allow_inf_nan=False)
    # An LLM ask instead of a fixed workload (see GET /memory for the memory model).
    model: str | None = Field(
        None, min_length=1, max_length=64, description="Model slug (GET /models)."
    )
    task: TaskName = "inference"
    quant: str | None = Field(
        None, min_length=1, max_length=32, description="Weight format (default per task)."
    )
    context: int | None = Field(None, ge=1, le=10_000_000, description="Tokens per sequence.")
    batch: int = Field(1, ge=1, le=4096)
    min_tokens_per_s: float | None = Field(None, gt=0, le=1e9, allow_inf_nan=False)
    gradient_checkpointing: bool | None = Field(None, description=GRADIENT_CHECKPOINTING_DOC)
    optimizer: OptimizerName | None = Field(None, description="Training asks (default adamw).")
    lora_rank: int | None = Field(None, ge=1, le=4096, description="LoRA/QLoRA (default 16).")
