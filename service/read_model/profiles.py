"""Scaling profiles as answers use them: the assumed rows of `scaling_profile` plus the rows
fitted from measured multi-GPU aggregates (service/domain/scaling.py: what is pooled and how).

Design decisions:
- Fitted rows are computed from the database, never stored. A stored copy would need a refresh
  after every write that can move a median (POST /results, imports, seeding, an admin's
  verdict, a GPU's interconnect or sold_as edited), in code paths other modules own; one path
  that forgot would leave profiles that contradict the aggregates. Computed, they always agree
  with the aggregates of the moment, and `scaling_profile` keeps holding only what cannot be
  computed: the guide's assumed rows.
- The computation is cached per process by data version: the same fingerprint the estimator's
  fit uses (aggregates, GPUs, workloads, calibrations: counts, sums, newest timestamps), plus the
  scaling_profile rows. So it runs once per write, not per answer. Its two queries read
  aggregates (multi-GPU groups joined to their 1-GPU group) and one GROUP BY over results for
  each group's framework(s): aggregates carry no framework, and a pair feeds only the profile
  of the framework both of its groups were measured with.
"""

import threading
from collections.abc import Hashable
from dataclasses import dataclass, field
from functools import cached_property

from sqlalchemy import and_, func
from sqlalchemy import select as sa_select
from sqlalchemy.orm import aliased
from sqlmodel import Session, col, select

from service.domain.scaling import (
    FittedProfile,
    MeasuredScaling,
    ProfileKey,
    Profiles,
    box_interconnect,
    data_parallel,
    fit_profiles,
    scaling_half_widths,
)
from service.domain.throughput_model import derive_stack
from service.models import Aggregate, Gpu, ScalingProfile, Workload
from service.read_model.estimates import fingerprint, group_frameworks

GroupKey = tuple[int, int, str, int]  # gpu_id, workload_id, precision, gpu_count


@dataclass(frozen=True)
class ProfileRow:
    """One row of GET /scaling-profiles."""

    framework: str
    interconnect: str
    gpu_count: int
    efficiency: float
    basis: str  # fitted | assumed
    n: int
    pairs: int
    gpus: int
    source: str


@dataclass
class ScalingData:
    assumed: dict[ProfileKey, float]
    fitted: dict[ProfileKey, FittedProfile]
    measured: list[MeasuredScaling] = field(default_factory=list)
    assumed_rows: list[ProfileRow] = field(default_factory=list)

    stacks: dict[str, str] = field(default_factory=dict)  # GPU slug -> software stack

    @cached_property  # read by every snapshot and LLM data build of this data version
    def profiles(self) -> Profiles:
        """The rows configurations scale by: assumed, fitted (efficiency), the software
        stacks of the GPUs whose boxes each fitted row pools, and the speedups' band widths."""
        return Profiles(
            self.assumed,
            {k: f.efficiency for k, f in self.fitted.items()},
            {k: frozenset(self.stacks.get(g, "") for g in f.gpus) for k, f in self.fitted.items()},
            scaling_half_widths(self.measured, self.assumed, self.fitted),
        )

    def rows(self) -> list[ProfileRow]:
        """Every profile row, fitted before assumed for the same (framework, link, count)."""
        fitted = [
            ProfileRow(
                f.framework,
                f.interconnect,
                f.count,
                f.efficiency,
                "fitted",
                f.n,
                f.pairs,
                len(f.gpus),
                f.source,
            )
            for f in self.fitted.values()
        ]
        return sorted(
            fitted + self.assumed_rows,
            key=lambda r: (r.framework, r.interconnect, r.gpu_count, r.basis != "fitted"),
        )


def _frameworks(session: Session) -> dict[GroupKey, str | None]:
    """The one framework of each group's accepted results (None when they mix frameworks)."""
    return {k: fws[0] if len(fws) == 1 else None for k, fws in group_frameworks(session).items()}


def measured_scalings(session: Session) -> list[MeasuredScaling]:
    """Every accepted multi-GPU median next to the same GPU's 1-GPU median (same workload and
    precision), as a measured scaling."""
    single = aliased(Aggregate)
    multi = aliased(Aggregate)
    rows = session.execute(
        sa_select(
            col(multi.gpu_id),
            col(multi.workload_id),
            col(multi.precision),
            col(multi.gpu_count),
            col(multi.median),
            col(multi.n),
            col(single.median),
            col(single.n),
        )
        .join(
            single,
            and_(
                col(single.gpu_id) == col(multi.gpu_id),
                col(single.workload_id) == col(multi.workload_id),
                col(single.precision) == col(multi.precision),
                col(single.gpu_count) == 1,
            ),
        )
        .where(col(multi.gpu_count) > 1, col(multi.n) > 0, col(single.n) > 0)
    ).all()
    if not rows:
        return []
    gpus = {g.id: g for g in session.exec(select(Gpu)).all()}
    workloads = {w.id: w for w in session.exec(select(Workload)).all()}
    frameworks = _frameworks(session)
    out = []
    for gpu_id, wl_id, precision, count, m_median, m_n, s_median, s_n in rows:
        gpu, wl = gpus[gpu_id], workloads[wl_id]
        fw = frameworks.get((gpu_id, wl_id, precision, count))
        same = fw is not None and fw == frameworks.get((gpu_id, wl_id, precision, 1))
        out.append(
            MeasuredScaling(
                gpu.slug,
                wl.slug,
                precision,
                count,
                m_median,
                s_median,
                m_n,
                s_n,
                fw if same else None,
                box_interconnect(gpu.interconnect, gpu.sold_as, count),
                data_parallel(wl.memory_bound, wl.phase),
            )
        )
    return out


def load_scaling(session: Session) -> ScalingData:
    stored = session.exec(select(ScalingProfile)).all()
    measured = measured_scalings(session)
    gpus = session.exec(select(Gpu.slug, Gpu.stack, Gpu.vendor, Gpu.market)).all()
    stacks = {slug: stack or derive_stack(vendor, market) for slug, stack, vendor, market in gpus}
    return ScalingData(
        {(p.framework, p.interconnect, p.gpu_count): p.efficiency for p in stored},
        fit_profiles(measured),
        measured,
        [
            ProfileRow(
                p.framework,
                p.interconnect,
                p.gpu_count,
                p.efficiency,
                p.basis,
                p.n,
                0,
                0,
                p.source,
            )
            for p in stored
        ],
        stacks,
    )


class _Cache:
    """ScalingData per data version (the newest few), computed once, whoever asks."""

    KEEP = 4

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[Hashable, ScalingData] = {}

    def get(self, session: Session) -> ScalingData:
        stored = session.exec(
            select(func.count(), func.max(ScalingProfile.id), func.sum(ScalingProfile.efficiency))
        ).one()
        key = (fingerprint(session), tuple(stored))
        with self._lock:
            hit = self._entries.get(key)
        if hit is not None:
            return hit
        data = load_scaling(session)
        with self._lock:
            self._entries[key] = data
            while len(self._entries) > self.KEEP:
                self._entries.pop(next(iter(self._entries)))
        return data


_CACHE = _Cache()


def scaling_data(session: Session) -> ScalingData:
    """The assumed and fitted profiles of the database's current data (cached)."""
    return _CACHE.get(session)
