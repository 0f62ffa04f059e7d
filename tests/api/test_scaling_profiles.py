"""Scaling fitted from measured multi-GPU results, end to end: GET /scaling-profiles lists the
fitted row next to the assumed one with basis and n, and /recommend uses measured > fitted >
assumed. A small fixture: three PCIe cards measured on 1 and 4 GPUs."""

import math

import pytest

from tests.api.test_recommend import post_results

# GPU: (1-GPU value, 4-GPU efficiency); resnet50-train fp16, pytorch.
FIXTURE = {
    "nvidia-rtx-4090": (1500.0, 0.93),
    "nvidia-rtx-4080": (1100.0, 0.80),
    "nvidia-rtx-6000-ada": (1450.0, 0.88),
}
POOLED = 0.88  # the median of 0.80, 0.88 and 0.93, by hand (their mean would be 0.87)


def _measure(client, keys):
    for gpu, (one, eff) in FIXTURE.items():
        post_results(client, keys, gpu, [one] * 3)
        post_results(client, keys, gpu, [one * 4 * eff] * 3, count=4)


def _rows(client):
    body = client.get("/scaling-profiles").json()
    assert body["next_cursor"] is None
    return {
        (r["framework"], r["interconnect"], r["gpu_count"], r["basis"]): r for r in body["items"]
    }


def test_scaling_profiles_list_fitted_rows_with_basis_and_n(client, keys):
    before = _rows(client)
    assert all(k[3] == "assumed" and r["n"] == 0 for k, r in before.items())
    _measure(client, keys)
    rows = _rows(client)
    fitted = rows[("pytorch", "pcie", 4, "fitted")]
    assert fitted["efficiency"] == pytest.approx(POOLED)
    assert (fitted["n"], fitted["pairs"], fitted["gpus"]) == (3 * (3 + 3), 3, 3)
    assert "median of 3" in fitted["source"]
    # The guide's row stays, as the fallback, and is listed too.
    assert rows[("pytorch", "pcie", 4, "assumed")]["efficiency"] == 0.9
    # 2 and 3 GPUs: interpolated in log2(count) between 1 GPU (1.0) and the 4-GPU row.
    two = rows[("pytorch", "pcie", 2, "fitted")]
    assert two["efficiency"] == pytest.approx(1 - 0.5 * (1 - POOLED))
    assert "interpolated" in two["source"]
    # Nothing measured beyond 4 GPUs, nor for other frameworks or links: no fitted row.
    assert ("pytorch", "pcie", 8, "fitted") not in rows
    assert not [k for k in rows if k[3] == "fitted" and k[:2] != ("pytorch", "pcie")]


def test_a_superlinear_outlier_never_feeds_a_profile(client, keys):
    _measure(client, keys)
    before = _rows(client)[("pytorch", "pcie", 4, "fitted")]
    post_results(client, keys, "nvidia-rtx-4070-ti", [900.0] * 3)
    rows = [
        {
            "gpu": "nvidia-rtx-4070-ti",
            "workload": "resnet50-train",
            "value": 900.0 * 4 * 1.5,  # 1.5x linear
            "precision": "fp16",
            "framework": "pytorch",
            "gpu_count": 4,
        }
    ]
    answer = client.post("/results", json={"results": rows}, headers=keys.auth(keys.submitter))
    assert answer.status_code == 201
    assert answer.json()["results"][0]["status"] == "outlier"
    assert _rows(client)[("pytorch", "pcie", 4, "fitted")] == before


def _pick(recs, gpu, count):
    return next(r for r in recs if r["gpu"] == gpu and r["count"] == count)


def test_recommend_uses_measured_then_fitted_then_assumed(client, keys):
    _measure(client, keys)
    params = {
        "budget": 20000,
        "workload": "resnet50-train",
        "max_gpus": 4,
        "limit": 50,
        "min_memory_gb": 24,
        "platform_usd": 0,  # the budget buys GPUs only: this test is about scaling
    }
    recs = client.get("/recommend", params=params).json()["recommendations"]
    measured = _pick(recs, "nvidia-rtx-4090", 4)
    assert (measured["scaling_basis"], measured["basis"]) == ("measured", "measured")
    assert measured["scaling_factor"] == pytest.approx(4 * 0.93)
    # An unmeasured PCIe card gets the fitted profile; so does a bridged NVLink card (RTX 3090)
    # in a 4-GPU box, which all-reduces over PCIe. Two bridged cards keep the NVLink row.
    for gpu in ("nvidia-rtx-5090", "nvidia-rtx-3090"):
        four = _pick(recs, gpu, 4)
        assert four["scaling_basis"] == "fitted:pytorch/pcie"
        assert four["scaling_factor"] == pytest.approx(4 * POOLED)
    assert _pick(recs, "nvidia-rtx-3090", 2)["scaling_basis"] == "profile:pytorch/nvlink"
    # the fitted row pools CUDA boxes only: a Radeon box takes the assumed row
    radeon = _pick(recs, "amd-rx-7900-xtx", 4)
    assert radeon["scaling_basis"] == "profile:pytorch/pcie"
    assert radeon["scaling_factor"] == pytest.approx(4 * 0.9)
    tf = client.get("/recommend", params=params | {"framework": "tensorflow"}).json()
    assumed = _pick(tf["recommendations"], "nvidia-rtx-5090", 4)
    assert assumed["scaling_basis"] == "profile:tensorflow/pcie"
    assert assumed["scaling_factor"] == pytest.approx(4 * 0.65)


def test_a_scaled_configuration_carries_the_spread_of_measured_boxes_in_its_band(client, keys):
    """The fitted 4-GPU row pools 0.80, 0.88 and 0.93: a card scaled by it is as unsure as
    those boxes are of the row (80% quantile of |log(measured / row)|), on top of its own."""
    _measure(client, keys)
    params = {"budget": 20000, "workload": "resnet50-train", "max_gpus": 4, "limit": 50}
    params |= {"min_memory_gb": 24, "platform_usd": 0}
    recs = client.get("/recommend", params=params).json()["recommendations"]
    single = {
        i["gpu"]: i
        for i in client.get("/rankings", params={"workload": "resnet50-train"}).json()["items"]
    }
    spread = sorted(abs(math.log(eff / POOLED)) for _one, eff in FIXTURE.values())
    width = spread[min(math.ceil(4 * 0.8), 3) - 1]
    four = _pick(recs, "nvidia-rtx-5090", 4)
    one = single["nvidia-rtx-5090"]
    below = math.hypot(math.log(one["throughput"] / one["throughput_low"]), width)
    above = math.hypot(math.log(one["throughput_high"] / one["throughput"]), width)
    assert math.log(four["throughput"] / four["throughput_low"]) == pytest.approx(below)
    assert math.log(four["throughput_high"] / four["throughput"]) == pytest.approx(above)
    independent = client.get("/recommend", params=params | {"mode": "independent"}).json()
    copies = _pick(independent["recommendations"], "nvidia-rtx-5090", 4)
    assert copies["throughput_low"] == pytest.approx(4 * one["throughput_low"])
