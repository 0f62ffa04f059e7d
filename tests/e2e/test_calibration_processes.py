"""Calibration with real processes on loopback: uvicorn and CPU agents (`gpu-advisor agent
--device cpu`), killed, restarted and stopped the ways real hosts are."""

import signal
import time

import pytest
from sqlmodel import Session, select

from service.auth import create_api_key
from service.catalog.seed import seed
from service.core.db import make_engine
from service.hosts.lifecycle import register_host
from service.models import Calibration, Job
from tests.conftest import drop_database, new_database_url
from tests.e2e.servers import free_port, run_cli, running_server, start_agent, wait_for

pytestmark = pytest.mark.e2e
SERVER_ENV = {"GPU_ADVISOR_JOB_LEASE_S": "2", "GPU_ADVISOR_AGENT_POLL_S": "1"}


@pytest.fixture
def database(tmp_path):
    url = new_database_url(str(tmp_path))
    run_cli(url, "migrate")
    engine = make_engine(url)
    seed(engine, results=False)  # the tests count what they post
    with Session(engine) as session, session.begin():
        create_api_key(session, "ops", "admin")
    try:
        yield url, engine
    finally:
        engine.dispose()
        drop_database(url)


def new_host(engine, name: str) -> str:
    with Session(engine) as session, session.begin():
        return register_host(session, name, 86400)[1]


def jobs(engine) -> list[Job]:
    with Session(engine) as session:
        return list(session.exec(select(Job).order_by(Job.id)).all())


def calibrations(engine) -> list[Calibration]:
    with Session(engine) as session:
        return list(session.exec(select(Calibration)).all())


def test_two_agents_calibrate_once_each_and_stop_cleanly_on_sigterm(database, tmp_path):
    url, engine = database
    tokens = [new_host(engine, "cpu-a"), new_host(engine, "cpu-b")]
    with running_server(url, **SERVER_ENV) as base:
        agents = [start_agent(base, t, tmp_path / f"agent-{i}.log") for i, t in enumerate(tokens)]
        try:
            wait_for(lambda: len(calibrations(engine)) == 2)
            time.sleep(2)  # several more polls: nothing is due, nothing runs again
            for agent in agents:
                agent.send_signal(signal.SIGTERM)
            codes = [agent.wait(timeout=30) for agent in agents]
        finally:
            for agent in agents:
                agent.kill() if agent.poll() is None else None
    assert codes == [0, 0]
    done = jobs(engine)
    assert [(j.status, j.attempts) for j in done] == [("done", 1), ("done", 1)]
    cals = calibrations(engine)
    assert sorted(c.job_id for c in cals) == [j.id for j in done]
    assert all(c.device == "cpu" and c.gpu_id is None and c.fp32_tflops > 0 for c in cals)


def test_killed_agent_leaves_a_lease_that_expires_and_another_run_finishes(database, tmp_path):
    url, engine = database
    token = new_host(engine, "cpu-a")
    with running_server(url, **SERVER_ENV) as base:
        first = start_agent(base, token, tmp_path / "first.log")
        try:
            wait_for(lambda: any(j.status == "running" for j in jobs(engine)))
            first.kill()  # SIGKILL mid-job: no result, no failure report
            first.wait(timeout=10)
        finally:
            first.kill() if first.poll() is None else None
        assert calibrations(engine) == [] and jobs(engine)[0].status == "running"
        second = start_agent(base, token, tmp_path / "second.log")
        try:
            wait_for(lambda: len(calibrations(engine)) == 1)
            second.send_signal(signal.SIGTERM)
            assert second.wait(timeout=30) == 0
        finally:
            second.kill() if second.poll() is None else None
    [job] = jobs(engine)
    assert (job.status, job.attempts) == ("done", 2)


def test_server_restart_during_a_run_loses_nothing(database, tmp_path):
    url, engine = database
    token = new_host(engine, "cpu-a")
    port = free_port()
    env = SERVER_ENV | {"GPU_ADVISOR_JOB_LEASE_S": "60"}
    log = tmp_path / "agent.log"
    with running_server(url, port, **env) as base:
        agent = start_agent(base, token, log)
        wait_for(lambda: any(j.status == "running" for j in jobs(engine)))
    try:
        # The server is down while the agent measures; it must retry until it is back.
        wait_for(lambda: "retrying" in log.read_text(), timeout=60)
        assert calibrations(engine) == []
        with running_server(url, port, **env):
            wait_for(lambda: len(calibrations(engine)) == 1)
            agent.send_signal(signal.SIGTERM)
            assert agent.wait(timeout=30) == 0
    finally:
        agent.kill() if agent.poll() is None else None
    [job] = jobs(engine)
    assert (job.status, job.attempts) == ("done", 1)
