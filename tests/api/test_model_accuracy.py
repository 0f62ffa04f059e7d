"""GET /model/accuracy and `gpu-advisor evaluate`: leave-one-GPU-out on the database's results."""

import math
from datetime import UTC, datetime

import pytest
from sqlmodel import Session
from typer.testing import CliRunner

from service.cli import app as cli
from service.domain.evaluation import WorkloadAccuracy
from service.read_model import accuracy
from tests.api.test_recommend import post_results

# Seven GPUs on ResNet-50 (fp16, images/s): enough for a scored workload (5+) and the targets (6+).
MEASURED = {
    "nvidia-rtx-4090": 1500,
    "nvidia-rtx-3090": 810,
    "nvidia-a100-80gb": 2500,
    "nvidia-h100-sxm": 3900,
    "nvidia-rtx-a6000": 900,
    "nvidia-a10": 650,
    "nvidia-l40s": 1400,
}


@pytest.fixture
def measured(client, keys):
    for gpu, value in MEASURED.items():
        post_results(client, keys, gpu, [value * 0.98, value, value * 1.02])


def _ready(client):
    client.app.state.accuracy.wait(300)
    response = client.get("/model/accuracy")
    assert response.status_code == 200, response.text
    return response.json()


def test_first_ask_computes_in_the_background_then_serves_the_report(client, measured, db):
    first = client.get("/model/accuracy")
    assert first.status_code == 202
    assert int(first.headers["Retry-After"]) > 0
    assert first.json()["status"] == "computing" and first.json()["workloads"] == []
    body = _ready(client)
    assert body["status"] == "ready" and body["stale"] is False and body["mode"] == "gpu"
    assert body["data_version"] == body["current_data_version"]
    rows = {w["workload"]: w for w in body["workloads"]}
    assert set(rows) == {"resnet50-train@fp16"}
    row = rows["resnet50-train@fp16"]
    assert row["gpus"] == row["predicted"] == len(MEASURED)
    # The worker process computed exactly what an in-process evaluation of the same data gives.
    with Session(db) as session:
        direct = accuracy.evaluate(session, datetime.now(UTC).date(), 36500)
    (expected,) = direct.workloads
    assert direct.data_version == body["data_version"]
    assert row["mdape"] == pytest.approx(expected.mdape)
    assert row["p90_ape"] == pytest.approx(expected.p90_ape)
    assert row["coverage"] == pytest.approx(expected.coverage)
    assert 0 < row["mdape"] < 1 and 0 <= row["coverage"] <= 1
    assert row["meets_targets"] in (True, False)  # 7 GPUs: judged


def test_new_data_leaves_the_report_marked_stale(client, keys, measured):
    client.get("/model/accuracy")
    before = _ready(client)
    post_results(client, keys, "nvidia-rtx-4080", [1100])
    after = client.get("/model/accuracy")
    assert after.status_code == 200
    body = after.json()
    assert body["stale"] is True
    assert body["data_version"] == before["data_version"] != body["current_data_version"]
    assert body["workloads"] == before["workloads"]  # the old report, said to be old


def test_nothing_to_score_is_an_empty_ready_report(client):
    client.get("/model/accuracy")
    body = _ready(client)
    assert body["workloads"] == [] and body["observations"] == 0


def test_cli_prints_the_table(measured, database_url, monkeypatch):
    monkeypatch.setenv("GPU_ADVISOR_DATABASE_URL", database_url)
    monkeypatch.setenv("GPU_ADVISOR_PRICE_MAX_AGE_DAYS", "36500")
    result = CliRunner().invoke(cli, ["evaluate"])
    assert result.exit_code == 0, result.output
    assert "mode=gpu" in result.output and "resnet50-train@fp16" in result.output
    assert "targets (MdAPE <= 10%" in result.output
    bad = CliRunner().invoke(cli, ["evaluate", "--mode", "sideways"])
    assert bad.exit_code == 2 and "gpu or cell" in bad.output


def _row(mdape=0.05, p90=0.2, coverage=0.8, rho=0.95, gpus=6):
    return WorkloadAccuracy("w", gpus, gpus, mdape, p90, coverage, rho, 4, 0.9)


@pytest.mark.parametrize(
    ("row", "verdict"),
    [
        (_row(), True),
        (_row(mdape=0.11), False),
        (_row(p90=0.26), False),
        (_row(coverage=0.65), False),
        (_row(coverage=0.95), False),  # bands too wide also miss: 70-90%
        (_row(rho=0.85), False),
        (_row(rho=None), True),  # fewer than three priced: nothing to rank, not a failure
        (_row(gpus=5), None),
        (_row(mdape=math.nan, gpus=6), False),
    ],
)
def test_targets_verdict(row, verdict):
    assert accuracy.meets_targets(row) is verdict
