"""Leave-one-GPU-out accuracy of the estimator on the database's own results.

What `gpu-advisor evaluate` prints and `GET /model/accuracy` answers. Design decisions:

- What is evaluated is the model the service answers with: service/domain/throughput_model/
  fitted on every accepted single-GPU aggregate (read_model/estimates.py `load_inputs`), refitted
  without what is held out. Modes (service/domain/evaluation.py): `gpu` holds a GPU out of every
  workload at once (a card nobody has measured, what an RTX 5090 or an MI300X faces); `cell`
  holds out one (GPU, workload) and keeps the GPU's other results (a card measured elsewhere).
- Workloads with at least `min_gpus` measured GPUs (default 5) are scored: median and 90th
  percentile absolute percentage error, the share of held-out results inside their 80% band,
  and Spearman's rank correlation of predicted against measured perf per dollar over the GPUs
  with a current price (the /rankings rule: the cheaper current new or used price, fresh within
  `price_max_age_days`), and of throughput over all of them.
- Cost: one fit of the shipped corpus takes 1-3 s; `gpu` mode refits once per measured GPU
  (about 40: one to three minutes on two cores); `cell` mode once per (GPU, workload) (about 730:
  tens of minutes), so the endpoint serves `gpu` mode only and `cell` is for the CLI.
- Serving (AccuracyService): nothing is computed until someone asks. The first request starts
  the evaluation of the current data version in a separate process (one worker, `spawn`), so
  the numerical work never holds the server's GIL, and answers 202 with Retry-After; later
  requests get the finished report. When the data change, the last report is still served,
  marked `stale: true` with the data version it describes, while the new one is computed; a
  new computation starts at most once per `min_interval_s` (ingestion can change the data
  every second; one report an hour says as much). Reports live in the process: several API
  processes each compute their own, once per data version; a failure is logged and the next
  request retries after the interval.
"""

from __future__ import annotations

import hashlib
import logging
import multiprocessing
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Literal

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from service.domain import evaluation as ev
from service.domain import throughput_model as tm
from service.domain.availability import Availability
from service.domain.prices import PriceObservation, current_price
from service.models import Gpu, Price
from service.read_model.estimates import ModelInputs, fingerprint, load_inputs
from service.read_model.price_rows import observation as price_observation

log = logging.getLogger(__name__)

Mode = Literal["gpu", "cell"]
DEFAULT_MIN_GPUS = 5
# The targets, reported next to each workload (with at least TARGET_MIN_GPUS GPUs).
TARGET_MIN_GPUS = 6
TARGET_MDAPE = 0.10
TARGET_P90 = 0.25
TARGET_COVERAGE = (0.70, 0.90)
TARGET_SPEARMAN = 0.9


@dataclass(frozen=True)
class AccuracyReport:
    mode: Mode
    min_gpus: int
    data_version: str
    computed_at: datetime
    seconds: float
    n_observations: int
    workloads: tuple[ev.WorkloadAccuracy, ...]


def data_version(key: Hashable) -> str:
    """A short stable name for a data fingerprint (estimates.fingerprint)."""
    return hashlib.sha256(repr(key).encode()).hexdigest()[:16]


def current_prices(session: Session, today: date, max_age_days: int) -> dict[str, float]:
    """slug -> the price /rankings ranks at (condition any), for GPUs that have one."""
    gpus = session.exec(select(Gpu)).all()
    observed: dict[int, list[PriceObservation]] = {}
    for p in session.exec(select(Price).where(col(Price.usd).is_not(None))).all():
        assert p.usd is not None
        observed.setdefault(p.gpu_id, []).append(price_observation(p))
    out = {}
    for g in gpus:
        in_production = Availability(g.status, g.sold_as, g.unit_gpus).in_production
        seen = observed.get(g.id or -1, [])
        price = current_price(seen, "any", today, max_age_days, in_production)
        if price is not None:
            out[g.slug] = price.usd
    return out


def _trainer(inputs: ModelInputs) -> ev.Trainer:
    def train(observations: Sequence[tm.Observation]) -> ev.Predictor:
        model = tm.fit(inputs.gpus, inputs.workloads, observations)

        def predict(gpu: str, workload: str) -> tuple[float, float, float] | None:
            p = model.predict(gpu, workload)
            return None if p is None else (p.value, p.low, p.high)

        return predict

    return train


def compute(
    inputs: ModelInputs,
    prices: dict[str, float],
    mode: Mode,
    min_gpus: int,
    version: str,
) -> AccuracyReport:
    """The evaluation itself: pure computation on loaded inputs (runs in a worker process)."""
    start = time.perf_counter()
    held = ev.leave_one_gpu_out(inputs.observations, _trainer(inputs), min_gpus, mode)
    rows = ev.summarise(held, inputs.observations, prices, min_gpus)
    return AccuracyReport(
        mode,
        min_gpus,
        version,
        datetime.now(UTC).replace(microsecond=0),
        round(time.perf_counter() - start, 1),
        len(inputs.observations),
        tuple(rows),
    )


def evaluate(
    session: Session,
    today: date,
    max_price_age_days: int,
    mode: Mode = "gpu",
    min_gpus: int = DEFAULT_MIN_GPUS,
) -> AccuracyReport:
    """Evaluate now, in this process (the CLI)."""
    version = data_version(fingerprint(session))
    inputs = load_inputs(session)
    prices = current_prices(session, today, max_price_age_days)
    return compute(inputs, prices, mode, min_gpus, version)


def meets_targets(row: ev.WorkloadAccuracy) -> bool | None:
    """Whether a workload meets the issue's targets; None with fewer than TARGET_MIN_GPUS
    measured GPUs. The perf-per-dollar rank correlation is judged only where at least three
    held-out GPUs have a current price (else it does not exist)."""
    if row.n_gpus < TARGET_MIN_GPUS or not row.n_predicted:
        return None
    low, high = TARGET_COVERAGE
    return (
        row.mdape <= TARGET_MDAPE
        and row.p90_ape <= TARGET_P90
        and low <= row.coverage <= high
        and (row.spearman_ppd is None or row.spearman_ppd >= TARGET_SPEARMAN)
    )


@dataclass(frozen=True)
class Served:
    """What the endpoint answers: a report (maybe stale) or None while the first is computed."""

    report: AccuracyReport | None
    current_version: str
    computing: bool

    @property
    def stale(self) -> bool:
        return self.report is not None and self.report.data_version != self.current_version


Submit = Callable[[ModelInputs, dict[str, float], str], "Future[AccuracyReport]"]


class AccuracyService:
    """One cold-GPU report per process, computed in a worker process when asked for."""

    def __init__(self, engine: Engine, max_price_age_days: int, min_interval_s: float) -> None:
        self._engine = engine
        self._max_age = max_price_age_days
        self._min_interval_s = min_interval_s
        self._lock = threading.Lock()
        self._report: AccuracyReport | None = None
        self._running: Future[AccuracyReport] | None = None
        self._running_version = ""
        self._started_at = -float("inf")
        self._pool: ProcessPoolExecutor | None = None

    def serve(self, session: Session, today: date) -> Served:
        version = data_version(fingerprint(session))
        with self._lock:
            self._collect()
            wanted = self._report is None or self._report.data_version != version
            idle = self._running is None
            due = time.monotonic() - self._started_at >= self._min_interval_s
            if wanted and idle and due:
                inputs = load_inputs(session)
                prices = current_prices(session, today, self._max_age)
                self._running = self._submit(inputs, prices, version)
                self._running_version = version
                self._started_at = time.monotonic()
            return Served(self._report, version, self._running is not None)

    def _submit(
        self, inputs: ModelInputs, prices: dict[str, float], version: str
    ) -> Future[AccuracyReport]:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn")
            )
        return self._pool.submit(compute, inputs, prices, "gpu", DEFAULT_MIN_GPUS, version)

    def _collect(self) -> None:
        """Take a finished computation's report (under the lock)."""
        running = self._running
        if running is None or not running.done():
            return
        self._running = None
        try:
            self._report = running.result()
        except Exception:  # a failed evaluation costs the report, never the request
            log.exception("model accuracy evaluation of %s failed", self._running_version)

    def wait(self, timeout_s: float) -> None:
        """Block until the running computation ends (tests and shutdown)."""
        running = self._running
        if running is not None:
            running.exception(timeout=timeout_s)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
