"""Checks on llamacpp_results.csv (llama-bench Llama 2 7B Q4_0 on AMD, Intel, NVIDIA GPUs).

The rows are transcriptions of public llama-bench output (LLAMACPP_MEASURED.md), so these tests
guard what a transcription can get wrong: provenance, the GPU's stack matching the backend that
ran, physics, the importer naming the same workloads, and the CSV being the build tool's output.
"""

from __future__ import annotations

import csv
import datetime as dt
import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

from service.catalog.corpus import CORPUS_FILES, load_corpus
from service.ingest.importers.llama_bench import model_and_quant, workload_name

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "service" / "catalog"


def _rows(name: str) -> list[dict[str, str]]:
    with (CATALOG / name).open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


RESULTS = _rows("llamacpp_results.csv")
WORKLOADS = {w["slug"]: w for w in _rows("llm_workloads.csv")}
GPUS = {g["slug"]: g for g in _rows("gpus.csv")}
# The backend each catalog stack names (gpus.csv `stack`, SOURCES.md): one backend per GPU, so a
# result group (GPU, workload, precision, count) never pools two different code paths.
BACKEND_OF_STACK = {
    "cuda": "CUDA",
    "rocm-instinct": "ROCm",
    "rocm-radeon": "ROCm",
    "oneapi": "SYCL",
    "metal": "Metal",
}
FILE_BYTES = 3.56 * 2**30  # llama-bench size column of llama-2-7b.Q4_0.gguf


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "build_llamacpp_corpus", ROOT / "tools" / "build_llamacpp_corpus.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    return module


def test_the_seed_loads_this_file() -> None:
    assert CORPUS_FILES["llamacpp"] == "llamacpp_results.csv"
    seeded = [r for r in load_corpus() if r.source_key == "llamacpp"]
    assert len(seeded) == len(RESULTS) > 0


@pytest.mark.parametrize(
    "col", ["source", "source_date", "device_string", "framework", "framework_version", "note"]
)
def test_every_row_has_provenance(col: str) -> None:
    assert all(r[col].strip() for r in RESULTS), col


def test_sources_name_a_commit_and_dates_are_past() -> None:
    for r in RESULTS:
        repo_at = r["source"].split(" ", 1)[0]
        assert "/" in repo_at and "@" in repo_at, r["source"]
        assert dt.date.fromisoformat(r["source_date"]) <= dt.date.today()


def test_values_finite_positive_and_rows_unique() -> None:
    for r in RESULTS:
        assert math.isfinite(float(r["value"])) and float(r["value"]) > 0
    keys = [(r["gpu"], r["workload"], r["gpu_count"], r["source"]) for r in RESULTS]
    assert len(keys) == len(set(keys))


def test_workloads_and_gpus_resolve_with_matching_precision() -> None:
    for r in RESULTS:
        assert r["gpu"] in GPUS, r["gpu"]
        assert WORKLOADS[r["workload"]]["precision"] == r["precision"] == "q4_0"


def test_amd_radeon_instinct_and_intel_are_covered() -> None:
    stacks = {GPUS[r["gpu"]]["stack"] for r in RESULTS}
    assert {"rocm-radeon", "rocm-instinct", "oneapi"} <= stacks


def test_backend_is_the_one_the_gpus_stack_names() -> None:
    for r in RESULTS:
        backend = r["framework_version"].rsplit(" ", 1)[-1]
        assert backend == BACKEND_OF_STACK[GPUS[r["gpu"]]["stack"]], r
        assert f"{backend} backend" in r["note"]


def test_decode_below_bandwidth_roofline() -> None:
    checked = 0
    for r in RESULTS:
        if WORKLOADS[r["workload"]]["phase"] != "decode":
            continue
        bandwidth = float(GPUS[r["gpu"]]["memory_bandwidth_gbs"]) * 1e9 * int(r["gpu_count"])
        assert float(r["value"]) * FILE_BYTES <= bandwidth, r
        checked += 1
    assert checked >= 5


def test_prefill_below_the_compute_ceiling() -> None:
    for r in RESULTS:
        w = WORKLOADS[r["workload"]]
        if w["phase"] != "prefill":
            continue
        g = GPUS[r["gpu"]]
        peak = max(
            float(g[c]) for c in ("fp16_tensor_tflops", "fp16_tflops", "fp32_tflops") if g[c]
        )
        implied = float(r["value"]) * float(w["flops_per_unit"]) / int(r["gpu_count"]) / 1e12
        assert implied <= peak, r


def test_the_llama_bench_importer_names_these_workloads() -> None:
    """A scoreboard run posted with ?format=llama-bench lands on the same workloads."""
    for n_prompt, n_gen in ((512, 0), (0, 128)):
        record = {
            "model_type": "llama 7B Q4_0",
            "model_n_params": 6738415616,
            "n_prompt": n_prompt,
            "n_gen": n_gen,
            "n_depth": 0,
        }
        model, quant = model_and_quant(record)
        assert workload_name(record, model, quant) in WORKLOADS
    assert {r["workload"] for r in RESULTS} <= {"llama-2-7b-q4_0-pp512", "llama-2-7b-q4_0-tg128"}


def test_workload_figures_follow_the_stated_derivation() -> None:
    n_params, layers, hidden, kv = 6738415616, 32, 4096, 2 * 32 * 32 * 128 * 2
    for slug, n, phase in (
        ("llama-2-7b-q4_0-pp512", 512, "prefill"),
        ("llama-2-7b-q4_0-tg128", 128, "decode"),
    ):
        w = WORKLOADS[slug]
        flops = 2 * n_params + 2 * layers * (n / 2) * hidden
        assert float(w["flops_per_unit"]) == pytest.approx(flops, rel=1e-3)
        assert float(w["min_memory_gb"]) == pytest.approx(
            (FILE_BYTES + n * kv + 0.5e9) / 2**30,
            abs=0.06,  # GiB, as GPU memory is labelled
        )
        assert (w["model"], w["quant"], w["phase"]) == ("llama-2-7b", "q4_0", phase)
        assert w["memory_bound"] == ("true" if phase == "decode" else "false")


def test_csv_is_the_build_tools_output() -> None:
    tool = _tool()
    assert tool.rows() == RESULTS
