"""Regressions from fuzzing (schemathesis): inputs that once made 500s or broke the schema."""

import json

import pytest

ADMIN_PATHS = ["/results/2147483648", "/results/99999999999999999999"]


def test_out_of_range_ids_are_422_not_500(client, keys):
    for path in ADMIN_PATHS:
        assert client.get(path).status_code == 422
    assert (
        client.patch(
            "/results/2147483648",
            json={"status": "verified", "reason": "x"},
            headers=keys.auth(keys.admin),
        ).status_code
        == 422
    )
    assert client.delete("/hosts/2147483648", headers=keys.auth(keys.admin)).status_code == 422


@pytest.mark.parametrize("text", ["\u0000T", "ok\u0000", "\ud800"])
def test_text_a_database_cannot_store_is_422(client, keys, text):
    body = {"slug": "whisper-train", "name": "Whisper", "unit": text, "precision": "bf16"}
    raw = json.dumps(body)  # ASCII with \u escapes, as any JSON client may send
    response = client.post(
        "/workloads",
        content=raw,
        headers=keys.auth(keys.admin) | {"Content-Type": "application/json"},
    )
    assert response.status_code == 422
    assert ["body", "unit"] in [d["loc"] for d in response.json()["detail"]]


def test_nul_in_the_url_is_422(client):
    assert client.get("/gpus/nvidia%00").status_code == 422
    assert client.get("/results", params={"gpu": "a\u0000b"}).status_code == 422


def test_a_body_that_is_not_utf8_is_422(client, keys):
    response = client.post(
        "/results",
        content=b"\x80\x81",
        headers=keys.auth(keys.submitter) | {"Content-Type": "application/json"},
    )
    assert response.status_code == 422


def test_required_gpu_fields_cannot_be_nulled(client, keys):
    response = client.patch(
        "/gpus/nvidia-rtx-4090", json={"market": None}, headers=keys.auth(keys.admin)
    )
    assert response.status_code == 422 and "market" in response.text
    ok = client.patch("/gpus/nvidia-rtx-4090", json={"tdp_w": None}, headers=keys.auth(keys.admin))
    assert ok.status_code == 200 and ok.json()["tdp_w"] is None


def test_absurd_flops_per_unit_is_refused(client, keys):
    body = {
        "slug": "tiny",
        "name": "Tiny",
        "unit": "x/s",
        "precision": "bf16",
        "flops_per_unit": 5e-324,
    }
    assert client.post("/workloads", json=body, headers=keys.auth(keys.admin)).status_code == 422


def test_prices_for_an_unknown_gpu_are_404_with_suggestions(client):
    response = client.get("/prices", params={"gpu": "nvidia-rtx-4091"})
    assert response.status_code == 404 and "nvidia-rtx-4090" in response.json()["suggestions"]


def test_openapi_declares_the_result_bodies(client):
    schema = client.get("/openapi.json").json()
    assert {"ResultIn", "ResultBatchIn"} <= set(schema["components"]["schemas"])
