"""Load what the performance model needs from the database, and cache the result.

A Snapshot is everything /rankings and /recommend need for one (workload, precision,
price condition): every GPU's single-GPU estimate and current price, measured multi-GPU
medians and the scaling profiles (assumed, and fitted from measured multi-GPU aggregates:
read_model/profiles.py, computed once per data version). It is built from aggregates (never
from raw results), so its cost does not grow with the number of results, and it is cached per
process: a write through this process invalidates it at once, writes through other processes
within `cache_ttl_s`.
"""

import logging
import statistics
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import NamedTuple, TypeVar, cast

from sqlmodel import Session, col, select

from service.catalog import llm
from service.domain import estimate as est
from service.domain import memory
from service.domain import throughput_model as tm
from service.domain.availability import Availability, purchase_counts
from service.domain.llm_fit import split_ratios, split_speedup
from service.domain.plausibility import splits_by_layers
from service.domain.prices import PriceObservation, current_price, shown_price
from service.domain.recommend import Candidate, Configuration, configuration, configurations
from service.domain.scaling import Profiles, Scaling
from service.domain.tco import CostSettings
from service.domain.vocabulary import ConditionChoice, Mode
from service.models import Aggregate, Gpu, Price, Workload
from service.read_model.costing import Costed, costed
from service.read_model.estimates import estimates_for
from service.read_model.memo import bounded
from service.read_model.ownership import OwnershipData, load_ownership
from service.read_model.price_rows import observation as price_observation
from service.read_model.profiles import scaling_data

log = logging.getLogger(__name__)
T = TypeVar("T")
# Cost accounts kept per snapshot; their keys include the asker's cost settings (client input),
# so the memo is bounded: past this many it starts again.
MAX_COSTED = 4096
# Ranked configuration lists kept per snapshot, keyed by (mode, framework, max GPUs): the
# framework is client text, so this memo is bounded too. Each list holds every GPU at every
# count (hundreds of rows); a few frameworks x counts are what askers use.
MAX_RANKED = 64
MAX_KEPT = 1024  # rows kept per snapshot (Snapshot.kept): ~2 KB each, ~2 MB at most


class SnapshotKey(NamedTuple):
    workload: str
    precision: str | None  # None: the workload's own
    condition: ConditionChoice
    day: date  # current prices depend on the date
    allow_stale: bool = False  # rank at prices older than the freshness window too


def utc_today() -> date:
    return datetime.now(UTC).date()


@dataclass
class Snapshot:
    workload: Workload
    precision: str
    candidates: list[Candidate]
    measured_multi: dict[tuple[str, int], est.Measurement]
    profiles: Profiles  # assumed and fitted rows
    reference: Candidate | None
    today: date = field(default_factory=utc_today)
    max_price_age_days: int = 180
    condition: ConditionChoice = "any"
    allow_stale: bool = False
    ownership: OwnershipData = field(default_factory=OwnershipData)  # for cost of ownership
    # GPUs with a price only in the condition not asked for (new vs used): for the hint that
    # says which data is missing when nothing is priced in the asked condition.
    priced_otherwise: frozenset[str] = frozenset()
    # relative half-width of a measured value's band with no spread of its own (result_noise)
    result_noise: float = 0.0
    _ranked: dict[tuple[str, str, int], list[Configuration]] = field(default_factory=dict)
    _costed: dict[tuple[object, ...], Costed] = field(default_factory=dict)
    _derived: dict[Hashable, object] = field(default_factory=dict)
    _kept: dict[Hashable, object] = field(default_factory=dict)

    def derived(self, key: Hashable, compute: Callable[[], T]) -> T:
        """`compute()`, once per snapshot: for what rows derive from the snapshot alone. Keys
        are the caller's constants with small parameters (never client text), so this stays
        small."""
        if key not in self._derived:
            self._derived[key] = compute()
        return cast(T, self._derived[key])

    def kept(self, key: Hashable, compute: Callable[[], T]) -> T:
        """`compute()`, kept per snapshot under a key that may carry an ask's parameters (its
        cost settings, say): up to MAX_KEPT keys, so clients varying those parameters cannot
        grow it."""
        return bounded(self._kept, MAX_KEPT, key, compute)

    def costed(
        self,
        slug: str,
        price_usd: float,
        count: int,
        tdp_w: float | None,
        throughput: float,
        costs: CostSettings,
        included: str | None,
    ) -> Costed:
        """costing.costed with this snapshot's ownership data and unit, computed once per
        configuration and cost settings: answers to different budgets show the same rows
        (15% of a computed /recommend answer was these accounts)."""
        key = (slug, price_usd, count, tdp_w, throughput, costs, included)
        return bounded(
            self._costed,
            MAX_COSTED,
            key,
            lambda: costed(self.ownership, self.workload.unit, *key),
        )

    @property
    def decode(self) -> bool:
        """Memory-bound decode: multi-GPU is tensor-parallel, not data-parallel (scaling.py)."""
        return bool(self.workload.memory_bound or self.workload.phase == "decode")

    @property
    def by_slug(self) -> dict[str, Candidate]:
        return {c.slug: c for c in self.candidates}

    @property
    def named_model(self) -> memory.ModelSpec | None:
        """The catalog model the workload names (llm-inference: Llama 2 7B), if any."""
        return llm.models().get(self.workload.model or "")

    @property
    def min_memory_gb(self) -> float:
        """The workload's memory floor at the snapshot's precision: a named model's weights
        at that precision, the rest of the stated floor (KV cache, runtime) as it is.
        `llm-inference` states 16 GB for Llama 2 7B in fp16 (13.5 GB of weights); in fp32 its
        weights are 27 GB, and 16 GB cards had been recommended for it."""
        w, spec = self.workload, self.named_model
        own, asked = est.BYTES_PER_PARAM.get(w.precision), est.BYTES_PER_PARAM.get(self.precision)
        if spec is None or w.quant or not own or not asked or own == asked:
            return w.min_memory_gb
        return max(w.min_memory_gb + spec.params_b * (asked - own), 0.0)

    def relative(self, throughput: float) -> float | None:
        """Throughput over the reference GPU's; None where the reference cannot run the
        workload (less memory than it needs: an RTX 4090 on MLPerf Llama 2 70B LoRA)."""
        ref = self.reference
        if ref is None or ref.estimate.value <= 0 or ref.memory_gb < self.min_memory_gb:
            return None
        return throughput / ref.estimate.value

    def splits_over(self, mode: Mode, count: int) -> bool:
        """Whether one job can run on `count` GPUs: a decode workload of a catalog model split
        tensor-parallel needs its attention and KV heads divisible among them
        (memory.split_fits); Llama 2 7B's 32 heads go on 1, 2, 4 or 8 GPUs, and `llm-inference`
        had been answered at $50,000 with 7 x RTX 5090 (3.68x)."""
        if mode != "parallel" or count <= 1 or not self.decode or self.layer_split:
            return True
        spec = self.named_model
        return spec is None or memory.split_fits(spec, count, "tensor")

    def job_counts(self, availability: Availability, max_gpus: int, mode: Mode) -> list[int]:
        """The counts of a GPU that can be bought (availability.purchase_counts) and that one
        job can be split over (splits_over), up to `max_gpus`."""
        return [
            n
            for n in purchase_counts(availability, max_gpus, mode == "parallel")
            if self.splits_over(mode, n)
        ]

    @property
    def layer_split(self) -> bool:
        """A llama-bench workload (one that fixes a GGUF or F16 file for a prefill or decode
        phase): llama.cpp splits the model by layers over N GPUs, so one token or prompt goes
        through them in turn and N GPUs are no faster than one. The corpus measures it: RTX
        4090 on Llama-3-8B Q4_K_M tg512, 130.6 tokens/s on 1 GPU, 120.3 on 4, 118.1 on 8."""
        return splits_by_layers(self.workload.quant, self.workload.phase)

    def split_ratios(self) -> dict[int, list[float]]:
        """N-GPU / 1-GPU throughput of this workload's measured multi-GPU results, per N, for
        GPUs measured on one GPU too."""

        def compute() -> dict[int, list[float]]:
            single = {
                c.slug: c.estimate.value for c in self.candidates if c.estimate.basis == "measured"
            }
            multi = ((slug, n, m.median) for (slug, n), m in self.measured_multi.items())
            return split_ratios(single, multi)

        return self.derived("split_ratios", compute)

    def scaling(self, mode: Mode, framework: str, cand: Candidate, count: int) -> Scaling:
        """Speedup of `count` x `cand`: a llama.cpp layer split's measured ratio (layer_split),
        else from the profiles (fitted, else assumed)."""
        if self.layer_split and mode == "parallel" and count > 1:
            return Scaling(*split_speedup(self.split_ratios(), count))
        return self.profiles.scaling(
            mode,
            framework,
            cand.interconnect,
            count,
            decode=self.decode,
            sold_as=cand.availability.sold_as,
            stack=cand.stack,
        )

    def configuration(
        self, mode: Mode, framework: str, cand: Candidate, count: int
    ) -> Configuration:
        """`count` x `cand` as ranked_configurations counts it, priced or not (/compare)."""
        return configuration(
            cand,
            count,
            lambda c, n: self.scaling(mode, framework, c, n),
            self.measured_multi,
            use_measured_multi=(mode == "parallel"),
            result_noise=self.result_noise,
        )

    def ranked_configurations(
        self, mode: Mode, framework: str, max_gpus: int
    ) -> list[Configuration]:
        """All configurations ranked by throughput; computed once per (mode, framework, n), up
        to MAX_RANKED keys."""
        return bounded(
            self._ranked,
            MAX_RANKED,
            (mode, framework, max_gpus),
            lambda: configurations(
                self.candidates,
                max_gpus,
                lambda c, n: self.scaling(mode, framework, c, n),
                self.measured_multi,
                use_measured_multi=(mode == "parallel"),
                result_noise=self.result_noise,
                memory_splits=self.layer_split and mode == "parallel",
                one_job=mode == "parallel",
                count_allowed=lambda n: self.splits_over(mode, n),
            ),
        )


def build_snapshot(
    session: Session,
    workload: Workload,
    precision: str,
    condition: ConditionChoice,
    reference_slug: str,
    today: date,
    max_price_age_days: int,
    allow_stale: bool = False,
    mixed_precision: bool = False,
) -> Snapshot:
    """The snapshot of (workload, precision, condition); `mixed_precision`: the ask named no
    precision, so a bf16 workload's GPUs without bf16 units are read at fp16
    (EstimateModel.mixed_precision_estimates)."""
    gpus = session.exec(select(Gpu).order_by(col(Gpu.slug))).all()
    slug_of = {g.id: g.slug for g in gpus}
    measured_multi: dict[tuple[str, int], est.Measurement] = {}
    aggregates = session.exec(
        select(Aggregate).where(
            Aggregate.workload_id == workload.id,
            Aggregate.precision == precision,
            Aggregate.n > 0,  # a group whose every result is an outlier measures nothing
            Aggregate.gpu_count > 1,  # single-GPU medians: read by the model (estimates.py)
        )
    ).all()
    for agg in aggregates:
        if agg.gpu_count > 1:
            measured_multi[(slug_of[agg.gpu_id], agg.gpu_count)] = est.Measurement(
                agg.median, agg.n, agg.mad
            )
    try:
        estimates = estimates_for(
            session,
            workload,
            None if mixed_precision and precision == workload.precision else precision,
        )
    except Exception:  # one workload's bad data degrades that workload, never the service
        log.exception("estimates for %s/%s failed; serving none", workload.slug, precision)
        estimates = {}
    prices: dict[int, list[PriceObservation]] = {}
    for p in session.exec(select(Price).where(col(Price.usd).is_not(None))).all():
        assert p.usd is not None
        prices.setdefault(p.gpu_id, []).append(price_observation(p))
    candidates = []
    priced_otherwise: set[str] = set()
    for g in gpus:
        if g.slug not in estimates:
            continue
        avail = Availability(g.status, g.sold_as, g.unit_gpus)
        observed = prices.get(g.id or -1, [])
        usable = current_price(
            observed, condition, today, max_price_age_days, avail.in_production, allow_stale
        )
        shown = usable or shown_price(observed, condition, today, avail.in_production)
        elsewhere = shown is None and condition != "any"
        if elsewhere and shown_price(observed, "any", today, avail.in_production) is not None:
            priced_otherwise.add(g.slug)
        candidates.append(
            Candidate(
                g.slug,
                g.name,
                g.memory_gb,
                g.tdp_w,
                g.interconnect,
                estimates[g.slug],
                usable,
                g.stack,
                avail,
                shown,
            )
        )
    by_slug = {c.slug: c for c in candidates}
    return Snapshot(
        workload,
        precision,
        candidates,
        measured_multi,
        scaling_data(session).profiles,
        by_slug.get(reference_slug),
        today,
        max_price_age_days,
        condition,
        allow_stale,
        ownership=load_ownership(session, today, max_price_age_days),
        priced_otherwise=frozenset(priced_otherwise),
        result_noise=result_noise(estimates.values()),
    )


def result_noise(estimates: Iterable[est.Estimate]) -> float:
    """Median relative half-width of the workload's measured single-GPU bands (each its
    results' spread, or the model's pooled noise for one result): the least spread a measured
    multi-GPU value is given, so that one result never answers with a zero-width band. The
    model's stated default (5%) where no single GPU is measured."""
    widths = [
        (e.high - e.low) / (2 * e.value) for e in estimates if e.basis == "measured" and e.value > 0
    ]
    return statistics.median(widths) if widths else tm.DEFAULT_RELATIVE_NOISE
