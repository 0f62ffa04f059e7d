"""The time to read the asked prompt, on inference asks of a model over the shipped corpus
(service/read_model/llm/_prompt.py, service/domain/prefill.py)."""

import csv
import io

import pytest
from sqlmodel import Session, col, select

from service.catalog import llm
from service.catalog.seed import seed
from service.domain import prefill
from service.models import Aggregate, Gpu, Workload


def _items(client, **params):
    response = client.get("/rankings", params=params)
    assert response.status_code == 200, response.text
    return response.json()["items"]


def _at_measured_rate(client, workload: str, context: int) -> list[dict]:
    """Llama 3 8B Q4_K_M rows at `context`: each GPU measured alone on `workload` reads the
    prompt at its median rate there (at least five of them); every row."""
    measured = {
        r["gpu"]: r["throughput"]
        for r in _items(client, workload=workload)
        if r["basis"] == "measured"
    }
    rows = _items(client, model="llama-3-8b", quant="q4_k_m", context=context)
    checked = [r for r in rows if r["gpu"] in measured and r["count"] == 1]
    assert len(checked) >= 5
    for r in checked:
        assert r["prompt_s"] == pytest.approx(context / measured[r["gpu"]], rel=1e-9), r["gpu"]
    return rows


def test_a_prompt_is_read_at_the_measured_rate_and_slower_per_token_when_longer(db, client):
    seed(db)
    # the measured workload of this model, format and length: its median
    rows = _at_measured_rate(client, "llama-3-8b-q4_k_m-pp4096", 4096)
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


def _measured(db, workload: str, gpu: str, count: int) -> float:
    with Session(db) as session:
        return session.exec(
            select(Aggregate.median)
            .join(Workload, col(Workload.id) == Aggregate.workload_id)
            .join(Gpu, col(Gpu.id) == Aggregate.gpu_id)
            .where(Workload.slug == workload, Gpu.slug == gpu, Aggregate.gpu_count == count)
        ).one()


def test_recommend_says_the_prompt_time_of_a_gguf_ask_and_of_nothing_else(db, client):
    seed(db)
    params = {"budget": 5000, "model": "llama-3.1-70b", "quant": "q4_k_m", "context": 32768}
    rows = client.get("/recommend", params=params).json()["recommendations"]
    assert rows
    for r in rows:
        assert r["prompt_s_low"] < r["prompt_s"] < r["prompt_s_high"]  # moved: never zero-width
        sentence = r["why"].split("Reading one 32,768-token prompt takes ~", 1)[1]
        sentence = sentence.split(" to own over ", 1)[0]
        assert "llama-3-70b-q4_k_m-pp8192" in sentence and "moved to this length" in sentence
        assert "; llama.cpp b" in sentence  # the builds the reference was measured with
        if r["count"] > 1:  # measured on these GPUs, or llama.cpp's learned prompt ratio
            assert f"as measured on {r['count']} of this GPU" in sentence or (
                f"to {r['count']} GPUs (split:" in sentence
            )
    text = client.get("/recommend", params=params | {"format": "csv"}).text
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert [float(c["prompt_s"]) for c in parsed] == pytest.approx([r["prompt_s"] for r in rows])

    # a configuration measured on the reference answers as measured: 2 x RTX 3090 on Llama 3
    # 70B Q4_K_M pp8192, for Llama 3.1 70B (the same shape) at 8,192 tokens
    two = _measured(db, "llama-3-70b-q4_k_m-pp8192", "nvidia-rtx-3090", 2)
    ranked = _items(client, model="llama-3.1-70b", quant="q4_k_m", context=8192)
    row = next(r for r in ranked if r["gpu"] == "nvidia-rtx-3090")
    assert row["count"] == 2
    assert row["prompt_s"] == pytest.approx(8192 / two, rel=1e-9)
    assert row["prompt_s_low"] < row["prompt_s"] < row["prompt_s_high"]  # one result: its noise

    # 3 x RTX 3090, between the measured 2 and 4, reads as its measured neighbours do
    four = _measured(db, "llama-3-70b-q4_k_m-pp8192", "nvidia-rtx-3090", 4)
    batched = _items(client, model="llama-3.1-70b", quant="q4_k_m", context=8192, batch=8)
    row = next(r for r in batched if r["gpu"] == "nvidia-rtx-3090")
    assert row["count"] == 3  # eight sequences' KV cache do not fit two
    assert min(two, four) * 0.9 <= 8192 / row["prompt_s"] <= max(two, four) * 1.1

    # Q8_0 rests on the Q4_K_M measurement at the same rate, and says so; Mistral 7B, of no
    # measured shape, on Llama 3 8B (19 GPUs), in Q8_0 as in Q4_K_M
    q8 = client.get(
        "/recommend",
        params={"budget": 3000, "model": "llama-3-8b", "quant": "q8_0", "context": 4096},
    ).json()["recommendations"]
    assert q8 and all("taken at the same rate in this format" in r["why"] for r in q8)
    for quant in ("q8_0", "q4_k_m"):
        mistral = _items(client, model="mistral-7b", quant=quant, context=8192)
        assert mistral and all(r["prompt_s"] for r in mistral)
        answer = client.get(
            "/recommend",
            params={"budget": 3000, "model": "mistral-7b", "quant": quant, "context": 8192},
        ).json()["recommendations"]
        assert answer and all("llama-3-8b-q4_k_m-pp8192" in r["why"] for r in answer), quant

    # a prompt shorter than the shortest measured is read no faster per token than it
    _at_measured_rate(client, "llama-3-8b-q4_k_m-pp512", 128)

    # no prompt time where no prompt of the engine or kind of model is measured: a serving
    # engine's format, a mixture of experts, training
    for other in (
        {"model": "llama-3.1-8b"},
        {"model": "qwen3-30b-a3b", "quant": "q4_k_m"},
        {"model": "llama-3.1-8b", "task": "qlora"},
    ):
        answered = client.get("/recommend", params={"budget": 3000, **other}).json()
        assert answered["recommendations"], other
        for r in answered["recommendations"]:
            assert r["prompt_s"] is None and "prompt takes" not in r["why"], other
