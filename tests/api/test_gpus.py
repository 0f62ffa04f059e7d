"""GET /gpus and /gpus/{slug} against the seeded catalog on a real database."""

import pytest


def test_rtx_4090_specs_come_back_with_their_source(client):
    response = client.get("/gpus/nvidia-rtx-4090")
    assert response.status_code == 200
    gpu = response.json()
    assert gpu["vendor"] == "nvidia"
    assert gpu["memory_gb"] == 24
    assert gpu["fp16_tensor_tflops"] == pytest.approx(165.2, rel=0.01)
    assert gpu["memory_bandwidth_gbs"] == pytest.approx(1008, rel=0.01)
    assert gpu["source"]
    assert isinstance(gpu["aliases"], list)


def test_unknown_slug_is_404_with_did_you_mean(client):
    response = client.get("/gpus/nvidia-rtx-4091")
    assert response.status_code == 404
    body = response.json()
    assert "nvidia-rtx-4091" in body["detail"]
    assert "nvidia-rtx-4090" in body["suggestions"]


def test_list_filters_by_vendor_market_and_memory(client):
    amd = client.get("/gpus", params={"vendor": "amd", "limit": 500}).json()["items"]
    assert amd and all(g["vendor"] == "amd" for g in amd)
    big = client.get("/gpus", params={"min_memory_gb": 80, "limit": 500}).json()["items"]
    assert big and all(g["memory_gb"] >= 80 for g in big)
    assert "nvidia-h100-sxm" in {g["slug"] for g in big}
    assert "nvidia-rtx-4090" not in {g["slug"] for g in big}
    dc = client.get("/gpus", params={"market": "datacenter", "limit": 500}).json()["items"]
    assert dc and all(g["market"] == "datacenter" for g in dc)


def test_cursor_pagination_walks_every_gpu_once(client):
    everything = client.get("/gpus", params={"limit": 500}).json()
    assert everything["next_cursor"] is None
    seen, cursor = [], None
    while True:
        params = {"limit": 7} | ({"cursor": cursor} if cursor else {})
        page = client.get("/gpus", params=params).json()
        assert len(page["items"]) <= 7
        seen += [g["slug"] for g in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [g["slug"] for g in everything["items"]]
    assert len(seen) == len(set(seen)) >= 60


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"vendor": "nvidai"}, "vendor"),
        ({"market": "gaming"}, "market"),
        ({"min_memory_gb": -1}, "min_memory_gb"),
        ({"min_memory_gb": "lots"}, "min_memory_gb"),
        ({"min_memory_gb": "nan"}, "min_memory_gb"),
        ({"min_memory_gb": "inf"}, "min_memory_gb"),
        ({"limit": 0}, "limit"),
        ({"limit": 100000}, "limit"),
        ({"cursor": "not-a-cursor!"}, "cursor"),
    ],
)
def test_bad_list_parameters_are_422_naming_the_field(client, params, field):
    response = client.get("/gpus", params=params)
    assert response.status_code == 422
    assert field in response.text


def test_workloads_list_has_the_named_slugs_with_units(client):
    items = client.get("/workloads").json()["items"]
    by_slug = {w["slug"]: w for w in items}
    for slug in ("resnet50-train", "bert-large-train", "llm-train", "llm-inference"):
        assert slug in by_slug
        assert by_slug[slug]["unit"]
        assert by_slug[slug]["precision"] in {"fp32", "tf32", "fp16", "bf16", "fp8", "int8"}
    assert (
        client.get("/workloads/resnet50-train").json()["unit"] == by_slug["resnet50-train"]["unit"]
    )
    missing = client.get("/workloads/resnet-50-train")
    assert missing.status_code == 404
    assert "resnet50-train" in missing.json()["suggestions"]


def test_scaling_profiles_are_listed_and_sane(client):
    items = client.get("/scaling-profiles").json()["items"]
    four = {
        (p["framework"], p["interconnect"]): p["efficiency"] for p in items if p["gpu_count"] == 4
    }
    assert 3.5 <= 4 * four[("pytorch", "pcie")] <= 3.9
    assert 2.0 <= 4 * four[("tensorflow", "pcie")] <= 3.0
    assert all(0 < p["efficiency"] <= 1 for p in items)


def test_openapi_docs_are_served(client):
    assert client.get("/docs").status_code == 200
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/gpus", "/gpus/{slug}", "/workloads", "/healthz", "/readyz"} <= set(paths)
