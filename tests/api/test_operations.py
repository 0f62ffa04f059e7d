"""Operating the service: write rate limits shared across processes, request ids, metrics,
JSON access logs that never carry a secret."""

import json
import logging

from fastapi.testclient import TestClient

from service.core.observability import JsonFormatter
from service.main import create_app

RESULT = {
    "gpu": "nvidia-rtx-4090",
    "workload": "resnet50-train",
    "value": 1500.0,
    "precision": "fp16",
    "framework": "pytorch",
}


def test_writes_over_the_limit_get_429_with_retry_after_in_every_process(db, settings, keys):
    limited = settings.model_copy(update={"write_rate_limit": 3, "rate_window_s": 3600})
    headers = keys.auth(keys.submitter)
    # Two app instances = two API processes sharing one database.
    with TestClient(create_app(limited)) as one, TestClient(create_app(limited)) as two:
        assert one.post("/results", json=RESULT, headers=headers).status_code == 201
        assert two.post("/results", json=RESULT, headers=headers).status_code == 201
        assert one.post("/results", json={}, headers=headers).status_code == 422  # counts too
        refused = two.post("/results", json=RESULT, headers=headers)
        assert refused.status_code == 429
        assert 0 < int(refused.headers["Retry-After"]) <= 3600
        assert one.get("/results").status_code == 200  # reads are never limited
        other = one.post("/results", json=RESULT, headers=keys.auth(keys.other_submitter))
        assert other.status_code == 201  # the limit is per key
        assert len(one.get("/results").json()["items"]) == 3


def test_request_id_is_echoed_or_made(client):
    mine = client.get("/healthz", headers={"X-Request-ID": "lab-run-42"})
    assert mine.headers["X-Request-ID"] == "lab-run-42"
    made = client.get("/healthz", headers={"X-Request-ID": "bad id with spaces\x01"})
    assert made.headers["X-Request-ID"] != "bad id with spaces\x01"
    assert made.headers["X-Request-ID"] != client.get("/healthz").headers["X-Request-ID"]


def test_metrics_count_requests_results_and_calibrations(client, keys):
    client.post(
        "/results",
        json={"results": [RESULT, RESULT | {"value": 1e7}]},
        headers=keys.auth(keys.submitter),
    )
    client.get("/gpus/nvidia-rtx-4090")
    client.get("/gpus/nope")
    text = client.get("/metrics").text
    assert 'gpu_advisor_results_ingested_total{status="accepted"} 1.0' in text
    assert 'gpu_advisor_results_ingested_total{status="rejected"} 1.0' in text
    assert (
        'gpu_advisor_http_requests_total{method="GET",route="/gpus/{slug}",status="404"} 1.0'
        in text
    )
    assert (
        'gpu_advisor_http_request_duration_seconds_bucket{le="0.005",route="/gpus/{slug}"}' in text
    )
    assert "gpu_advisor_calibrations_total" in text


def test_access_log_lines_are_json_with_the_request_id_and_no_secrets(client, keys, caplog):
    caplog.set_level(logging.INFO, logger="gpu_advisor.access")
    response = client.post(
        "/results", json=RESULT, headers=keys.auth(keys.submitter) | {"X-Request-ID": "req-7"}
    )
    assert response.status_code == 201
    [record] = [r for r in caplog.records if r.name == "gpu_advisor.access"]
    line = JsonFormatter().format(record)
    entry = json.loads(line)
    assert entry["request_id"] == "req-7" and entry["level"] == "info"
    assert (entry["method"], entry["route"], entry["status"]) == ("POST", "/results", 201)
    secret = keys.submitter.split("_", 2)[2]  # gpa_<prefix>_<secret>; the secret may hold "_"
    assert secret and keys.submitter not in line and secret not in caplog.text
