"""The account of one configuration (`why`)."""

from collections.abc import Sequence

from service.domain import llm_fit, memory, tiers
from service.domain.estimate import counted, figure, precision_note, unmeasured_stack_note
from service.domain.tco import no_box_phrase
from service.read_model.llm._data import TRAIN_REFERENCE, UNIT, LlmOption
from service.read_model.llm._throughput import MOVED


def why(
    o: LlmOption,
    ask: llm_fit.Ask,
    rank: int,
    budget: float | None,
    extra: float | None = 0.0,
    by_cost: bool = False,
    below: Sequence[LlmOption] = (),
) -> str:
    """The account of one option; `rank` is its place by throughput, headroom first inside
    tied estimates (said so when the answer is ordered by cost, `by_cost`; and, when faster
    options rank `below` it, why it ranks above the fastest, and its lead claims only what
    holds against all of them)."""
    faster_below = tiers.fastest(below)
    what = _what(o, ask.phase)
    capacity = llm_fit.capacity_gb(o.gpu.memory_gb)  # a "16 GB" card holds 16 GiB = 17.2 GB
    usable = ask.usable_gb(o.gpu.memory_gb)
    engine = (
        f" ({usable:.1f} GB of them for a serving engine: vLLM's default 90%)"
        if usable < capacity
        else ""
    )
    need = (
        f"needs {o.breakdown.total_gb:.1f} GB per GPU of its {capacity:.1f} GB "
        f"({o.gpu.memory_gb:g} GiB){engine}, {max(usable - o.breakdown.total_gb, 0.0):.1f} GB "
        "spare"
    )
    if o.basis == "measured":
        source = f"median of {counted(o.n, 'measured result')} ({o.source})"
    elif o.model == MOVED:
        source = (
            f"estimated: median of {counted(o.n, 'measured result')} ({o.source}), moved to "
            f"context {ask.context} at batch {ask.batch} by the decode roofline, "
            f"likely {figure(o.low)}-{figure(o.high)}"
        )
    elif o.model == "workload-scaled":
        source = (
            f"estimated: {o.source}, "
            f"scaled to {ask.model.slug} {ask.quant.name} at context {ask.context} by the "
            "decode roofline, "
            f"likely {figure(o.low)}-{figure(o.high)}"
        )
    elif o.model == "roofline-learned":
        source = (
            f"estimated: {ask.phase} roofline x efficiency learned from {o.n} measured "
            f"GPU-and-benchmark groups, "
            f"likely {figure(o.low)}-{figure(o.high)}"
        )
    elif o.model == f"{TRAIN_REFERENCE}-scaled":
        source = (
            f"estimated: {o.source}, scaled by FLOPs per token "
            f"({_passes_words(ask)}){_held_words(o)}, likely {figure(o.low)}-{figure(o.high)}"
        )
    else:
        source = (
            f"estimated from specs alone (stated prior), likely {figure(o.low)}-{figure(o.high)}"
        )
    if not o.stack_measured:
        source += "; " + unmeasured_stack_note(o.gpu.stack)
    source += precision_note(o.precision)
    room = (
        f"room for context {o.headroom.max_context} at batch {ask.batch}, "
        f"batch {o.headroom.max_batch} at context {ask.context}"
    )
    within = f" within ${budget:,.0f}" if budget is not None else ""
    reasons = (
        ()
        if faster_below is None
        else llm_fit.ranked_above_because(o.as_option(), faster_below.as_option())
    )
    if by_cost:
        lead = f"#{rank} by throughput"
    elif rank == 1 and faster_below is None:
        lead = "Most throughput"
    elif rank == 1:
        lead = _lead(tiers.common_reasons(_reasons, o, below))
    else:
        lead = f"#{rank}"
    above = (
        ""
        if faster_below is None
        else f" Ranked above {_what(faster_below, ask.phase)}, faster at "
        f"~{figure(faster_below.throughput)} {UNIT}: their estimates are tied, and this one "
        f"{_ranked_above_words(o, faster_below, reasons)}."
    )
    price = f" for ${o.gpu.price.usd * o.count:,.0f}" if o.gpu.price else ""
    if o.gpu.price and extra is None and o.count > 1:
        price += f" ({no_box_phrase(o.count, o.gpu.tdp_w)}: the budget counts the GPUs only)"
    elif o.gpu.price and extra:
        price += f" + ${extra:,.0f} for the box of {o.count} GPUs over a one-GPU PC"
    total = f" in all, {o.replicas} x one copy's" if o.replicas > 1 else ""
    return (
        f"{lead}{within}: {what}{price} {need} for {ask.model.slug} {ask.task} "
        f"({ask.quant.name}, context {ask.context}, batch {ask.batch}); ~{figure(o.throughput)} "
        f"{UNIT}{total}{_speedup_words(o)} ({source}); {room}.{above}"
    )


def _reasons(first: LlmOption, faster: LlmOption) -> tuple[str, ...]:
    return llm_fit.ranked_above_because(first.as_option(), faster.as_option())


def _lead(common: tuple[str, ...]) -> str:
    """A first row's lead from the reasons it ranks above every faster option below it."""
    if "fewer GPUs" in common:
        return "Fewest GPUs among the fastest"
    if "larger batch" in common or "longer context" in common:
        return "Most headroom among the fastest"
    return "Tied with the fastest"


def _ranked_above_words(o: LlmOption, faster: LlmOption, reasons: tuple[str, ...]) -> str:
    """Why `o` ranks above `faster`, saying only what holds (llm_fit.ranked_above_because's
    `reasons`: fewer GPUs, more room)."""
    parts = []
    if "fewer GPUs" in reasons:
        parts.append(f"needs fewer GPUs ({o.count} against {faster.count})")
    room = [r for r in ("larger batch", "longer context") if r in reasons]
    if room:
        parts.append("leaves room for a " + " and a ".join(room))
    return " and ".join(parts) or "comes first on the tie-break"


def cheaper_tie_words(
    tie: LlmOption, first: LlmOption, paid: float, first_paid: float, phase: str
) -> str:
    """' As fast within the estimates: 2 x GPU (model split over them; 32 GB per GPU against
    80), ~X tokens/s, for $Y, Z% less.' for the first row of an answer, naming the cheapest
    configuration tied with it that gives more per dollar (tiers.cheaper_tie)."""
    what = _what(tie, phase)
    memory, theirs = tie.gpu.memory_gb, first.gpu.memory_gb
    if memory != theirs:
        held = f"{memory:g} GB per GPU against {theirs:g}"
        what = f"{what[:-1]}; {held})" if what.endswith(")") else f"{what} ({held})"
    return (
        f" As fast within the estimates: {what}, ~{figure(tie.throughput)} {UNIT}, "
        f"for ${paid:,.0f}, {1 - paid / first_paid:.0%} less."
    )


def _passes_words(ask: llm_fit.Ask) -> str:
    """What a training token costs, in forwards (memory.training_passes)."""
    backward = (
        "activation and weight gradients"
        if ask.task == "full-finetune"
        else "activation gradients only, the base weights frozen"
    )
    recompute = (
        ", forward recomputed for gradient checkpointing" if ask.gradient_checkpointing else ""
    )
    dequantized = (
        ", plus its 4-bit weights dequantized on each pass at the card's bandwidth (a floor)"
        if memory.dequantized_bytes_per_step(ask.model, ask.quant, ask.passes)
        else ""
    )
    return f"{ask.passes} x forward: backward with {backward}{recompute}{dequantized}"


def _what(o: LlmOption, phase: str) -> str:
    """The configuration in words: a GPU, a model split over N of them (sharded and trained
    data-parallel, as FSDP does, for training: the speedup is the framework's data-parallel
    profile), or copies."""
    if o.replicas > 1:
        per_copy = o.count // o.replicas
        copy = o.gpu.slug if per_copy == 1 else f"{per_copy} x {o.gpu.slug}"
        return f"{o.replicas} independent copies on {copy} each ({o.count} GPUs)"
    if o.count == 1:
        return o.gpu.slug
    how = "sharded over them, trained data-parallel" if phase == "train" else "split over them"
    return f"{o.count} x {o.gpu.slug} (model {how})"


def _speedup_words(o: LlmOption) -> str:
    """How N GPUs' tokens/s relate to one GPU's, where that is not measured for N."""
    if o.count == 1 or o.replicas > 1 or o.basis == "measured" or o.model == MOVED:
        return ""
    return f", {o.speedup:.2f} x one GPU's by {o.scaling_basis}"


def _held_words(o: LlmOption) -> str:
    """What held a training estimate down, where something did (held_to_training_envelope)."""
    if o.held_to is None:
        return ""
    return (
        f", held to {o.held_to.share:.0%} of its peak per GPU: the most any GPU measured on "
        f"{o.held_to.workload} reached (GPT-2 124M's utilisation does not carry to a model of "
        "this size)"
    )
