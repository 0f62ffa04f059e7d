"""POST /results?format=llama-bench|lambda-csv|mlperf: raw tool output through the same gate."""

from pathlib import Path

from sqlmodel import Session

from service.models import Workload

FIXTURES = Path(__file__).parent.parent / "fixtures" / "llama_bench"


def _llm_workloads(db):
    with Session(db) as s:
        for n, bound in (("pp512", False), ("tg512", True)):
            s.add(
                Workload(
                    slug=f"llama-3-8b-q4-k-m-{n}",
                    name=n,
                    unit="tokens/s",
                    precision="fp16",
                    flops_per_unit=1.61e10,
                    memory_bound=bound,
                )
            )
        s.commit()


def _post(client, keys, name, fmt="llama-bench", text=None):
    body = text if text is not None else (FIXTURES / name).read_bytes()
    return client.post(f"/results?format={fmt}", content=body, headers=keys.auth(keys.submitter))


def test_unmatched_workload_is_422_naming_it(client, keys):
    r = _post(client, keys, "rtx4080_legacy_b5163.json")
    assert r.status_code == 422
    assert "qwen2-7b-q4_k_m-pp512" in r.text


def test_llama_bench_fixture_is_stored_and_garbage_is_not_accepted(client, keys, db, monkeypatch):
    from service.ingest.importers import llama_bench

    monkeypatch.setitem(llama_bench.FTYPES, "Q4_K - Medium", "q4-k-m")  # slug-safe in this branch
    _llm_workloads(db)
    ok = _post(client, keys, "rtx4090.json")
    assert ok.status_code == 201, ok.text
    assert [o["status"] for o in ok.json()["results"]] == ["accepted", "accepted"]
    assert _post(client, keys, "rtx4090.jsonl").status_code == 201
    bad = _post(client, keys, "garbage.json")
    assert bad.status_code == 201
    for outcome in bad.json()["results"]:
        assert outcome["status"] in ("rejected", "outlier") and outcome["reason"]
    multi = _post(client, keys, "multi_gpu.json")
    assert multi.status_code == 201
    stored = client.get(f"/results/{multi.json()['results'][0]['id']}").json()
    assert stored["gpu_count"] == 2


def test_unknown_device_is_422_quoting_it(client, keys):
    text = (
        (FIXTURES / "rtx4090.json")
        .read_text()
        .replace("NVIDIA GeForce RTX 4090", "Moore Threads MTT S4000")
    )
    r = _post(client, keys, "", text=text)
    assert r.status_code == 422
    devices = [e for e in r.json()["detail"] if e["type"] == "unknown_device"]
    assert devices and devices[0]["device"] == "Moore Threads MTT S4000"


def test_lambda_csv_rows_are_stored_and_not_run_cells_skipped(client, keys):
    text = (
        "name_gpu,num_gpu,watt,price,ssd,ncf,resnet50\n"
        "LambdaCloud V100 16GB,1.0,300.0,1.0,229.0,23476979.0,833.0\n"
        "RTX 4090,1.0,450.0,1.0,0.0,1.0,1000.0\n"
    )
    r = _post(client, keys, "", fmt="lambda-csv", text=text)
    assert r.status_code == 201, r.text
    assert len(r.json()["results"]) == 3  # ncf skipped, 0.0 = not run


def test_mlperf_checker_csv_posts_as_the_readme_says(client, keys):
    """The README's `POST /results?format=mlperf` (and `gpu-advisor import mlperf`): the
    submission checker's summary.csv is stored through the gate, one result per throughput row
    (its power row and inferred row skipped), on the row's accelerator count."""
    text = (Path(__file__).parent.parent / "fixtures" / "mlperf" / "summary_v5.1.csv").read_text()
    r = _post(client, keys, "", fmt="mlperf", text=text)
    assert r.status_code == 201, r.text
    outcomes = r.json()["results"]
    assert len(outcomes) == 8
    stored = client.get(f"/results/{outcomes[0]['id']}").json()
    assert stored["gpu_count"] in (4, 8) and stored["workload"].startswith("mlperf-llama2-70b-")


def test_a_layer_split_decode_is_held_to_one_gpus_bandwidth(client, keys):
    """llama.cpp's layer split reads each GPU's layers in turn: 2 x RTX 4090 cannot decode
    Llama 3 8B Q4_K_M faster than one 4090's bandwidth allows (1,008 GB/s over 4.2 GB a
    token: about 240 tokens/s), which a 2-GPU ceiling (480) had let 300 pass."""
    row = {
        "gpu": "nvidia-rtx-4090",
        "workload": "llama-3-8b-q4_k_m-tg512",
        "value": 300.0,
        "precision": "q4_k_m",
        "gpu_count": 2,
        "framework": "llama.cpp",
    }
    r = client.post("/results", json=row, headers=keys.auth(keys.submitter))
    assert r.status_code == 201, r.text
    assert (r.json()["status"], r.json()["reason"]) == ("rejected", "exceeds_bandwidth")
