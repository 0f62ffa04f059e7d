"""Asks from query parameters: a recommendation ask (/recommend and the web page) and a
language-model ask (/memory, /recommend and /rankings).

Not a router (routers never import routers): the routes build their asks here. The model
is looked up in the shipped catalog (unknown: UnknownSlug -> 404 with suggestions, the model is
what is asked about); a weight format or context the model or task cannot use is a 422 naming
the query parameter.
"""

from collections.abc import Collection
from typing import Any

from service.catalog import llm
from service.core.errors import InvalidInput, UnknownSlug
from service.domain import llm_fit, memory
from service.read_model.llm import Limits, Pool
from service.read_model.rows import RecommendationAsk
from service.schemas.queries import RecommendQuery

DEFAULT_CONTEXT = 4096
# The parameters only a language-model ask (model=...) reads, on /recommend; /rankings adds
# max_gpus and framework, which its workload rankings (one GPU each) do not read.
MODEL_ASK_PARAMS = (
    "task",
    "quant",
    "context",
    "batch",
    "min_tokens_per_s",
    "gradient_checkpointing",
    "optimizer",
    "lora_rank",
)
# The tasks whose memory each optional parameter changes (domain/memory.py): a parameter given
# for another task is a 422, not an echo of a value that changed nothing (optimizer=sgd on
# inference, kv_bits on full fine-tuning).
TRAINING = ("full-finetune", "lora", "qlora")
APPLIES_TO: dict[str, tuple[str, ...]] = {
    "optimizer": TRAINING,
    "gradient_checkpointing": TRAINING,
    "lora_rank": ("lora", "qlora"),
    "kv_bits": ("inference",),
}


def refuse_unread(task: str, given: Collection[str]) -> None:
    """A 422 naming every given parameter that `task`'s memory does not depend on."""
    errors = [
        {
            "loc": ["query", name],
            "msg": f"{name} applies only to task {' or '.join(tasks)}, not {task}",
            "type": "not_applicable",
        }
        for name, tasks in APPLIES_TO.items()
        if name in given and task not in tasks
    ]
    if errors:
        raise InvalidInput(errors)


WORKLOAD_ASK_PARAMS = ("workload", "precision")
_WITH_MODEL = {
    "workload": "workload and model are two asks: a measured workload, or a language model "
    "costed by its memory and speed model; pass one",
    "precision": "a model= ask names its weight format with quant, not precision",
}


def check_ask_kind(given: Collection[str], model_params: Collection[str]) -> None:
    """A parameter the ask does not read is a 422 naming it, not silently ignored: a model=
    ask reads no workload or precision, a workload ask none of `model_params`."""
    if "model" in given:
        errors = [(name, _WITH_MODEL[name]) for name in WORKLOAD_ASK_PARAMS if name in given]
    else:
        errors = [
            (name, f"{name} applies only to a language-model ask (with model=...; GET /models)")
            for name in model_params
            if name in given
        ]
    if errors:
        raise InvalidInput(
            [{"loc": ["query", name], "msg": msg, "type": "not_applicable"} for name, msg in errors]
        )


def resolve(
    model_slug: str, quant_name: str | None, task: str, context: int | None
) -> tuple[memory.ModelSpec, memory.Quantization, int]:
    """The model (UnknownSlug -> 404), format (422 naming `quant`) and context a query names."""
    spec = llm.model(model_slug)
    context = min(DEFAULT_CONTEXT, spec.max_context) if context is None else context
    name = quant_name or memory.DEFAULT_QUANT[task]
    try:
        quant = llm.quantization(name)
    except UnknownSlug as exc:
        raise InvalidInput.one(
            ("query", "quant"), exc.detail, "unknown_quant", suggestions=exc.suggestions
        ) from None
    if context > spec.max_context:
        raise InvalidInput.one(
            ("query", "context"),
            f"{spec.slug} supports at most {spec.max_context} tokens of context",
            "context_too_long",
        )
    return spec, quant, context


def ask_for(
    model_slug: str,
    task: str,
    quant_name: str | None,
    context: int | None,
    batch: int,
    gradient_checkpointing: bool | None = None,
    optimizer: str | None = None,
    lora_rank: int | None = None,
) -> llm_fit.Ask:
    """The LLM ask of /recommend and /rankings; a format the task cannot use is a 422, and so is
    a parameter the task's memory does not read (APPLIES_TO; None: not given, the default)."""
    given: dict[str, object] = {
        "gradient_checkpointing": gradient_checkpointing,
        "optimizer": optimizer,
        "lora_rank": lora_rank,
    }
    refuse_unread(task, [name for name, value in given.items() if value is not None])
    spec, quant, ctx = resolve(model_slug, quant_name, task, context)
    recompute = True if gradient_checkpointing is None else gradient_checkpointing
    options: dict[str, Any] = {"optimizer": optimizer} if optimizer is not None else {}
    if lora_rank is not None:
        options["lora_rank"] = lora_rank
    ask = llm_fit.Ask(
        spec,
        task,  # type: ignore[arg-type]
        quant,
        ctx,
        batch,
        gradient_checkpointing=recompute,
        **options,
    )
    try:
        ask.breakdown(1)
    except ValueError as exc:
        raise InvalidInput.one(("query", "quant"), str(exc), "quant_for_task") from None
    return ask


def training_echo(ask: llm_fit.Ask) -> dict[str, Any]:
    """What an answer echoes of the ask's training parameters: each one the task reads, null
    for the others (gradient checkpointing and optimizer on inference, LoRA rank on a full
    fine-tune)."""
    reads = {name for name, tasks in APPLIES_TO.items() if ask.task in tasks}
    return {
        "gradient_checkpointing": ask.gradient_checkpointing
        if "gradient_checkpointing" in reads
        else None,
        "optimizer": ask.optimizer if "optimizer" in reads else None,
        "lora_rank": ask.lora_rank if "lora_rank" in reads else None,
    }


def model_ask(q: RecommendQuery) -> llm_fit.Ask:
    """/recommend's model= ask (the API's and the web form's)."""
    assert q.model is not None
    return ask_for(
        q.model,
        q.task,
        q.quant,
        q.context,
        q.batch,
        q.gradient_checkpointing,
        q.optimizer,
        q.lora_rank,
    )


def recommendation_ask(q: RecommendQuery) -> RecommendationAsk:
    """/recommend's query (the API's and the web form's) as the read model's ask."""
    return RecommendationAsk(
        workload=q.workload,
        precision=q.precision,
        condition=q.condition,
        allow_stale=q.allow_stale,
        budget=q.budget,
        min_memory_gb=q.min_memory_gb,
        mode=q.mode,
        framework=q.framework,
        max_gpus=q.max_gpus,
        limit=q.limit,
        costs=q.settings(),
        max_power_w=q.max_power_w,
        sort=q.sort,
        stack=q.stack,
    )


def llm_limits(q: RecommendQuery) -> Limits:
    """/recommend's constraints on a model= ask (budget, count, speed, power, pool, mode:
    independent also offers several copies of a configuration, for serving or for
    independent experiments), and its cost settings and order."""
    return Limits(
        budget=q.budget,
        max_gpus=q.max_gpus,
        min_tokens_per_s=q.min_tokens_per_s,
        max_power_w=q.max_power_w,
        pool=Pool(q.stack, q.min_memory_gb or 0.0),
        mode=q.mode,
        costs=q.settings(),
        sort=q.sort,
    )
