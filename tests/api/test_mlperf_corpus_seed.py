"""MLPerf on a real database (SQLite, or Postgres with GPU_ADVISOR_TEST_DATABASE_URL): the
`mlperf` import path (parser -> resolver -> gate) and the shipped corpus through the seed.

The import is exercised through `read_import`, the function POST /results?format=... and
`gpu-advisor import` call; ImportFailed is answered 422 by the API's InvalidInput handler.
"""

from pathlib import Path

import pytest
from sqlmodel import Session, col, select

from service.auth import create_api_key
from service.catalog.corpus import load_corpus
from service.catalog.peaks import peak_rates
from service.catalog.seed_results import seed_results
from service.core.errors import InvalidInput
from service.domain.plausibility import implied_tflops, peak_tflops
from service.ingest.gate import store_results
from service.ingest.importers.base import ImportFailed
from service.ingest.importers.convert import read_import
from service.models import Gpu, Result, Workload

FIXTURES = Path(__file__).parent.parent / "fixtures" / "mlperf"


def _import(db, name: str):
    text = (FIXTURES / name).read_text(encoding="utf-8")
    with Session(db) as s:
        items, provenance = read_import(s, "mlperf", text)
        submitter, _secret = create_api_key(s, "lab-mlperf", "submitter")
        outcomes = store_results(s, items, submitter, provenance)
        s.commit()
    return items, outcomes


def test_checker_csv_is_stored_with_gpu_counts_and_provenance(db):
    items, outcomes = _import(db, "summary_v5.1.csv")
    assert len(items) == 8  # 10 rows: the power row and the inferred row are skipped
    assert [o.status for o in outcomes] == ["accepted"] * 8
    by_gpu = {(i.gpu, i.workload) for i in items}
    assert ("amd-mi300x", "mlperf-llama2-70b-interactive") in by_gpu
    assert ("nvidia-gb200", "mlperf-llama2-70b-offline") in by_gpu
    with Session(db) as s:
        stored = s.exec(select(Result).where(col(Result.importer) == "mlperf")).all()
    assert {r.gpu_count for r in stored} == {4, 8}
    assert all(r.device_string and r.system for r in stored)
    assert {r.precision for r in stored} == {"fp8", "fp4"}


def test_garbage_copy_is_rejected_by_the_physics_gate(db):
    _items, outcomes = _import(db, "garbage.csv")
    assert outcomes and all(o.status == "rejected" for o in outcomes)
    assert {o.reason for o in outcomes} == {"exceeds_peak"}


def test_unknown_accelerator_is_refused_quoting_it_with_suggestions(db):
    """A real v5.1 row of an RTX 4000 Ada, against a catalog without that card (the shipped
    catalog has it since the llama.cpp data arrived, so the test takes it out)."""
    with Session(db) as s:
        card = s.exec(select(Gpu).where(Gpu.slug == "nvidia-rtx-4000-ada")).first()
        if card is not None:
            s.delete(card)
            s.commit()
    text = (FIXTURES / "unknown_accelerator.csv").read_text(encoding="utf-8")
    with Session(db) as s, pytest.raises(ImportFailed) as err:
        read_import(s, "mlperf", text)
    assert isinstance(err.value, InvalidInput)  # the API answers these 422
    devices = [e for e in err.value.errors if e["type"] == "unknown_device"]
    assert devices and devices[0]["device"] == "NVIDIA RTX 4000 Ada PCIe"
    assert "NVIDIA RTX 4000 Ada PCIe" in devices[0]["msg"] and devices[0]["suggestions"]
    workloads = [e for e in err.value.errors if e["type"] == "unknown_workload"]
    assert workloads and workloads[0]["workload"] == "mlperf-retinanet-offline"
    with Session(db) as s:  # nothing stored
        assert not s.exec(select(Result.id)).all()


def _mlperf_rows():
    return load_corpus({"mlperf": "mlperf_results.csv"})


def test_seed_loads_every_mlperf_row_through_the_gate_once(db):
    rows = _mlperf_rows()
    with Session(db) as s:
        report = seed_results(s, rows)
        s.commit()
    assert report.stored == len(rows) and not report.invalid
    assert not report.skipped_gpu and not report.skipped_workload
    assert report.statuses["rejected"] == 0 and report.statuses["accepted"] > 0.8 * len(rows)
    with Session(db) as s:
        again = seed_results(s, rows)
        s.commit()
    assert again.stored == 0 and again.already == len(rows)


def test_amd_instinct_is_measured_on_the_mlperf_workloads_below_peak(db):
    with Session(db) as s:
        seed_results(s, _mlperf_rows())
        s.commit()
        found = s.exec(
            select(Result, Gpu, Workload)
            .join(Gpu, col(Gpu.id) == Result.gpu_id)
            .join(Workload, col(Workload.id) == Result.workload_id)
            .where(col(Workload.slug).startswith("mlperf-"))
        ).all()
    instinct = {
        (g.slug, w.slug)
        for r, g, w in found
        if g.stack == "rocm-instinct" and r.status == "accepted"
    }
    assert ("amd-mi300x", "mlperf-llama2-70b-offline") in instinct
    assert ("amd-mi325x", "mlperf-llama2-70b-server") in instinct
    assert ("amd-mi355x", "mlperf-llama2-70b-lora-train") in instinct
    assert any(r.gpu_count == 1 for r, g, _w in found if g.slug == "amd-mi300x")
    assert {r.gpu_count for r, _g, _w in found} >= {1, 4, 8, 16, 32, 64}
    for r, g, w in found:
        assert w.flops_per_unit is not None
        implied = implied_tflops(r.value, w.flops_per_unit, r.gpu_count)
        assert implied < peak_tflops(peak_rates(g), r.precision), (g.slug, w.slug, r.value)
