"""The peers step against its definition: for every row, the best efficiency of the *other*
GPUs (componentwise maximum over all their groups), recomputed by brute force per row."""

from collections import defaultdict
from datetime import UTC, datetime
from statistics import median

from hypothesis import given, settings
from hypothesis import strategies as st

from service.domain.plausibility import (
    FASTER_THAN_MULTI_GPU,
    IMPLAUSIBLE_VS_PEERS,
    NO_FASTER_THAN_ONE_GPU,
    SLOWER_THAN_FP32,
    SUPERLINEAR_SCALING,
    PeakRates,
    best_efficiency,
    efficiency,
    faster_than_multi_gpu,
    implausible_vs_peers,
    no_faster_than_one_gpu,
    slower_than_fp32,
    slower_than_fp32_on_fewer_gpus,
    superlinear,
)
from service.ingest.peers import GpuSpec, check_peers
from service.ingest.rows import NewRow

NOW = datetime(2026, 12, 1, tzinfo=UTC)
PRECISIONS = ("fp32", "fp16", "bf16", "fp8", "int8", "q4_k_m")
GPUS = range(1, 7)
WORKLOADS = range(1, 4)


def reference(rows, stored, specs, memory_bound, layer_split=frozenset()):
    """The peers step as first written: a scan of every peer's efficiencies for each row."""
    candidates = [r for r in rows if r.status == "accepted"]
    medians = dict(stored)
    batch = defaultdict(list)
    for r in candidates:
        batch[r.group].append(r.value)
    for key, values in batch.items():
        medians.setdefault(key, median(values))

    def eff(gid, value, count, prec):
        spec = specs.get(gid)
        if spec is None or not spec.bandwidth_gbs:
            return None
        try:
            return efficiency(value, count, spec.rates, prec, spec.bandwidth_gbs)
        except (KeyError, ValueError, ZeroDivisionError):
            return None

    def in_turn(wid):  # a layer split's decode: its GPUs work one at a time
        return wid in layer_split and memory_bound[wid]

    per_gpu = defaultdict(lambda: defaultdict(list))
    for (gid, wid, prec, count), value in medians.items():
        e = eff(gid, value, 1 if in_turn(wid) else count, prec)
        if e is not None:
            per_gpu[(wid, prec)][gid].append(e)
    verdicts = {}
    for i, row in enumerate(rows):
        if row.status != "accepted":
            continue
        gid, wid, prec, count = row.group
        parallel = 1 if in_turn(wid) else count  # no row-split notes in these rows
        if superlinear(row.value, count, medians.get((gid, wid, prec, 1)), parallel):
            verdicts[i] = SUPERLINEAR_SCALING
            continue
        one = medians.get((gid, wid, prec, 1))
        data_parallel = not (wid in layer_split or memory_bound[wid])
        if data_parallel and no_faster_than_one_gpu(row.value, count, one):
            verdicts[i] = NO_FASTER_THAN_ONE_GPU
            continue
        together = [
            v for (g, w, p, c), v in stored.items() if (g, w, p) == (gid, wid, prec) and c > 1
        ]
        stored_one = stored.get((gid, wid, prec, 1))
        fewest = min(together, default=None)
        if data_parallel and faster_than_multi_gpu(row.value, count, fewest, stored_one):
            verdicts[i] = FASTER_THAN_MULTI_GPU
            continue
        fp32 = medians.get((gid, wid, "fp32", count))
        fewer = [c for (g, w, p, c) in medians if (g, w, p) == (gid, wid, "fp32") and c < count]
        if fp32 is not None:
            slower = slower_than_fp32(row.value, prec, fp32)
        elif fewer:
            k = max(fewer)
            slower = slower_than_fp32_on_fewer_gpus(
                row.value, prec, count, k, medians[(gid, wid, "fp32", k)]
            )
        else:
            slower = False
        if slower:
            verdicts[i] = SLOWER_THAN_FP32
            continue
        mine = eff(gid, row.value, parallel, prec)
        peers = [e for other, es in per_gpu[(wid, prec)].items() if other != gid for e in es]
        best = best_efficiency(peers)
        flagged = mine and best and implausible_vs_peers(mine, best, memory_bound[wid])
        verdicts[i] = IMPLAUSIBLE_VS_PEERS if flagged else None
    return verdicts


optional_rate = st.one_of(st.none(), st.floats(1.0, 2000.0))
specs_strategy = st.fixed_dictionaries(
    {
        g: st.builds(
            GpuSpec,
            st.builds(PeakRates, st.floats(1.0, 100.0), *[optional_rate] * 6),
            st.one_of(st.none(), st.just(0.0), st.floats(100.0, 8000.0)),
        )
        for g in GPUS
    }
)
group = st.tuples(
    st.sampled_from(GPUS),
    st.sampled_from(WORKLOADS),
    st.sampled_from(PRECISIONS),
    st.sampled_from([1, 2, 4, 8]),
)
value = st.floats(1e-3, 1e6)


def new_row(key, v, status):
    gid, wid, prec, count = key
    return NewRow(
        gpu_id=gid, workload_id=wid, value=v, precision=prec, gpu_count=count, batch_size=None,
        framework="pytorch", framework_version=None, driver=None, cuda=None, notes=None,
        status=status, reason=None, submitter_id=1, created_at=NOW, updated_at=NOW,
    )  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    specs=specs_strategy,
    stored=st.dictionaries(group, value, max_size=25),
    batch=st.lists(st.tuples(group, value, st.sampled_from(["accepted", "rejected"])), max_size=30),
    memory_bound=st.fixed_dictionaries({w: st.booleans() for w in WORKLOADS}),
    layer_split=st.frozensets(st.sampled_from(WORKLOADS)),
)
def test_check_peers_matches_the_brute_force_definition(
    specs, stored, batch, memory_bound, layer_split
):
    rows = [new_row(k, v, s) for k, v, s in batch]
    expected = reference(rows, stored, specs, memory_bound, layer_split)
    check_peers(rows, stored, specs, memory_bound, layer_split)
    for i, row in enumerate(rows):
        if i not in expected:
            assert (row.status, row.reason) == ("rejected", None)
        elif expected[i] is None:
            assert (row.status, row.reason) == ("accepted", None)
        else:
            assert (row.status, row.reason) == ("outlier", expected[i])


def test_a_group_of_one_far_beyond_every_other_gpu_is_flagged_and_a_peer_is_not():
    rates = PeakRates(fp32=10.0, fp16_tensor=100.0)
    specs = {1: GpuSpec(rates, 1000.0), 2: GpuSpec(rates, 1000.0), 3: GpuSpec(rates, 1000.0)}
    stored = {(1, 1, "fp16", 1): 100.0, (2, 1, "fp16", 1): 120.0}
    inflated, ordinary = (
        new_row((3, 1, "fp16", 1), 500.0, "accepted"),
        new_row((2, 1, "fp16", 2), 2 * 110.0, "accepted"),  # GPU 3's own 2-GPU run would be
    )  # no faster than its inflated 1-GPU value (no_faster_than_one_gpu)
    check_peers([inflated, ordinary], stored, specs, {1: False})
    assert (inflated.status, inflated.reason) == ("outlier", IMPLAUSIBLE_VS_PEERS)
    assert (ordinary.status, ordinary.reason) == ("accepted", None)


def test_a_reduced_precision_run_below_half_its_fp32_run_is_a_failed_run():
    """Lambda's RTX A4000 WaveGlow: fp32 24,262, fp16 3,029 samples/s on one GPU."""
    rates = PeakRates(fp32=19.2, fp16_tensor=76.7)
    specs = {1: GpuSpec(rates, 448.0)}
    fp32 = new_row((1, 1, "fp32", 1), 24262.0, "accepted")
    failed = new_row((1, 1, "fp16", 1), 3029.0, "accepted")
    half = new_row((1, 2, "fp16", 1), 0.6 * 24262.0, "accepted")
    stored = {(1, 2, "fp32", 1): 24262.0}
    check_peers([fp32, failed, half], stored, specs, {1: False, 2: False})
    assert (failed.status, failed.reason) == ("outlier", SLOWER_THAN_FP32)
    assert (fp32.status, half.status) == ("accepted",) * 2


def test_without_fp32_at_its_count_a_run_is_judged_per_gpu_against_fewer_gpus():
    """Lambda's 16-GPU RTX A4000 WaveGlow fp16 cell (47,115 samples/s) has no accepted 16-GPU
    FP32 median (that cell is superlinear); per GPU it is 0.14 of the 8-GPU FP32 share."""
    rates = PeakRates(fp32=19.2, fp16_tensor=76.7)
    specs = {1: GpuSpec(rates, 448.0)}
    stored = {(1, 1, "fp32", 1): 24262.0, (1, 1, "fp32", 8): 165046.0}
    failed = new_row((1, 1, "fp16", 16), 47115.0, "accepted")
    # A weak-library run: per GPU 0.5 of 8-GPU FP32 scaling, at 0.55 of FP32 speed: kept.
    weak = new_row((1, 1, "fp16", 32), 32 * 0.5 * 0.55 * 165046.0 / 8, "accepted")
    nothing_fewer = new_row((1, 2, "fp16", 4), 10.0, "accepted")  # no FP32 run at all
    check_peers([failed, weak, nothing_fewer], stored, specs, {1: False, 2: False})
    assert (failed.status, failed.reason) == ("outlier", SLOWER_THAN_FP32)
    assert (weak.status, nothing_fewer.status) == ("accepted", "accepted")


def test_fewer_gpus_rule_only_compares_reduced_precision_with_a_smaller_count():
    assert slower_than_fp32_on_fewer_gpus(1.0, "fp16", 16, 8, 100.0)
    assert not slower_than_fp32_on_fewer_gpus(1.0, "fp32", 16, 8, 100.0)
    assert not slower_than_fp32_on_fewer_gpus(1.0, "fp16", 8, 8, 100.0)
    assert not slower_than_fp32_on_fewer_gpus(1.0, "fp16", 4, 8, 100.0)
    assert not slower_than_fp32_on_fewer_gpus(1.0, "fp16", 16, 8, 0.0)
    # the floor: a quarter of the FP32 per-GPU share
    assert not slower_than_fp32_on_fewer_gpus(16 * 0.26 * 100.0 / 8, "fp16", 16, 8, 100.0)
    assert slower_than_fp32_on_fewer_gpus(16 * 0.24 * 100.0 / 8, "fp16", 16, 8, 100.0)


def test_a_data_parallel_run_no_faster_than_one_gpu_is_a_failed_run():
    """Lambda's RTX 3090 BERT-large fp32: 24 sentences/s on one GPU, 16 on 4 GPUs; a llama.cpp
    layer split (workload 2) is expected to be no faster than one GPU and stays accepted."""
    stored = {(1, 1, "fp32", 1): 24.0, (1, 2, "q4_k_m", 1): 130.6}
    rows = [
        new_row((1, 1, "fp32", 4), 16.0, "accepted"),
        new_row((1, 1, "fp32", 8), 150.0, "accepted"),
        new_row((1, 2, "q4_k_m", 4), 120.3, "accepted"),
    ]
    specs = {1: GpuSpec(PeakRates(35.6, tf32_tensor=35.6, int8=284.0), 936.0)}
    check_peers(rows, stored, specs, {1: False, 2: True}, layer_split={2})
    assert [(r.status, r.reason) for r in rows] == [
        ("outlier", NO_FASTER_THAN_ONE_GPU),
        ("accepted", None),
        ("accepted", None),
    ]


def test_a_layer_split_is_superlinear_against_one_gpu_whatever_its_notes_say():
    """llama.cpp's layer split runs its GPUs one after another: 2 x RTX 4090 at 240 tokens/s
    against 130.6 on one is superlinear, also with a note claiming a row split (free text any
    poster can write); 124.65 (the corpus's own 2-GPU run) passes."""
    stored = {(1, 2, "q4_k_m", 1): 130.6}
    specs = {1: GpuSpec(PeakRates(82.6, int8=660.6), 1008.0)}
    fake, noted, real = (
        new_row((1, 2, "q4_k_m", 2), 240.0, "accepted"),
        new_row((1, 2, "q4_k_m", 2), 240.0, "accepted"),
        new_row((1, 2, "q4_k_m", 2), 124.65, "accepted"),
    )
    noted.notes = "llama-bench split_mode=row"
    for row in (fake, noted, real):
        check_peers([row], stored, specs, {2: True}, layer_split={2})
    assert (fake.status, fake.reason) == ("outlier", SUPERLINEAR_SCALING)
    assert (noted.status, noted.reason) == ("outlier", SUPERLINEAR_SCALING)
    assert real.status == "accepted"


def test_a_memory_bound_multi_gpu_run_no_faster_than_one_gpu_stays():
    """A batch-1 decode over 2 GPUs (llm-inference: no quant or phase, memory-bound) may be no
    faster than one GPU; only data-parallel (compute-bound) workloads flag that."""
    stored = {(1, 3, "fp16", 1): 60.0}
    specs = {1: GpuSpec(PeakRates(82.6, fp16_tensor=165.2), 1008.0)}
    row = new_row((1, 3, "fp16", 2), 55.0, "accepted")
    check_peers([row], stored, specs, {3: True})
    assert (row.status, row.reason) == ("accepted", None)


def test_one_gpu_at_least_as_fast_as_its_stored_multi_gpu_cells_is_refused():
    """Five posts of 1,500 img/s for an RTX 3070 on ResNet-50 fp16 against Lambda's cells of
    the card (419 on one GPU, 808 on two, 1,620 on four): one GPU claiming more than two of it
    measured together. 450 (a faster run than Lambda's) passes; a layer-split decode (workload
    2), where one GPU may beat two, is left alone."""
    stored = {
        (1, 1, "fp16", 1): 419.0,
        (1, 1, "fp16", 2): 808.0,
        (1, 1, "fp16", 4): 1620.0,
        (1, 2, "q4_k_m", 2): 120.0,
    }
    specs = {1: GpuSpec(PeakRates(20.3, fp16_tensor=81.3, int8=162.6), 448.0)}
    rows = [new_row((1, 1, "fp16", 1), 1500.0, "accepted") for _ in range(5)]
    rows += [
        new_row((1, 1, "fp16", 1), 808.0, "accepted"),
        new_row((1, 1, "fp16", 1), 450.0, "accepted"),
        new_row((1, 2, "q4_k_m", 1), 130.0, "accepted"),
    ]
    check_peers(rows, stored, specs, {1: False, 2: True}, layer_split={2})
    assert [(r.status, r.reason) for r in rows] == [("outlier", FASTER_THAN_MULTI_GPU)] * 6 + [
        ("accepted", None),
        ("accepted", None),
    ]


def test_a_batch_own_multi_gpu_run_never_refuses_its_one_gpu_run():
    """A batch with a failed 4-GPU run and its GPU's one-GPU run (a lab posting a sweep, or the
    seed's corpus): the 4-GPU run is the outlier (no_faster_than_one_gpu), the one-GPU run stays."""
    specs = {1: GpuSpec(PeakRates(35.6, tf32_tensor=35.6), 936.0)}
    single, failed = (
        new_row((1, 1, "fp32", 1), 24.0, "accepted"),
        new_row((1, 1, "fp32", 4), 16.0, "accepted"),
    )
    check_peers([single, failed], {}, specs, {1: False})
    assert (single.status, failed.status, failed.reason) == (
        "accepted",
        "outlier",
        NO_FASTER_THAN_ONE_GPU,
    )


def test_faster_than_multi_gpu_needs_one_gpu_and_a_stored_multi_gpu_median():
    assert faster_than_multi_gpu(808.0, 1, 808.0)
    assert not faster_than_multi_gpu(807.9, 1, 808.0)
    assert not faster_than_multi_gpu(5000.0, 2, 808.0)  # a 2-GPU row: other rules judge it
    assert not faster_than_multi_gpu(5000.0, 1, None)
    assert not faster_than_multi_gpu(5000.0, 1, 0.0)


def test_a_one_gpu_run_a_little_faster_than_a_cell_that_barely_scaled_passes():
    """A Quadro RTX 8000's Transformer-XL Large fp16 cells: 7,775 on one GPU, 8,070 on two (1.04
    x). A one-GPU run of 8,100 is a faster run, not one GPU beating two: it is not more than
    1.2 x the one-GPU median. Two posted 2-GPU runs just above the one-GPU median (426 against
    419) do not refuse a later one-GPU run of 440 either; 1,500 is still refused."""
    specs = {1: GpuSpec(PeakRates(16.3, fp16_tensor=130.5), 672.0)}
    stored = {(1, 1, "fp16", 1): 7775.0, (1, 1, "fp16", 2): 8070.0}
    faster = new_row((1, 1, "fp16", 1), 8100.0, "accepted")
    check_peers([faster], stored, specs, {1: False})
    assert (faster.status, faster.reason) == ("accepted", None)
    stored = {(1, 1, "fp16", 1): 419.0, (1, 1, "fp16", 2): 426.0}
    rows = [new_row((1, 1, "fp16", 1), v, "accepted") for v in (440.0, 1500.0)]
    check_peers(rows, stored, specs, {1: False})
    assert [(r.status, r.reason) for r in rows] == [
        ("accepted", None),
        ("outlier", FASTER_THAN_MULTI_GPU),
    ]
    # without a stored one-GPU median, the N-GPU median alone judges
    assert faster_than_multi_gpu(808.0, 1, 808.0, None)
    assert not faster_than_multi_gpu(808.0, 1, 808.0, 700.0)  # within 1.2 x of one GPU
