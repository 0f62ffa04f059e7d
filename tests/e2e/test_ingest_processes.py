"""Ingestion with real processes on loopback: two concurrent clients against one uvicorn,
and the `gpu-advisor submit` command a lab machine runs (including a rerun)."""

import json
import subprocess
import threading

import httpx
import pytest
from sqlmodel import Session, func, select

from service.auth import create_api_key
from service.catalog.seed import seed
from service.core.db import make_engine
from service.models import Aggregate, Result
from tests.conftest import drop_database, new_database_url
from tests.e2e.servers import CLI, ROOT, cli_env, run_cli, running_server

pytestmark = pytest.mark.e2e


@pytest.fixture
def served(tmp_path):
    """A migrated, seeded scratch database, a submitter key, and a running server."""
    url = new_database_url(str(tmp_path))
    run_cli(url, "migrate")
    engine = make_engine(url)
    seed(engine, results=False)  # the tests count what they post
    with Session(engine) as session, session.begin():
        key = create_api_key(session, "lab", "submitter")[1]
    try:
        with running_server(url) as base:
            yield base, key, engine
    finally:
        engine.dispose()
        drop_database(url)


def lab_result(value: float, gpu: str = "nvidia-rtx-4090") -> dict:
    return {
        "gpu": gpu,
        "workload": "resnet50-train",
        "value": value,
        "precision": "fp16",
        "framework": "pytorch",
        "gpu_count": 1,
    }


def test_two_clients_posting_concurrently_lose_and_duplicate_nothing(served):
    base, key, engine = served
    errors: list[str] = []
    ids: list[int] = []
    lock = threading.Lock()

    def client_loop(offset: float) -> None:
        with httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60
        ) as client:
            for batch_no in range(6):
                batch = [lab_result(1400 + offset + (i % 50)) for i in range(150)]
                response = client.post(
                    "/results",
                    json={"results": batch},
                    headers={"Idempotency-Key": f"{offset}-{batch_no}"},
                )
                if response.status_code != 201:
                    errors.append(f"{response.status_code} {response.text[:200]}")
                    continue
                with lock:
                    ids.extend(o["id"] for o in response.json()["results"])

    threads = [threading.Thread(target=client_loop, args=(o,)) for o in (0.0, 0.5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(ids) == len(set(ids)) == 2 * 6 * 150
    with Session(engine) as session:
        assert session.exec(select(func.count()).select_from(Result)).one() == 1800
        accepted = session.exec(
            select(func.count()).select_from(Result).where(Result.status == "accepted")
        ).one()
        agg = session.exec(select(Aggregate)).one()
    # The aggregate saw every accepted row of both clients: nothing was lost in a race.
    assert agg.n == accepted == 1800


def submit_file(path, base: str, key: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run `gpu-advisor submit` as a lab machine would, in its own process."""
    command = [*CLI, "submit", str(path), "--server", base, "--key", key, *extra]
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=60, env=cli_env("sqlite://")
    )


def count_rows(engine) -> int:
    with Session(engine) as session:
        return session.exec(select(func.count()).select_from(Result)).one()


def test_submit_command_sends_validates_and_is_safe_to_rerun(served, tmp_path):
    base, key, engine = served
    rows = [lab_result(1400 + i) for i in range(25)] + [lab_result(1e7)]
    data = tmp_path / "results.json"
    data.write_text(json.dumps(rows))
    first = submit_file(data, base, key, "--batch-size", "10")
    assert first.returncode == 0, first.stderr
    assert "sent 26 results in 3 batches: 25 accepted, 1 rejected" in first.stdout
    assert "1 x exceeds_peak" in first.stdout
    again = submit_file(data, base, key, "--batch-size", "10")
    assert again.returncode == 0, again.stderr
    assert count_rows(engine) == 26

    csv_file = tmp_path / "results.csv"
    csv_file.write_text(
        "gpu,workload,value,precision,framework,gpu_count,batch_size\n"
        "nvidia-rtx-3090,resnet50-train,1100.5,fp16,pytorch,1,256\n"
        "nvidia-rtx-3090,resnet50-train,1090,fp16,pytorch,1,\n"
    )
    sent = submit_file(csv_file, base, key)
    assert sent.returncode == 0, sent.stderr
    assert "2 accepted" in sent.stdout

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([lab_result(1400), lab_result(-1) | {"gpu_count": 0}]))
    refused = submit_file(bad, base, key)
    assert refused.returncode == 2
    assert "row 1: value" in refused.stderr and "row 1: gpu_count" in refused.stderr
    assert count_rows(engine) == 28
