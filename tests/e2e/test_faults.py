"""Faults with real processes: Postgres stopped under ingestion, a client that disconnects
mid-body, and two API processes plus two agents on one database."""

import socket
import threading
import time

import httpx
import pytest
from sqlmodel import Session, col, func, select

from service.auth import create_api_key
from service.catalog.seed import seed
from service.core.db import make_engine
from service.hosts.lifecycle import register_host
from service.models import Calibration, Job, Result
from tests.conftest import drop_database, new_database_url
from tests.e2e.postgres_cluster import PostgresCluster
from tests.e2e.servers import run_cli, running_server, start_agent, wait_for

pytestmark = pytest.mark.e2e


def batch(tag: str, n: int = 50) -> dict:
    return {
        "results": [
            {
                "gpu": "nvidia-rtx-4090",
                "workload": "resnet50-train",
                "value": 1400.0 + i % 40,
                "precision": "fp16",
                "framework": "pytorch",
                "notes": tag,
            }
            for i in range(n)
        ]
    }


def rows_by_tag(engine) -> dict[str, int]:
    with Session(engine) as session:
        query = select(Result.notes, func.count()).group_by(Result.notes)
        return {tag: n for tag, n in session.exec(query).all()}


@pytest.fixture
def private_postgres():
    cluster = PostgresCluster()
    cluster.start()
    cluster.wait_ready()
    try:
        yield cluster
    finally:
        cluster.destroy()


def prepared(url: str) -> tuple[object, str]:
    run_cli(url, "migrate")
    engine = make_engine(url)
    seed(engine, results=False)  # the tests count what they post
    with Session(engine) as session, session.begin():
        key = create_api_key(session, "lab", "submitter")[1]
    return engine, key


def test_postgres_outage_answers_503_writes_nothing_half_and_recovers(private_postgres):
    engine, key = prepared(private_postgres.url)
    auth = {"Authorization": f"Bearer {key}"}
    with (
        running_server(private_postgres.url) as base,
        httpx.Client(base_url=base, headers=auth, timeout=30) as http,
    ):
        assert http.post("/results", json=batch("before")).status_code == 201
        answers: dict[str, int] = {}
        errors: list[str] = []
        stop = threading.Event()

        def keep_writing() -> None:  # a lab machine that does not know about the outage
            n = 0
            while not stop.is_set():
                tag = f"during-{n}"
                try:
                    response = http.post(
                        "/results", json=batch(tag), headers={"Idempotency-Key": tag}
                    )
                    answers[tag] = response.status_code
                except httpx.TransportError as exc:
                    answers[tag] = -1
                    errors.append(f"{tag}: {type(exc).__name__}: {exc}")
                n += 1

        writer = threading.Thread(target=keep_writing)
        writer.start()
        time.sleep(0.5)
        private_postgres.stop()
        time.sleep(1.5)
        down = http.post("/results", json=batch("down"), headers={"Idempotency-Key": "down"})
        ready = http.get("/readyz")
        health = http.get("/healthz")
        private_postgres.start()
        private_postgres.wait_ready()
        deadline = time.monotonic() + 30
        while http.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline, "service did not recover by itself"
            time.sleep(0.2)
        time.sleep(0.5)
        stop.set()
        writer.join(timeout=60)
        retry = http.post("/results", json=batch("down"), headers={"Idempotency-Key": "down"})

    assert down.status_code == 503 and down.headers.get("Retry-After")
    assert ready.status_code == 503 and health.status_code == 200
    assert retry.status_code == 201
    assert set(answers.values()) <= {201, 503}, errors
    assert 503 in answers.values() and 201 in answers.values()
    stored = rows_by_tag(engine)
    for tag, status in answers.items():  # all or nothing, and acknowledged means stored
        assert stored.get(tag, 0) in (0, 50), (tag, stored.get(tag))
        if status == 201:
            assert stored.get(tag) == 50, tag
    assert stored["before"] == 50 and stored["down"] == 50
    engine.dispose()


def test_a_client_that_disconnects_mid_batch_leaves_nothing(tmp_path):
    url = new_database_url(str(tmp_path))
    try:
        engine, key = prepared(url)
        body = httpx.Request("POST", "http://x/results", json=batch("cut", 500)).content
        with running_server(url) as base:
            port = int(base.rsplit(":", 1)[1])
            with socket.create_connection(("127.0.0.1", port)) as sock:
                head = (
                    f"POST /results HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n"
                ).encode()
                sock.sendall(head + body[: len(body) // 2])
                time.sleep(0.3)
            time.sleep(0.5)
            whole = httpx.post(
                f"{base}/results", json=batch("whole"), headers={"Authorization": f"Bearer {key}"}
            )
        assert whole.status_code == 201
        assert rows_by_tag(engine) == {"whole": 50}
        engine.dispose()
    finally:
        drop_database(url)


def test_two_api_processes_and_two_agents_lose_and_duplicate_nothing(tmp_path):
    url = new_database_url(str(tmp_path))
    try:
        engine, key = prepared(url)
        with Session(engine) as session, session.begin():
            tokens = [register_host(session, f"cpu-{i}", 86400)[1] for i in range(2)]
        env = {"GPU_ADVISOR_AGENT_POLL_S": "1"}
        with running_server(url, **env) as one, running_server(url, **env) as two:
            agents = [
                start_agent(base, token, tmp_path / f"a{i}.log")
                for i, (base, token) in enumerate(zip((one, two), tokens, strict=True))
            ]
            ids: list[int] = []
            lock = threading.Lock()

            def write(base: str, name: str) -> None:
                with httpx.Client(
                    base_url=base, timeout=60, headers={"Authorization": f"Bearer {key}"}
                ) as http:
                    for n in range(5):
                        response = http.post("/results", json=batch(f"{name}-{n}", 100))
                        assert response.status_code == 201, response.text
                        with lock:
                            ids.extend(o["id"] for o in response.json()["results"])

            writers = [
                threading.Thread(target=write, args=(b, n)) for b, n in ((one, "one"), (two, "two"))
            ]
            for w in writers:
                w.start()
            for w in writers:
                w.join()
            try:
                wait_for(lambda: _count(engine, Calibration) == 2, timeout=60)
            finally:
                for agent in agents:
                    agent.terminate()
                    agent.wait(timeout=30)
        assert len(ids) == len(set(ids)) == 1000 == _count(engine, Result)
        with Session(engine) as session:
            jobs = session.exec(select(Job.status, Job.attempts)).all()
            assert sorted(jobs) == [("done", 1), ("done", 1)]
            cal_jobs = session.exec(select(Calibration.job_id)).all()
            assert len(set(cal_jobs)) == 2
            assert (
                session.exec(
                    select(func.count()).select_from(Result).where(col(Result.status) == "accepted")
                ).one()
                == 1000
            )
        engine.dispose()
    finally:
        drop_database(url)


def _count(engine, model) -> int:
    with Session(engine) as session:
        return session.exec(select(func.count()).select_from(model)).one()
