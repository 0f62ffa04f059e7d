"""/rankings and /recommend against the seeded catalog on a real database."""

import csv
import io
import itertools
import math
import re
from datetime import date

import pytest

from service.catalog import loaders as catalog
from service.domain.estimate import figure
from service.read_model.reads import ReadModel
from service.read_model.snapshot import utc_today


def post_results(client, keys, gpu, values, workload="resnet50-train", precision="fp16", count=1):
    rows = [
        {
            "gpu": gpu,
            "workload": workload,
            "value": v,
            "precision": precision,
            "framework": "pytorch",
            "gpu_count": count,
        }
        for v in values
    ]
    response = client.post("/results", json={"results": rows}, headers=keys.auth(keys.submitter))
    assert response.status_code == 201, response.text


def test_student_budget_800_gets_ranked_configurations_that_fit(client):
    response = client.get("/recommend", params={"budget": 800})
    assert response.status_code == 200
    body = response.json()
    recs = body["recommendations"]
    assert body["workload"] == "llm-train" and body["hint"] is None
    assert 1 <= len(recs) <= 5
    for r, later in itertools.pairwise(recs):  # by throughput, or a tie it breaks
        assert r["throughput"] >= later["throughput"] or "Ranked above" in r["why"]
    for r in recs:
        assert r["total_price_usd"] <= 800
        assert r["total_price_usd"] == pytest.approx(r["unit_price"]["usd"] * r["count"])
        assert r["memory_gb"] >= body["min_memory_gb"]
        assert r["perf_per_dollar"] == pytest.approx(r["throughput"] / r["total_price_usd"])
        assert 1 <= r["count"] <= 4
        assert r["unit_price"]["source"] and r["unit_price"]["observed_at"]
        assert r["basis"] == "estimated" and r["why"].startswith(("Most", "#"))
        assert r["scaling_factor"] <= r["count"]
        assert r["unit"] == "tokens/s"


def test_nothing_fits_answers_200_with_a_hint(client):
    body = client.get("/recommend", params={"budget": 50}).json()
    assert body["recommendations"] == []
    named = re.search(r"cheapest that fits the memory is (\S+) at \$([\d,]+)", body["hint"])
    assert named, body["hint"]
    assert client.get(f"/gpus/{named.group(1)}").json()["memory_gb"] >= 8
    assert int(named.group(2).replace(",", "")) > 50
    big = client.get("/recommend", params={"budget": 1000, "min_memory_gb": 80}).json()
    assert big["recommendations"] == [] and "80 GB" in big["hint"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"budget": 0}, "budget"),
        ({"budget": -800}, "budget"),
        ({"budget": "lots"}, "budget"),
        ({"budget": "nan"}, "budget"),
        ({"budget": "inf"}, "budget"),
        ({"budget": 1e300}, "budget"),
        ({}, "budget"),
        ({"budget": 800, "max_gpus": 0}, "max_gpus"),
        ({"budget": 800, "max_gpus": 64}, "max_gpus"),
        ({"budget": 800, "limit": 0}, "limit"),
        ({"budget": 800, "mode": "sideways"}, "mode"),
        ({"budget": 800, "precision": "fp64"}, "precision"),
        ({"budget": 800, "condition": "broken"}, "condition"),
        ({"budget": 800, "min_memory_gb": -1}, "min_memory_gb"),
        ({"budget": 800, "framework": "Py Torch!"}, "framework"),
        ({"budget": 800, "workload": "resnet"}, "workload"),
        ({"budget": 3000, "model": "llama-3.1-8b", "task": "qlora", "quant": "q4_k_m"}, "quant"),
    ],
)
def test_bad_parameters_are_422_naming_the_field(client, params, field):
    response = client.get("/recommend", params=params)
    assert response.status_code == 422
    assert field in [d["loc"][-1] for d in response.json()["detail"]]


def test_unknown_workload_suggests_the_right_one(client):
    detail = client.get("/recommend", params={"budget": 800, "workload": "resnet50"}).json()
    assert "resnet50-train" in detail["detail"][0]["suggestions"]


def test_measured_results_become_the_estimate_and_anchor_the_rest(client, keys):
    post_results(client, keys, "nvidia-rtx-4090", [1480, 1500, 1520, 1510, 1490])
    post_results(client, keys, "nvidia-rtx-3090", [820, 800, 810])
    post_results(client, keys, "nvidia-a100-80gb", [2500, 2550, 2450])
    rows = client.get("/rankings", params={"workload": "resnet50-train", "min_memory_gb": 0})
    items = {r["gpu"]: r for r in rows.json()["items"]}
    assert items["nvidia-rtx-4090"]["throughput"] == 1500
    assert (items["nvidia-rtx-4090"]["basis"], items["nvidia-rtx-4090"]["n"]) == ("measured", 5)
    assert items["nvidia-rtx-4090"]["relative_performance"] == pytest.approx(1.0)
    assert items["nvidia-rtx-3090"]["relative_performance"] == pytest.approx(810 / 1500)
    h100 = items["nvidia-h100-sxm"]
    assert (h100["basis"], h100["n"], h100["band"]) == ("estimated", 3, 0.8)
    assert h100["model"] in ("nnls", "shape-scaled")
    assert h100["throughput_low"] < h100["throughput"] < h100["throughput_high"]
    assert h100["throughput"] > items["nvidia-a100-80gb"]["throughput"]


def test_gpus_without_tensor_cores_are_scored_on_what_they_have(client, keys):
    post_results(client, keys, "nvidia-rtx-4090", [1500] * 3)
    items = {
        r["gpu"]: r
        for r in client.get(
            "/rankings", params={"workload": "resnet50-train", "min_memory_gb": 0}
        ).json()["items"]
    }
    gpus = {g.slug: g for g in catalog.load_gpus()}
    # Spec ratio on compute: GTX 1080 Ti runs fp16 work on its 11.34 TFLOPS FP32 units.
    expected = 1500 * gpus["nvidia-gtx-1080-ti"].fp32_tflops / 165.2
    assert items["nvidia-gtx-1080-ti"]["throughput"] == pytest.approx(expected, rel=1e-3)


def test_rankings_sort_by_perf_per_dollar_and_filter_memory(client):
    body = client.get("/rankings", params={"sort": "perf_per_dollar", "min_memory_gb": 24}).json()
    ppd = [r["perf_per_dollar"] for r in body["items"] if r["perf_per_dollar"] is not None]
    assert ppd == sorted(ppd, reverse=True)
    assert all(r["memory_gb"] >= 24 for r in body["items"])
    unpriced = [i for i, r in enumerate(body["items"]) if r["perf_per_dollar"] is None]
    assert unpriced and min(unpriced) > max(
        i for i, r in enumerate(body["items"]) if r["perf_per_dollar"] is not None
    )
    assert [r["rank"] for r in body["items"]] == list(range(1, len(body["items"]) + 1))


def test_parallel_uses_profiles_and_measured_multi_gpu_results_override(client, keys):
    params = {
        "budget": 20000,
        "workload": "resnet50-train",
        "max_gpus": 4,
        "limit": 50,
        "min_memory_gb": 24,
    }
    recs = client.get("/recommend", params=params).json()["recommendations"]
    four = next(r for r in recs if r["gpu"] == "nvidia-rtx-4090" and r["count"] == 4)
    assert four["scaling_factor"] == pytest.approx(3.6)
    assert four["scaling_basis"] == "profile:pytorch/pcie"
    tf = client.get("/recommend", params=params | {"framework": "tensorflow"}).json()
    tf_four = next(
        r for r in tf["recommendations"] if r["gpu"] == "nvidia-rtx-4090" and r["count"] == 4
    )
    assert tf_four["scaling_factor"] < four["scaling_factor"]
    indep = client.get("/recommend", params=params | {"mode": "independent"}).json()
    assert all(r["scaling_factor"] == r["count"] for r in indep["recommendations"])

    post_results(client, keys, "nvidia-rtx-4090", [1500] * 3)
    post_results(client, keys, "nvidia-rtx-4090", [5200, 5150, 5250], count=4)
    recs = client.get("/recommend", params=params).json()["recommendations"]
    four = next(r for r in recs if r["gpu"] == "nvidia-rtx-4090" and r["count"] == 4)
    assert (four["throughput"], four["scaling_basis"], four["basis"]) == (
        5200,
        "measured",
        "measured",
    )
    assert four["scaling_factor"] == pytest.approx(5200 / 1500)


def test_condition_and_price_observations(client, keys):
    admin = keys.auth(keys.admin)
    used = {
        "gpu": "nvidia-rtx-3090",
        "usd": 650,
        "condition": "used",
        "source": "ebay-sold",
        "observed_at": "2026-11-15",
    }
    assert client.post("/prices", json=used, headers=admin).status_code == 201
    params = {"budget": 700, "workload": "resnet50-train", "max_gpus": 1, "limit": 50}
    any_ = client.get("/recommend", params=params).json()["recommendations"]
    row = next(r for r in any_ if r["gpu"] == "nvidia-rtx-3090")
    price = row["unit_price"]
    assert {k: price[k] for k in ("usd", "condition", "source", "observed_at")} == {
        "usd": 650,
        "condition": "used",
        "source": "ebay-sold",
        "observed_at": "2026-11-15",
    }
    assert price["age_days"] == (utc_today() - date(2026, 11, 15)).days and not price["stale"]
    new = client.get("/recommend", params=params | {"condition": "new"}).json()
    assert "nvidia-rtx-3090" not in {r["gpu"] for r in new["recommendations"]}  # $1,499 new


def test_rankings_sort_by_perf_per_watt_of_tdp(client):
    """Throughput per watt of TDP, highest first, GPUs without a stated TDP last; for a model
    ask the TDP is that of every GPU the model is split over."""
    gpus = {g["slug"]: g for g in client.get("/gpus", params={"limit": 500}).json()["items"]}
    body = client.get("/rankings", params={"sort": "perf_per_watt"}).json()
    assert body["sort"] == "perf_per_watt"
    rows = body["items"]
    for r in rows:
        tdp = gpus[r["gpu"]]["tdp_w"]
        expected = r["throughput"] / tdp if tdp else None
        assert r["perf_per_watt"] == (pytest.approx(expected) if expected else None)
    ppw = [r["perf_per_watt"] for r in rows if r["perf_per_watt"] is not None]
    assert len(ppw) > 10 and ppw == sorted(ppw, reverse=True)
    known = [i for i, r in enumerate(rows) if r["perf_per_watt"] is not None]
    assert all(i < len(known) for i in known)  # unknown TDPs only after every known one
    ask = {"model": "llama-3.1-70b", "quant": "q4_k_m", "sort": "perf_per_watt"}
    llm = client.get("/rankings", params=ask).json()["items"]
    llm_ppw = [r["perf_per_watt"] for r in llm if r["perf_per_watt"] is not None]
    assert llm_ppw == sorted(llm_ppw, reverse=True)
    assert [r["perf_per_watt"] is None for r in llm] == sorted(
        r["perf_per_watt"] is None for r in llm
    )
    split = [r for r in llm if r["count"] > 1 and r["perf_per_watt"] is not None]
    assert split
    for r in split:
        assert r["perf_per_watt"] == pytest.approx(
            r["throughput"] / (gpus[r["gpu"]]["tdp_w"] * r["count"])
        )
    offered = client.get("/recommend", params={"budget": 5000, "limit": 5}).json()
    for r in offered["recommendations"]:
        assert r["perf_per_watt"] == pytest.approx(r["throughput"] / r["tdp_w"])


def test_csv_and_json_agree(client):
    params = {"budget": 3000, "workload": "resnet50-train", "limit": 10}
    js = client.get("/recommend", params=params).json()["recommendations"]
    text = client.get("/recommend", params=params | {"format": "csv"})
    assert text.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(text.text)))
    assert [r["gpu"] for r in rows] == [r["gpu"] for r in js]
    for c, j in zip(rows, js, strict=True):
        assert float(c["throughput"]) == pytest.approx(j["throughput"])
        assert float(c["unit_price_usd"]) == j["unit_price"]["usd"]
        assert int(c["count"]) == j["count"] and c["why"] == j["why"]
    ranked = client.get("/rankings", headers={"Accept": "text/csv"})
    assert ranked.text.splitlines()[0].startswith("rank,gpu,name,memory_gb,throughput")
    assert ranked.text.splitlines()[0].endswith(
        ",price_stale,perf_per_watt,prompt_s,prompt_s_low,prompt_s_high,frameworks,workload"
    )
    assert len(ranked.text.splitlines()) - 1 == len(client.get("/rankings").json()["items"])
    gpus_csv = client.get("/gpus", params={"format": "csv", "limit": 500}).text
    gpus_json = client.get("/gpus", params={"limit": 500}).json()["items"]
    parsed = list(csv.DictReader(io.StringIO(gpus_csv)))
    assert [r["slug"] for r in parsed] == [g["slug"] for g in gpus_json]
    assert parsed[0]["aliases"] == "|".join(gpus_json[0]["aliases"])


def test_each_csv_row_states_the_answers_workload_and_precision(client):
    """A saved CSV has no answer around its rows: rankings at fp16 and fp32 were told apart by
    nothing (the precision column empty, no workload column)."""
    for path, params in [
        ("/rankings", {"workload": "resnet50-train", "precision": "fp32"}),
        ("/rankings", {"workload": "resnet50-train", "precision": "fp16"}),
        ("/recommend", {"workload": "resnet50-train", "precision": "fp32", "budget": 3000}),
        ("/rankings", {"model": "llama-3.1-8b", "quant": "q4_k_m"}),
        ("/recommend", {"model": "llama-3.1-8b", "quant": "q4_k_m", "budget": 3000}),
    ]:
        rows = list(
            csv.DictReader(io.StringIO(client.get(path, params=params | {"format": "csv"}).text))
        )
        assert rows, (path, params)
        workload = params.get("workload") or f"{params['model']}:inference"
        precision = params.get("precision") or params["quant"]
        assert {r["workload"] for r in rows} == {workload}, (path, params)
        assert {r["precision"] for r in rows} == {precision}, (path, params)
    # a row's own precision stays where it differs from the answer's (fp16 without bf16 units)
    mixed = client.get("/rankings", params={"workload": "llm-train", "format": "csv"}).text
    own = {r["gpu"]: r["precision"] for r in csv.DictReader(io.StringIO(mixed))}
    assert own["nvidia-rtx-4090"] == "bf16" and own["nvidia-rtx-2080-ti"] == "fp16"


def test_a_write_is_visible_to_the_next_read(client, keys):
    before = client.get("/rankings", params={"workload": "resnet50-train"}).json()
    assert {r["basis"] for r in before["items"]} == {"estimated"}
    post_results(client, keys, "nvidia-rtx-4090", [1500] * 5)
    after = client.get("/rankings", params={"workload": "resnet50-train"}).json()
    assert "measured" in {r["basis"] for r in after["items"]}


def test_cached_answers_follow_writes_and_keep_parameters_apart(client, keys):
    params = {"budget": 10000, "workload": "resnet50-train", "min_memory_gb": 24, "limit": 50}
    first = client.get("/recommend", params=params).json()
    assert client.get("/recommend", params=params).json() == first  # the cached answer
    other = client.get("/recommend", params=params | {"max_gpus": 1}).json()
    assert all(r["count"] == 1 for r in other["recommendations"])
    as_csv = client.get("/recommend", params=params, headers={"Accept": "text/csv"})
    assert as_csv.headers["content-type"].startswith("text/csv")
    post_results(client, keys, "nvidia-rtx-4090", [1500] * 5)
    after = client.get("/recommend", params=params).json()
    row = next(
        r for r in after["recommendations"] if r["gpu"] == "nvidia-rtx-4090" and r["count"] == 1
    )
    assert (row["basis"], row["throughput"]) == ("measured", 1500)


def count_route_runs(monkeypatch, method: str) -> list[str]:
    """A list that grows by one each time a route calls ReadModel.`method` (once per answer
    it computes; a stored answer is served without it)."""
    runs: list[str] = []
    original = getattr(ReadModel, method)

    async def counted(self, workload, *args):
        runs.append(workload)
        return await original(self, workload, *args)

    monkeypatch.setattr(ReadModel, method, counted)
    return runs


def test_a_repeated_request_is_answered_from_the_answer_cache_like_the_first(client, monkeypatch):
    runs = count_route_runs(monkeypatch, "recommendations")
    url = "/recommend?budget=2000&workload=resnet50-train"
    first = client.get(url)
    second = client.get(url)
    assert len(runs) == 1 and len(client.app.state.read_model.answers) == 1
    assert (second.status_code, second.content) == (first.status_code, first.content)
    assert {k: v for k, v in second.headers.items() if k != "x-request-id"} == {
        k: v for k, v in first.headers.items() if k != "x-request-id"
    }
    assert second.headers["x-request-id"] != first.headers["x-request-id"]
    respelled = client.get("/recommend?workload=resnet50-train&budget=2000.0")
    assert len(runs) == 2 and respelled.json() == first.json()  # computed again, the same
    text = client.get("/metrics").text
    assert (
        'gpu_advisor_http_requests_total{method="GET",route="/recommend",status="200"} 3.0' in text
    )


def test_errors_are_never_stored_and_a_csv_hint_survives_the_cache(client, monkeypatch):
    runs = count_route_runs(monkeypatch, "recommendations")
    assert client.get("/recommend?budget=-1").status_code == 422
    assert client.get("/recommend?budget=1&workload=nope").status_code == 422
    assert client.get("/recommend?budget=1&workload=nope").status_code == 422
    answers = client.app.state.read_model.answers
    assert len(runs) == 2 and len(answers) == 0  # budget=-1 never ran it
    hinted = client.get("/recommend?budget=1&format=csv")
    again = client.get("/recommend?budget=1&format=csv")
    assert len(runs) == 3
    assert again.headers["x-hint"] == hinted.headers["x-hint"]
    assert "cheapest" in again.headers["x-hint"] and again.text == hinted.text


def test_rankings_repeats_come_from_the_answer_cache_and_parameters_stay_apart(client, monkeypatch):
    runs = count_route_runs(monkeypatch, "rankings")
    by_speed = client.get("/rankings?workload=resnet50-train")
    by_value = client.get("/rankings?workload=resnet50-train&sort=perf_per_dollar")
    assert client.get("/rankings?workload=resnet50-train").content == by_speed.content
    again = client.get("/rankings?workload=resnet50-train&sort=perf_per_dollar")
    assert again.content == by_value.content != by_speed.content
    assert len(runs) == 2
    as_csv = client.get("/rankings?workload=resnet50-train", headers={"Accept": "text/csv"})
    assert as_csv.headers["content-type"].startswith("text/csv") and len(runs) == 3


def test_only_writes_that_reads_depend_on_end_a_stored_answer(client, keys, monkeypatch):
    """A heartbeat or a new API key keeps the stored answer; a POST /results ends it."""
    from tests.api.test_hosts_agent import identity

    runs = count_route_runs(monkeypatch, "recommendations")
    url = "/recommend?budget=10000&workload=resnet50-train&min_memory_gb=24&limit=50"
    client.get(url)
    token = client.post("/hosts", json={"name": "box-1"}, headers=keys.auth(keys.admin)).json()[
        "token"
    ]
    beat = client.post("/agent/heartbeat", json=identity(), headers=keys.auth(token))
    assert beat.status_code == 200
    new_key = client.post(
        "/keys", json={"name": "x", "role": "submitter"}, headers=keys.auth(keys.admin)
    )
    assert new_key.status_code == 201
    client.get(url)
    assert len(runs) == 1  # still the stored answer
    post_results(client, keys, "nvidia-rtx-4090", [1500] * 5)
    after = client.get(url).json()
    assert len(runs) == 2
    row = next(
        r for r in after["recommendations"] if r["gpu"] == "nvidia-rtx-4090" and r["count"] == 1
    )
    assert row["basis"] == "measured"


def test_empty_answer_hint_names_the_missing_condition(client, db):
    """No used price for any 24 GB GPU (new ones exist): the hint says so and what to ask
    instead, not that no such GPU is priced."""
    from sqlmodel import Session, delete

    from service.models import Price

    with Session(db) as session:
        session.exec(delete(Price).where(Price.condition == "used"))
        session.commit()
    client.app.state.read_model.changed()
    params = {"budget": 800, "min_memory_gb": 24, "workload": "resnet50-train"}
    used = client.get("/recommend", params=params | {"condition": "used"}).json()
    assert used["recommendations"] == []
    assert "no used price for any GPU with >= 24 GB" in used["hint"], used["hint"]
    assert "condition=new or condition=any" in used["hint"]
    assert "no priced GPU" not in used["hint"]
    huge = client.get("/recommend", params=params | {"min_memory_gb": 5000}).json()
    assert huge["hint"] == "no priced GPU in the catalog has 5000 GB or more"
    # a filter that narrowed the catalog is named, not blamed on the catalog
    on = client.get("/recommend", params=params | {"min_memory_gb": 5000, "stack": "metal"})
    assert on.json()["hint"] == "no priced GPU on stack metal in the catalog has 5000 GB or more"
    fp8 = client.get("/recommend", params=params | {"min_memory_gb": 5000, "precision": "fp8"})
    assert fp8.json()["hint"] == "no priced GPU that runs fp8 in the catalog has 5000 GB or more"


def test_a_measured_value_says_which_frameworks_measured_it(client, keys):
    """A measured median made with llm.c is not one made with PyTorch: rankings and
    recommendations name the frameworks of the single-GPU results behind it; an estimate
    names none."""
    rows = [
        {"gpu": "nvidia-rtx-3090", "workload": "llm-train", "value": v, "precision": "bf16",
         "framework": fw, "gpu_count": 1}
        for v, fw in [(60000.0, "llm.c"), (61000.0, "pytorch"), (62000.0, "llm.c")]
    ]  # fmt: skip
    response = client.post("/results", json={"results": rows}, headers=keys.auth(keys.submitter))
    assert response.status_code == 201, response.text
    items = client.get("/rankings", params={"workload": "llm-train"}).json()["items"]
    by_gpu = {i["gpu"]: i for i in items}
    assert by_gpu["nvidia-rtx-3090"]["frameworks"] == ["llm.c", "pytorch"]
    assert all(i["frameworks"] == [] for i in items if i["basis"] == "estimated")
    recs = client.get(
        "/recommend", params={"budget": 20000, "workload": "llm-train", "limit": 50, "max_gpus": 1}
    ).json()["recommendations"]
    mine = next(r for r in recs if r["gpu"] == "nvidia-rtx-3090")
    assert mine["frameworks"] == ["llm.c", "pytorch"]
    assert "median of 3 accepted results (llm.c, pytorch)" in mine["why"]


def test_a_value_measured_only_with_a_minority_framework_has_the_frameworks_spread(client, keys):
    """Most GPUs measured with PyTorch, one with llm.c and PyTorch 30% apart: a GPU measured
    once with llm.c only gets that spread as its band (it had the PyTorch pairs' +-1%), and
    its why says so; a PyTorch GPU measured once keeps the run-to-run noise."""
    results = [
        ("nvidia-rtx-4090", 130000.0, "llm.c"),
        ("nvidia-rtx-4090", 100000.0, "pytorch"),
        ("nvidia-rtx-a6000", 90000.0, "pytorch"),
        ("nvidia-rtx-a6000", 91000.0, "pytorch"),
        ("nvidia-l40s", 140000.0, "pytorch"),
        ("nvidia-l40s", 141400.0, "pytorch"),
        ("nvidia-rtx-a5000", 70000.0, "pytorch"),
        ("amd-rx-7900-xtx", 70000.0, "llm.c"),
    ]
    rows = [
        {"gpu": g, "workload": "llm-train", "value": v, "precision": "bf16", "framework": fw,
         "gpu_count": 1}
        for g, v, fw in results
    ]  # fmt: skip
    response = client.post("/results", json={"results": rows}, headers=keys.auth(keys.submitter))
    assert response.status_code == 201, response.text
    items = client.get("/rankings", params={"workload": "llm-train"}).json()["items"]
    by_gpu = {i["gpu"]: i for i in items}
    spread = 1.4826 * 15000.0 / 115000.0  # the RTX 4090's relative sigma
    other, main = by_gpu["amd-rx-7900-xtx"], by_gpu["nvidia-rtx-a5000"]
    assert other["basis"] == main["basis"] == "measured"
    assert math.log(other["throughput_high"] / 70000.0) == pytest.approx(1.2816 * spread, 1e-3)
    assert math.log(main["throughput_high"] / 70000.0) < 0.03
    ask = {"budget": 800, "workload": "llm-train", "max_gpus": 1, "stack": "rocm-radeon"}
    recs = client.get("/recommend", params=ask).json()["recommendations"]
    xtx = next(r for r in recs if r["gpu"] == "amd-rx-7900-xtx")
    low, high = figure(other["throughput_low"]), figure(other["throughput_high"])
    assert f"median of 1 accepted result (llm.c), likely {low}-{high} tokens/s" in xtx["why"]


def test_rows_kept_per_snapshot_still_answer_each_budget_and_cost_setting(client):
    """A row is built once per snapshot, configuration and cost settings and copied per ask
    (read_model/rows.py): each answer still carries its own rank, budget and cost account."""
    asks = [
        {"budget": 5000, "max_gpus": 4, "workload": "resnet50-train"},
        {"budget": 3999, "max_gpus": 4, "workload": "resnet50-train"},
        {"budget": 5000, "max_gpus": 4, "workload": "resnet50-train", "sort": "tco"},
        {"budget": 5000, "max_gpus": 4, "workload": "resnet50-train", "hours_per_day": 2},
        {"budget": 5000, "max_gpus": 4, "workload": "resnet50-train", "hours_per_day": 20},
    ]
    rows = [client.get("/recommend", params=ask).json()["recommendations"] for ask in asks]
    for ask, answer in zip(asks, rows, strict=True):
        assert answer, ask
        for rank, row in enumerate(answer, 1):
            assert row["rank"] == rank
            in_order = all(
                a["throughput"] >= b["throughput"] for a, b in itertools.pairwise(answer)
            )
            if "Ranked above" not in row["why"]:  # "by throughput" only where it is so
                by = " by throughput" if in_order else ""
                lead = "Most throughput" if rank == 1 else f"#{rank}{by}"
            elif rank == 1:  # a tie broken: the lead claims only what holds against every
                # faster row below it (shown ones here)
                faster = [r for r in answer if r["throughput"] > row["throughput"]]
                lead = row["why"].split(" within $")[0]
                assert lead in LEADS, row["why"]
                if lead.startswith("Fewest GPUs"):
                    assert all(row["count"] < f["count"] for f in faster), row["why"]
                if lead.startswith("Most memory"):
                    assert all(row["memory_gb"] > f["memory_gb"] for f in faster), row["why"]
            else:
                lead = f"#{rank}"
            if ask.get("sort") != "tco":
                assert row["why"].startswith(f"{lead} within ${ask['budget']:,.0f}: "), row["why"]
            assert row["total_price_usd"] <= ask["budget"]
    by_config = [{(r["gpu"], r["count"]): r for r in answer} for answer in rows]
    shared = set(by_config[3]) & set(by_config[4])
    assert shared
    for key in shared:  # the same configuration under other cost settings: its own account
        light, heavy = by_config[3][key], by_config[4][key]
        assert light["why"].split(": ", 1)[1] != heavy["why"].split(": ", 1)[1]
        assert {k for k in light if light[k] != heavy[k]} - {"rank", "why"}
    again = client.get("/recommend", params={**asks[0], "limit": 4}).json()["recommendations"]
    assert [r["rank"] for r in again] == list(
        range(1, len(again) + 1)
    )  # sort=tco renumbered copies only


def test_a_csv_hint_quoting_free_text_is_a_valid_header(client, keys):
    """A price source is free text; the hint that quotes it travels in X-Hint, which HTTP
    limits to single-line Latin-1 (an en dash made this answer a 500)."""
    source = "H\u00e4ndler \u2013 eBay \u20ac150 \u2192\r\nX-Injected: yes"
    body = {"gpu": "nvidia-rtx-3070", "usd": 150, "condition": "used", "source": source}
    body["observed_at"] = str(utc_today())
    assert client.post("/prices", json=body, headers=keys.auth(keys.admin)).status_code == 201
    answer = client.get("/recommend?budget=100&format=csv")
    assert answer.status_code == 200
    hint = answer.headers["x-hint"]
    assert "x-injected" not in answer.headers and "\r" not in hint and "\n" not in hint
    assert hint.isascii() and "H\\xe4ndler \\u2013 eBay \\u20ac150 \\u2192  X-Injected" in hint
    assert "H\u00e4ndler \u2013 eBay" in client.get("/recommend?budget=100").json()["hint"]


def test_a_llama_bench_workload_never_sells_n_gpus_for_one_decode_stream(client, keys):
    """llama.cpp splits a GGUF model by layers: one token passes the GPUs in turn, so N GPUs
    take the workload's measured N-GPU ratio (about 0.95 here), not a tensor-parallel speedup,
    and /recommend offers no N GPUs that are no faster than one."""
    workload = "llama-3-8b-q4_k_m-tg512"
    for count, value in ((1, 130.0), (2, 125.0), (4, 120.0)):
        post_results(client, keys, "nvidia-rtx-4090", [value], workload, "q4_k_m", count)
    ask = {"budget": 50000, "workload": workload, "max_gpus": 8, "limit": 50, "allow_stale": True}
    rows = client.get("/recommend", params=ask).json()["recommendations"]
    assert rows and all(r["count"] == 1 for r in rows)
    independent = client.get("/recommend", params=ask | {"mode": "independent"}).json()
    copies = [r for r in independent["recommendations"] if r["count"] > 1]
    assert copies  # N copies do serve N streams
    compare = client.get(
        "/compare", params={"gpu": "nvidia-rtx-5090", "count": 4, "workload": workload}
    )
    single = client.get(
        "/compare", params={"gpu": "nvidia-rtx-5090", "count": 1, "workload": workload}
    )
    ratio = compare.json()["throughput"] / single.json()["throughput"]
    assert ratio == pytest.approx(120.0 / 130.0)  # the measured 4-GPU split, not ~3x


def test_a_model_ranking_and_recommend_agree_on_perf_per_dollar_of_a_configuration(client):
    """The same N-GPU configuration of a model ask has one perf per dollar, the box included,
    in /rankings and /recommend."""
    ask = {"model": "llama-3.1-70b", "quant": "q4_k_m"}
    ranked = client.get("/rankings", params=ask).json()["items"]
    recs = client.get("/recommend", params=ask | {"budget": 10**5, "limit": 50}).json()
    by_config = {(r["gpu"], r["count"]): r for r in recs["recommendations"]}
    shared = [r for r in ranked if (r["gpu"], r["count"]) in by_config and r["count"] > 1]
    assert shared
    for r in shared:
        mine = by_config[(r["gpu"], r["count"])]
        assert r["perf_per_dollar"] == pytest.approx(mine["perf_per_dollar"], rel=1e-6), r["gpu"]


def test_several_complete_computers_are_offered_for_independent_jobs_only(client):
    """Mac Studios on one job would be linked by a network no profile here measures: parallel
    mode offers one, independent mode copies of it; an LLM ask holds its model in one."""
    ask = {"budget": 50000, "stack": "metal", "max_gpus": 4, "allow_stale": True, "limit": 20}
    one_job = client.get("/recommend", params=ask).json()["recommendations"]
    assert one_job and all(r["count"] == 1 for r in one_job)
    copies = client.get("/recommend", params=ask | {"mode": "independent"}).json()
    assert any(r["count"] > 1 for r in copies["recommendations"])
    alone = client.get("/recommend", params=ask | {"model": "llama-3-70b"}).json()
    assert alone["recommendations"]  # a 512 GB M3 Ultra holds its 143 GB
    big = client.get("/recommend", params=ask | {"model": "llama-3.1-405b"}).json()
    assert big["recommendations"] == []  # 810 GB: no one Mac holds it, no two are offered


@pytest.mark.parametrize(
    "ask", [{"budget": 3000}, {"budget": 3000, "model": "llama-3.1-8b", "task": "lora"}]
)
def test_perf_per_dollar_counts_what_the_budget_pays_for_the_box(client, ask):
    """Per USD of the GPUs plus the box N cards need over a one-GPU PC, the sum `why` states
    and the budget pays, not of the GPUs alone (which favoured many cheap cards)."""
    rows = client.get("/recommend", params=ask | {"limit": 20}).json()["recommendations"]
    boxed = 0
    for r in rows:
        box = re.search(r"\+ \$([\d,]+) for the box of \d+ GPUs", r["why"])
        spent = r["total_price_usd"] + (float(box.group(1).replace(",", "")) if box else 0.0)
        boxed += box is not None
        assert r["perf_per_dollar"] == pytest.approx(r["throughput"] / spent, rel=1e-3), r["why"]
        assert spent <= ask["budget"]
    assert boxed, "the ask should answer some multi-GPU rows"


def test_a_model_file_too_big_for_one_gpu_is_offered_split_over_the_fewest_that_hold_it(client):
    """Llama 3 70B Q4_K_M needs 40.2 GB over all GPUs (the workload's min_memory_gb): /recommend
    offers N GPUs that hold it together (a layer split, no faster than one GPU), each at the
    smallest count of its card that holds it, never one 24 or 32 GB card (min_memory_gb per GPU
    adds to the model's need, it does not replace it), and with independent copies every GPU
    holds the whole model."""
    workload = "llama-3-70b-q4_k_m-tg512"
    need = client.get(f"/workloads/{workload}").json()["min_memory_gb"]
    ask = {"budget": 5000, "workload": workload, "limit": 20, "allow_stale": True}
    for extra in ({}, {"min_memory_gb": 20}):
        rows = client.get("/recommend", params=ask | extra).json()["recommendations"]
        assert any(r["count"] > 1 for r in rows), extra
        for r in rows:
            assert r["total_memory_gb"] >= need, r
            assert r["memory_gb"] >= extra.get("min_memory_gb", 0)
            if r["scaling_factor"] <= 1.0 and r["count"] > 1:
                assert r["memory_gb"] * (r["count"] - 1) < need, r  # fewer would have held it
    copies = client.get("/recommend", params=ask | {"mode": "independent"}).json()
    assert all(r["memory_gb"] >= need for r in copies["recommendations"])
    small = client.get("/recommend", params=ask | {"budget": 500}).json()
    assert small["recommendations"] == []
    assert f"holds {need:g} GB over up to 4 GPU(s)" in small["hint"]
    one = client.get("/recommend", params=ask | {"max_gpus": 1, "stack": "oneapi"}).json()
    assert one["recommendations"] == [] and "raise max_gpus" in one["hint"]
    f16 = {"workload": "llama-3-70b-f16-tg512", "stack": "oneapi", "max_gpus": 8}
    most = client.get("/recommend", params=ask | f16).json()  # 8 x 12-24 GB < 141 GB
    assert most["recommendations"] == [] and "raise max_gpus" not in most["hint"], most["hint"]


def test_no_relative_performance_where_the_reference_gpu_cannot_run_the_workload(client):
    """The RTX 4090 (24 GB) cannot hold MLPerf Llama 2 70B LoRA (80 GB): no x-the-4090 figure."""
    rows = client.get(
        "/rankings", params={"workload": "mlperf-llama2-70b-lora-train", "min_memory_gb": 0}
    ).json()["items"]
    assert rows and all(r["relative_performance"] is None for r in rows)
    fits = client.get("/rankings", params={"workload": "resnet50-train"}).json()["items"]
    assert any(r["relative_performance"] is not None for r in fits)


LEADS = ("Fewest GPUs among the fastest", "Most memory among the fastest", "Tied with the fastest")


def _paid(row):
    """What the budget pays for a row: its GPUs and the box several need."""
    return row["throughput"] / row["perf_per_dollar"]


@pytest.mark.parametrize(
    "params",
    [
        {"budget": 1500},
        {"budget": 3000},
        {"budget": 2000, "workload": "llm-inference"},
        {"budget": 5000, "workload": "resnet50-train", "max_gpus": 4},
        {"budget": 5000, "mode": "independent"},
        {"budget": 5000},
        {"budget": 10000, "workload": "bert-large-squad-finetune"},
    ],
)
def test_a_row_ranked_above_a_faster_one_shares_its_band_and_says_why(client, params):
    """Inside tied estimates fewer GPUs, then more memory per GPU, rank first (as an LLM ask's
    headroom does), never above a faster row that costs less (what the budget pays: throughput
    over perf_per_dollar). A row ranked above a faster one names the fastest such (shown or
    past the limit), which is ahead of it on neither count; a shown faster row's band meets
    this row's. Nothing faster below: no "Ranked above", and "Most throughput" at #1 (a row
    whose place is not its speed's never says "by throughput")."""
    for limit in (1, 3, 10):
        rows = client.get("/recommend", params=params | {"limit": limit}).json()
        rows = rows["recommendations"]
        assert rows
        in_order = all(a["throughput"] >= b["throughput"] for a, b in itertools.pairwise(rows))
        for r in rows:
            named = re.search(r" Ranked above (?:(\d+) x )?(\S+), faster at ~([\d,.]+) ", r["why"])
            shown_faster = [f for f in rows[r["rank"] :] if f["throughput"] > r["throughput"]]
            for f in shown_faster:
                assert _paid(r) <= _paid(f) * (1 + 1e-9), (r["why"], f["why"])
            if named is None:
                assert not shown_faster, (r["why"], shown_faster)
                assert r["rank"] > 1 or r["why"].startswith("Most throughput within"), r["why"]
                continue
            assert not r["why"].startswith(("Most throughput", f"#{r['rank']} by throughput"))
            assert float(named[3].replace(",", "")) > r["throughput"]
            count, gpu = int(named[1] or 1), named[2]
            assert r["count"] <= count, r["why"]
            assert "needs fewer GPUs" in r["why"] or "has more memory per GPU" in r["why"]
            for f in rows:
                if (f["count"], f["gpu"]) == (count, gpu):
                    assert r["throughput_low"] <= f["throughput_high"], (r, f)
                    assert f["throughput_low"] <= r["throughput_high"], (r, f)
        if not in_order:
            assert not any(" by throughput " in r["why"][:40] for r in rows)


def test_on_the_shipped_corpus_no_row_ranks_above_a_faster_one_that_costs_less(db, client):
    """The tie-break (fewer GPUs, more memory or headroom) buys a slower configuration no place
    above a faster one that costs less in what the budget pays: on the shipped corpus 3 x RTX
    5080 had ranked above 4 x RTX 4080 Super at $5,000 (faster, $171 cheaper with their box),
    and 4 x RX 9070 above 4 x RTX 3080 Ti at $3,000 (19% faster, $48 cheaper). Workload and
    model asks alike."""
    from service.catalog.seed import seed

    seed(db)
    asks = [{"budget": budget} for budget in (500, 800, 1500, 3000, 5000, 10000)] + [
        {"budget": 5000, "mode": "independent"},
        {"budget": 10000, "workload": "bert-large-squad-finetune"},
        {"budget": 5000, "model": "llama-3.1-70b", "quant": "q4_k_m"},
        {"budget": 30000, "model": "llama-3.1-70b", "quant": "q4_k_m"},
        {"budget": 3000, "model": "llama-3.1-8b", "task": "qlora"},
    ]
    reordered = noted = 0
    for ask in asks:
        rows = client.get("/recommend", params=ask | {"limit": 20}).json()["recommendations"]
        assert rows, ask
        # the first row names the cheapest configuration tied with it, if one gives more than
        # 1.25x its throughput per dollar (tiers.cheaper_tie): a row within 1.25x of its speed
        named = re.search(
            r"As fast within the estimates: (?:(\d+) x )?([a-z0-9.-]+)\b"
            r".*?for \$([\d,]+), (\d+)% less",
            rows[0]["why"],
        )
        if named:
            noted += 1
            tie = next(r for r in rows if (r["count"], r["gpu"]) == (int(named[1] or 1), named[2]))
            assert _paid(tie) == pytest.approx(float(named[3].replace(",", "")), abs=0.5)
            assert tie["perf_per_dollar"] > 1.25 * rows[0]["perf_per_dollar"]
            assert tie["throughput"] * 1.25 >= rows[0]["throughput"]
        for i, row in enumerate(rows):
            for faster in rows[i + 1 :]:
                if faster["throughput"] > row["throughput"]:
                    reordered += 1
                    assert _paid(row) <= _paid(faster) * (1 + 1e-9), (ask, row["why"])
    assert reordered and noted  # the tie-break reordered some answers, some name a cheaper tie


def test_a_framework_without_a_profile_is_named_in_the_hint(client):
    """framework=pytorh scales several GPUs by the conservative default profile (4 GPUs 3.0x
    where pytorch's is 3.74x); the answer had taken it silently. A known one, or default asked
    for by name, adds nothing; CSV carries the note in X-Hint."""
    ask = {"budget": 3000, "max_gpus": 4}
    typo = client.get("/recommend", params=ask | {"framework": "pytorh"}).json()
    assert any(r["count"] > 1 for r in typo["recommendations"])
    assert "framework=pytorh has no scaling profile" in (typo["hint"] or "")
    for known in ("pytorch", "default"):
        hint = client.get("/recommend", params=ask | {"framework": known}).json()["hint"]
        assert "no scaling profile" not in (hint or "")
    csv = client.get("/recommend", params=ask | {"framework": "pytorh", "format": "csv"})
    assert "framework=pytorh has no scaling profile" in csv.headers["x-hint"]
