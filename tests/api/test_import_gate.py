"""Issue 11's done-when for importers, on the shipped catalog and LLM corpus (both databases):
a real llama-bench file is stored; a copy with tokens/s a thousand times too high is stored but
never accepted, with its reason, and leaves the public median alone; a single 5x-too-high
decode result for a GPU with no results yet on the workload is never accepted (rejected
`exceeds_bandwidth` since the gate holds decode to the bandwidth ceiling; an outlier
`implausible_vs_peers` before)."""

import json
from pathlib import Path

import pytest
from sqlmodel import Session, col, select

from service.catalog.corpus import load_corpus
from service.catalog.seed_results import seed_results
from service.models import Aggregate, Gpu, Result, Workload

FIXTURES = Path(__file__).parent.parent / "fixtures" / "llama_bench"
PP, TG = "llama-3-8b-q4_k_m-pp512", "llama-3-8b-q4_k_m-tg512"


@pytest.fixture
def llm_corpus(db):
    """The shipped Llama 3 8B Q4_K_M llama-bench rows, seeded through the gate."""
    rows = [r for r in load_corpus() if r.workload.startswith("llama-3-8b-q4_k_m-")]
    with Session(db) as s:
        report = seed_results(s, rows)
        s.commit()
    assert report.stored > 20
    return db


def _post(client, keys, text: str):
    return client.post(
        "/results?format=llama-bench",
        content=text.encode(),
        headers=keys.auth(keys.submitter),
    )


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def _aggregate(db, gpu: str, workload: str) -> tuple[float, int] | None:
    with Session(db) as s:
        row = s.exec(
            select(Aggregate.median, Aggregate.n)
            .join(Gpu, col(Gpu.id) == Aggregate.gpu_id)
            .join(Workload, col(Workload.id) == Aggregate.workload_id)
            .where(Gpu.slug == gpu, Workload.slug == workload, Aggregate.gpu_count == 1)
        ).first()
    return None if row is None else (row[0], row[1])


@pytest.mark.parametrize("name", ["rtx4090.json", "rtx4090.jsonl"])
def test_a_real_llama_bench_file_stores_its_tests(client, keys, llm_corpus, name):
    r = _post(client, keys, _fixture(name))
    assert r.status_code == 201, r.text
    outcomes = r.json()["results"]
    assert [o["status"] for o in outcomes] == ["accepted", "accepted"]
    stored = [client.get(f"/results/{o['id']}").json() for o in outcomes]
    assert [(s["gpu"], s["workload"], s["value"]) for s in stored] == [
        ("nvidia-rtx-4090", PP, 7138.99),
        ("nvidia-rtx-4090", TG, 130.58),
    ]
    assert {s["framework"] for s in stored} == {"llama.cpp"}
    assert all("stddev_ts" in s["notes"] for s in stored)


def test_a_thousand_times_too_fast_copy_is_stored_never_accepted_and_moves_nothing(
    client, keys, llm_corpus
):
    assert _post(client, keys, _fixture("rtx4090.json")).status_code == 201
    before = {w: _aggregate(llm_corpus, "nvidia-rtx-4090", w) for w in (PP, TG)}
    r = _post(client, keys, _fixture("garbage.json"))
    assert r.status_code == 201, r.text
    for outcome in r.json()["results"]:
        assert outcome["status"] in ("rejected", "outlier")
        assert outcome["reason"] in ("exceeds_peak", "implausible_vs_peers")
        stored = client.get(f"/results/{outcome['id']}").json()
        assert (stored["status"], stored["reason"]) == (outcome["status"], outcome["reason"])
        assert stored["value"] > 100_000
    after = {w: _aggregate(llm_corpus, "nvidia-rtx-4090", w) for w in (PP, TG)}
    assert after == before and all(before.values())


def _gpus_without_results(db, workload: str) -> list[Gpu]:
    with Session(db) as s:
        wid = s.exec(select(Workload.id).where(Workload.slug == workload)).one()
        measured = set(s.exec(select(Result.gpu_id).where(Result.workload_id == wid)).all())
        return [g for g in s.exec(select(Gpu).order_by(col(Gpu.slug))) if g.id not in measured]


def _decode_test(gpu_name: str, tokens_per_s: float) -> str:
    """The fixture's generation test, run on `gpu_name` at `tokens_per_s`."""
    record = json.loads(_fixture("rtx4090.json"))[1]
    assert record["n_gen"] == 512 and record["n_prompt"] == 0
    record.update(gpu_info=gpu_name, avg_ts=tokens_per_s)
    return json.dumps([record])


def test_five_times_too_fast_on_a_gpu_without_results_is_never_accepted(client, keys, llm_corpus):
    # Decode is memory-bound: an honest figure scales with memory bandwidth. The RTX 4090 did
    # 130.58 tokens/s on 1008 GB/s; a GPU without results gets its bandwidth's share of that
    # (accepted) or five times it, far below its compute peak but more than its bandwidth can
    # read the weights for: rejected by physics (`exceeds_bandwidth`; before that ceiling the
    # peers check made it an outlier, `implausible_vs_peers`, as tests/unit/test_peers.py
    # still checks for workloads that state no bytes per token).
    with Session(llm_corpus) as s:
        rtx4090 = s.exec(select(Gpu).where(Gpu.slug == "nvidia-rtx-4090")).one()
    honest_per_gbs = 130.58 / rtx4090.memory_bandwidth_gbs
    fresh = [g for g in _gpus_without_results(llm_corpus, TG) if g.vendor == "nvidia"]
    assert len(fresh) >= 3
    inflated, honest, posted_as_json = fresh[:3]
    r = _post(
        client,
        keys,
        _decode_test(inflated.name, 5 * honest_per_gbs * inflated.memory_bandwidth_gbs),
    )
    assert r.status_code == 201, r.text
    assert r.json()["results"] == [
        {"id": r.json()["results"][0]["id"], "status": "rejected", "reason": "exceeds_bandwidth"}
    ]
    assert _aggregate(llm_corpus, inflated.slug, TG) is None  # a group of one garbage value
    ok = _post(
        client, keys, _decode_test(honest.name, honest_per_gbs * honest.memory_bandwidth_gbs)
    )
    assert [o["status"] for o in ok.json()["results"]] == ["accepted"]
    # The same check in a plain JSON post (the gate is one for every format).
    plain = client.post(
        "/results",
        json={
            "gpu": posted_as_json.slug,
            "workload": TG,
            "value": round(5 * honest_per_gbs * posted_as_json.memory_bandwidth_gbs, 2),
            "precision": "q4_k_m",
            "framework": "llama.cpp",
        },
        headers=keys.auth(keys.submitter),
    )
    assert plain.status_code == 201, plain.text
    assert (plain.json()["status"], plain.json()["reason"]) == ("rejected", "exceeds_bandwidth")


def test_an_unknown_device_is_422_quoting_it_with_suggestions(client, keys, llm_corpus):
    # Intel Arc Pro B70 is not in the catalog; it must not be taken for the Arc Pro B60.
    r = _post(client, keys, _fixture("unknown_device.json"))
    assert r.status_code == 422
    devices = [e for e in r.json()["detail"] if e["type"] == "unknown_device"]
    assert {e["device"] for e in devices} == {"Intel(R) Arc(TM) Pro B70 Graphics"}
    assert all("intel-arc-pro-b60" in e["suggestions"] for e in devices)
    with Session(llm_corpus) as s:
        b60 = s.exec(select(Gpu.id).where(Gpu.slug == "intel-arc-pro-b60")).one()
        assert not s.exec(select(Result.id).where(Result.gpu_id == b60)).all()
