"""The time to read the asked prompt, on inference asks of a model over the shipped corpus
(service/read_model/llm/_prompt.py, service/domain/prefill.py)."""

import csv
import io

import pytest

from service.catalog import llm
from service.catalog.seed import seed
from service.domain import prefill


def _items(client, **params):
    response = client.get("/rankings", params=params)
    assert response.status_code == 200, response.text
    return response.json()["items"]


def test_a_prompt_is_read_at_the_measured_rate_and_slower_per_token_when_longer(db, client):
    seed(db)
    measured = {
        r["gpu"]: r["throughput"]
        for r in _items(client, workload="llama-3-8b-q4_k_m-pp4096")
        if r["basis"] == "measured"
    }
    rows = _items(client, model="llama-3-8b", quant="q4_k_m", context=4096)
    exact = [r for r in rows if r["gpu"] in measured and r["count"] == 1]
    assert len(exact) >= 5
    for r in exact:  # the measured workload of this model, format and length: its median
        assert r["prompt_s"] == pytest.approx(4096 / measured[r["gpu"]], rel=1e-9), r["gpu"]
    for r in rows:
        assert r["prompt_s_low"] <= r["prompt_s"] <= r["prompt_s_high"], r["gpu"]

    # Llama 3.1 70B at 8,192 and 32,768 tokens both rest on Llama 3 70B Q4_K_M pp8192: on one
    # GPU that holds it either way, a token of the longer prompt costs more than its FLOPs say
    short = {
        r["gpu"]: r["prompt_s"]
        for r in _items(client, model="llama-3.1-70b", quant="q4_k_m", context=8192)
        if r["count"] == 1 and r["prompt_s"]
    }
    long = {
        r["gpu"]: r["prompt_s"]
        for r in _items(client, model="llama-3.1-70b", quant="q4_k_m", context=32768)
        if r["count"] == 1 and r["prompt_s"]
    }
    both = set(short) & set(long)
    assert len(both) >= 3
    model = llm.models()["llama-3.1-70b"]
    by_flops = 4 * prefill.token_cost(model, 32768, 1.0) / prefill.token_cost(model, 8192, 1.0)
    for gpu in both:
        assert long[gpu] / short[gpu] > 1.2 * by_flops, gpu


def test_recommend_says_the_prompt_time_and_training_asks_have_none(db, client):
    seed(db)
    params = {"budget": 5000, "model": "llama-3.1-70b", "quant": "q4_k_m", "context": 32768}
    rows = client.get("/recommend", params=params).json()["recommendations"]
    assert rows
    for r in rows:
        assert r["prompt_s"] > 0
        assert "Reading a 32,768-token prompt takes ~" in r["why"]
        assert "llama-3-70b-q4_k_m-pp8192" in r["why"]
        if r["count"] > 1:  # a GGUF file is split by layers: llama.cpp's learned prompt ratio
            sentence = r["why"].split("Reading a", 1)[1].split(" to own over ", 1)[0]
            assert "over its GPUs (split:" in sentence
    text = client.get("/recommend", params=params | {"format": "csv"}).text
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert [float(c["prompt_s"]) for c in parsed] == pytest.approx([r["prompt_s"] for r in rows])
    bf16 = client.get("/recommend", params={"budget": 3000, "model": "llama-3.1-8b"}).json()
    assert all("measured with llama.cpp" in r["why"] for r in bf16["recommendations"])
    trained = client.get(
        "/recommend", params={"budget": 3000, "model": "llama-3.1-8b", "task": "qlora"}
    ).json()["recommendations"]
    assert trained and all(r["prompt_s"] is None for r in trained)
    assert not any("prompt takes" in r["why"] for r in trained)
