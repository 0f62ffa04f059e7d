"""GET /memory: what a model needs per GPU to run or fine-tune, term by term.

Pure arithmetic over the shipped catalog (service/domain/memory.py has the formulas and their
sources); no database read. Unknown model: 404 with suggestions (the model is what is asked
about); other bad input: 422 naming the parameter.
"""

from typing import Annotated

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from service.api.asks import DEFAULT_CONTEXT, refuse_unread, resolve
from service.api.query_model import QueryModel
from service.core.errors import InvalidInput
from service.domain import memory
from service.schemas.common import Problem
from service.schemas.llm import MemoryAnswer, OptimizerName, TaskName

router = APIRouter(tags=["memory"])
MAX_GPUS = 64


class MemoryQuery(BaseModel):
    model: str = Field(min_length=1, max_length=64, description="Model slug (GET /models).")
    task: TaskName = "inference"
    quant: str | None = Field(
        None,
        min_length=1,
        max_length=32,
        description="Weight format by name or alias (bf16, fp8, int8, q4_k_m, awq, nf4...); "
        "default bf16, nf4 for qlora.",
    )
    context: int | None = Field(
        None,
        ge=1,
        le=10_000_000,
        description="Tokens per sequence (default 4096 or the model's max).",
    )
    batch: int = Field(1, ge=1, le=4096, description="Sequences at once.")
    gpus: int = Field(
        1, ge=1, le=MAX_GPUS, description="GPUs the model is split over (see the answer's split)."
    )
    optimizer: OptimizerName = "adamw"
    lora_rank: int = Field(16, ge=1, le=4096)
    gradient_checkpointing: bool = True
    kv_bits: int = Field(16, ge=4, le=32, description="KV cache bits per value (16: fp16).")


def breakdown(
    q: MemoryQuery,
) -> tuple[memory.ModelSpec, memory.Quantization, memory.MemoryBreakdown]:
    refuse_unread(q.task, q.model_fields_set)
    spec, quant, context = resolve(q.model, q.quant, q.task, q.context)
    split = memory.effective_split(None, quant, q.task)
    if not memory.split_fits(spec, q.gpus, split):
        counts = [n for n in range(1, MAX_GPUS + 1) if memory.split_fits(spec, n, split)]
        why = (
            f"tensor parallelism, which needs its {spec.heads} attention heads divisible by "
            f"the GPU count, and its {spec.kv_heads} KV heads divisible by it or it by them"
            if split == "tensor"
            else f"{'layers' if split == 'layer' else 'blocks'}, at least one of its "
            f"{spec.layers} per GPU"
        )
        raise InvalidInput.one(
            ("query", "gpus"),
            f"{spec.slug} in {quant.name} is split by {why}: "
            + ", ".join(map(str, counts))
            + " GPUs",
            "split_not_possible",
            allowed=counts,
        )
    try:
        result = memory.memory_breakdown(
            spec,
            q.task,
            quant,
            context=context,
            batch=q.batch,
            gpus=q.gpus,
            optimizer=q.optimizer,
            gradient_checkpointing=q.gradient_checkpointing,
            lora_rank=q.lora_rank,
            kv_bits=q.kv_bits,
        )
    except ValueError as exc:  # a format the task cannot train
        raise InvalidInput.one(("query", "quant"), str(exc), "quant_for_task") from None
    return spec, quant, result


@router.get(
    "/memory",
    response_model=MemoryAnswer,
    responses={404: {"model": Problem}},
    summary="Memory per GPU to run or fine-tune a model: weights, KV cache, activations, "
    "gradients, optimizer, adapters, overhead",
)
def get_memory(q: Annotated[MemoryQuery, Depends(QueryModel(MemoryQuery))]) -> MemoryAnswer:
    spec, quant, result = breakdown(q)
    terms = result.as_gb()
    total_all = memory.total_over_gpus(spec, result) / memory.GB
    context = q.context or min(DEFAULT_CONTEXT, spec.max_context)
    return MemoryAnswer(
        model=spec.slug,
        task=q.task,
        quant=quant.name,
        bits_per_weight=quant.bits_per_weight,
        context=context,
        batch=q.batch,
        gpus=q.gpus,
        split=result.split,
        optimizer=q.optimizer,
        lora_rank=q.lora_rank,
        gradient_checkpointing=q.gradient_checkpointing,
        kv_bits=q.kv_bits,
        total_all_gpus_gb=round(total_all, 3),
        trainable_params=result.trainable_params,
        **terms,
    )
