"""The wired estimator: decode scaling, monotonicity at the read-model level, odd data."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.domain import throughput_model as tm
from service.domain.scaling import scaling
from tests.api.test_recommend import post_results


def _four(client, mode):
    params = {
        "budget": 4 * 1200,
        "workload": "llm-inference",
        "max_gpus": 4,
        "limit": 50,
        "min_memory_gb": 0,
        "mode": mode,
        "platform_usd": 0,  # the box priced by the caller: the budget buys the four GPUs
    }
    recs = client.get("/recommend", params=params).json()["recommendations"]
    return next(r for r in recs if r["gpu"] == "nvidia-rtx-5070-ti" and r["count"] == 4)


def test_decode_on_four_gpus_is_tensor_parallel_not_data_parallel(client):
    four = _four(client, "parallel")
    assert four["scaling_basis"].startswith("tensor-parallel")
    assert four["scaling_factor"] < 3.0  # the pytorch/pcie training profile gives 3.6
    assert four["scaling_factor"] > 1.0  # bandwidth adds
    assert _four(client, "independent")["scaling_factor"] == 4


def test_decode_splits_only_over_counts_its_models_heads_divide(client):
    """Llama 2 7B's 32 attention heads go tensor-parallel on 1, 2, 4 or 8 GPUs: /recommend
    offered 7, 6 and 5 x RTX 5090 for llm-inference; /compare names the counts it may take.
    Independent copies take any count."""
    params = {"budget": 50000, "workload": "llm-inference", "max_gpus": 8, "limit": 50}
    parallel = client.get("/recommend", params=params).json()["recommendations"]
    assert parallel and {r["count"] for r in parallel} <= {1, 2, 4, 8}
    independent = client.get("/recommend", params=params | {"mode": "independent"}).json()
    assert {r["count"] for r in independent["recommendations"]} - {1, 2, 4, 8}
    three = client.get(
        "/compare", params={"gpu": "nvidia-rtx-5090", "count": 3, "workload": "llm-inference"}
    )
    assert three.status_code == 422
    detail = three.json()["detail"][0]
    assert (detail["type"], detail["allowed"]) == ("count_not_splittable", [1, 2, 4, 8])
    four = {"gpu": "nvidia-rtx-5090", "count": 4, "workload": "llm-inference"}
    assert client.get("/compare", params=four).status_code == 200


def test_a_named_models_memory_floor_follows_the_asked_precision(client):
    """llm-inference states 16 GB for Llama 2 7B in fp16 (13.5 GB of weights): in fp32 the
    weights alone are 27 GB, and 16 GB cards had been recommended; in fp8 they are 6.7 GB."""
    from service.catalog import llm

    params_b = llm.models()["llama-2-7b"].params_b
    for precision, bytes_per_param in [("fp16", 2), ("fp32", 4), ("fp8", 1)]:
        floor = 16 + params_b * (bytes_per_param - 2)
        ask = {"workload": "llm-inference", "precision": precision}
        ranked = client.get("/rankings", params=ask).json()["items"]
        assert ranked and min(r["memory_gb"] for r in ranked) >= floor, precision
        answer = client.get("/recommend", params=ask | {"budget": 10**5, "limit": 50}).json()
        assert answer["min_memory_gb"] == pytest.approx(floor), precision
        assert all(r["memory_gb"] >= floor for r in answer["recommendations"]), precision
    fp8 = client.get("/rankings", params={"workload": "llm-inference", "precision": "fp8"})
    assert min(r["memory_gb"] for r in fp8.json()["items"]) < 16  # 12 GB cards hold it


def test_decode_at_a_wider_precision_is_no_faster_than_its_bytes_allow(db, client):
    """Llama 2 7B decode reads twice the weight bytes at fp32 as at fp16: no GPU's fp32
    estimate may exceed its fp16 one times the bytes ratio (on the shipped corpus a B200 had
    been put at 175.9 tokens/s at fp32 and 147.2 at fp16: each precision borrows from other
    workloads); fp8 reads fewer and may be faster."""
    from service.catalog import llm
    from service.catalog.seed import seed

    seed(db)  # the measured corpus: what the borrowed estimates are fitted to

    def floor(precision: str) -> float:
        found = llm.decode_bytes_floor_of("llama-2-7b", precision, "decode")
        assert found
        return found

    ratio = floor("fp16") / floor("fp32")
    assert 0.45 < ratio < 0.55

    def ranked(precision: str) -> dict[str, float]:
        items = client.get(
            "/rankings", params={"workload": "llm-inference", "precision": precision}
        ).json()["items"]
        return {i["gpu"]: i["throughput"] for i in items}

    fp16, fp32, fp8 = ranked("fp16"), ranked("fp32"), ranked("fp8")
    assert fp32 and all(v <= fp16[g] * ratio * (1 + 1e-9) for g, v in fp32.items() if g in fp16)
    assert any(fp8[g] > fp16[g] for g in fp8 if g in fp16)


def test_training_still_uses_the_data_parallel_profile():
    profiles = {("pytorch", "pcie", 4): 0.9}
    assert scaling(profiles, "parallel", "pytorch", "pcie", 4).speedup == pytest.approx(3.6)
    tp = scaling(profiles, "parallel", "pytorch", "pcie", 4, decode=True)
    nv = scaling(profiles, "parallel", "pytorch", "nvlink", 4, decode=True)
    assert 1.0 < tp.speedup < nv.speedup < 4.0


def test_read_model_monotone_within_architecture_and_stack(client, keys):
    """An unmeasured GPU no better in any rate than another of the same architecture and stack
    (memory size and board power counted as rates, as the model uses them) never gets a higher
    estimate (over every such pair in the served catalog)."""
    post_results(client, keys, "nvidia-rtx-4090", [1500] * 3)
    post_results(client, keys, "nvidia-rtx-3090", [810] * 3)
    post_results(client, keys, "nvidia-a100-80gb", [2500] * 3)
    post_results(client, keys, "nvidia-h100-sxm", [3900] * 3)
    post_results(client, keys, "nvidia-rtx-a6000", [900] * 3)
    items = client.get(
        "/rankings", params={"workload": "resnet50-train", "min_memory_gb": 0}
    ).json()["items"]
    gpus = {g["slug"]: g for g in client.get("/gpus", params={"limit": 500}).json()["items"]}
    est = {r["gpu"]: r for r in items if r["basis"] == "estimated"}
    rates = ("fp32_tflops", "fp16_tensor_tflops", "memory_bandwidth_gbs", "memory_gb", "tdp_w")
    checked = 0
    for a in est:
        for b in est:
            ga, gb = gpus[a], gpus[b]
            if a == b or (ga["architecture"], ga.get("stack")) != (
                gb["architecture"],
                gb.get("stack"),
            ):
                continue
            if all((ga[k] or 0) <= (gb[k] or 0) for k in rates):
                checked += 1
                assert est[a]["throughput"] <= est[b]["throughput"] * (1 + 1e-9), (a, b)
    assert checked > 0


odd = st.floats(min_value=1e-300, max_value=1e300, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.lists(
        st.one_of(odd, st.just(0.0), st.just(math.inf), st.just(math.nan)), min_size=1, max_size=8
    ),
    rate=st.one_of(odd, st.just(0.0)),
)
def test_model_never_raises_on_odd_data(values, rate):
    gpus = [
        tm.GpuSpec(
            f"g{i}", "nvidia", "a", "cuda", {"fp16": rate * (i + 1)}, 1.0 + i, 100.0 * (i + 1)
        )
        for i in range(len(values) + 1)
    ]
    wls = [tm.WorkloadSpec("w", "fp16", 1e9, False), tm.WorkloadSpec("v", "fp16", 2e9, False)]
    obs = [
        tm.Observation(f"g{i}", "w", v, 3, v * 0.01 if math.isfinite(v) else 0.0)
        for i, v in enumerate(values)
    ]
    model = tm.fit(gpus, wls, obs)
    for p in model.predict_all().values():
        assert all(np.isfinite([p.value, p.low, p.high]))
        assert 0 < p.low < p.high and p.band == 0.8


def test_a_gpu_measured_only_in_an_eight_gpu_system_is_estimated_near_its_per_gpu_share(
    client, keys
):
    """MLPerf-style data: 8-GPU results only. The GPU's single-GPU figure is an estimate that
    learned from the per-GPU share, not 'measured'."""
    for gpu, value in (
        ("nvidia-rtx-4090", 1500),
        ("nvidia-rtx-3090", 810),
        ("nvidia-a100-80gb", 2500),
        ("nvidia-rtx-a6000", 900),
        ("nvidia-a10", 650),
    ):
        post_results(client, keys, gpu, [value] * 3)
    post_results(client, keys, "nvidia-h100-sxm", [8 * 3000] * 3, count=8)
    items = client.get(
        "/rankings", params={"workload": "resnet50-train", "min_memory_gb": 0}
    ).json()["items"]
    h100 = next(r for r in items if r["gpu"] == "nvidia-h100-sxm")
    assert h100["basis"] == "estimated"
    assert h100["throughput_low"] <= 3000 * 1.1 and h100["throughput_high"] >= 3000 * 0.9


def test_gguf_f16_prompt_processing_is_costed_at_the_fp16_accumulate_rate():
    """llama.cpp multiplies an F16 model's prompt in fp16 with fp16 accumulation: on a GeForce
    card twice the catalog's FP32-accumulate rate; quantized and decode workloads, and training
    at fp16, keep their precision's rate."""
    from service.models import Gpu, Workload
    from service.read_model.estimates import gpu_spec, workload_spec

    def wl(quant, phase, precision):
        return Workload(slug="w", name="w", unit="tokens/s", precision=precision, quant=quant,
                        phase=phase)  # fmt: skip

    assert workload_spec(wl("f16", "prefill", "fp16"), "fp16").rate_key == tm.FP16_ACCUMULATE
    for quant, phase, precision in [
        ("q4_k_m", "prefill", "q4_k_m"),
        ("f16", "decode", "fp16"),
        (None, None, "fp16"),
    ]:
        assert workload_spec(wl(quant, phase, precision), precision).rate_key == precision
    geforce = Gpu(slug="g", vendor="nvidia", name="g", architecture="ada", market="consumer",
                  memory_gb=24, memory_bandwidth_gbs=1008, fp32_tflops=82.6,
                  fp16_tensor_tflops=165.2, bf16_tensor_tflops=165.2, int8_tops=660.6,
                  source="test")  # fmt: skip
    spec = gpu_spec(geforce, {})
    prefill = workload_spec(wl("f16", "prefill", "fp16"), "fp16")
    assert spec.rates(prefill.rate_key)[0] == pytest.approx(2 * spec.rates("fp16")[0], rel=1e-3)


def test_a_decode_workload_of_a_known_model_file_states_its_bandwidth_ceiling(client):
    """A llama-bench decode workload's estimates stop at datasheet bandwidth / the layer
    weights a token reads (the DGX Spark, 273 GB/s, on Llama 3 70B Q4_K_M: about 6.6 tokens/s);
    prompt processing and workloads without a model file state none."""
    from service.catalog import llm
    from service.domain.llm_fit import decode_bytes_floor
    from service.models import Workload
    from service.read_model.estimates import workload_spec

    def wl(model, quant, phase):
        return Workload(slug="w", name="w", unit="tokens/s", precision="q4_k_m", model=model,
                        quant=quant, phase=phase)  # fmt: skip

    floor = decode_bytes_floor(llm.model("llama-3-70b"), llm.quantization("q4_k_m"))
    assert workload_spec(wl("llama-3-70b", "q4_k_m", "decode"), "q4_k_m").bytes_per_unit == floor
    assert workload_spec(wl("llama-3-70b", "q4_k_m", "prefill"), "q4_k_m").bytes_per_unit is None
    assert workload_spec(wl(None, None, "decode"), "q4_k_m").bytes_per_unit is None
    params = {"workload": "llama-3-70b-q4_k_m-tg512", "min_memory_gb": 0, "condition": "any"}
    items = client.get("/rankings", params=params | {"allow_stale": True}).json()["items"]
    checked = 0
    for item in items:
        if item["basis"] != "estimated":
            continue
        bandwidth = client.get(f"/gpus/{item['gpu']}").json()["memory_bandwidth_gbs"]
        assert item["throughput_high"] <= bandwidth * 1e9 / floor * (1 + 1e-9), item["gpu"]
        checked += 1
    assert checked >= 10


def test_no_fp8_estimate_for_a_gpu_without_fp8_units(client):
    """FP8 matrix math runs only on FP8 tensor cores: at precision=fp8 a GPU whose spec states
    none (an RTX 3090, a V100) is not estimated, while at fp16 it is."""
    specs = {g["slug"]: g for g in client.get("/gpus", params={"limit": 500}).json()["items"]}
    params = {"workload": "resnet50-train", "min_memory_gb": 0, "condition": "any"}
    fp8 = client.get("/rankings", params=params | {"precision": "fp8"}).json()["items"]
    fp16 = client.get("/rankings", params=params | {"precision": "fp16"}).json()["items"]
    assert fp8 and all(specs[r["gpu"]]["fp8_tensor_tflops"] for r in fp8)
    lacking = {r["gpu"] for r in fp16 if not specs[r["gpu"]]["fp8_tensor_tflops"]}
    assert {"nvidia-rtx-3090", "nvidia-v100-sxm2-32gb"} & lacking


def test_int8_and_fp4_are_estimated_only_on_gpus_that_state_those_units(db, client):
    """int8 as fp8: only GPUs whose spec states int8 units. fp4: no catalog column states it,
    so a workload measured at another precision gets no fp4 estimate (a B200's had fallen
    below its own bf16 figure), while one measured at fp4 (MLPerf, in 8 x B200 and 4 x GB200
    systems) keeps its GPUs. GPT-2 training at int8 borrows its bf16 step: no more than the
    int8 over bf16 rate ratio faster (borrowed per FLOP, a B200 had come out at 2.3 x)."""
    from sqlmodel import Session

    from service.catalog.corpus import load_corpus
    from service.catalog.seed_results import seed_results

    with Session(db) as session:
        wanted = ("llm-train", "mlperf-llama2-70b-offline")
        seed_results(session, [r for r in load_corpus() if r.workload in wanted])
        session.commit()
    client.app.state.read_model.changed()
    specs = {g["slug"]: g for g in client.get("/gpus", params={"limit": 500}).json()["items"]}

    def ranked(workload, precision):
        params = {"workload": workload, "precision": precision, "condition": "any"}
        answer = client.get("/rankings", params=params | {"min_memory_gb": 0})
        assert answer.status_code == 200, answer.text
        return {r["gpu"]: r for r in answer.json()["items"] if r["count"] == 1}

    int8, bf16 = ranked("llm-train", "int8"), ranked("llm-train", "bf16")
    assert int8 and all(specs[g]["int8_tops"] for g in int8)
    for g in int8.keys() & bf16.keys():
        ratio = specs[g]["int8_tops"] / (specs[g]["bf16_tensor_tflops"] or specs[g]["fp32_tflops"])
        assert int8[g]["throughput"] <= max(ratio, 1.0) * bf16[g]["throughput"] * 1.01, g
    assert ranked("llm-train", "fp4") == {}
    assert {"nvidia-b200", "nvidia-gb200"} <= set(ranked("mlperf-llama2-70b-offline", "fp4"))


def test_a_workload_asked_at_its_other_16_bit_precision_runs_the_same_step(client):
    """llm-train is measured at bf16 only: at fp16 it is the same step, so a GPU whose fp16
    and bf16 rates are equal gets the same estimate, and one without bf16 units (V100, T4)
    gets more at fp16, where its tensor cores run it."""
    specs = {g["slug"]: g for g in client.get("/gpus", params={"limit": 500}).json()["items"]}
    params = {"workload": "llm-train", "min_memory_gb": 0, "condition": "any", "allow_stale": True}

    def estimated(precision):
        items = client.get("/rankings", params=params | {"precision": precision}).json()["items"]
        return {r["gpu"]: r["throughput"] for r in items if r["basis"] == "estimated"}

    bf16, fp16 = estimated("bf16"), estimated("fp16")
    same = [
        g
        for g in bf16.keys() & fp16.keys()
        if specs[g]["bf16_tensor_tflops"]
        and specs[g]["bf16_tensor_tflops"] == specs[g]["fp16_tensor_tflops"]
    ]
    assert len(same) >= 10
    for g in same:
        assert fp16[g] == pytest.approx(bf16[g], rel=1e-6), g
    assert fp16["nvidia-v100-sxm2-32gb"] > 2 * bf16["nvidia-v100-sxm2-32gb"]


def test_a_generic_decode_workload_stays_under_its_models_bandwidth_ceiling(db, client):
    """llm-inference is Llama 2 7B decode at batch 1 in no fixed format: its estimates and bands
    stop at bandwidth / the layer weights a token reads at the asked precision. Borrowed with
    nothing measured, an RTX 4090's band reached 129 tokens/s, 1.74 TB/s on a 1.0 TB/s card."""
    from sqlmodel import Session

    from service.catalog.corpus import load_corpus
    from service.catalog.llm import decode_bytes_floor_of
    from service.catalog.seed_results import seed_results

    with Session(db) as session:  # the decode workloads it borrows its split from
        seed_results(session, [r for r in load_corpus() if r.workload.startswith("llama-3-")])
        session.commit()
    client.app.state.read_model.changed()
    stopped = 0
    specs = {g["slug"]: g for g in client.get("/gpus", params={"limit": 500}).json()["items"]}
    for precision, fmt in (("fp16", "fp16"), ("fp8", "fp8")):
        floor = decode_bytes_floor_of("llama-2-7b", fmt, "decode")
        assert floor
        ask = {"workload": "llm-inference", "precision": precision, "condition": "any"}
        rows = client.get("/rankings", params=ask).json()["items"]
        single = [r for r in rows if r["count"] == 1]
        assert single
        for r in single:
            ceiling = specs[r["gpu"]]["memory_bandwidth_gbs"] * 1e9 / floor
            assert r["throughput_high"] <= ceiling * (1 + 1e-9), (precision, r["gpu"])
            stopped += r["throughput_high"] == pytest.approx(ceiling)
    assert stopped  # the ceiling bites: bands of x1.9 either way reach it
