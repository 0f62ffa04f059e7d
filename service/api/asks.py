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
)
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
    **options: Any,
) -> llm_fit.Ask:
    """The LLM ask of /recommend and /rankings; a format the task cannot use is a 422, and so is
    gradient_checkpointing on an inference ask (None: not given, the default, on)."""
    if gradient_checkpointing is not None and task == "inference":
        raise InvalidInput.one(
            ("query", "gradient_checkpointing"),
            "gradient_checkpointing applies only to a training task (full-finetune, lora, qlora)",
            "not_applicable",
        )
    spec, quant, ctx = resolve(model_slug, quant_name, task, context)
    recompute = True if gradient_checkpointing is None else gradient_checkpointing
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


def gradient_checkpointing_echo(ask: llm_fit.Ask) -> bool | None:
    """What an answer echoes for gradient_checkpointing: the ask's, null for inference."""
    return None if ask.task == "inference" else ask.gradient_checkpointing


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
