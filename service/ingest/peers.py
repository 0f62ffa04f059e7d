"""The peers step of the gate: a result is judged against what other GPUs measured.

Runs after physics and before statistics. Two checks, both from service.domain.plausibility:

- implausible_vs_peers: per-GPU efficiency far beyond the best other GPU's on the same
  workload and precision (even when the result starts a group of one);
- superlinear_scaling: N GPUs claiming clearly more than N times the same GPU's 1-GPU median.

References are the stored accepted medians (aggregate table, one query) plus the batch's own
rows that passed physics (median per group), so a seed batch judges itself consistently. Rows
flagged here are stored as `outlier` with a sticky reason (see groups.STICKY_REASONS): the
statistics step never turns them back into `accepted`.
"""

from collections import defaultdict
from collections.abc import Sequence
from statistics import median
from typing import Any

from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from service.catalog.peaks import peak_rates
from service.domain.plausibility import (
    IMPLAUSIBLE_VS_PEERS,
    SUPERLINEAR_SCALING,
    Efficiency,
    best_efficiency,
    efficiency,
    implausible_vs_peers,
    superlinear,
)
from service.ingest.groups import AGGREGATE_TABLE
from service.models import Gpu, Workload

PairKey = tuple[int, str]  # workload_id, precision


def _medians(
    session: Session, rows: Sequence[dict[str, Any]]
) -> dict[tuple[int, int, str, int], float]:
    """Accepted median per group (gpu, workload, precision, count): stored, then the batch's."""
    workload_ids = {r["workload_id"] for r in rows}
    t = AGGREGATE_TABLE
    stored = session.execute(
        sa_select(t.c.gpu_id, t.c.workload_id, t.c.precision, t.c.gpu_count, t.c.median).where(
            t.c.workload_id.in_(workload_ids), t.c.n > 0
        )
    ).all()
    out = {(g, w, p, c): m for g, w, p, c, m in stored}
    batch: dict[tuple[int, int, str, int], list[float]] = defaultdict(list)
    for r in rows:
        batch[(r["gpu_id"], r["workload_id"], r["precision"], r["gpu_count"])].append(r["value"])
    for key, values in batch.items():
        out.setdefault(key, median(values))
    return out


def check_peers(
    session: Session, rows: list[dict[str, Any]], workloads: dict[int, Workload]
) -> None:
    """Mark rows (still `accepted` after physics) that their peers make implausible."""
    candidates = [r for r in rows if r["status"] == "accepted"]
    if not candidates:
        return
    medians = _medians(session, candidates)
    gpu_ids = {k[0] for k in medians}
    gpus = {g.id: g for g in session.exec(select(Gpu).where(col(Gpu.id).in_(gpu_ids)))}
    rates = {gid: peak_rates(g) for gid, g in gpus.items()}

    def eff(gpu_id: int, value: float, count: int, precision: str) -> Efficiency | None:
        gpu = gpus.get(gpu_id)
        if gpu is None or not gpu.memory_bandwidth_gbs:
            return None
        try:
            return efficiency(value, count, rates[gpu_id], precision, gpu.memory_bandwidth_gbs)
        except (KeyError, ValueError, ZeroDivisionError):
            return None  # a precision this GPU has no rate for: nothing to compare

    per_gpu: dict[PairKey, dict[int, list[Efficiency]]] = defaultdict(lambda: defaultdict(list))
    for (gid, wid, prec, count), value in medians.items():
        e = eff(gid, value, count, prec)
        if e is not None:
            per_gpu[(wid, prec)][gid].append(e)
    for row in candidates:
        gid, wid, prec, count = (
            row["gpu_id"],
            row["workload_id"],
            row["precision"],
            row["gpu_count"],
        )
        if superlinear(row["value"], count, medians.get((gid, wid, prec, 1))):
            row["status"], row["reason"] = "outlier", SUPERLINEAR_SCALING
            continue
        mine = eff(gid, row["value"], count, prec)
        peers = [e for other, es in per_gpu[(wid, prec)].items() if other != gid for e in es]
        best = best_efficiency(peers)
        if mine is None or best is None:
            continue
        if implausible_vs_peers(mine, best, workloads[wid].memory_bound):
            row["status"], row["reason"] = "outlier", IMPLAUSIBLE_VS_PEERS
