"""The peers step of the gate: a result is judged against what other GPUs measured.

Runs after physics and before statistics. The checks, all from service.domain.plausibility:

- implausible_vs_peers: per-GPU efficiency far beyond the best other GPU's on the same
  workload and precision (even when the result starts a group of one);
- superlinear_scaling: N GPUs claiming clearly more than N times the same GPU's 1-GPU median;
- no_faster_than_one_gpu: N data-parallel GPUs giving at most the same GPU's 1-GPU median (a
  failed run; not for a workload llama.cpp splits by layers, nor a memory-bound one: a batch-1
  decode over N GPUs, split by layers or tensor-parallel without P2P, may be no faster);
- faster_than_multi_gpu: one GPU giving at least the same GPU's stored N-GPU median on a
  data-parallel workload (the other side of no_faster_than_one_gpu, judged against stored
  medians only, so what is posted never flags a cited cell);
- slower_than_fp32: a reduced-precision run below half the same GPU's FP32 median on the same
  workload and GPU count (a failed run: Lambda's RTX A4000 WaveGlow fp16 column); where that
  count has no FP32 median, per GPU below a quarter of the FP32 per-GPU median at the largest
  smaller count (the same column's 16-GPU cell, whose 16-GPU FP32 reference is refused).

References are the stored accepted medians (read by the gate with the group aggregates, in the
same statement: known.py) plus the batch's own rows that passed physics (median per group), so
a seed batch judges itself consistently. Rows flagged here are stored as `outlier` with a sticky
reason (see groups.STICKY_REASONS): the statistics step never turns them back into `accepted`.

Cost: O(rows + groups). Each GPU's peak per precision is looked up once per batch, and per
(workload, precision) the two best GPUs on each efficiency measure are kept, so "the best of
the *other* GPUs" is a lookup instead of a scan of every peer for every row. The componentwise
maximum over the other GPUs is the same number either way.
"""

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from statistics import median

from service.domain.plausibility import (
    FASTER_THAN_MULTI_GPU,
    IMPLAUSIBLE_VS_PEERS,
    NO_FASTER_THAN_ONE_GPU,
    SLOWER_THAN_FP32,
    SUPERLINEAR_SCALING,
    Efficiency,
    PeakRates,
    efficiency_at,
    faster_than_multi_gpu,
    gpus_in_parallel,
    implausible_vs_peers,
    no_faster_than_one_gpu,
    peak_tflops,
    slower_than_fp32,
    slower_than_fp32_on_fewer_gpus,
    splits_by_layers,
    superlinear,
)
from service.ingest.rows import GroupKey, NewRow

PairKey = tuple[int, str]  # workload_id, precision
GroupKey3 = tuple[int, int, str]  # gpu_id, workload_id, precision


@dataclass(frozen=True)
class GpuSpec:
    """What the peers step needs of a GPU: its peak rates and memory bandwidth."""

    rates: PeakRates
    bandwidth_gbs: float | None


class _Efficiencies:
    """Efficiency of a throughput on a GPU at a precision; the GPU's ceilings (peak at that
    precision, bandwidth) are looked up once. None where nothing can be compared: no bandwidth,
    no rate for the precision, or a zero ceiling."""

    def __init__(self, specs: Mapping[int, GpuSpec]) -> None:
        self._specs = specs
        self._ceilings: dict[tuple[int, str], tuple[float, float] | None] = {}

    def _ceiling(self, gpu_id: int, precision: str) -> tuple[float, float] | None:
        spec = self._specs.get(gpu_id)
        ceiling = None
        if spec is not None and spec.bandwidth_gbs:
            # KeyError, ValueError: a precision this GPU has no rate for
            with suppress(KeyError, ValueError):
                ceiling = (peak_tflops(spec.rates, precision), spec.bandwidth_gbs)
        self._ceilings[(gpu_id, precision)] = ceiling
        return ceiling

    def __call__(self, gpu_id: int, value: float, count: int, precision: str) -> Efficiency | None:
        key = (gpu_id, precision)
        ceiling = self._ceilings[key] if key in self._ceilings else self._ceiling(*key)
        if ceiling is None:
            return None
        try:
            return efficiency_at(value, count, *ceiling)
        except ZeroDivisionError:
            return None


class _Leaders:
    """Per (workload, precision): the two best GPUs on each measure, for the best of the
    others (componentwise maximum over every other GPU's efficiencies)."""

    def __init__(self, compute: Mapping[int, float], bandwidth: Mapping[int, float]) -> None:
        self._compute = sorted(((v, g) for g, v in compute.items()), reverse=True)[:2]
        self._bandwidth = sorted(((v, g) for g, v in bandwidth.items()), reverse=True)[:2]

    def best_other_than(self, gpu_id: int) -> Efficiency | None:
        compute = next((v for v, g in self._compute if g != gpu_id), None)
        bandwidth = next((v for v, g in self._bandwidth if g != gpu_id), None)
        if compute is None or bandwidth is None:
            return None
        return Efficiency(compute, bandwidth)


def _medians(stored: Mapping[GroupKey, float], rows: Sequence[NewRow]) -> dict[GroupKey, float]:
    """Accepted median per group: stored, else the batch's."""
    batch: dict[GroupKey, list[float]] = defaultdict(list)
    for r in rows:
        batch[r.group].append(r.value)
    out = dict(stored)
    for key, values in batch.items():
        out.setdefault(key, median(values))
    return out


def _leaders(
    medians: Mapping[GroupKey, float], eff: _Efficiencies, in_turn: Collection[int]
) -> dict[PairKey, _Leaders]:
    """Each GPU's best efficiency on each measure (over its groups: counts), per pair; a
    stored group of a workload whose GPUs decode in turn (`in_turn`) counts as one GPU."""
    compute: dict[PairKey, dict[int, float]] = defaultdict(dict)
    bandwidth: dict[PairKey, dict[int, float]] = defaultdict(dict)
    for (gid, wid, prec, count), value in medians.items():
        e = eff(gid, value, gpus_in_parallel(count, wid in in_turn), prec)
        if e is None:
            continue
        best_c, best_b = compute[(wid, prec)], bandwidth[(wid, prec)]
        if gid not in best_c or e.compute > best_c[gid]:
            best_c[gid] = e.compute
        if gid not in best_b or e.bandwidth > best_b[gid]:
            best_b[gid] = e.bandwidth
    return {pair: _Leaders(gpus, bandwidth[pair]) for pair, gpus in compute.items()}


def _fewest_gpus_together(stored: Mapping[GroupKey, float]) -> dict[GroupKey3, float]:
    """(gpu, workload, precision) -> the lowest stored median of more than one of that GPU."""
    out: dict[GroupKey3, float] = {}
    for (gid, wid, prec, count), value in stored.items():
        key = (gid, wid, prec)
        if count > 1 and (key not in out or value < out[key]):
            out[key] = value
    return out


def _fp32_counts(medians: Mapping[GroupKey, float]) -> dict[tuple[int, int], list[int]]:
    """(gpu, workload) -> GPU counts with an FP32 median, ascending."""
    out: dict[tuple[int, int], list[int]] = defaultdict(list)
    for gid, wid, prec, count in medians:
        if prec == "fp32":
            out[(gid, wid)].append(count)
    for counts in out.values():
        counts.sort()
    return out


def _slower_than_fp32(
    value: float,
    gid: int,
    wid: int,
    prec: str,
    count: int,
    medians: Mapping[GroupKey, float],
    fp32_counts: Mapping[tuple[int, int], list[int]],
) -> bool:
    """Against the FP32 median at the same count, else at the largest smaller count."""
    if prec == "fp32":
        return False
    same = medians.get((gid, wid, "fp32", count))
    if same is not None:
        return slower_than_fp32(value, prec, same)
    fewer = [c for c in fp32_counts.get((gid, wid), ()) if c < count]
    if not fewer:
        return False
    k = fewer[-1]
    return slower_than_fp32_on_fewer_gpus(value, prec, count, k, medians[(gid, wid, "fp32", k)])


def workload_traits(
    workloads: Iterable[tuple[int | None, bool, str | None, str | None]],
) -> tuple[dict[int, bool], set[int]]:
    """(id, memory_bound, quant, phase) of workloads as check_peers takes them: memory-bound per
    workload id, and the ids whose multi-GPU runs split by layers (splits_by_layers)."""
    memory_bound: dict[int, bool] = {}
    layer_split: set[int] = set()
    for wid, bound, quant, phase in workloads:
        if wid is None:
            continue
        memory_bound[wid] = bound
        if splits_by_layers(quant, phase):
            layer_split.add(wid)
    return memory_bound, layer_split


def check_peers(
    rows: Iterable[NewRow],
    stored_medians: Mapping[GroupKey, float],
    specs: Mapping[int, GpuSpec],
    memory_bound: Mapping[int, bool],
    layer_split: Collection[int] = frozenset(),
) -> None:
    """Mark rows (still `accepted` after physics) that their peers make implausible.

    `stored_medians`: accepted median of every stored group (n > 0) of the rows' workloads;
    `specs`: every GPU named there or in `rows`; `memory_bound`: per workload id;
    `layer_split`: the workload ids whose multi-GPU runs split by layers."""
    candidates = [r for r in rows if r.status == "accepted"]
    if not candidates:
        return
    medians = _medians(stored_medians, candidates)
    eff = _Efficiencies(specs)
    # a layer split's decode runs its GPUs in turn; its prefill pipelines prompt batches
    in_turn = {wid for wid in layer_split if memory_bound.get(wid, False)}
    leaders = _leaders(medians, eff, in_turn)
    fp32_counts = _fp32_counts(medians)
    together = _fewest_gpus_together(stored_medians)
    for row in candidates:
        gid, wid, prec, count = row.gpu_id, row.workload_id, row.precision, row.gpu_count
        single = medians.get((gid, wid, prec, 1))
        parallel = gpus_in_parallel(count, wid in in_turn)
        if superlinear(row.value, count, single, parallel):
            row.status, row.reason = "outlier", SUPERLINEAR_SCALING
            continue
        data_parallel = not (wid in layer_split or memory_bound[wid])
        if data_parallel and no_faster_than_one_gpu(row.value, count, single):
            row.status, row.reason = "outlier", NO_FASTER_THAN_ONE_GPU
            continue
        if data_parallel and faster_than_multi_gpu(
            row.value,
            count,
            together.get((gid, wid, prec)),
            stored_medians.get((gid, wid, prec, 1)),  # stored only: a batch never judges itself
        ):
            row.status, row.reason = "outlier", FASTER_THAN_MULTI_GPU
            continue
        if _slower_than_fp32(row.value, gid, wid, prec, count, medians, fp32_counts):
            row.status, row.reason = "outlier", SLOWER_THAN_FP32
            continue
        mine = eff(gid, row.value, parallel, prec)  # per GPU working on a token at once
        pair = leaders.get((wid, prec))
        best = pair.best_other_than(gid) if pair is not None else None
        if mine is None or best is None:
            continue
        if implausible_vs_peers(mine, best, memory_bound[wid]):
            row.status, row.reason = "outlier", IMPLAUSIBLE_VS_PEERS
