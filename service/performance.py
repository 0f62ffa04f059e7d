"""Load what the performance model needs from the database, and cache the result.

A Snapshot is everything /rankings and /recommend need for one (workload, precision,
price condition): every GPU's single-GPU estimate and current price, measured multi-GPU
medians and the scaling profiles. It is built from aggregates (never from raw results), so its
cost does not grow with the number of results, and it is cached per process: a write through
this process invalidates it at once, writes through other processes within `cache_ttl_s`.
"""

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import NamedTuple

from sqlmodel import Session, col, select

from service.domain import estimate as est
from service.domain.plausibility import peak_tflops
from service.domain.prices import ConditionChoice, PriceObservation, current_price
from service.domain.recommend import Candidate, Configuration, configurations
from service.domain.scaling import Mode, ProfileKey, scaling
from service.ingest import peak_rates
from service.models import Aggregate, Calibration, Gpu, Price, ScalingProfile, Workload

CALIBRATED_RATE = {  # precision -> (calibration column, gpu spec column)
    "fp32": ("fp32_tflops", "fp32_tflops"),
    "tf32": ("tf32_tflops", "tf32_tensor_tflops"),
    "fp16": ("fp16_tflops", "fp16_tensor_tflops"),
    "bf16": ("bf16_tflops", "bf16_tensor_tflops"),
    "fp8": ("fp8_tflops", "fp8_tensor_tflops"),
}


class SnapshotKey(NamedTuple):
    workload: str
    precision: str | None  # None: the workload's own
    condition: ConditionChoice
    day: date  # current prices depend on the date


def utc_today() -> date:
    return datetime.now(UTC).date()


@dataclass
class Snapshot:
    workload: Workload
    precision: str
    candidates: list[Candidate]
    measured_multi: dict[tuple[str, int], est.Measurement]
    profiles: dict[ProfileKey, float]
    reference: Candidate | None
    _ranked: dict[tuple[str, str, int], list[Configuration]] = field(default_factory=dict)

    @property
    def by_slug(self) -> dict[str, Candidate]:
        return {c.slug: c for c in self.candidates}

    def relative(self, throughput: float) -> float | None:
        if self.reference is None or self.reference.estimate.value <= 0:
            return None
        return throughput / self.reference.estimate.value

    def ranked_configurations(
        self, mode: Mode, framework: str, max_gpus: int
    ) -> list[Configuration]:
        """All configurations ranked by throughput; computed once per (mode, framework, n)."""
        key = (mode, framework, max_gpus)
        if key not in self._ranked:
            self._ranked[key] = configurations(
                self.candidates,
                max_gpus,
                lambda c, n: scaling(self.profiles, mode, framework, c.interconnect, n),
                self.measured_multi,
                use_measured_multi=(mode == "parallel"),
            )
        return self._ranked[key]


def calibration_efficiencies(session: Session, precision: str) -> dict[int, float]:
    """gpu_id -> achieved / spec peak, from each GPU's newest accepted CUDA calibration."""
    columns = CALIBRATED_RATE.get(precision)
    if columns is None:
        return {}
    measured_col, spec_col = columns
    rows = session.exec(
        select(Calibration, Gpu)
        .join(Gpu, col(Gpu.id) == Calibration.gpu_id)
        .where(Calibration.status == "accepted", Calibration.device == "cuda")
        .order_by(col(Calibration.created_at))
    ).all()
    out: dict[int, float] = {}
    for calibration, gpu in rows:  # newest last, so it wins
        achieved, spec = getattr(calibration, measured_col), getattr(gpu, spec_col)
        if achieved and spec and gpu.id is not None:
            out[gpu.id] = min(achieved / spec, 1.0)
    return out


def build_snapshot(
    session: Session,
    workload: Workload,
    precision: str,
    condition: ConditionChoice,
    reference_slug: str,
    today: date,
    max_price_age_days: int,
) -> Snapshot:
    gpus = session.exec(select(Gpu).order_by(col(Gpu.slug))).all()
    efficiencies = calibration_efficiencies(session, precision)
    perf = {
        g.id: est.GpuPerf(
            g.slug,
            peak_tflops(peak_rates(g), precision) * efficiencies.get(g.id or -1, 1.0),
            g.memory_bandwidth_gbs,
        )
        for g in gpus
    }
    slug_of = {g.id: g.slug for g in gpus}
    measured: dict[str, est.Measurement] = {}
    measured_multi: dict[tuple[str, int], est.Measurement] = {}
    aggregates = session.exec(
        select(Aggregate).where(
            Aggregate.workload_id == workload.id,
            Aggregate.precision == precision,
            Aggregate.n > 0,  # a group whose every result is an outlier measures nothing
        )
    ).all()
    for agg in aggregates:
        m = est.Measurement(agg.median, agg.n, agg.mad)
        if agg.gpu_count == 1:
            measured[slug_of[agg.gpu_id]] = m
        else:
            measured_multi[(slug_of[agg.gpu_id], agg.gpu_count)] = m
    estimates = est.estimate_all(
        list(perf.values()),
        measured,
        est.Workload(workload.flops_per_unit, workload.memory_bound, precision),
    )
    prices: dict[int, list[PriceObservation]] = {}
    for p in session.exec(select(Price)).all():
        prices.setdefault(p.gpu_id, []).append(
            PriceObservation(p.usd, p.condition, p.source, p.observed_at, p.id or 0)
        )
    candidates = [
        Candidate(
            g.slug,
            g.name,
            g.memory_gb,
            g.tdp_w,
            g.interconnect,
            estimates[g.slug],
            current_price(prices.get(g.id or -1, []), condition, today, max_price_age_days),
        )
        for g in gpus
        if g.slug in estimates
    ]
    profiles = {
        (p.framework, p.interconnect, p.gpu_count): p.efficiency
        for p in session.exec(select(ScalingProfile)).all()
    }
    by_slug = {c.slug: c for c in candidates}
    return Snapshot(
        workload, precision, candidates, measured_multi, profiles, by_slug.get(reference_slug)
    )


class SnapshotCache:
    """Per-process cache of snapshots, made stale by any local write or after `ttl_s`.

    Rebuilds are single-flight: when an entry is stale, one caller rebuilds it while the others
    keep serving the stale snapshot (for about one rebuild, ~10 ms), so a stream of writes does
    not make every reader rebuild. A caller that finds no snapshot at all waits for the one
    rebuild instead of starting its own.
    """

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._lock = threading.Lock()
        self._generation = 0
        self._entries: dict[Hashable, tuple[int, float, Snapshot]] = {}
        self._building: dict[Hashable, threading.Lock] = {}

    def invalidate(self) -> None:
        with self._lock:
            self._generation += 1

    def _lookup(self, key: Hashable) -> tuple[Snapshot | None, bool]:
        """(snapshot of the current generation or None, whether it is still fresh)."""
        with self._lock:
            entry = self._entries.get(key)
            generation = self._generation
        if entry is None:
            return None, False
        return entry[2], entry[0] == generation and time.monotonic() - entry[1] < self.ttl_s

    def fresh(self, key: Hashable) -> Snapshot | None:
        snapshot, is_fresh = self._lookup(key)
        return snapshot if is_fresh else None

    def is_current(self, key: Hashable, snapshot: Snapshot) -> bool:
        """Whether `snapshot` is what this cache serves, fresh, for `key` (answers computed
        from it are then still right)."""
        return self.fresh(key) is snapshot

    def get(self, key: Hashable, build: Callable[[], Snapshot]) -> Snapshot:
        """The cached snapshot, rebuilding it (once, whoever asks) when needed. Blocking."""
        snapshot, is_fresh = self._lookup(key)
        if snapshot is not None and is_fresh:
            return snapshot
        with self._lock:
            key_lock = self._building.setdefault(key, threading.Lock())
        if snapshot is not None and not key_lock.acquire(blocking=False):
            return snapshot  # expired, and someone is already rebuilding it
        if snapshot is None:
            key_lock.acquire()
        try:
            again, is_fresh = self._lookup(key)
            if again is not None and is_fresh:
                return again
            with self._lock:
                generation = self._generation
            built = build()
            with self._lock:
                if self._generation == generation:
                    self._entries[key] = (generation, time.monotonic(), built)
            return built
        finally:
            key_lock.release()
