"""The LLM catalog shipped with the package: models.csv and quantizations.csv, parsed once.

One lookup per kind (`model`, `quantization`): an unknown name raises UnknownSlug with the
closest known names, as catalog.lookup does for GPUs and workloads; callers choose the status
(404 for a path, 422 naming the query parameter).
"""

from functools import cache
from importlib import resources

from service.core.errors import UnknownSlug
from service.domain import llm_fit
from service.domain.matching import suggest
from service.domain.memory import (
    ModelSpec,
    Quantization,
    find_quantization,
    parse_models,
    parse_quantizations,
)


def _text(filename: str) -> str:
    return resources.files("service.catalog").joinpath(filename).read_text(encoding="utf-8")


@cache
def models() -> dict[str, ModelSpec]:
    """Every model by slug, in file order."""
    return {m.slug: m for m in parse_models(_text("models.csv"))}


@cache
def quantizations() -> tuple[Quantization, ...]:
    return tuple(parse_quantizations(_text("quantizations.csv")))


def model(slug: str) -> ModelSpec:
    """The model named `slug` (case-insensitive); UnknownSlug with suggestions otherwise."""
    found = models().get(slug.strip().lower())
    if found is None:
        raise UnknownSlug("model", slug, suggest(slug, models()))
    return found


def quantization(name: str) -> Quantization:
    """A format by name or alias ('Q4_K_M', 'awq', 'f16'); UnknownSlug with suggestions."""
    found = find_quantization(name, list(quantizations()))
    if found is None:
        names = [q.name for q in quantizations()]
        raise UnknownSlug("quantization", name, suggest(name, names))
    return found


def same_shape(a: ModelSpec, b: ModelSpec) -> bool:
    """Same architecture and size (Llama 3 8B and Llama 3.1 8B): the same tokens/s at a context
    both support, so a measured result of one speaks for the other."""
    fields = ("params_b", "layers", "hidden", "intermediate", "heads", "kv_heads", "head_dim")
    return all(getattr(a, f) == getattr(b, f) for f in (*fields, "vocab", "num_experts"))


def decode_bytes_floor_of(model: str | None, quant: str | None, phase: str | None) -> float | None:
    """The layer weights a decode token of a workload's model file reads at the least
    (llm_fit.decode_bytes_floor), where the workload decodes a model and format of the catalog:
    the bandwidth ceiling of its results (the gate) and its estimates."""
    if phase != "decode" or model is None or quant is None:
        return None
    spec = models().get(model)
    fmt = find_quantization(quant, list(quantizations()))
    if spec is None or fmt is None:
        return None
    return llm_fit.decode_bytes_floor(spec, fmt) or None
