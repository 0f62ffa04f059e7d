"""Published matmul calibrations (catalog/calibrations.csv) seeded as calibrations of a retired
host, through the same acceptance gate, and read by the estimator."""

import csv
from importlib import resources

import pytest
from sqlmodel import Session, select

from service.catalog.loaders import load_calibrations
from service.catalog.seed_calibrations import SOURCE_HOST, seed_calibrations
from service.models import Calibration, Gpu, Host


@pytest.fixture(autouse=True)
def published(db):
    """The test reset seeds the catalog without measured data; add the calibrations."""
    with Session(db) as session:
        seed_calibrations(session)
        session.commit()


def _rows():
    text = resources.files("service.catalog").joinpath("calibrations.csv").read_text()
    return list(csv.DictReader(text.splitlines()))


def test_every_row_is_sourced_dated_and_names_a_catalog_gpu(db):
    with Session(db) as session:
        slugs = set(session.exec(select(Gpu.slug)).all())
    sources = {
        "public:stas00-mamf": "stas00/ml-engineering@744d01e",
        "public:gpu-advisor-gpu-check": "gpu-advisor bench/gpu_check.sh",
    }
    for row in _rows():
        assert row["gpu"] in slugs
        assert row["source"].startswith(sources[row["host"]])
        assert row["observed_at"] and row["torch_version"]
        assert row["bf16_tflops"] or row["fp8_tflops"]


def test_seeded_as_accepted_runs_of_a_retired_source_host(client):
    body = client.get("/calibrations", params={"limit": 100}).json()
    published = [c for c in body["items"] if c["host"] == SOURCE_HOST]
    assert len(published) == sum(row["host"] == SOURCE_HOST for row in _rows())
    assert all(c["status"] == "accepted" and c["source"] for c in published)
    mi300x = next(c for c in published if c["gpu"] == "amd-mi300x")
    assert mi300x["bf16_tflops"] == 668.4
    assert mi300x["efficiency"]["bf16"] == pytest.approx(668.4 / 1307.4, rel=1e-6)
    # the GPU page shows it as the GPU's calibration
    gpu = client.get("/gpus/amd-mi300x").json()
    assert gpu["calibration"]["host"] == SOURCE_HOST


def test_the_source_hosts_are_never_due_and_take_no_token(db):
    with Session(db) as session:
        for name in {row["host"] for row in _rows()}:
            host = session.exec(select(Host).where(Host.name == name)).one()
            assert host.state == "retired" and host.retired_at is not None


def test_the_newest_source_of_a_gpu_wins_whole(client):
    """The H200 has an FP8-only MAMF row and a newer full agent run; the estimator takes the
    newer run for every dtype rather than mixing two machines' figures."""
    from service.read_model.estimates import MODELS

    rows = [r for r in _rows() if r["gpu"] == "nvidia-h200"]
    newest = max(rows, key=lambda r: r["observed_at"])
    h200 = client.get("/gpus/nvidia-h200").json()
    assert h200["calibration"]["host"] == newest["host"]
    with Session(client.app.state.engine) as session:
        inputs = MODELS.get(session).inputs
    spec = next(g for g in inputs.gpus if g.slug == "nvidia-h200")
    for dtype in ("bf16", "fp8", "tf32"):
        assert spec.calibration[f"tensor:{dtype}"] == pytest.approx(
            float(newest[f"{dtype}_tflops"]) / h200[f"{dtype}_tensor_tflops"], rel=1e-6
        )


def test_reseeding_stores_nothing_twice(db):
    with Session(db) as session:
        before = len(session.exec(select(Calibration)).all())
        assert seed_calibrations(session) == (0, 0)
        session.commit()
        assert len(session.exec(select(Calibration)).all()) == before


def test_a_row_above_the_spec_peak_is_rejected_by_the_gate(db, monkeypatch):
    """The same gate as an agent's run: beyond 1.10 x the spec peak is rejected, not applied."""
    real = load_calibrations()[0]
    inflated = type(real)(**{**real.__dict__, "tflops": {"bf16": 5 * real.tflops["bf16"]}})
    with Session(db) as session:
        gpu = session.exec(select(Gpu).where(Gpu.slug == real.gpu)).one()
        for c in session.exec(select(Calibration).where(Calibration.gpu_id == gpu.id)).all():
            session.delete(c)
        session.commit()
        monkeypatch.setattr(
            "service.catalog.seed_calibrations.load_calibrations", lambda: [inflated]
        )
        assert seed_calibrations(session) == (0, 1)
        stored = session.exec(select(Calibration).where(Calibration.gpu_id == gpu.id)).one()
        assert stored.status == "rejected" and stored.reason.startswith("exceeds_peak:bf16")


def test_estimator_uses_the_calibrated_rate(client, keys):
    """MI300X is credited its measured BF16 matmul rate (51% of the datasheet), not the
    datasheet rate, wherever the model uses its tensor rate."""
    from service.read_model.estimates import MODELS

    with Session(client.app.state.engine) as session:
        inputs = MODELS.get(session).inputs
    spec = next(g for g in inputs.gpus if g.slug == "amd-mi300x")
    assert spec.calibration["tensor:bf16"] == pytest.approx(668.4 / 1307.4, rel=1e-6)
    assert spec.rates("bf16")[0] == pytest.approx(668.4, rel=1e-6)
