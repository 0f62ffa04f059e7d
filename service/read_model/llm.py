"""Recommendation and ranking rows for a language-model ask (model, task, quant, context,
batch) instead of a fixed workload: fit from the memory breakdown, throughput measured where
the corpus has this model and format, else the throughput model's estimate of a measured
workload scaled to the ask (below), else roofline x an efficiency learned from every measured
LLM result (service/domain/llm_fit.py has the model).

Inference asks of a model whose decode (or one of its shape's) is measured in the asked format
(or one of the same bytes per weight: a GGUF F16 file for bf16), and of any other model the
decode workload nearest in bytes per token (moved by the roofline ratio of the two: Qwen3 8B
from a Llama 3 8B workload), take the throughput model's estimate for that workload
(DecodeReference: its own work split, the GPU's, stack's and board
power's terms, its conformal band) x roofline(asked context, batch) / roofline(the workload's
mean context, batch 1). One efficiency pooled over every model and format put a held-out GPU a
median 20.2% off (p90 64.8%, 80% band covering 64.6%); the workload's estimate, 6.3% (p90 17.3%,
77.9%): leave-one-GPU-out over the shipped corpus's 13 decode workloads with 6+ GPUs,
bench/llm_asks.py.

Training asks (full fine-tune, LoRA, QLoRA) that nothing measured: the corpus holds no LLM
training result, so a learned roofline efficiency would be the flat stated prior (35% of peak
for every GPU, which is what ranked consumer Radeon cards first for a QLoRA ask). Instead they
take the throughput model's estimate for the catalog's LLM training workload (``llm-train``,
GPT-2 124M pretraining; its GPU, architecture and stack efficiencies are pooled from every
measured training workload, service/domain/throughput_model/) at the ask's compute precision,
scaled by FLOPs per token: tokens/s = estimate x flops_per_unit(llm-train) /
Ask.flops_per_token, which counts the task's passes (memory.training_passes): GPT-2
pretraining is 3 forwards' worth per token; full fine-tuning with gradient checkpointing (the
memory breakdown's default) 4, LoRA and QLoRA with it 3 (no weight gradients for frozen
weights). Counted as 3 for every task before, full fine-tuning was a third faster per token
than LoRA would make it. Time per token proportional to FLOPs is the roofline's own
assumption; the band is the model's band, scaled alike.

What an ask reads (GPUs, current prices, LLM aggregates, scaling profiles: LlmData) is kept in
the SnapshotCache like a fixed workload's snapshot, under an LlmDataKey (price condition,
training precision, allow_stale, day), so it is stale after a write through this process or
`cache_ttl_s`, and answers computed from it are stored in the answer cache. An ask's decode
reference is read once per (model, format, context) and data version. Reading it all on every
ask cost 60-75 ms of an 8B ask's 75-90 ms, in process (py-spy: ORM rows of every price).
Every GPU's fitting configuration (memory fit, headroom, throughput) is kept per ask shape in
the same LlmData (`options`, bounded): asks that differ only in budget, limit, cost settings or
sort share it. It was about 10 ms of an 8B inference ask's 11 ms (cProfile); with it kept, a
computed 8B /recommend takes 0.4 ms instead of 4.3 ms, in process (bench/ask_latency.py).
"""

import math
import re
import statistics
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from functools import cached_property, partial
from typing import Any

from fastapi.concurrency import run_in_threadpool
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from service.catalog import llm
from service.catalog.peaks import peak_rates
from service.core.settings import Settings
from service.domain import llm_fit, memory
from service.domain.availability import most_on_one_job, platform_included
from service.domain.estimate import (
    Estimate,
    counted,
    figure,
    precision_note,
    unmeasured_stack_note,
)
from service.domain.plausibility import FP8_WEIGHT_ONLY_ARCHITECTURES, PeakRates, peak_tflops
from service.domain.prices import (
    PriceObservation,
    age_days,
    bought_used,
    current_price,
    is_stale,
    shown_price,
)
from service.domain.recommend import narrowed, per_dollar_spent, widened
from service.domain.scaling import Profiles, Scaling
from service.domain.tco import CostSettings, budget_extra_usd, no_box_phrase, per_watt
from service.domain.throughput_model import NOMINAL_COVERAGE
from service.domain.vocabulary import PRECISIONS, ConditionChoice, Measurement, Mode
from service.models import Aggregate, Gpu, Price, Result, Workload
from service.read_model.costing import (
    Costed,
    cost_key,
    costed,
    fits_power,
    per_dollar_key,
    per_watt_key,
    ranked_by_cost,
)
from service.read_model.estimates import estimate_model, estimates_for
from service.read_model.memo import bounded
from service.read_model.ownership import OwnershipData, load_ownership
from service.read_model.price_rows import observation as price_observation
from service.read_model.profiles import scaling_data
from service.read_model.snapshot import utc_today
from service.read_model.snapshot_cache import SnapshotCache
from service.schemas.queries import MAX_GPUS
from service.schemas.rankings import PriceInfo, RankingItem, Recommendation

UNIT = "tokens/s"
MAX_REFERENCE_GPUS = 8  # the most reference GPUs relative_performance counts a model split over
TRAIN_REFERENCE = "llm-train"  # the catalog workload whose estimates training asks scale
_TOKENS = re.compile(r"-(pp|tg)(\d+)$")


@dataclass(frozen=True)
class GpuRow:
    slug: str
    name: str
    memory_gb: float
    bandwidth_gbs: float
    tdp_w: float | None
    interconnect: str
    rates: PeakRates
    price: PriceObservation | None
    unit_gpus: int = 1  # > 1: sold as a whole platform, whose price includes the box
    sold_as: str = "card"
    stack: str = "cuda"
    status: str = "in_production"
    # the newest price whatever its age, shown (stale: true) where no usable price exists, as
    # fixed-workload rankings show it; it never ranks, prices a budget or a cost of ownership
    shown_price: PriceObservation | None = None
    architecture: str = ""


@dataclass(frozen=True)
class Pool:
    """Which GPUs an ask may offer: those on `stack` (when given) with at least
    `min_memory_gb` each, as the fixed-workload answers filter them."""

    stack: str | None = None
    min_memory_gb: float = 0.0

    def admits(self, gpu: GpuRow) -> bool:
        on_stack = self.stack is None or gpu.stack == self.stack
        return on_stack and gpu.memory_gb >= self.min_memory_gb


@dataclass(frozen=True)
class Measured:
    workload: str
    model: str
    quant: str
    phase: str
    tokens: int
    gpu: str
    count: int
    value: Measurement
    precision: str = ""  # the aggregate's (the throughput model's workload is slug@precision)


@dataclass(frozen=True)
class TrainReference:
    """The throughput model's single-GPU estimates for TRAIN_REFERENCE at one precision."""

    flops_per_token: float
    estimates: dict[str, Estimate]

    @cached_property  # read once per GPU of every training ask: computed once per reference
    def cold_log_band(self) -> float:
        """The workload's band for a GPU it did not measure: the median log half-width of its
        estimated GPUs (the conformal band of service/domain/throughput_model/), 0 without
        one. A training ask of another model takes at least this, measured GPU or not: the
        step from GPT-2 124M to the asked model is a FLOPs ratio that a result's run-to-run
        noise does not cover (a single llm-train result's band was +-2% on the shipped corpus,
        where the workload's cold band is about +-25%)."""
        widths = [
            math.log(e.high / e.value)
            for e in self.estimates.values()
            if e.basis == "estimated" and e.value > 0 and e.high > e.value
        ]
        return statistics.median(widths) if widths else 0.0


@dataclass(frozen=True)
class DecodeReference:
    """The throughput model's single-GPU estimates for a measured decode workload of the
    asked model (or one of its shape) in the asked format, at `mean_context` tokens of KV."""

    workload: str
    mean_context: float
    estimates: dict[str, Estimate]
    # log half-width of a result of it measured once (its pooled run-to-run noise)
    single_result_half_width: float
    # the workload's own model and format where it is another model's (nearest bytes per token:
    # the roofline ratio moves the estimate between them); None: the ask's shape and bytes
    model: memory.ModelSpec | None = None
    quant: memory.Quantization | None = None
    # the frameworks of the workload's accepted results (llama.cpp for llama-bench's): a value
    # moved from it to another format keeps that engine's per-token costs, and says so
    frameworks: tuple[str, ...] = ()


@dataclass(frozen=True)
class LlmDataKey:
    """What an ask's LlmData depends on besides the database: not a tuple, so that it never
    equals a fixed workload's SnapshotKey in the shared SnapshotCache."""

    condition: ConditionChoice
    train_precision: str | None
    allow_stale: bool
    day: date


# Decode references kept per LlmData; their keys hold the asked context (client input), so the
# memo is bounded: past this many it starts again. About 31 KiB each (tracemalloc: every GPU's
# estimate), so at most ~8 MB; a miss costs one read of the reference's estimates.
MAX_REFERENCES = 256
# Fitting configurations kept per LlmData (options, ranked_options), one list per ask shape,
# framework, GPU count and pool: every GPU's configuration, about 150 KiB for a /rankings ask
# (tracemalloc), so at most ~10 MB; a miss costs one fit (~10 ms).
MAX_KEPT_OPTIONS = 64
ReferenceKey = tuple[str, str, int]  # model slug, format, context


class _Unread:
    """Marks a decode reference not read yet (None means: read, and there is none)."""


_UNREAD = _Unread()


@dataclass
class LlmData:
    gpus: list[GpuRow]
    measured: list[Measured]
    profiles: Profiles = field(default_factory=Profiles)  # assumed and fitted rows
    train_reference: TrainReference | None = None
    ownership: OwnershipData = field(default_factory=OwnershipData)  # boxes, resale, cloud
    today: date | None = None  # prices' age is counted from it
    max_age_days: int = 0  # a price older than this is stale
    decode_reference: DecodeReference | None = None
    # the decode reference of an ask in another format (smaller_quant), read only when an empty
    # answer needs one, so that the hint's figure is the one /recommend gives for that format
    reference_for: Callable[[llm_fit.Ask], DecodeReference | None] | None = None
    # shared LlmData only: decode references read so far (reference_memo)
    references: dict[ReferenceKey, DecodeReference | None] = field(default_factory=dict)
    # fitting configurations per ask, kept for the data's lifetime (options); a per-ask copy
    # (LlmRead.data, dataclasses.replace) shares this dict with the shared LlmData
    kept_options: dict[Hashable, tuple["LlmOption", ...]] = field(default_factory=dict)
    # log half-width a decode estimate moved from another model's workload widens by
    # (llm_fit.transfer_half_width over the measured one-GPU decode results)
    decode_transfer_half_width: float = 0.0
    # log half-width a measured decode value moved to an asked context or batch it was not
    # measured at widens by (llm_fit.context_move_half_width)
    decode_move_half_width: float = 0.0


@dataclass(frozen=True)
class LlmRead:
    """One ask's data: `snapshot`, the shared LlmData the SnapshotCache holds under `key` (what
    a stored answer is valid for), and `data`, the same with the ask's decode reference."""

    key: LlmDataKey
    snapshot: LlmData
    data: LlmData


def _quant_name(text: str | None) -> str:
    found = memory.find_quantization(text or "", list(llm.quantizations()))
    return found.name if found else (text or "")


def _train_reference(session: Session, precision: str) -> TrainReference | None:
    workload = session.exec(select(Workload).where(Workload.slug == TRAIN_REFERENCE)).first()
    if workload is None or not workload.flops_per_unit:
        return None
    # at the reference's own precision (bf16), GPUs without bf16 units train at fp16
    own = None if precision == workload.precision else precision
    return TrainReference(workload.flops_per_unit, estimates_for(session, workload, own))


def _same_bytes(a: str, b: memory.Quantization) -> bool:
    """Formats whose weights are the same bytes for a decode step: the same format, or float
    formats of one width (a GGUF F16 file for a bf16 ask)."""
    if a == b.name:
        return True
    found = memory.find_quantization(a, list(llm.quantizations()))
    return (
        found is not None
        and found.kind == b.kind == "float"
        and found.bits_per_weight == b.bits_per_weight
    )


def decode_reference(
    session: Session, ask: llm_fit.Ask, measured: list[Measured]
) -> DecodeReference | None:
    """The decode workload measured on one GPU for the asked model (or one of its shape) in
    the asked format (else one of the same bytes per weight) whose token count covers the
    asked context (_covering), with the throughput model's estimate for every GPU; None when
    nothing of the kind is measured (the ask keeps the roofline x learned efficiency)."""
    models = llm.models()
    found = [
        m
        for m in measured
        if m.phase == "decode"
        and m.count == 1
        and m.model in models
        and (m.model == ask.model.slug or llm.same_shape(models[m.model], ask.model))
        and _same_bytes(m.quant, ask.quant)
    ]
    other = None
    if found:
        # the token count _measured_for picks, so that a measured value's workload is this one
        best = min(
            found, key=lambda m: (m.quant != ask.quant.name, *_covering(m.tokens, ask.context))
        )
    else:
        nearest = _nearest_bytes_reference(ask, measured, models)
        if nearest is None:
            return None
        best, other = nearest
    workload = session.exec(select(Workload).where(Workload.slug == best.workload)).first()
    if workload is None:
        return None
    model = estimate_model(session)  # one read of the cached fit for both
    frameworks = session.exec(
        select(Result.framework)
        .where(Result.workload_id == workload.id, Result.status == "accepted")
        .distinct()
    ).all()
    return DecodeReference(
        best.workload,
        _mean_context(best),
        model.estimates(workload, best.precision),
        model.single_result_half_width(workload, best.precision),
        model=other[0] if other else None,
        quant=other[1] if other else None,
        frameworks=tuple(sorted(frameworks)),
    )


def _nearest_bytes_reference(
    ask: llm_fit.Ask, measured: list[Measured], models: dict[str, memory.ModelSpec]
) -> tuple[Measured, tuple[memory.ModelSpec, memory.Quantization]] | None:
    """For a model no measured decode workload has the shape of (Qwen3 8B, Mixtral): the
    one-GPU decode workload of another model whose bytes per token are nearest the ask's, so
    that the throughput model's GPU, architecture and stack terms for decode carry over (an
    MI300X decodes with llama.cpp at about a third of its bandwidth; a bandwidth ratio alone
    put it at 5.3 x an RTX 4090 on Qwen3 8B Q4_K_M and 0.9 x on Llama 3.1 8B). The roofline
    ratio of the two then moves the estimate, as it moves one along the context. Models are
    compared at the asked context, and of the nearest model's workloads the one whose token
    count covers the asked context is taken, as for a measured model (decode_reference):
    the throughput model's estimates of one model's token counts differ by more than the
    roofline moves them (an architecture's term is per workload), and Qwen3 8B at 4,096 tokens
    had rested on the Llama 3 8B count nearest in bytes per step while Llama 3.1 8B rested on
    tg4096. A workload of the asked model's shape in another format comes first: Llama 3.1 8B
    at fp8, int8, AWQ or GPTQ had rested on Llama 2 7B Q4_0 tg128 (6 GPUs, leave-one-out
    MdAPE 26%, its MHA KV cache making it nearest in bytes at 4,096 tokens) rather than Llama
    3 8B Q4_K_M (19 GPUs, 4-6%)."""
    asked = llm_fit.decode_bytes_per_step(ask.model, ask.quant, ask.context, 1)
    formats = list(llm.quantizations())
    choices = []
    for m in measured:
        if m.phase != "decode" or m.count != 1 or m.model not in models:
            continue
        quant = memory.find_quantization(m.quant, formats)
        if quant is None:
            continue
        spec = models[m.model]
        bytes_ = llm_fit.decode_bytes_per_step(spec, quant, ask.context, 1)
        other_shape = not (m.model == ask.model.slug or llm.same_shape(spec, ask.model))
        choices.append(
            (
                other_shape,
                abs(math.log(bytes_ / asked)),
                _covering(m.tokens, ask.context),
                m.workload,
                m,
                spec,
                quant,
            )
        )
    if not choices:
        return None
    *_, m, spec, quant = min(choices, key=lambda c: c[:4])
    return m, (spec, quant)


def load(
    session: Session,
    condition: ConditionChoice,
    today: date,
    max_age_days: int,
    train_precision: str | None = None,
    allow_stale: bool = False,
) -> LlmData:
    """GPUs with current prices (older than `max_age_days` too with `allow_stale`), LLM
    aggregates and scaling profiles; with `train_precision` also the training reference
    estimates at that precision."""
    prices: dict[int, list[PriceObservation]] = defaultdict(list)
    every_price = session.exec(select(Price)).all()  # purchase and cloud rows, read once
    for p in every_price:
        if p.usd is None:
            continue
        prices[p.gpu_id].append(price_observation(p))
    gpus = session.exec(select(Gpu).order_by(col(Gpu.slug))).all()
    rows = []
    for g in gpus:
        observed = prices.get(g.id or -1, [])
        in_production = g.status == "in_production"
        price = current_price(observed, condition, today, max_age_days, in_production, allow_stale)
        rows.append(
            GpuRow(
                g.slug,
                g.name,
                g.memory_gb,
                g.memory_bandwidth_gbs,
                g.tdp_w,
                g.interconnect,
                peak_rates(g),
                price,
                g.unit_gpus or 1,
                g.sold_as,
                g.stack,
                g.status,
                price or shown_price(observed, condition, today, in_production),
                g.architecture,
            )
        )
    slug_of = {g.id: g.slug for g in gpus}
    measured = []
    query = (
        select(Aggregate, Workload)
        .join(Workload, col(Workload.id) == Aggregate.workload_id)
        .where(col(Workload.model).is_not(None), Aggregate.n > 0)
    )
    for agg, w in session.exec(query).all():
        tokens = _TOKENS.search(w.slug)
        if w.model is None or w.phase is None or tokens is None:
            continue
        measured.append(
            Measured(
                w.slug,
                w.model,
                _quant_name(w.quant or agg.precision),
                w.phase,
                int(tokens.group(2)),
                slug_of[agg.gpu_id],
                agg.gpu_count,
                Measurement(agg.median, agg.n, agg.mad),
                agg.precision,
            )
        )
    reference = _train_reference(session, train_precision) if train_precision else None
    points = _decode_points(measured, rows)  # once for both half-widths
    return LlmData(
        rows,
        measured,
        scaling_data(session).profiles,
        reference,
        load_ownership(session, today, max_age_days, every_price),
        today,
        max_age_days,
        decode_transfer_half_width=llm_fit.transfer_half_width(points, NOMINAL_COVERAGE),
        decode_move_half_width=llm_fit.context_move_half_width(points, NOMINAL_COVERAGE),
    )


def _decode_points(measured: list[Measured], gpus: list[GpuRow]) -> list[llm_fit.DecodePoint]:
    """The one-GPU decode results of catalog models with their rooflines: what the decode
    transfer and context-move half-widths (llm_fit) are measured over."""
    return [
        llm_fit.DecodePoint(m.gpu, m.model, m.value.median, roof, m.quant, m.tokens)
        for m, roof in _one_gpu_rooflines(measured, gpus, "decode")
    ]


def _one_gpu_rooflines(
    measured: list[Measured], gpus: list[GpuRow], phase: str
) -> Iterator[tuple[Measured, float]]:
    """Each one-GPU result of `phase` of a catalog model, format and GPU, with its roofline
    (tokens/s at the result's mean context, batch 1): what learn's efficiency and the decode
    transfer band both measure against."""
    by_slug = {g.slug: g for g in gpus}
    models = llm.models()
    formats = list(llm.quantizations())
    phase_lit = _phase_literal(phase)
    for m in measured:
        if m.phase != phase or m.count != 1:
            continue
        spec = models.get(m.model)
        gpu = by_slug.get(m.gpu)
        quant = memory.find_quantization(m.quant, formats)
        if spec is None or gpu is None or quant is None:
            continue
        yield (
            m,
            llm_fit.roofline_tokens_per_s(
                spec, quant, phase_lit, _mean_context(m), 1, gpu.bandwidth_gbs, _peak(gpu, quant)
            ),
        )


def _phase_literal(phase: str) -> memory.Phase:
    return "decode" if phase == "decode" else "prefill" if phase == "prefill" else "train"


# ---------------------------------------------------------------- throughput


def _peak(gpu: GpuRow, quant: memory.Quantization) -> float:
    return peak_tflops(gpu.rates, quant.compute_precision)


def _mean_context(m: Measured) -> float:
    """Generation of n tokens from an empty context attends n/2 on average; a prompt of n
    tokens is passed as n (flops_per_token halves it)."""
    return m.tokens / 2 if m.phase == "decode" else float(m.tokens)


@dataclass(frozen=True)
class Learned:
    efficiency: llm_fit.Efficiency
    split_ratios: dict[int, list[float]]
    # formats with a measured split: their runtime's split (llama.cpp's, in the corpus) is
    # measured, so its ratio stands for them whatever the format's usual runtime
    split_formats: frozenset[str] = frozenset()


def learn(data: LlmData, phase: str) -> Learned:
    """Efficiency over every measured single GPU of `phase`; N-GPU / 1-GPU ratios per N."""
    ratios = []
    single: dict[tuple[str, str], float] = {}
    for m, roof in _one_gpu_rooflines(data.measured, data.gpus, phase):
        single[(m.workload, m.gpu)] = m.value.median
        ratios.append(m.value.median / roof)
    multi = [
        m
        for m in data.measured
        if m.phase == phase and m.count > 1 and single.get((m.workload, m.gpu))
    ]
    split = llm_fit.split_ratios(
        single, (((m.workload, m.gpu), m.count, m.value.median) for m in multi)
    )
    formats = frozenset(m.quant for m in multi)
    return Learned(llm_fit.learn_efficiency(ratios, _phase_literal(phase)), split, formats)


def _measured_for(ask: llm_fit.Ask, data: LlmData) -> dict[tuple[str, int], Measured]:
    """Measured (gpu, count) of this model (or one of its shape) and format, at the benchmark
    token count that covers the asked context (_covering)."""
    models = llm.models()
    relevant = [
        m
        for m in data.measured
        if m.phase == ask.phase
        and m.quant == ask.quant.name
        and m.model in models
        and (m.model == ask.model.slug or llm.same_shape(models[m.model], ask.model))
    ]
    if not relevant:
        return {}
    best = min({m.tokens for m in relevant}, key=lambda n: _covering(n, ask.context))
    return {(m.gpu, m.count): m for m in relevant if m.tokens == best}


def _covering(tokens: int, context: int) -> tuple[int, int]:
    """Sort key of a benchmark's token count for an asked context: the fewest tokens that
    cover the context first (a tgN run decodes up to N tokens of context), else the most. The
    nearest count in log had taken tg1024 for a 2048-token ask, which it does not cover."""
    return (0, tokens) if tokens >= context else (1, -tokens)


@dataclass(frozen=True)
class LlmOption:
    gpu: GpuRow
    count: int
    breakdown: memory.MemoryBreakdown
    headroom: llm_fit.Headroom
    throughput: float
    low: float
    high: float
    basis: str  # measured | estimated
    model: str  # measured | roofline-learned | roofline-prior
    n: int
    speedup: float
    scaling_basis: str
    # a measured value's workload; for a scaled one, what it rests on (_reference_source)
    source: str | None
    replicas: int = 1  # > 1: independent copies of the model, each on count / replicas GPUs
    # False: scaled from an estimate whose GPU's stack has no result of that kind of work
    stack_measured: bool = True
    # the precision of the estimate it is scaled from where not the asked one (fp16 on a GPU
    # without bf16 units: estimate.with_fp16_fallback)
    precision: str = ""
    # the log half-width its scaling added to the band (scaling.scaling_half_widths)
    scaling_width: float = 0.0

    def as_option(self) -> llm_fit.Option:
        """As llm_fit ranks it: within its band less the scaling's width, which configurations
        of one count share (their speedup is read from the same row): widened, 4 x RX 9070 had
        tied with 4 x RTX 3080 Ti, 26% faster, and ranked first for its headroom."""
        price = self.gpu.price.usd * self.count if self.gpu.price else math.inf
        low, high = narrowed(self.throughput, self.low, self.high, self.scaling_width)
        return llm_fit.Option(
            self.gpu.slug,
            self.count,
            self.throughput,
            low,
            high,
            price,
            self.headroom,
            bought_used(self.gpu.price),
        )


def options(
    ask: llm_fit.Ask,
    data: LlmData,
    max_gpus: int,
    framework: str,
    priced_only: bool,
    pool: Pool = Pool(),
) -> list[LlmOption]:
    """Every GPU's (of `pool`) fewest-GPU configuration that fits `ask` (unranked). What is
    learned from measurements uses every GPU, whatever the pool.

    Computed once per ask shape and data (kept in `data.kept_options`): the memory fit and
    headroom of every GPU are most of an ask's time (about 10 ms of 11 for an 8B inference ask,
    in process), and asks that differ only in budget, limit, cost settings or sort share
    them."""
    key = _options_key(data, ask, max_gpus, framework, priced_only, pool)
    found = bounded(
        data.kept_options,
        MAX_KEPT_OPTIONS,
        key,
        lambda: tuple(_options(ask, data, max_gpus, framework, priced_only, pool)),
    )
    return list(found)


def ranked_options(
    ask: llm_fit.Ask, data: LlmData, max_gpus: int, framework: str, pool: Pool
) -> list[LlmOption]:
    """ranked(options(...)) of every GPU, priced or not (/rankings), kept alike."""
    key = ("ranked", *_options_key(data, ask, max_gpus, framework, False, pool))
    found = bounded(
        data.kept_options,
        MAX_KEPT_OPTIONS,
        key,
        lambda: tuple(ranked(options(ask, data, max_gpus, framework, False, pool))),
    )
    return list(found)


def _options_key(data: LlmData, *arguments: Hashable) -> tuple[Hashable, ...]:
    """What options' answer depends on within one LlmData: its arguments and the decode
    reference the ask carries (its workload and context)."""
    reference = data.decode_reference
    return (
        *arguments,
        None if reference is None else (reference.workload, reference.mean_context),
    )


def _options(
    ask: llm_fit.Ask,
    data: LlmData,
    max_gpus: int,
    framework: str,
    priced_only: bool,
    pool: Pool,
) -> list[LlmOption]:
    learned = learn(data, ask.phase)
    measured = _measured_for(ask, data)
    out: dict[tuple[str, int], LlmOption] = {}
    for gpu in data.gpus:
        if (priced_only and gpu.price is None) or not pool.admits(gpu):
            continue
        if not runs_format(gpu, ask):
            continue
        # a complete computer holds the model alone; copies of it serve independently
        # (with_replicas)
        count = llm_fit.gpus_needed(ask, gpu.memory_gb, most_on_one_job(gpu.sold_as, max_gpus))
        if count is None:
            continue
        m = measured.get((gpu.slug, count))
        if m is not None:
            low, high = _measured_band(m, data.decode_reference)
            value, basis, kind, n = m.value.median, "measured", "measured", m.value.n
            speedup, scaling_basis = 1.0, "measured" if count > 1 else "single"
            width = 0.0
            moved = _moved_measurement(ask, gpu, m, (low, high), data.decode_move_half_width)
            if moved is not None:
                value, low, high = moved
                basis, kind = "estimated", MOVED
        else:
            value, low, high, n, speedup, scaling_basis, kind, width = _estimate(
                ask, gpu, count, learned, data, framework
            )
            basis = "estimated"
        if not (math.isfinite(value) and value > 0):
            continue
        reference = _reference_estimate(kind, data, gpu.slug)  # None for a measured value
        out[(gpu.slug, count)] = LlmOption(
            gpu,
            count,
            ask.breakdown(count),
            llm_fit.headroom(ask, gpu.memory_gb, count),
            value,
            low,
            high,
            basis,
            kind,
            n,
            speedup,
            scaling_basis,
            m.workload
            if m
            else _reference_source(
                reference,
                _transfer(data) if kind == "workload-scaled" else None,
                data.decode_reference if kind == "workload-scaled" else None,
            ),
            stack_measured=reference is None or reference[1].stack_measured,
            precision="" if reference is None else reference[1].precision,
            scaling_width=width,
        )
    return list(out.values())


def runs_format(gpu: GpuRow, ask: llm_fit.Ask) -> bool:
    """Whether a runtime runs the ask's weight format on the GPU: an FP8 format needs FP8
    tensor cores, except for inference of a dense model on NVIDIA Turing or Ampere (weight-only,
    at the 16-bit rate). An RX 7900 XTX was offered for FP8 (torch._scaled_mm needs MI300 or
    newer on ROCm), and an A100 for DeepSeek-V3 in FP8. AWQ and GPTQ checkpoints run where
    vLLM's kernels do (GROUP_INT4_UNSUPPORTED): 4 x V100 was offered for Llama 3.1 70B in AWQ,
    and 8 x GTX 1080 and an MI300X."""
    unsupported = GROUP_INT4_UNSUPPORTED.get(ask.quant.name)
    if unsupported is not None and (
        gpu.architecture in unsupported or gpu.stack.startswith("rocm")
    ):
        return False
    if ask.quant.compute_precision != "fp8" or gpu.rates.fp8_tensor:
        return True
    return (
        gpu.architecture in FP8_WEIGHT_ONLY_ARCHITECTURES
        and ask.task == "inference"
        and not ask.model.is_moe
    )


# Architectures whose GPUs run no AWQ or GPTQ checkpoint, besides every AMD GPU: vLLM's
# quantization support table (docs.vllm.ai/quantization, "Supported Hardware": AWQ not on
# Volta, neither on "AMD GPU") and its CUDA requirement, compute capability 7.0 or higher
# (docs.vllm.ai getting_started/installation/gpu: Pascal and older are out).
PRE_VOLTA = frozenset({"pascal", "maxwell", "kepler"})
GROUP_INT4_UNSUPPORTED: dict[str, frozenset[str]] = {
    "awq-4bit": PRE_VOLTA | {"volta"},
    "gptq-4bit": PRE_VOLTA,
}


MOVED = "measured-moved"  # a measured decode value moved to the asked context or batch


def _moved_measurement(
    ask: llm_fit.Ask,
    gpu: GpuRow,
    m: Measured,
    band: tuple[float, float],
    width: float,
) -> tuple[float, float, float] | None:
    """A measured decode value (and its `band`) moved by the decode roofline to an ask it does not
    cover, else None (the measurement answers as it is). A llama-bench tgN run generates N
    tokens at batch 1 from an empty context, so it covers an ask at batch 1 and a context of
    at most N. Beyond it the KV cache each token reads grows (and a batch shares the weights):
    the RTX 3090's tg8192, 87.5 tokens/s, had been answered for a 131,072-token context, where
    4.9 GB of weights and 17.2 GB of KV per token on 936 GB/s allow 42, and above an RTX 5090
    and a B200 whose estimates were moved. Its band widens, in quadrature, by how far that
    move misses between token counts measured on one GPU (`width`,
    llm_fit.context_move_half_width)."""
    if ask.phase != "decode" or (ask.batch == 1 and ask.context <= m.tokens):
        return None
    spec = llm.models().get(m.model)
    quant = memory.find_quantization(m.quant, list(llm.quantizations()))
    if spec is None or quant is None:
        return None
    measured_at = _decode_roof(gpu, spec, quant, _mean_context(m), 1)
    asked = _decode_roof(gpu, ask.model, ask.quant, ask.context, ask.batch)
    if not (measured_at > 0 and asked > 0):
        return None
    ratio = asked / measured_at
    low, high = band
    value = m.value.median
    below = math.hypot(math.log(value / low), width) if low > 0 else width
    above = math.hypot(math.log(high / value), width) if high > 0 else width
    moved = value * ratio
    return moved, moved * math.exp(-below), moved * math.exp(above)


def _reference_estimate(kind: str, data: LlmData, slug: str) -> tuple[str, Estimate] | None:
    """The fixed workload a scaled value (of `kind`) rests on and this GPU's estimate there;
    None for a value that rests on no such estimate."""
    if kind == "workload-scaled" and data.decode_reference is not None:
        workload, estimates = data.decode_reference.workload, data.decode_reference.estimates
    elif kind == f"{TRAIN_REFERENCE}-scaled" and data.train_reference is not None:
        workload, estimates = TRAIN_REFERENCE, data.train_reference.estimates
    else:
        return None
    e = estimates.get(slug)
    return None if e is None else (workload, e)


def _measured_band(m: Measured, ref: DecodeReference | None) -> tuple[float, float]:
    """A measured value's band: median -+ 1.4826 x MAD of its results; where they have no
    spread (one result, or identical ones) and the workload is the reference's, the
    throughput model's band for a result measured once (that workload's pooled run-to-run
    noise, multi-GPU splits alike): never zero-width there."""
    low, high = m.value.band()
    if low < high or ref is None or ref.workload != m.workload:
        return low, high
    half = ref.single_result_half_width
    return m.value.median * math.exp(-half), m.value.median * math.exp(half)


def _transfer(data: LlmData) -> float | None:
    """The log half-width a decode value moved from another model's workload adds to its band
    (_scaled_decode_reference); None where the decode reference is of the asked model's shape
    (or there is none)."""
    ref = data.decode_reference
    if ref is None or ref.model is None:
        return None
    return data.decode_transfer_half_width


def _reference_source(
    reference: tuple[str, Estimate] | None,
    transfer: float | None = None,
    decode: DecodeReference | None = None,
) -> str | None:
    """What a scaled value rests on (_reference_estimate): 'llama-3-8b-q4_k_m-tg4096 as measured
    on this GPU (median of 3 results)', 'the throughput model's value for this GPU on ...,
    fitted to 18 measured GPUs', or for llm-train with nothing measured on it, the work per
    FLOP it borrows; for a decode workload (`decode`), the engine its results were measured
    with, and for another model's or format's (`transfer`), that the value keeps that
    engine's per-token costs and what its band adds: an FP8 ask of Llama 3.1 70B rests on
    llama.cpp's Q4_K_M decode, which put a B200 at 20.5 tokens/s, 19% of its bandwidth, and
    the answer said only 'another model'."""
    if reference is None:
        return None
    workload, e = reference
    engine = " and ".join(decode.frameworks) if decode is not None else ""
    measured_with = f" ({engine} results)" if engine and transfer is None else ""
    other = ""
    if transfer is not None:
        measured_in = decode.quant.name if decode is not None and decode.quant else "another"
        costs = (
            f", measured in {measured_in} with {engine}: its per-token costs, moved by bytes"
            if engine
            else ""
        )
        other = (
            f" (another model or format{costs}; its band adds x{math.exp(transfer):.2f} either "
            "way: how far the roofline ratio misses between models measured on one GPU)"
        )
    if e.basis == "measured":
        return (
            f"{workload} as measured on this GPU (median of {counted(e.n, 'result')})"
            f"{measured_with}{other}"
        )
    model = f"the throughput model's value for this GPU on {workload}{measured_with}"
    if e.n:
        return f"{model}, fitted to {e.n} measured GPUs{other}"
    return f"{model}, nothing measured on it: work per FLOP of measured training workloads"


def ranked(found: list[LlmOption]) -> list[LlmOption]:
    """`found` in llm_fit.rank's order (throughput; headroom inside overlapping bands)."""
    by_key = {(o.gpu.slug, o.count): o for o in found}
    return [by_key[(o.slug, o.count)] for o in llm_fit.rank([o.as_option() for o in found])]


def _estimate(
    ask: llm_fit.Ask,
    gpu: GpuRow,
    count: int,
    learned: Learned,
    data: LlmData,
    framework: str,
) -> tuple[float, float, float, int, float, str, str, float]:
    """(value, low, high, n, speedup, scaling basis, the `model` it names): a scaled workload
    estimate where there is one, else the roofline x the learned efficiency."""
    reference = _scaled_reference(ask, gpu, learned, data)
    if reference is not None:
        kind = f"{TRAIN_REFERENCE}-scaled" if ask.phase == "train" else "workload-scaled"
    else:
        kind = f"roofline-{learned.efficiency.basis}"
        eff = learned.efficiency
        roof = llm_fit.roofline_tokens_per_s(
            ask.model,
            ask.quant,
            ask.phase,
            ask.context,
            ask.batch,
            gpu.bandwidth_gbs,
            _peak(gpu, ask.quant),
            ask.passes,
        )
        reference = (eff.value * roof, eff.log_band, eff.log_band, eff.n)
    one, log_low, log_high, n = reference
    layer = memory.split_for(ask.quant, ask.task) == "layer"
    width = 0.0  # the speedup's own band (scaling.scaling_half_widths), where sized
    if ask.phase != "train" and (layer or ask.quant.name in learned.split_formats):
        speedup, basis = llm_fit.split_speedup(learned.split_ratios, count)
    else:  # training: the framework's profile; tensor-parallel decode: as a fixed workload's
        s = _parallel_scaling(data, framework, gpu, count, decode=ask.phase == "decode")
        speedup, basis, width = s.speedup, s.basis, s.log_half_width
    value = one * speedup
    low, high = widened(value, value * math.exp(-log_low), value * math.exp(log_high), width)
    return value, low, high, n, speedup, basis, kind, width


def _parallel_scaling(
    data: LlmData, framework: str, gpu: GpuRow, count: int, decode: bool = False
) -> Scaling:
    """`count` x `gpu` on one job by the data's profiles (fitted where they speak for the GPU's
    stack, else assumed), as a fixed workload's configurations scale them."""
    return data.profiles.scaling(
        "parallel",
        framework,
        gpu.interconnect,
        count,
        decode=decode,
        sold_as=gpu.sold_as,
        stack=gpu.stack,
    )


def _scaled_reference(
    ask: llm_fit.Ask, gpu: GpuRow, learned: Learned, data: LlmData
) -> tuple[float, float, float, int] | None:
    """One GPU's tokens/s from the throughput model's estimate of a measured workload, with
    its log band (below, above) and n: a decode ask's reference workload (DecodeReference)
    scaled to the asked context and batch by the decode roofline, or for a training ask the
    TRAIN_REFERENCE estimate scaled by FLOPs per token. None without one (a training ask whose
    learned efficiency has data of its own, a measured LLM training result, also takes none)."""
    if ask.phase == "decode":
        return _scaled_decode_reference(ask, gpu, data.decode_reference, _transfer(data) or 0.0)
    ref = data.train_reference
    if ask.phase != "train" or learned.efficiency.n or ref is None:
        return None
    e = _usable_estimate(ref.estimates, gpu.slug)
    if e is None:
        return None
    one = e.value * ref.flops_per_token / ask.flops_per_token
    floor = ref.cold_log_band
    return one, max(math.log(e.value / e.low), floor), max(math.log(e.high / e.value), floor), e.n


def _usable_estimate(estimates: dict[str, Estimate], slug: str) -> Estimate | None:
    e = estimates.get(slug)
    if e is None or not (e.value > 0 and e.low > 0 and e.high >= e.value):
        return None
    return e


def _scaled_decode_reference(
    ask: llm_fit.Ask, gpu: GpuRow, ref: DecodeReference | None, transfer: float = 0.0
) -> tuple[float, float, float, int] | None:
    """The reference workload's single-GPU estimate x roofline(asked context and batch) /
    roofline(the workload's mean context, batch 1): the model's own GPU, architecture, stack
    and board-power terms and its calibrated band, moved along the roofline only by the KV
    traffic the context adds (the weights are the same bytes). A reference of another model
    (ref.model set) moves by the two models' rooflines too, and its band widens in quadrature
    by `transfer` (_transfer: how far that move misses between measured models; 0 for a
    reference of the asked model's shape)."""
    e = _usable_estimate(ref.estimates, gpu.slug) if ref is not None else None
    if ref is None or e is None:
        return None
    reference = _decode_roof(
        gpu, ref.model or ask.model, ref.quant or ask.quant, ref.mean_context, 1
    )
    if not reference > 0:
        return None
    one = e.value * _decode_roof(gpu, ask.model, ask.quant, ask.context, ask.batch) / reference
    below = math.hypot(math.log(e.value / e.low), transfer)
    above = math.hypot(math.log(e.high / e.value), transfer)
    return one, below, above, e.n


def _decode_roof(
    gpu: GpuRow,
    model: memory.ModelSpec,
    quant: memory.Quantization,
    context: float,
    batch: int,
) -> float:
    """The GPU's decode roofline (tokens/s) for a model and format at a context and batch: what
    an estimate or a measured value is moved along (_scaled_decode_reference,
    _moved_measurement)."""
    return llm_fit.roofline_tokens_per_s(
        model, quant, "decode", context, batch, gpu.bandwidth_gbs, _peak(gpu, quant)
    )


# ---------------------------------------------------------------- rows


def precision_of(quant: memory.Quantization) -> str:
    """The vocabulary word for a format: its name or an alias, else its compute precision."""
    for name in (quant.name, *quant.aliases):
        if name in PRECISIONS:
            return name
    return quant.compute_precision


def _price_info(gpu: GpuRow, data: LlmData) -> PriceInfo | None:
    """The price a row shows: the usable one, else the newest (stale) one."""
    p = gpu.price or gpu.shown_price
    if p is None:
        return None
    today = data.today
    return PriceInfo(
        usd=p.usd,
        condition=p.condition,
        source=p.source,
        observed_at=p.observed_at,
        age_days=age_days(p, today) if today is not None else None,
        stale=today is not None and is_stale(p, today, data.max_age_days),
    )


def platform_extra(o: LlmOption, data: LlmData, costs: CostSettings | None) -> float | None:
    """The box `o.count` cards need beyond a one-GPU PC (service/domain/tco.py, Budget);
    0 for one GPU, for whole platforms and complete computers, and when the caller prices the
    platform (`platform_usd`); None where no sourced box holds them (the budget then counts the
    GPUs only, and the why says so)."""
    included = platform_included(o.gpu.sold_as, o.gpu.unit_gpus)
    return budget_extra_usd(data.ownership.platforms, o.count, costs, included, o.gpu.tdp_w)


def why(
    o: LlmOption,
    ask: llm_fit.Ask,
    rank: int,
    budget: float | None,
    extra: float | None = 0.0,
    by_cost: bool = False,
    faster_below: LlmOption | None = None,
) -> str:
    """The account of one option; `rank` is its place by throughput, headroom first inside
    overlapping bands (said so when the answer is ordered by cost, `by_cost`; and, when a
    faster option ranks below it, `faster_below`, why)."""
    what = _what(o, ask.phase)
    capacity = llm_fit.capacity_gb(o.gpu.memory_gb)  # a "16 GB" card holds 16 GiB = 17.2 GB
    need = (
        f"needs {o.breakdown.total_gb:.1f} GB per GPU of its {capacity:.1f} GB "
        f"({o.gpu.memory_gb:g} GiB), {max(capacity - o.breakdown.total_gb, 0.0):.1f} GB spare"
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
            f"({_passes_words(ask)}), likely {figure(o.low)}-{figure(o.high)}"
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
        fewer = "fewer GPUs" in reasons
        lead = f"{'Fewest GPUs' if fewer else 'Most headroom'} among the fastest"
    else:
        lead = f"#{rank}"
    above = (
        ""
        if faster_below is None
        else f" Ranked above {_what(faster_below, ask.phase)}, faster at "
        f"~{figure(faster_below.throughput)} {UNIT}: their estimates overlap, and this one "
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
    return f"{ask.passes} x forward: backward with {backward}{recompute}"


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


def _row_fields(o: LlmOption) -> dict[str, Any]:
    """What a ranking item and a recommendation take alike from an option."""
    return {
        "gpu": o.gpu.slug,
        "name": o.gpu.name,
        "count": o.count,
        "memory_gb": o.gpu.memory_gb,
        "throughput": o.throughput,
        "throughput_low": o.low,
        "throughput_high": o.high,
        "unit": UNIT,
        "basis": o.basis,
        "model": o.model,
        "n": o.n,
        "relative_performance": None,
        "memory_needed_gb": round(o.breakdown.total_gb, 3),
        "headroom_context": o.headroom.max_context,
        "headroom_batch": o.headroom.max_batch,
        "stack": o.gpu.stack,
        "status": o.gpu.status,
        "sold_as": o.gpu.sold_as,
        "unit_gpus": o.gpu.unit_gpus,
        "perf_per_watt": per_watt(o.throughput, o.gpu.tdp_w, o.count),
        "precision": o.precision or None,
    }


@dataclass(frozen=True)
class Limits:
    """What a recommendation must stay within besides fitting the model: the budget (GPUs
    plus the box several need), GPU count, a throughput floor, a power cap (GPUs' TDP x count
    plus the costs' `host_power_w`; unknown TDPs are kept, as for fixed workloads) and the GPU
    pool; and how rows are costed and ordered."""

    budget: float
    max_gpus: int
    min_tokens_per_s: float | None = None
    max_power_w: float | None = None
    pool: Pool = Pool()
    # independent: also r copies of each configuration that fits (serving, or experiments)
    mode: Mode = "parallel"
    # cost of ownership of each row (host power, electricity, horizon, resale, platform)
    costs: CostSettings = field(default_factory=CostSettings)
    sort: str = "performance"  # or tco: cheapest per million tokens over the horizon

    def fast_enough(self, o: LlmOption) -> bool:
        return self.min_tokens_per_s is None or o.throughput >= self.min_tokens_per_s

    def within_power(self, o: LlmOption) -> bool:
        return fits_power(o.gpu.tdp_w, o.count, self.costs, self.max_power_w)


def with_replicas(fitting: list[LlmOption], max_gpus: int) -> list[LlmOption]:
    """`fitting` and, for each configuration of k GPUs, r = 2 .. max_gpus // k independent
    copies of it (k x r GPUs): r x one copy's tokens/s and band, each copy serving its own
    requests or running its own experiment (nothing is shared between copies, so nothing is
    lost to communication)."""
    out = list(fitting)
    for o in fitting:
        for r in range(2, max_gpus // o.count + 1):
            out.append(
                replace(
                    o,
                    count=o.count * r,
                    throughput=o.throughput * r,
                    low=o.low * r,
                    high=o.high * r,
                    speedup=o.speedup * r,
                    scaling_basis=f"independent:{r}x{o.count}",
                    replicas=r,
                )
            )
    return out


def with_more_gpus(
    ask: llm_fit.Ask, fitting: list[LlmOption], data: LlmData, framework: str, max_gpus: int
) -> list[LlmOption]:
    """`fitting` and, for a training ask, each estimated card configuration of k GPUs on
    k + 1 .. max_gpus of them, sharded data parallel at the framework's profile (what a lab
    spends a larger budget on: 8 x H100 PCIe for LoRA on a 70B, not only the fewest cards
    that hold it). Counts that add no speed are left out; the memory and headroom are those
    of the larger count. A complete computer (a Mac Studio, a DGX Spark) runs a job alone: two
    of them are two machines on a network, not one box of GPUs (most_on_one_job)."""
    if ask.phase != "train":
        return fitting
    out = list(fitting)
    for o in fitting:
        gpu = o.gpu
        if o.basis != "estimated" or o.replicas > 1 or gpu.unit_gpus > 1 or not o.speedup > 0:
            continue
        last = o.speedup
        for n in range(o.count + 1, most_on_one_job(gpu.sold_as, max_gpus) + 1):
            s = _parallel_scaling(data, framework, gpu, n)
            if not s.speedup > last:
                continue
            last, gain = s.speedup, s.speedup / o.speedup
            value = o.throughput * gain
            one_low, one_high = narrowed(o.throughput, o.low, o.high, o.scaling_width)
            low, high = widened(value, one_low * gain, one_high * gain, s.log_half_width)
            out.append(
                replace(
                    o,
                    count=n,
                    breakdown=ask.breakdown(n),
                    headroom=llm_fit.headroom(ask, gpu.memory_gb, n),
                    throughput=value,
                    low=low,
                    high=high,
                    speedup=s.speedup,
                    scaling_basis=s.basis,
                    scaling_width=s.log_half_width,
                )
            )
    return out


def relative_to(
    rows: Sequence[RankingItem | Recommendation],
    ask: llm_fit.Ask,
    data: LlmData,
    framework: str,
    reference: str,
) -> None:
    """Set each row's relative_performance: its tokens/s over the reference GPU's on the same
    ask, at the fewest reference GPUs that hold the model (of any stack, priced or not: the
    same yardstick whatever the filters); left None when no count up to 8 holds it."""
    options_ = ranked_options(ask, data, MAX_REFERENCE_GPUS, framework, Pool())
    base = next((o.throughput for o in options_ if o.gpu.slug == reference), None)
    for row in rows:
        row.relative_performance = row.throughput / base if base else None


def recommendation_rows(
    ask: llm_fit.Ask, data: LlmData, limits: Limits, framework: str, limit: int
) -> tuple[list[Recommendation], str | None]:
    """The configurations within `limits`, by throughput (headroom inside overlapping bands)
    less the dominated ones, or with sort=tco by cost per million tokens over the costs'
    horizon; each row carries its cost of ownership and says it in `why`."""
    fitting = _offered(ask, data, limits, framework)
    by_cost = limits.sort == "tco"
    affordable = _affordable(fitting, data, limits)
    if not by_cost:  # by cost of ownership, a dearer, slower card may still own for less
        affordable = _undominated(affordable, data, limits.costs)
    affordable = ranked(affordable)
    chosen = affordable if by_cost else affordable[:limit]  # by cost: cost them all, then cut
    rows = [
        _recommendation(o, ask, data, limits, rank, by_cost, _faster_below(chosen, rank - 1))
        for rank, o in enumerate(chosen, 1)
    ]
    if by_cost:
        rows = ranked_by_cost(rows, limit, "million tokens")
    if rows:
        return rows, None
    return rows, (
        hint(ask, fitting, limits, data)
        + smaller_quant(ask, data, limits, framework)
        + other_asks(ask, data, limits, framework)
        + older_price(ask, data, limits, framework, fitting)
    )


def _costed(o: LlmOption, total: float, data: LlmData, costs: CostSettings) -> Costed:
    """Cost of ownership of `o` bought for `total`: the same costing as fixed workloads."""
    return costed(
        data.ownership,
        UNIT,
        o.gpu.slug,
        total,
        o.count,
        o.gpu.tdp_w,
        o.throughput,
        costs,
        platform_included(o.gpu.sold_as, o.gpu.unit_gpus),
    )


def _faster_below(ordered: list[LlmOption], index: int) -> LlmOption | None:
    """The fastest option shown after `ordered[index]` that is faster than it (llm_fit.rank
    put it lower for headroom: their bands overlap), or None."""
    mine = ordered[index].throughput
    faster = [o for o in ordered[index + 1 :] if o.throughput > mine]
    return max(faster, key=lambda o: o.throughput, default=None)


def _recommendation(
    o: LlmOption,
    ask: llm_fit.Ask,
    data: LlmData,
    limits: Limits,
    rank: int,
    by_cost: bool,
    faster_below: LlmOption | None = None,
) -> Recommendation:
    price = _price_info(o.gpu, data)
    assert price is not None
    total = price.usd * o.count
    cost = _costed(o, total, data, limits.costs)
    extra = platform_extra(o, data, limits.costs)
    return Recommendation(
        rank=rank,
        unit_price=price,
        total_price_usd=total,
        perf_per_dollar=per_dollar_spent(o.throughput, total, extra),
        total_memory_gb=o.gpu.memory_gb * o.count,
        tdp_w=o.gpu.tdp_w * o.count if o.gpu.tdp_w is not None else None,
        scaling_factor=o.speedup,
        scaling_basis=o.scaling_basis,
        why=f"{why(o, ask, rank, limits.budget, extra, by_cost, faster_below)} "
        f"{cost.sentence()}".strip(),
        **_row_fields(o),
        **cost.fields(),
    )


def _cost(
    o: LlmOption, data: LlmData, costs: CostSettings, unit: PriceObservation | None = None
) -> float:
    """What `o` costs within a budget: its cards (at `unit`, else their current price) plus
    the box several of them need."""
    unit = unit or o.gpu.price
    cards = unit.usd * o.count if unit else 0.0
    return cards + (platform_extra(o, data, costs) or 0.0)


def _undominated(found: list[LlmOption], data: LlmData, costs: CostSettings) -> list[LlmOption]:
    """`found` less the configurations another of them dominates (llm_fit.undominated), each
    priced at what it costs within a budget (its cards plus the box several of them need)."""
    priced = [replace(o.as_option(), price=_cost(o, data, costs)) for o in found]
    kept = {id(p) for p in llm_fit.undominated(priced)}
    return [o for o, p in zip(found, priced, strict=True) if id(p) in kept]


def _affordable(fitting: list[LlmOption], data: LlmData, limits: Limits) -> list[LlmOption]:
    """The priced options within the budget, speed and power limits; N cards that no sourced
    box holds are left out, as for a workload ask (recommend.within_budget), unless the caller
    prices the platform."""
    return [
        o
        for o in fitting
        if o.gpu.price is not None
        and (o.count == 1 or platform_extra(o, data, limits.costs) is not None)
        and _cost(o, data, limits.costs) <= limits.budget
        and limits.fast_enough(o)
        and limits.within_power(o)
    ]


def _offered(ask: llm_fit.Ask, data: LlmData, limits: Limits, framework: str) -> list[LlmOption]:
    """The priced configurations of the pool that fit, with their copies in independent mode
    and, for training, more GPUs than the fewest that hold the model (with_more_gpus)."""
    fitting = options(ask, data, limits.max_gpus, framework, True, limits.pool)
    if limits.mode == "independent":
        return with_replicas(fitting, limits.max_gpus)
    key = ("more", *_options_key(data, ask, limits.max_gpus, framework, True, limits.pool))
    more = bounded(
        data.kept_options,
        MAX_KEPT_OPTIONS,
        key,
        lambda: tuple(with_more_gpus(ask, fitting, data, framework, limits.max_gpus)),
    )
    return list(more)


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
    found = ranked(_undominated(affordable, data, limits.costs))
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


def older_price(
    ask: llm_fit.Ask, data: LlmData, limits: Limits, framework: str, fitting: list[LlmOption]
) -> str:
    """'; at an older price (allow_stale=true) ...' when a GPU whose newest price is older
    than the freshness window (a street or used price, or the list price of a GPU still made,
    as allow_stale prices it: prices.current_price) would cost less than the cheapest with a
    current one: an empty answer should not hide what allow_stale=true would rank. '' otherwise,
    and when stale prices are already allowed (they are then current)."""

    def usable(o: LlmOption) -> bool:
        return limits.fast_enough(o) and limits.within_power(o)

    current = [_cost(o, data, limits.costs) for o in fitting if o.gpu.price and usable(o)]
    every = options(ask, data, limits.max_gpus, framework, False, limits.pool)
    stale = [
        o
        for o in every
        if o.gpu.price is None
        and o.gpu.shown_price is not None
        and o.gpu.shown_price.condition in ("new", "used", "msrp")
        and usable(o)
    ]

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
        best = max(fitting, key=lambda o: o.throughput)
        return (
            f"no configuration reaches {limits.min_tokens_per_s:g} {UNIT}; the fastest that "
            f"fits is {best.count} x {best.gpu.slug} at ~{figure(best.throughput)} {UNIT}"
        )
    powered = [o for o in fast if limits.within_power(o)]
    if not powered:
        stated = [o for o in fast if o.gpu.tdp_w is not None]
        words = f"nothing that fits {ask.model.slug} draws at most {limits.max_power_w:g} W"
        if not stated:
            return f"{words}: none of the GPUs that fit states a TDP"
        lowest = min(stated, key=lambda o: ((o.gpu.tdp_w or 0.0) * o.count, o.gpu.slug))
        return (
            f"{words}; the lowest draw is {lowest.count} x {lowest.gpu.slug} at "
            f"{(lowest.gpu.tdp_w or 0.0) * lowest.count:g} W TDP"
            + (f" + {host:g} W host" if (host := limits.costs.host_power_w) else "")
        )
    cheapest = min(powered, key=lambda o: (_cost(o, data, limits.costs), o.gpu.slug))
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


def ranking_rows(
    ask: llm_fit.Ask,
    data: LlmData,
    max_gpus: int,
    framework: str,
    sort: str,
    pool: Pool = Pool(),
    costs: CostSettings | None = None,
) -> list[RankingItem]:
    """Every GPU's (of `pool`) fewest-GPU configuration that fits, by throughput (headroom
    inside overlapping bands), perf per dollar, or cost per million tokens (sort=tco); with
    `costs`, priced rows carry their cost of ownership."""
    rows = []
    for o in ranked_options(ask, data, max_gpus, framework, pool):
        total = o.gpu.price.usd * o.count if o.gpu.price else None
        cost = None
        if costs is not None and total is not None:
            cost = _costed(o, total, data, costs)
        rows.append(
            RankingItem(
                rank=0,
                mad=None,
                price=_price_info(o.gpu, data),
                # per USD of the GPUs and the box several need, as /recommend's rows count it
                perf_per_dollar=(
                    per_dollar_spent(o.throughput, total, platform_extra(o, data, costs))
                    if total
                    else None
                ),
                **_row_fields(o),
                **(cost.fields() if cost is not None else {}),
            )
        )
    if sort == "perf_per_dollar":
        rows.sort(key=per_dollar_key)
    elif sort == "perf_per_watt":
        rows.sort(key=per_watt_key)
    elif sort == "tco":
        rows.sort(key=cost_key)
    for rank, row in enumerate(rows, 1):
        row.rank = rank
    return rows


def reference_memo(engine: Engine, shared: LlmData, ask: llm_fit.Ask) -> DecodeReference | None:
    """`ask`'s decode reference for the data of `shared`, read (with a session of its own) the
    first time this model, format and context are asked."""
    known = _known_reference(shared, ask)
    if not isinstance(known, _Unread):
        return known
    with Session(engine) as session:
        found = decode_reference(session, ask, shared.measured)
    if len(shared.references) >= MAX_REFERENCES:
        shared.references.clear()
    shared.references[_reference_key(ask)] = found
    return found


def _reference_key(ask: llm_fit.Ask) -> ReferenceKey:
    return (ask.model.slug, ask.quant.name, ask.context)


def _known_reference(shared: LlmData, ask: llm_fit.Ask) -> DecodeReference | _Unread | None:
    """The memo's entry for `ask`, read once (another thread may clear the memo)."""
    return shared.references.get(_reference_key(ask), _UNREAD)


async def read(
    engine: Engine,
    settings: Settings,
    snapshots: SnapshotCache,
    condition: ConditionChoice,
    ask: llm_fit.Ask,
    allow_stale: bool = False,
) -> LlmRead:
    """The data of one LLM ask: the shared LlmData from `snapshots` (loaded in the thread pool
    with a session of its own when missing or stale), with the ask's decode reference."""
    train_precision = ask.quant.compute_precision if ask.phase == "train" else None
    key = LlmDataKey(condition, train_precision, allow_stale, utc_today())

    def build() -> LlmData:
        with Session(engine) as session:
            return load(
                session,
                condition,
                key.day,
                settings.price_max_age_days,
                train_precision,
                allow_stale,
            )

    shared = snapshots.fresh(key)
    if not isinstance(shared, LlmData):
        shared = await run_in_threadpool(snapshots.get, key, build)
    assert isinstance(shared, LlmData)
    if ask.phase != "decode":
        return LlmRead(key, shared, shared)
    known = _known_reference(shared, ask)
    if isinstance(known, _Unread):
        reference = await run_in_threadpool(reference_memo, engine, shared, ask)
    else:
        reference = known
    per_ask = replace(
        shared, decode_reference=reference, reference_for=partial(reference_memo, engine, shared)
    )
    return LlmRead(key, shared, per_ask)
