"""POST /results end to end through the app on a real database: auth, validation, the gate,
idempotency and aggregates."""

import json
import math
import statistics

import pytest
from sqlmodel import Session, func, select

from service.catalog import loaders as catalog
from service.models import Aggregate, Gpu, IdempotencyRecord, Result, ResultAudit, Workload

RTX_4090_FP16_PEAK = 165.2  # dense tensor TFLOPS, FP32 accumulate (seed catalog)


def flops_per_unit(workload: str) -> float:
    value = {w.slug: w for w in catalog.load_workloads()}[workload].flops_per_unit
    assert value is not None
    return value


def result(**overrides):
    body = {
        "gpu": "nvidia-rtx-4090",
        "workload": "resnet50-train",
        "value": 1500.0,
        "precision": "fp16",
        "batch_size": 256,
        "gpu_count": 1,
        "framework": "pytorch",
        "framework_version": "2.4.0",
        "driver": "550.54",
        "cuda": "12.4",
    }
    return body | overrides


def count_results(engine) -> int:
    with Session(engine) as session:
        return session.exec(select(func.count()).select_from(Result)).one()


def post(client, keys, body, key=None, **headers):
    return client.post("/results", json=body, headers=keys.auth(key or keys.submitter) | headers)


# ---- auth -------------------------------------------------------------------------------


def test_writes_need_a_key_and_the_right_role(client, keys, db):
    assert client.post("/results", json=result()).status_code == 401
    bad = client.post("/results", json=result(), headers=keys.auth("gpa_nope_nope"))
    assert bad.status_code == 401
    assert bad.headers["WWW-Authenticate"] == "Bearer"
    gpu = client.post("/gpus", json={}, headers=keys.auth(keys.submitter))
    assert gpu.status_code == 403
    price = {"gpu": "nvidia-rtx-4090", "usd": 1799, "source": "shop", "observed_at": "2026-11-01"}
    assert client.post("/prices", json=price, headers=keys.auth(keys.submitter)).status_code == 403
    assert client.post("/prices", json=price, headers=keys.auth(keys.admin)).status_code == 201
    assert count_results(db) == 0


def test_revoked_key_is_refused_immediately(client, keys):
    assert post(client, keys, result()).status_code == 201
    prefix = keys.submitter.split("_")[1]
    revoked = client.delete(f"/keys/{prefix}", headers=keys.auth(keys.admin))
    assert revoked.status_code == 200 and revoked.json()["revoked_at"]
    assert post(client, keys, result()).status_code == 401


def test_keys_are_shown_once_and_listed_without_secrets(client, keys):
    created = client.post(
        "/keys", json={"name": "lab-c", "role": "submitter"}, headers=keys.auth(keys.admin)
    )
    assert created.status_code == 201
    secret = created.json()["key"]
    assert post(client, keys, result(), key=secret).status_code == 201
    listing = client.get("/keys", headers=keys.auth(keys.admin))
    assert listing.status_code == 200
    assert secret not in listing.text and keys.admin not in listing.text
    assert {k["name"] for k in listing.json()["items"]} >= {"lab-a", "ops", "lab-c"}
    assert client.get("/keys", headers=keys.auth(keys.submitter)).status_code == 403


# ---- storing ------------------------------------------------------------------------------


def test_single_result_answers_one_outcome_and_is_readable(client, keys):
    response = post(client, keys, result())
    assert response.status_code == 201
    outcome = response.json()
    assert set(outcome) == {"id", "status", "reason"}
    assert outcome["status"] == "accepted" and outcome["reason"] is None
    stored = client.get(f"/results/{outcome['id']}").json()
    assert stored["gpu"] == "nvidia-rtx-4090" and stored["value"] == 1500.0
    assert stored["submitter"] == keys.submitter.split("_")[1]


def test_batch_answers_each_result_in_order(client, keys, db):
    values = [1400.0, 1500.0, 1600.0]
    response = post(client, keys, {"results": [result(value=v) for v in values]})
    assert response.status_code == 201
    outcomes = response.json()["results"]
    assert [client.get(f"/results/{o['id']}").json()["value"] for o in outcomes] == values
    assert count_results(db) == 3


def test_unknown_slugs_reject_the_whole_batch_with_suggestions(client, keys, db):
    batch = [
        result(),
        result(),
        result(gpu="nvidia-rtx-4091"),
        result(),
        result(workload="resnet-50-train"),
    ]
    response = post(client, keys, {"results": batch})
    assert response.status_code == 422
    detail = response.json()["detail"]
    by_loc = {tuple(d["loc"]): d for d in detail}
    assert "nvidia-rtx-4090" in by_loc[("body", "results", 2, "gpu")]["suggestions"]
    assert "resnet50-train" in by_loc[("body", "results", 4, "workload")]["suggestions"]
    assert count_results(db) == 0


@pytest.mark.parametrize(
    ("field", "bad"),
    [("gpu", "nvidia-rtx-4091"), ("workload", "resnet-50-train"), ("precision", "q4_0")],
)
def test_a_single_posted_result_is_refused_at_its_own_fields(client, keys, db, field, bad):
    """A single object has no results list: its gate errors name ["body", field]."""
    response = post(client, keys, result(**{field: bad}))
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", field]
    assert count_results(db) == 0


def test_a_precision_the_workload_cannot_run_at_rejects_the_whole_batch(client, keys, db):
    batch = [result(), result(precision="q4_k_m"), result()]
    response = post(client, keys, {"results": batch})
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "results", 1, "precision"]
    assert error["type"] == "precision_not_applicable" and "fp16" in error["allowed"]
    assert count_results(db) == 0


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("value", 0),
        ("value", -5.0),
        ("value", 1e30),
        ("value", "fast"),
        ("value", True),
        ("gpu_count", 0),
        ("gpu_count", 100000),
        ("gpu_count", 2.5),
        ("batch_size", -1),
        ("precision", "fp64"),
        ("framework", "x" * 33),
        ("framework", "py torch"),
        ("driver", "9" * 65),
        ("notes", "n" * 2001),
        ("gpu", "NVIDIA RTX 4090"),
        ("surprise", 1),
    ],
)
def test_schema_errors_are_422_naming_index_and_field(client, keys, db, field, bad):
    batch = [result(), result() | {field: bad}]
    response = post(client, keys, {"results": batch})
    assert response.status_code == 422
    locs = [d["loc"] for d in response.json()["detail"]]
    assert ["body", "results", 1, field] in locs
    assert count_results(db) == 0


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_422(client, keys, db, literal):
    raw = json.dumps(result(value=1.0)).replace("1.0", literal)
    response = client.post(
        "/results",
        content=raw,
        headers=keys.auth(keys.submitter) | {"Content-Type": "application/json"},
    )
    assert response.status_code == 422
    assert ["body", "value"] in [d["loc"] for d in response.json()["detail"]]
    assert count_results(db) == 0


def test_empty_oversized_and_malformed_bodies(client, keys, db):
    assert post(client, keys, {"results": []}).status_code == 422
    too_many = post(client, keys, {"results": [result()] * 1001})
    assert too_many.status_code == 422
    assert ["body", "results"] in [d["loc"] for d in too_many.json()["detail"]]
    garbage = client.post(
        "/results",
        content=b"{not json",
        headers=keys.auth(keys.submitter) | {"Content-Type": "application/json"},
    )
    assert garbage.status_code == 422
    assert count_results(db) == 0


def test_body_over_one_mib_is_413_with_or_without_content_length(client, keys, db):
    big = json.dumps({"results": [result(notes="n" * 1900)] * 600}).encode()
    assert len(big) > 1024 * 1024
    headers = keys.auth(keys.submitter) | {"Content-Type": "application/json"}
    assert client.post("/results", content=big, headers=headers).status_code == 413

    def chunks():
        for start in range(0, len(big), 65536):
            yield big[start : start + 65536]

    assert client.post("/results", content=chunks(), headers=headers).status_code == 413
    assert count_results(db) == 0


# ---- idempotency --------------------------------------------------------------------------


def test_same_idempotency_key_and_body_replays_without_storing_twice(client, keys, db):
    body = {"results": [result(value=1400.0), result(value=1450.0)]}
    first = post(client, keys, body, **{"Idempotency-Key": "run-42"})
    again = post(client, keys, body, **{"Idempotency-Key": "run-42"})
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert count_results(db) == 2


def test_same_idempotency_key_with_other_body_is_422(client, keys, db):
    post(client, keys, result(value=1400.0), **{"Idempotency-Key": "k1"})
    other = post(client, keys, result(value=1401.0), **{"Idempotency-Key": "k1"})
    assert other.status_code == 422
    assert other.json()["detail"][0]["loc"] == ["header", "Idempotency-Key"]
    assert count_results(db) == 1


def test_idempotency_keys_are_scoped_per_api_key(client, keys, db):
    body = result()
    a = post(client, keys, body, **{"Idempotency-Key": "shared"})
    b = post(client, keys, body, key=keys.other_submitter, **{"Idempotency-Key": "shared"})
    assert a.json()["id"] != b.json()["id"]
    assert count_results(db) == 2


def test_rejected_batch_does_not_consume_the_idempotency_key(client, keys, db):
    bad = post(client, keys, {"results": [result(gpu="nvidia-nope")]}, **{"Idempotency-Key": "x"})
    assert bad.status_code == 422
    good = post(client, keys, {"results": [result()]}, **{"Idempotency-Key": "x"})
    assert good.status_code == 201
    with Session(db) as session:
        assert session.exec(select(func.count()).select_from(IdempotencyRecord)).one() == 1


# ---- the gate -----------------------------------------------------------------------------


def test_physics_rejects_throughput_above_peak(client, keys):
    ceiling = 1.05 * RTX_4090_FP16_PEAK * 1e12 / flops_per_unit("resnet50-train")
    above = post(client, keys, result(value=ceiling * 1.01)).json()
    below = post(client, keys, result(value=ceiling * 0.95)).json()
    assert (above["status"], above["reason"]) == ("rejected", "exceeds_peak")
    assert below["status"] == "accepted"
    # Per GPU: the same total on 2 GPUs is plausible.
    two = post(client, keys, result(value=ceiling * 1.5, gpu_count=2)).json()
    assert two["status"] == "accepted"


def test_physics_rejects_decode_faster_than_the_bandwidth_reads_the_weights(client, keys):
    """An RTX 3090 (936 GB/s) decoding Llama 3 70B Q4_K_M reads 41.2 GB of layer weights per
    token: at most ~22.7 tokens/s; 50 is a typo or a wrong workload, 16.6 was measured."""
    from service.catalog import llm
    from service.domain.llm_fit import decode_bytes_floor

    floor = decode_bytes_floor(llm.model("llama-3-70b"), llm.quantization("q4_k_m"))
    ceiling = 1.05 * 936e9 / floor
    tg = {"gpu": "nvidia-rtx-3090", "workload": "llama-3-70b-q4_k_m-tg512", "precision": "q4_k_m"}
    above = post(client, keys, result(**tg, value=ceiling * 1.01, framework="llama.cpp")).json()
    below = post(client, keys, result(**tg, value=16.6, framework="llama.cpp")).json()
    assert (above["status"], above["reason"]) == ("rejected", "exceeds_bandwidth")
    assert below["status"] == "accepted"
    # llama.cpp splits a model file by layers: its GPUs read their layers in turn, so two of
    # them decode no faster than one's bandwidth allows, whatever a free-text note claims
    for notes in (None, "llama-bench split_mode=row"):
        two = result(**tg, value=ceiling * 1.5, gpu_count=2, framework="llama.cpp", notes=notes)
        assert post(client, keys, two).json()["reason"] == "exceeds_bandwidth"


def test_physics_rejects_fp8_from_a_gpu_without_fp8_units(client, keys):
    """No framework trains at fp8 without FP8 tensor units; an LLM's decode reads FP8 weights
    weight-only on Turing and Ampere (vLLM's W8A16), nowhere else without the units."""
    cases = [
        ({"gpu": "nvidia-rtx-3090", "value": 860.0}, "rejected"),
        ({"gpu": "nvidia-rtx-4090", "value": 1600.0}, "accepted"),
        ({"gpu": "nvidia-rtx-3090", "workload": "llm-inference", "value": 60.0}, "accepted"),
        ({"gpu": "nvidia-v100-sxm2-16gb", "workload": "llm-inference", "value": 60.0}, "rejected"),
        ({"gpu": "amd-rx-7900-xtx", "workload": "llm-inference", "value": 60.0}, "rejected"),
    ]
    for overrides, status in cases:
        body = post(client, keys, result(**overrides, precision="fp8")).json()
        assert body["status"] == status, (overrides, body)
        if status == "rejected":
            assert body["reason"] == "no_fp8_units"


def test_physics_uses_fp32_peak_for_a_gpu_without_tensor_cores(client, keys):
    # GTX 1080 Ti: no tensor cores, fp32 11.34 TFLOPS -> fp16 claims are capped near that.
    ceiling = 1.05 * 11.34e12 / flops_per_unit("resnet50-train")
    gtx = {"gpu": "nvidia-gtx-1080-ti"}
    assert post(client, keys, result(**gtx, value=ceiling * 1.1)).json()["status"] == "rejected"
    assert post(client, keys, result(**gtx, value=ceiling * 0.5)).json()["status"] == "accepted"


GROUP = [1480.0, 1500.0, 1510.0, 1495.0, 1520.0, 1505.0, 1490.0, 1515.0, 1500.0, 1485.0]


def aggregate(db, gpu="nvidia-rtx-4090", workload="resnet50-train", precision="fp16", count=1):
    with Session(db) as session:
        return session.exec(
            select(Aggregate)
            .join(Gpu, Gpu.id == Aggregate.gpu_id)
            .join(Workload, Workload.id == Aggregate.workload_id)
            .where(
                Gpu.slug == gpu,
                Workload.slug == workload,
                Aggregate.precision == precision,
                Aggregate.gpu_count == count,
            )
        ).first()


def test_outlier_in_a_real_group_is_flagged_and_does_not_move_the_median(client, keys, db):
    post(client, keys, {"results": [result(value=v) for v in GROUP]})
    before = aggregate(db)
    assert before.n == 10 and before.median == pytest.approx(1500.0)
    outlier = post(client, keys, result(value=4200.0)).json()
    assert outlier["status"] == "outlier"
    assert outlier["reason"].startswith("modified_z=")
    after = aggregate(db)
    assert after.n == 10 and after.median == pytest.approx(before.median)
    assert client.get("/results", params={"status": "outlier"}).json()["items"][0]["value"] == 4200


def test_small_groups_flag_nothing_and_are_re_evaluated_as_they_grow(client, keys, db):
    first = post(client, keys, {"results": [result(value=v) for v in (1500, 1510, 4200)]}).json()
    assert [o["status"] for o in first["results"]] == ["accepted"] * 3
    post(client, keys, {"results": [result(value=v) for v in (1490, 1505, 1495)]})
    far = client.get(f"/results/{first['results'][2]['id']}").json()
    assert far["status"] == "outlier"  # re-evaluated when the group reached 5+
    assert aggregate(db).n == 5


def test_identical_values_mad_zero_does_not_divide_by_zero(client, keys, db):
    same = post(client, keys, {"results": [result(value=1500.0) for _ in range(7)]}).json()
    assert {o["status"] for o in same["results"]} == {"accepted"}
    odd = post(client, keys, result(value=1800.0)).json()
    assert odd["status"] == "outlier"
    assert aggregate(db).mad == 0 and aggregate(db).n == 7


def test_groups_are_separate_by_precision_and_gpu_count(client, keys, db):
    post(client, keys, {"results": [result(value=v) for v in GROUP]})
    other = post(client, keys, result(value=2900.0, gpu_count=2)).json()
    assert other["status"] == "accepted"
    assert aggregate(db, count=2).n == 1 and aggregate(db).n == 10


def test_rejected_results_never_reach_aggregates(client, keys, db):
    post(client, keys, result(value=1e6))
    assert aggregate(db) is None


# ---- reads and admin override -------------------------------------------------------------


def test_list_filters_and_cursor_pagination(client, keys):
    post(client, keys, {"results": [result(value=v) for v in GROUP]})
    post(client, keys, result(gpu="nvidia-rtx-3090", value=900.0), key=keys.other_submitter)
    post(client, keys, result(value=1e7))  # rejected
    assert len(client.get("/results", params={"gpu": "nvidia-rtx-3090"}).json()["items"]) == 1
    assert len(client.get("/results", params={"status": "rejected"}).json()["items"]) == 1
    other = keys.other_submitter.split("_")[1]
    mine = client.get("/results", params={"submitter": other}).json()["items"]
    assert [r["gpu"] for r in mine] == ["nvidia-rtx-3090"]
    seen, cursor = [], None
    while True:
        page = client.get("/results", params={"limit": 4} | ({"cursor": cursor} if cursor else {}))
        seen += [r["id"] for r in page.json()["items"]]
        cursor = page.json()["next_cursor"]
        if not cursor:
            break
    assert len(seen) == len(set(seen)) == 12
    assert client.get("/results/999999").status_code == 404
    assert client.get("/results", params={"status": "weird"}).status_code == 422


def test_admin_override_is_audited_locked_and_feeds_aggregates(client, keys, db):
    post(client, keys, {"results": [result(value=v) for v in GROUP]})
    outlier_id = post(client, keys, result(value=4200.0)).json()["id"]
    change = {"status": "verified", "reason": "rerun on a liquid-cooled card, confirmed"}
    denied = client.patch(f"/results/{outlier_id}", json=change, headers=keys.auth(keys.submitter))
    assert denied.status_code == 403
    patched = client.patch(f"/results/{outlier_id}", json=change, headers=keys.auth(keys.admin))
    assert patched.status_code == 200
    assert patched.json()["status"] == "verified" and patched.json()["status_locked"]
    assert aggregate(db).n == 11
    post(client, keys, {"results": [result(value=v) for v in GROUP]})  # group changes again
    assert client.get(f"/results/{outlier_id}").json()["status"] == "verified"
    with Session(db) as session:
        audit = session.exec(select(ResultAudit)).one()
    assert (audit.old_status, audit.new_status) == ("outlier", "verified")
    assert audit.reason == change["reason"]
    missing = client.patch("/results/999999", json=change, headers=keys.auth(keys.admin))
    assert missing.status_code == 404


def test_admin_catalog_writes(client, keys):
    admin = keys.auth(keys.admin)
    gpu = client.get("/gpus/nvidia-rtx-4090").json() | {"slug": "nvidia-rtx-4090-test"}
    del gpu["calibration"]  # read-only detail, not part of a GPU's specs
    created = client.post("/gpus", json=gpu, headers=admin)
    assert created.status_code == 201
    assert client.post("/gpus", json=gpu, headers=admin).status_code == 409
    patched = client.patch("/gpus/nvidia-rtx-4090-test", json={"tdp_w": 400}, headers=admin)
    assert patched.json()["tdp_w"] == 400 and patched.json()["memory_gb"] == 24
    bad = client.patch("/gpus/nvidia-rtx-4090-test", json={"memory_gb": -1}, headers=admin)
    assert bad.status_code == 422
    assert client.patch("/gpus/nope-gpu", json={"tdp_w": 1}, headers=admin).status_code == 404
    workload = {
        "slug": "whisper-train",
        "name": "Whisper",
        "unit": "samples/s",
        "precision": "bf16",
        "min_memory_gb": 24,
    }
    assert client.post("/workloads", json=workload, headers=admin).status_code == 201
    price = {
        "gpu": "nvidia-rtx-4090",
        "usd": 1899.0,
        "condition": "new",
        "source": "example-shop",
        "observed_at": "2026-11-20",
    }
    assert client.post("/prices", json=price, headers=admin).status_code == 201
    raw = json.dumps(price | {"usd": math.inf})  # Infinity literal: JSON clients can send it
    bad_price = client.post(
        "/prices", content=raw, headers=admin | {"Content-Type": "application/json"}
    )
    assert bad_price.status_code == 422
    listed = client.get("/prices", params={"gpu": "nvidia-rtx-4090"}).json()["items"]
    sources = [p["source"] for p in listed]
    assert sources[0] == "example-shop" and "msrp" in sources  # newest first
    cloud = {"gpu": "nvidia-rtx-4090", "condition": "cloud", "usd_per_hour": 0.69}
    cloud |= {"provider": "example-cloud", "source": "price page", "observed_at": "2026-11-21"}
    assert client.post("/prices", json=cloud, headers=admin).status_code == 201
    assert client.post("/prices", json=cloud | {"usd": 1.0}, headers=admin).status_code == 422
    assert client.post("/prices", json=price | {"provider": "x"}, headers=admin).status_code == 422
    rented = client.get("/prices", params={"gpu": "nvidia-rtx-4090", "condition": "cloud"})
    assert rented.json()["items"][0]["usd_per_hour"] == 0.69


def test_large_groups_judge_new_results_on_stored_stats_and_refresh_as_they_grow(client, keys, db):
    from service.ingest.groups import FULL_PASS_BELOW, REEVALUATE_GROWTH

    base = [1400.0 + (i % 21) * 10 for i in range(100)]  # 1400..1600
    assert len(base) >= FULL_PASS_BELOW
    post(client, keys, {"results": [result(value=v) for v in base]})
    first = aggregate(db)
    assert (first.n, first.evaluated_n) == (100, 100)
    assert first.median == pytest.approx(statistics.median(base))
    # Between full passes: the outlier is judged on the stored statistics, counts move.
    assert post(client, keys, result(value=3000.0)).json()["status"] == "outlier"
    assert post(client, keys, result(value=1600.0)).json()["status"] == "accepted"
    between = aggregate(db)
    assert (between.n, between.stats_n, between.evaluated_n) == (101, 102, 100)
    assert between.median == first.median
    # Growing past REEVALUATE_GROWTH x the last pass re-evaluates the whole group exactly.
    more = [1700.0] * int(100 * (REEVALUATE_GROWTH - 1) + 1)
    post(client, keys, {"results": [result(value=v) for v in more]})
    after = aggregate(db)
    accepted = [
        r["value"]
        for r in client.get("/results", params={"status": "accepted", "limit": 500}).json()["items"]
    ]
    assert after.evaluated_n == after.stats_n == 102 + len(more)
    assert after.n == len(accepted)
    assert after.median == pytest.approx(statistics.median(accepted))
