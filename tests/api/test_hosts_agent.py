"""Hosts and the agent protocol through the app on a real database: registration, auth
separation, due logic, leases and attempts, result idempotency and the calibration gate."""

from datetime import timedelta

import pytest
from sqlmodel import Session, select

from service.models import Host, Job, utcnow

RTX_4090 = {
    "name": "NVIDIA GeForce RTX 4090",
    "uuid": "GPU-1234",
    "memory_gb": 23.99,
    "driver": "550.54",
    "cuda": "12.4",
    "torch": "2.4.0",
}


def identity(device="cuda", **gpu):
    return {
        "hostname": "lab-gpu-1",
        "device": device,
        "gpus": [RTX_4090 | gpu],
        "agent_version": "0.1.0",
    }


def report(fp16=150.0, fp32=70.0, iqr=1.0, device="cuda", **extra):
    return {
        "device": device,
        "device_name": RTX_4090["name"],
        "matmul": [
            {
                "dtype": "fp16",
                "m": 8192,
                "n": 8192,
                "k": 8192,
                "repeats": 50,
                "tflops_median": fp16,
                "tflops_iqr": iqr,
            },
            {
                "dtype": "fp32",
                "m": 8192,
                "n": 8192,
                "k": 8192,
                "repeats": 50,
                "tflops_median": fp32,
                "tflops_iqr": iqr,
            },
        ],
        "bandwidth_gbs": 900.0,
        "h2d_gbs": 25.0,
        "stack": {"torch": "2.4.0", "cuda": "12.4"},
        "duration_s": 60.0,
    } | extra


@pytest.fixture
def host(client, keys):
    response = client.post("/hosts", json={"name": "lab-gpu-1"}, headers=keys.auth(keys.admin))
    assert response.status_code == 201
    body = response.json()
    return body["id"], {"Authorization": f"Bearer {body['token']}"}


def run_job(client, headers, body=None):
    assert client.post("/agent/heartbeat", json=identity(), headers=headers).status_code == 200
    job = client.post("/agent/jobs/claim", headers=headers)
    assert job.status_code == 200, job.text
    result = client.post(
        f"/agent/jobs/{job.json()['id']}/result", json=body or report(), headers=headers
    )
    return job.json(), result


def test_registration_shows_the_token_once_and_stores_only_its_hash(client, keys, db, host):
    host_id, headers = host
    token = headers["Authorization"].split()[1]
    listing = client.get("/hosts", headers=keys.auth(keys.admin))
    assert listing.status_code == 200 and token not in listing.text
    assert listing.json()["items"][0]["state"] == "pending"
    with Session(db) as session:
        stored = session.get(Host, host_id)
    assert token not in (stored.token_sha256, stored.token_prefix)
    assert client.get("/hosts", headers=keys.auth(keys.submitter)).status_code == 403
    dup = client.post("/hosts", json={"name": "lab-gpu-1"}, headers=keys.auth(keys.admin))
    assert dup.status_code == 409


def test_host_tokens_and_api_keys_do_not_cross(client, keys, host):
    _, headers = host
    assert client.get("/hosts", headers=headers).status_code == 401
    assert client.post("/results", json={}, headers=headers).status_code == 401
    assert (
        client.post("/agent/heartbeat", json=identity(), headers=keys.auth(keys.admin)).status_code
        == 401
    )
    assert client.post("/agent/jobs/claim").status_code == 401


def test_new_host_is_due_and_one_claim_holds_the_lease(client, host):
    _, headers = host
    beat = client.post("/agent/heartbeat", json=identity(), headers=headers).json()
    assert beat["job_due"] is True
    job = client.post("/agent/jobs/claim", headers=headers).json()
    assert (job["status"], job["reason"], job["attempts"]) == ("running", "never", 1)
    assert client.post("/agent/jobs/claim", headers=headers).status_code == 204


def test_accepted_gpu_calibration_sets_efficiency_everywhere(client, keys, host):
    _host_id, headers = host
    _job, result = run_job(client, headers)
    assert result.status_code == 201
    body = result.json()
    assert (body["status"], body["gpu"], body["device"]) == ("accepted", "nvidia-rtx-4090", "cuda")
    assert body["efficiency"]["fp16"] == pytest.approx(150 / 165.2)
    gpu = client.get("/gpus/nvidia-rtx-4090").json()
    assert gpu["calibration"]["id"] == body["id"]
    assert client.get("/calibrations", params={"gpu": "nvidia-rtx-4090"}).json()["items"]
    # The estimator uses effective = spec x efficiency: with nothing measured, a 4090's
    # roofline estimate drops by exactly that efficiency.
    rows = {
        r["gpu"]: r
        for r in client.get(
            "/rankings", params={"workload": "resnet50-train", "min_memory_gb": 0}
        ).json()["items"]
    }
    prior = 165.2e12 * 0.35 / 2.45e10
    assert rows["nvidia-rtx-4090"]["throughput"] == pytest.approx(prior * 150 / 165.2)
    hosts = client.get("/hosts", headers=keys.auth(keys.admin)).json()["items"]
    assert hosts[0]["state"] == "healthy" and hosts[0]["gpu"] == "nvidia-rtx-4090"
    assert hosts[0]["last_calibration"]["id"] == body["id"] and hosts[0]["open_job"] is None


def test_results_are_idempotent_per_job(client, db, host):
    _, headers = host
    job, first = run_job(client, headers)
    again = client.post(f"/agent/jobs/{job['id']}/result", json=report(fp16=10.0), headers=headers)
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    assert again.json()["fp16_tflops"] == 150.0
    assert len(client.get("/calibrations").json()["items"]) == 1


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (report(fp16=190.0), "exceeds_peak:fp16"),  # > 1.10 x 165.2
        (report(fp16=150.0, iqr=50.0), "noisy"),
    ],
)
def test_implausible_or_noisy_runs_are_stored_rejected_and_never_applied(
    client, host, body, reason
):
    _, headers = host
    _, result = run_job(client, headers, body)
    assert result.status_code == 201
    assert result.json()["status"] == "rejected" and result.json()["reason"].startswith(reason)
    assert client.get("/gpus/nvidia-rtx-4090").json()["calibration"] is None


def test_garbage_and_oversized_results_are_refused(client, host):
    _, headers = host
    client.post("/agent/heartbeat", json=identity(), headers=headers)
    job = client.post("/agent/jobs/claim", headers=headers).json()
    url = f"/agent/jobs/{job['id']}/result"
    bad = client.post(url, json=report() | {"bandwidth_gbs": -1}, headers=headers)
    assert bad.status_code == 422 and "bandwidth_gbs" in bad.text
    nan = client.post(
        url,
        content=b'{"device": "cuda", "bandwidth_gbs": NaN}',
        headers=headers | {"Content-Type": "application/json"},
    )
    assert nan.status_code == 422
    huge = report() | {"device_name": "x" * 2_000_000}
    assert client.post(url, json=huge, headers=headers).status_code == 413
    assert (
        client.post("/agent/jobs/99999/result", json=report(), headers=headers).status_code == 404
    )
    assert client.get("/calibrations").json()["items"] == []


def test_cpu_runs_are_stored_but_never_applied(client, host):
    _, headers = host
    cpu = identity(device="cpu", name="Intel(R) Xeon(R) Processor", uuid=None)
    client.post("/agent/heartbeat", json=cpu, headers=headers)
    job = client.post("/agent/jobs/claim", headers=headers).json()
    result = client.post(
        f"/agent/jobs/{job['id']}/result", json=report(fp16=1e5, device="cpu"), headers=headers
    ).json()
    assert result["device"] == "cpu" and result["gpu"] is None and result["efficiency"] == {}
    assert client.get("/gpus/nvidia-rtx-4090").json()["calibration"] is None


def test_due_again_on_request_on_stack_change_and_after_the_interval(client, keys, db, host):
    host_id, headers = host
    run_job(client, headers)
    beat = client.post("/agent/heartbeat", json=identity(), headers=headers).json()
    assert beat["job_due"] is False
    asked = client.post(f"/hosts/{host_id}/calibrate", headers=keys.auth(keys.admin))
    assert asked.status_code == 202 and asked.json()["open_job"]["reason"] == "requested"
    job = client.post("/agent/jobs/claim", headers=headers).json()
    client.post(f"/agent/jobs/{job['id']}/result", json=report(), headers=headers)

    new_driver = identity(driver="560.28")
    assert client.post("/agent/heartbeat", json=new_driver, headers=headers).json()["job_due"]
    job = client.post("/agent/jobs/claim", headers=headers).json()
    assert job["reason"] == "stack_changed"
    client.post(f"/agent/jobs/{job['id']}/result", json=report(), headers=headers)
    assert not client.post("/agent/heartbeat", json=new_driver, headers=headers).json()["job_due"]

    with Session(db) as session:  # the last run was a day ago
        from service.models import Calibration

        for cal in session.exec(select(Calibration)).all():
            cal.created_at = utcnow() - timedelta(days=1, seconds=1)
            session.add(cal)
        session.commit()
    assert client.post("/agent/heartbeat", json=new_driver, headers=headers).json()["job_due"]
    assert client.post("/agent/jobs/claim", headers=headers).json()["reason"] == "interval"


def expire_leases(db):
    with Session(db) as session:
        for job in session.exec(select(Job).where(Job.status == "running")).all():
            job.lease_expires_at = utcnow() - timedelta(seconds=1)
            session.add(job)
        session.commit()


def test_expired_leases_are_reclaimed_up_to_three_attempts_then_failing(client, keys, db, host):
    host_id, headers = host
    client.post("/agent/heartbeat", json=identity(), headers=headers)
    for attempt in (1, 2, 3):
        job = client.post("/agent/jobs/claim", headers=headers).json()
        assert job["attempts"] == attempt
        expire_leases(db)  # the agent died mid-job
    assert client.post("/agent/jobs/claim", headers=headers).status_code == 204
    state = client.get("/hosts", headers=keys.auth(keys.admin)).json()["items"][0]
    assert state["state"] == "failing" and state["open_job"] is None
    # A failing host waits for an admin; asking starts a fresh job.
    assert not client.post("/agent/heartbeat", json=identity(), headers=headers).json()["job_due"]
    client.post(f"/hosts/{host_id}/calibrate", headers=keys.auth(keys.admin))
    assert client.post("/agent/jobs/claim", headers=headers).json()["attempts"] == 1


def test_reported_failures_retry_then_give_up(client, keys, host):
    _, headers = host
    client.post("/agent/heartbeat", json=identity(), headers=headers)
    for attempt in (1, 2, 3):
        job = client.post("/agent/jobs/claim", headers=headers).json()
        failed = client.post(
            f"/agent/jobs/{job['id']}/fail", json={"error": "CUDA OOM"}, headers=headers
        ).json()
        assert failed["status"] == ("todo" if attempt < 3 else "failed")
    assert client.get("/hosts", headers=keys.auth(keys.admin)).json()["items"][0]["state"] == (
        "failing"
    )
    late = client.post(f"/agent/jobs/{job['id']}/result", json=report(), headers=headers)
    assert late.status_code == 409


def test_retired_hosts_are_refused(client, keys, host):
    host_id, headers = host
    retired = client.delete(f"/hosts/{host_id}", headers=keys.auth(keys.admin))
    assert retired.status_code == 200 and retired.json()["state"] == "retired"
    assert client.post("/agent/heartbeat", json=identity(), headers=headers).status_code == 401
    assert client.delete(f"/hosts/{host_id}", headers=keys.auth(keys.admin)).status_code == 404


def test_unmapped_devices_are_reported(client, keys, host):
    _, headers = host
    odd = identity(name="Mystery Accelerator X", memory_gb=40)
    client.post("/agent/heartbeat", json=odd, headers=headers)
    row = client.get("/hosts", headers=keys.auth(keys.admin)).json()["items"][0]
    assert row["gpu"] is None and "no catalog GPU" in row["mapping"]
