"""`gpu-advisor fit`: a model's memory breakdown and which catalog GPUs (and how many of each)
hold it. Offline: the shipped catalog only (gpus.csv, models.csv, quantizations.csv)."""

from service.catalog import llm, loaders
from service.domain import llm_fit, memory

TERMS = ("weights", "kv_cache", "activations", "gradients", "optimizer", "lora_adapters")
SPLIT_WORDS = {
    "layer": "split by layers, as llama.cpp runs a GGUF file",
    "tensor": "tensor-parallel split",
    "sharded": "sharded data parallel (FSDP / ZeRO-3)",
}


def render_fit(ask: llm_fit.Ask, max_gpus: int = 8) -> str:
    """The breakdown on one GPU, then every catalog GPU's fewest fitting count, by count and
    memory, with the headroom left (largest context and batch that still fit)."""
    one = ask.breakdown(1).as_gb()
    lines = [
        f"{ask.model.name} ({ask.model.slug}) {ask.task}, {ask.quant.name} "
        f"({ask.quant.bits_per_weight:g} bits/weight), context {ask.context}, batch {ask.batch}",
        "memory on one GPU (GB = 1e9 bytes):",
    ]
    for term in (*TERMS, "overhead"):
        value = one[f"{term}_gb"]
        if value:
            lines.append(f"  {term:<14} {value:9.2f}")
    lines.append(f"  {'total':<14} {one['total_gb']:9.2f}")
    fits: list[tuple[int, float, str, llm_fit.Headroom, float]] = []
    too_small = []
    for gpu in loaders.load_gpus():
        n = llm_fit.gpus_needed(ask, gpu.memory_gb, max_gpus)
        if n is None:
            too_small.append(gpu.slug)
            continue
        room = llm_fit.headroom(ask, gpu.memory_gb, n)
        fits.append((n, gpu.memory_gb, gpu.slug, room, ask.breakdown(n).total_gb))
    fits.sort(key=lambda f: (f[0], f[1], f[2]))
    split = SPLIT_WORDS[memory.split_for(ask.quant, ask.task)]
    lines.append(f"GPUs that fit ({split}, at most {max_gpus}):")
    for n, mem, slug, room, per_gpu in fits:
        lines.append(
            f"  {n} x {slug:<36} {ask.usable_gb(mem):6.2f} GB usable ({mem:g} GiB) each, needs "
            f"{per_gpu:6.2f} GB per GPU; max context {room.max_context}, max batch {room.max_batch}"
        )
    if not fits:
        lines.append("  none")
    lines.append(f"{len(too_small)} catalog GPUs cannot hold it even {max_gpus} at a time.")
    return "\n".join(lines)


def ask_from_options(
    model: str, task: str, quant: str | None, context: int | None, batch: int
) -> llm_fit.Ask:
    """An Ask from command-line options; raises UnknownSlug or ValueError with the reason."""
    spec = llm.model(model)
    q = llm.quantization(quant or memory.DEFAULT_QUANT[task])
    ctx = min(4096, spec.max_context) if context is None else context
    if ctx > spec.max_context:
        raise ValueError(f"{spec.slug} supports at most {spec.max_context} tokens of context")
    ask = llm_fit.Ask(spec, task, q, ctx, batch)  # type: ignore[arg-type]
    ask.breakdown(1)  # raises ValueError for a format the task cannot use
    return ask
