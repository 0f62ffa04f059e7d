"""What an empty answer says instead: why nothing fits the limits, and the least change
(format, task, optimizer, GPU count, an older price) that something within them runs; and
what an answer says besides its rows: a faster configuration that only an older price buys.
"""

from dataclasses import replace
from functools import partial

from service.catalog import llm
from service.domain import llm_fit, memory
from service.domain.estimate import figure
from service.domain.tco import no_box_phrase
from service.read_model.llm._budget import (
    Limits,
    _affordable,
    _cost,
    _offered,
    _undominated,
    platform_extra,
)
from service.read_model.llm._configurations import options, ranked
from service.read_model.llm._data import UNIT, LlmData, LlmOption, Pool
from service.schemas.queries import MAX_GPUS

#: Weight formats an empty inference answer offers instead, best quality first: the llama.cpp
#: formats consumer cards run, down to Q4_K_M (the usual floor before quality drops visibly).
SMALLER_QUANTS = ("q8_0", "q6_k", "q5_k_m", "q4_k_m")


def smaller_quants(ask: llm_fit.Ask) -> list[memory.Quantization]:
    """The SMALLER_QUANTS an inference ask's hint may offer: those lighter than its format."""
    if ask.task != "inference":
        return []
    quants = [llm.quantization(name) for name in SMALLER_QUANTS]
    return [q for q in quants if q.bits_per_weight < ask.quant.bits_per_weight]


def smaller_quant(ask: llm_fit.Ask, data: LlmData, limits: Limits, framework: str) -> str:
    """'; with quant=...' naming the best-quality smaller format that something within the
    limits runs, and its top pick, then the same for the floor format (Q4_K_M) when that is
    another one: the usual choice, half the bytes of Q8_0 to read per token, so often fewer
    cards and twice the speed. '' for training asks or when none does. Someone asking for a 70B
    model at $3,000 without naming a format gets bf16 (143 GB) and should learn that Q4_K_M on
    two 24 GB cards is within reach."""
    offers: list[str] = []
    for quant in smaller_quants(ask):
        if offers and quant.name != SMALLER_QUANTS[-1]:
            continue  # after the best-quality format that fits, only the floor is worth naming
        smaller = replace(ask, quant=quant)
        reference = data.reference_for(smaller) if data.reference_for else None
        as_asked = replace(data, decode_reference=reference)  # what /recommend would use
        best = _best_within(smaller, as_asked, limits, framework)
        if best is not None:
            need = smaller.breakdown(1).total_gb
            offers.append(
                _offer(f"with quant={quant.name} ({need:.1f} GB on one GPU)", best, data, limits)
            )
    return "".join(offers)


def _best_within(
    ask: llm_fit.Ask, data: LlmData, limits: Limits, framework: str
) -> LlmOption | None:
    """What /recommend would answer first for `ask` within `limits` (ordered by throughput),
    or None."""
    affordable = _affordable(_offered(ask, data, limits, framework), data, limits)
    box = partial(platform_extra, data=data, costs=limits.costs)
    found = ranked(_undominated(affordable, data, limits.costs), box)
    return found[0] if found else None


def _offer(words: str, best: LlmOption, data: LlmData, limits: Limits) -> str:
    extra = platform_extra(best, data, limits.costs)
    cost = _cost(best, data, limits.costs)
    box = "" if extra is not None else f"; GPUs only: no sourced box holds {best.count}"
    return (
        f"; {words} {best.count} x {best.gpu.slug} is within ${limits.budget:,.0f} at "
        f"${cost:,.0f} (~{figure(best.throughput)} {UNIT}, {best.basis}{box})"
    )


def other_asks(ask: llm_fit.Ask, data: LlmData, limits: Limits, framework: str) -> str:
    """For an empty answer, the least change to a fine-tuning ask that something within the
    budget runs (lighter_asks), and up to MAX_GPUS GPUs when fewer were allowed. '' when
    neither helps."""
    offers = []
    for words, lighter in lighter_asks(ask):
        best = _best_within(lighter, data, limits, framework)
        if best is not None:
            need = lighter.breakdown(1).total_gb
            offers.append(_offer(f"with {words} ({need:.1f} GB on one GPU)", best, data, limits))
            break
    if limits.max_gpus < MAX_GPUS:
        best = _best_within(ask, data, replace(limits, max_gpus=MAX_GPUS), framework)
        if best is not None and best.count > limits.max_gpus:
            offers.append(_offer(f"with max_gpus={MAX_GPUS}", best, data, limits))
    return "".join(offers)


def lighter_asks(ask: llm_fit.Ask) -> list[tuple[str, llm_fit.Ask]]:
    """Lighter fine-tuning asks, least change first: a full fine-tune with 8-bit Adam (a
    quarter of AdamW's optimizer state), LoRA on the same weights (frozen base, adapters
    trained), then QLoRA for LoRA or full fine-tuning in bf16 (a 4-bit base takes a quarter of
    the weights' memory, the usual way to fine-tune a 70B model on 24 GB cards; same training
    precision, so the same data). Only QLoRA was offered: Phi-3-mini's full fine-tune at
    $1,500 hinted at QLoRA where LoRA, 10.5 GB, fits a 12 GB card."""
    out = []
    if ask.task == "full-finetune":
        if ask.optimizer == "adamw":
            out.append(("optimizer=adamw-8bit", replace(ask, optimizer="adamw-8bit")))
        out.append(("task=lora", replace(ask, task="lora")))
    nf4 = llm.quantization("nf4")
    bf16_training = ask.task in ("lora", "full-finetune")
    if bf16_training and ask.quant.compute_precision == nf4.compute_precision:
        out.append(("task=qlora", replace(ask, task="qlora", quant=nf4)))
    return out


def _boxed(o: LlmOption, data: LlmData, limits: Limits) -> bool:
    """As _affordable: N cards that no sourced box holds (or powers) are not offered, so a
    hint names none."""
    return o.count == 1 or platform_extra(o, data, limits.costs) is not None


def _buildable_first(found: list[LlmOption], data: LlmData, limits: Limits) -> list[LlmOption]:
    """The configurations a sourced box holds, where any does, else all of them: a hint names
    what /recommend would offer (8 x RTX 5090, 4,600 W, had been named the fastest for
    Llama-3.1-405B, a count no sourced box powers), and a bare count only when nothing else
    fits."""
    return [o for o in found if _boxed(o, data, limits)] or found


def _unboxed_words(o: LlmOption, data: LlmData, limits: Limits) -> str:
    """'; GPUs only: no sourced box holds N' for a count no sourced box holds, else ''."""
    return "" if _boxed(o, data, limits) else f"; GPUs only: no sourced box holds {o.count}"


def _usable(o: LlmOption, data: LlmData, limits: Limits) -> bool:
    """Within the ask's speed and power limits, in a box a source holds (as _affordable)."""
    return limits.fast_enough(o) and limits.within_power(o) and _boxed(o, data, limits)


def faster_at_older_price(
    ask: llm_fit.Ask, data: LlmData, limits: Limits, framework: str, top: float
) -> str | None:
    """For an answer whose first row runs at `top` tokens/s: the fastest configuration that
    only an older price buys within the budget, where it is faster, as the hint of a workload
    ask names what availability kept out (rows._kept_out). Else None. Llama-3.1-70B Q4_K_M at
    $12,000 had answered 2 x RTX 5090 at ~23.7 tokens/s and said nothing of one RTX PRO 6000
    Blackwell (96 GB) at ~24.6 for less, whose newest price is older than the window."""
    grown = _offered(ask, data, limits, framework, "older")

    def cost(o: LlmOption) -> float:
        return _cost(o, data, limits.costs, o.gpu.shown_price)

    faster = [
        o
        for o in grown
        if o.throughput > top and _usable(o, data, limits) and cost(o) <= limits.budget
    ]
    best = max(faster, key=lambda o: (o.throughput, -o.count, o.gpu.slug), default=None)
    if best is None:
        return None
    p = best.gpu.shown_price
    assert p is not None
    return (
        f"at an older price (allow_stale=true) {best.count} x {best.gpu.slug} runs it faster, "
        f"~{figure(best.throughput)} {UNIT} ({best.basis}), for ${cost(best):,.0f} "
        f"({p.condition} price of {p.observed_at}, {p.source})"
    )


def older_price(
    ask: llm_fit.Ask, data: LlmData, limits: Limits, framework: str, fitting: list[LlmOption]
) -> str:
    """'; at an older price (allow_stale=true) ...' when a GPU whose newest price is older
    than the freshness window (a street or used price, or the list price of a GPU still made,
    as allow_stale prices it: prices.current_price) would cost less than the cheapest with a
    current one: an empty answer should not hide what allow_stale=true would rank. '' otherwise,
    and when stale prices are already allowed (they are then current)."""

    current = [
        _cost(o, data, limits.costs) for o in fitting if o.gpu.price and _usable(o, data, limits)
    ]
    older = options(ask, data, limits.max_gpus, framework, "older", limits.pool, True)
    stale = [o for o in older if _usable(o, data, limits)]

    def cost(o: LlmOption) -> float:
        return _cost(o, data, limits.costs, o.gpu.shown_price)

    best = min(stale, key=lambda o: (cost(o), o.gpu.slug), default=None)
    if best is None or (current and cost(best) >= min(current)):
        return ""
    p = best.gpu.shown_price
    assert p is not None
    within = ", within the budget" if cost(best) <= limits.budget else ""
    return (
        f"; at an older price (allow_stale=true) {best.count} x {best.gpu.slug} costs "
        f"${cost(best):,.0f}{within} ({p.condition} price of {p.observed_at}, {p.source})"
    )


def _pool_words(pool: Pool) -> str:
    """' on rocm-radeon with 24 GB or more' for a narrowed pool, else ''."""
    words = f" on {pool.stack}" if pool.stack else ""
    if pool.min_memory_gb > 0:
        words += f" with {pool.min_memory_gb:g} GB or more"
    return words


# What shrinks an ask that fits nowhere, by task: a smaller quant is a 422 for full and LoRA
# fine-tuning (their weights train in bf16), which the hint had told a full fine-tune to choose
SMALLER: dict[str, str] = {
    "inference": "a smaller quant or context",
    "full-finetune": "a shorter context, or task=lora or qlora",
    "lora": "a shorter context, or task=qlora",
    "qlora": "a shorter context",
}


def _smaller_words(ask: llm_fit.Ask) -> str:
    """SMALLER for the ask's task, a lighter optimizer first for a full fine-tune with AdamW."""
    if ask.task == "full-finetune" and ask.optimizer == "adamw":
        return "optimizer=adamw-8bit, " + SMALLER[ask.task]
    return SMALLER[ask.task]


def hint(ask: llm_fit.Ask, fitting: list[LlmOption], limits: Limits, data: LlmData) -> str:
    """Why nothing was recommended, and what would be (GPUs plus the box several need)."""
    need = ask.breakdown(1).total_gb
    if not fitting:
        return (
            f"{ask.model.slug} {ask.task} ({ask.quant.name}, context {ask.context}) needs "
            f"{need:.1f} GB on one GPU; no priced GPU{_pool_words(limits.pool)} in the catalog "
            f"holds it split over up to {limits.max_gpus} GPUs ("
            + ("raise max_gpus, or " if limits.max_gpus < MAX_GPUS else "")
            + f"choose {_smaller_words(ask)})"
        )
    fast = [o for o in fitting if limits.fast_enough(o)]
    if not fast:
        best = max(_buildable_first(fitting, data, limits), key=lambda o: o.throughput)
        return (
            f"no configuration reaches {limits.min_tokens_per_s:g} {UNIT}; the fastest that "
            f"fits is {best.count} x {best.gpu.slug} at ~{figure(best.throughput)} {UNIT}"
            + _unboxed_words(best, data, limits)
        )
    powered = [o for o in fast if limits.within_power(o)]
    if not powered:
        stated = [o for o in fast if o.gpu.tdp_w is not None]
        words = f"nothing that fits {ask.model.slug} draws at most {limits.max_power_w:g} W"
        if not stated:
            return f"{words}: none of the GPUs that fit states a TDP"
        lowest = min(
            _buildable_first(stated, data, limits),
            key=lambda o: ((o.gpu.tdp_w or 0.0) * o.count, o.gpu.slug),
        )
        return (
            f"{words}; the lowest draw is {lowest.count} x {lowest.gpu.slug} at "
            f"{(lowest.gpu.tdp_w or 0.0) * lowest.count:g} W TDP"
            + (f" + {host:g} W host" if (host := limits.costs.host_power_w) else "")
            + _unboxed_words(lowest, data, limits)
        )
    boxed = [o for o in powered if _boxed(o, data, limits)]
    if not boxed:
        unboxed = min(powered, key=lambda o: (_cost(o, data, limits.costs), o.gpu.slug))
        return (
            f"nothing that fits {ask.model.slug} ({need:.1f} GB on one GPU) has a sourced box: "
            f"{no_box_phrase(unboxed.count, unboxed.gpu.tdp_w)} and its host (platform_usd "
            "prices a box of your own)"
        )
    cheapest = min(boxed, key=lambda o: (_cost(o, data, limits.costs), o.gpu.slug))
    p = cheapest.gpu.price
    assert p is not None
    extra = platform_extra(cheapest, data, limits.costs)
    box = f" + ${extra:,.0f} for the box of {cheapest.count} GPUs" if extra else ""
    return (
        f"nothing that fits {ask.model.slug} ({need:.1f} GB on one GPU) is within "
        f"${limits.budget:,.0f}; the cheapest is {cheapest.count} x {cheapest.gpu.slug} at "
        f"${p.usd * cheapest.count:,.0f} ({p.condition} price of {p.observed_at}, {p.source})"
        f"{box}"
    )
