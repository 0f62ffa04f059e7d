"""What an ask reads and what it answers with: GPUs with their prices, measured LLM
aggregates, the throughput model's reference estimates, and one fitting configuration.

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
import statistics
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from typing import Any, Literal

from service.domain import llm_fit, memory
from service.domain.estimate import Estimate
from service.domain.plausibility import PeakRates
from service.domain.prices import PriceObservation, bought_used
from service.domain.recommend import narrowed
from service.domain.scaling import Profiles
from service.domain.vocabulary import ConditionChoice, Measurement
from service.read_model.ownership import OwnershipData

UNIT = "tokens/s"
# Which GPUs a set of configurations is built from: those with a current price (what
# /recommend offers), those with only an older one (what its hints may name), or every GPU
# (/rankings, which ranks what one does, priced or not)
Priced = Literal["current", "older", "any"]


MAX_REFERENCE_GPUS = 8  # the most reference GPUs relative_performance counts a model split over


TRAIN_REFERENCE = "llm-train"  # the catalog workload whose estimates training asks scale
# measured LLM training workloads -> the catalog model each trains (their descriptions in
# workloads.csv): their measured envelopes bound a training ask of a model near theirs in size
TRAINED_MODELS = {
    TRAIN_REFERENCE: "gpt2-124m",
    "mlperf-llama2-70b-lora-train": "llama-2-70b",
}


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

    @property
    def older_priced(self) -> bool:
        """No current price, but an older street, used or list price that allow_stale=true
        would rank it at (prices.current_price)."""
        p = self.shown_price
        return self.price is None and p is not None and p.condition in ("new", "used", "msrp")

    def priced(self, which: Priced) -> bool:
        """Whether an ask offering GPUs priced `which` way offers this one."""
        if which == "current":
            return self.price is not None
        return self.older_priced if which == "older" else True


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
    # the measured LLM training workloads with their models' sizes and measured envelopes
    # (held_to_training_envelope): GPT-2 124M's, and MLPerf's Llama 2 70B LoRA
    trained: tuple[llm_fit.TrainedEnvelope, ...] = ()

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
    # the largest share of its bandwidth ceiling any GPU measured on the workload reached (the
    # throughput model's measured envelope); None with too few measured GPUs
    envelope: float | None = None


@dataclass(frozen=True)
class PrefillWorkload:
    """A prompt-processing workload measured on one GPU (llama-bench ppN): what a prompt's
    reading time moves from (_prompt.py). The throughput model's single-GPU estimate for every
    GPU is read only for an ask's reference (_load.read)."""

    workload: str
    model: str  # catalog model slug
    quant: str  # the format's name (q4_k_m, f16)
    tokens: int
    precision: str  # the aggregate's (the throughput model's workload is slug@precision)
    frameworks: tuple[str, ...] = ()
    gpus: int = 0  # GPUs measured on it alone
    builds: tuple[int, ...] = ()  # llama.cpp build numbers of its results
    estimates: dict[str, Estimate] = field(default_factory=dict)
    # log half-width of a result of it measured once (its pooled run-to-run noise): the band
    # of a configuration measured once on it, never zero-width
    single_result_half_width: float = 0.0


@dataclass(frozen=True)
class PrefillData:
    """The prompt workloads, the attention weight fitted to their results and the log
    half-width of a move between two of them on one GPU (service/domain/prefill.py), and the
    learned N-GPU / 1-GPU ratios of llama.cpp's layer split on prompts, per prompt length."""

    workloads: tuple[PrefillWorkload, ...] = ()
    attention_weight: float = 1.0
    move_half_width: float = 0.0
    # prompt tokens -> GPU count -> N-GPU / 1-GPU ratios (llm_fit.split_ratios)
    split_ratios: dict[int, dict[int, list[float]]] = field(default_factory=dict)
    # the same per prompt workload
    workload_split_ratios: dict[str, dict[int, list[float]]] = field(default_factory=dict)


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
    # log half-width a decode estimate moved from its model's workload in another format
    # widens by (llm_fit.format_move_half_width)
    decode_format_half_width: float = 0.0
    # seconds per layer per token a decode value moved along the roofline keeps (FixedCosts)
    decode_fixed: llm_fit.FixedCosts = llm_fit.NO_FIXED_COSTS
    # inference data only: what a prompt's reading time is moved from (_prompt.py)
    prefill: PrefillData = field(default_factory=PrefillData)
    # an inference ask's prompt reference with every GPU's estimate (_load.read)
    prefill_reference: PrefillWorkload | None = None
    # shared LlmData only: (workload, precision) -> (estimates, single-result half-width) read
    # for a prompt reference (None: the workload is gone)
    prefill_estimates: dict[Hashable, tuple[dict[str, Estimate], float] | None] = field(
        default_factory=dict
    )
    # (model, format, length) -> _prompt.PromptMove or None, kept like kept_options
    prompt_moves: dict[Hashable, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LlmRead:
    """One ask's data: `snapshot`, the shared LlmData the SnapshotCache holds under `key` (what
    a stored answer is valid for), and `data`, the same with the ask's decode reference."""

    key: LlmDataKey
    snapshot: LlmData
    data: LlmData


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
    # the measured training workload whose envelope held a training estimate down (None: none)
    held_to: llm_fit.TrainedEnvelope | None = None

    def as_option(self, box_usd: float | None = 0.0) -> llm_fit.Option:
        """As llm_fit ranks it: within its band less the scaling's width, which configurations
        of one count share (their speedup is read from the same row): widened, 4 x RX 9070 had
        tied with 4 x RTX 3080 Ti, 26% faster, and ranked first for its headroom. Priced at its
        cards plus `box_usd`, the box several need (None: unknown, counted as 0)."""
        cards = self.gpu.price.usd * self.count if self.gpu.price else math.inf
        price = cards + (box_usd or 0.0)
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
