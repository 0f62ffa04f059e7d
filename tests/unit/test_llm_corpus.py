"""Checks on the shipped LLM corpus (llm_results.csv, llm_workloads.csv) and llama-bench fixtures.

The corpus is data copied from public tables, so these tests guard its integrity: every row is
sourced and dated, values are physical, workloads and GPUs resolve, nothing is stored twice, and
the fixtures keep the shape llama-bench prints.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "service" / "catalog"
FIXTURES = ROOT / "tests" / "fixtures" / "llama_bench"


def _rows(name: str) -> list[dict[str, str]]:
    with (CATALOG / name).open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


RESULTS = _rows("llm_results.csv")
WORKLOADS = _rows("llm_workloads.csv")
GPUS = _rows("gpus.csv")


def _gpus_to_add() -> set[str]:
    """Slugs listed under the 'GPUs to add' heading of LLM_MEASURED.md."""
    text = (CATALOG / "LLM_MEASURED.md").read_text(encoding="utf-8")
    section = text.split("## GPUs to add", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\|\s*`([a-z0-9.-]+)`", section, flags=re.M))


def test_corpus_is_not_empty() -> None:
    assert len(RESULTS) >= 300
    assert len({r["gpu"] for r in RESULTS}) >= 20


@pytest.mark.parametrize(
    "col", ["source", "source_date", "device_string", "framework", "framework_version"]
)
def test_every_row_has_provenance(col: str) -> None:
    assert all(r[col].strip() for r in RESULTS), col


def test_dates_are_iso_and_not_in_the_future() -> None:
    today = dt.date.today()
    for r in RESULTS:
        assert dt.date.fromisoformat(r["source_date"]) <= today


def test_values_positive_and_finite() -> None:
    for r in RESULTS:
        v = float(r["value"])
        assert math.isfinite(v) and v > 0, r
        assert int(r["gpu_count"]) >= 1 and int(r["batch_size"]) >= 1


def test_workloads_referenced_exist() -> None:
    slugs = {w["slug"] for w in WORKLOADS}
    missing = {r["workload"] for r in RESULTS} - slugs
    assert not missing


def test_precision_matches_workload() -> None:
    prec = {w["slug"]: w["precision"] for w in WORKLOADS}
    assert all(r["precision"] == prec[r["workload"]] for r in RESULTS)


def test_gpus_are_catalog_slugs_or_listed_to_add() -> None:
    known = {g["slug"] for g in GPUS} | _gpus_to_add()
    assert {r["gpu"] for r in RESULTS} <= known
    assert not ({g["slug"] for g in GPUS} & _gpus_to_add()), (
        "a 'to add' GPU is already in the catalog"
    )


def test_no_duplicate_rows() -> None:
    full = [tuple(r.values()) for r in RESULTS]
    assert len(full) == len(set(full))
    key = [(r["gpu"], r["workload"], r["gpu_count"], r["source"], r["system"]) for r in RESULTS]
    assert len(key) == len(set(key))


def test_workload_slugs_are_predictable() -> None:
    for w in WORKLOADS:
        tag = "pp" if w["phase"] == "prefill" else "tg"
        assert re.fullmatch(
            rf"{re.escape(w['model'])}-{re.escape(w['quant'])}-{tag}\d+", w["slug"]
        ), w["slug"]
        assert w["memory_bound"] == ("true" if w["phase"] == "decode" else "false")
        assert float(w["flops_per_unit"]) > 0 and float(w["min_memory_gb"]) > 0
        assert w["unit"] == "tokens/s" and w["source"]


def test_decode_below_bandwidth_roofline() -> None:
    """Single-GPU decode can't beat bandwidth / bytes per token (weights are read per token)."""
    bw = {g["slug"]: float(g["memory_bandwidth_gbs"]) for g in GPUS if g["memory_bandwidth_gbs"]}
    size_gib = {
        "q4_k_m": {"llama-3-8b": 4.58, "llama-3-70b": 39.59},
        "fp16": {"llama-3-8b": 14.96, "llama-3-70b": 131.42},
    }
    wl = {w["slug"]: w for w in WORKLOADS}
    checked = 0
    for r in RESULTS:
        w = wl[r["workload"]]
        if w["phase"] != "decode" or r["gpu"] not in bw or r["gpu_count"] != "1":
            continue
        q = "fp16" if w["quant"] == "f16" else w["quant"]
        gib = size_gib.get(q, {}).get(w["model"])
        if gib is None:
            continue
        assert float(r["value"]) * gib * 1024**3 <= bw[r["gpu"]] * 1e9, r
        checked += 1
    assert checked > 0


def _fixture(name: str) -> list[dict[str, object]]:
    path = FIXTURES / name
    if name.endswith(".jsonl"):
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    data = json.loads(path.read_text())
    assert isinstance(data, list)
    return data


NEW_FIELDS = [
    "build_commit",
    "build_number",
    "cpu_info",
    "gpu_info",
    "backends",
    "model_filename",
    "model_type",
    "model_size",
    "model_n_params",
    "n_batch",
    "n_ubatch",
    "n_threads",
    "cpu_mask",
    "cpu_strict",
    "poll",
    "type_k",
    "type_v",
    "n_gpu_layers",
    "n_cpu_moe",
    "split_mode",
    "main_gpu",
    "no_kv_offload",
    "flash_attn",
    "devices",
    "tensor_split",
    "tensor_buft_overrides",
    "load_mode",
    "embeddings",
    "no_op_offload",
    "no_host",
    "fit_target",
    "fit_min_ctx",
    "n_prompt",
    "n_gen",
    "n_depth",
    "test_time",
    "avg_ns",
    "stddev_ns",
    "avg_ts",
    "stddev_ts",
    "samples_ns",
    "samples_ts",
]


@pytest.mark.parametrize(
    "name", ["rtx4090.json", "rtx4090.jsonl", "garbage.json", "multi_gpu.json"]
)
def test_fixture_has_llama_bench_fields_in_order(name: str) -> None:
    tests = _fixture(name)
    assert [t["n_gen"] for t in tests] == [0, 512] and [t["n_prompt"] for t in tests] == [512, 0]
    for t in tests:
        assert list(t) == NEW_FIELDS


@pytest.mark.parametrize(
    "name", ["rtx4090.json", "multi_gpu.json", "unknown_device.json", "rtx4080_legacy_b5163.json"]
)
def test_fixture_avg_ts_matches_samples(name: str) -> None:
    for t in _fixture(name):
        samples = t["samples_ts"]
        assert isinstance(samples, list)
        assert abs(sum(samples) / len(samples) - float(t["avg_ts"])) <= 1e-3 * float(t["avg_ts"])  # type: ignore[arg-type]


def test_json_and_jsonl_carry_the_same_tests() -> None:
    assert _fixture("rtx4090.json") == _fixture("rtx4090.jsonl")


def test_garbage_is_the_real_run_times_1000() -> None:
    for good, bad in zip(_fixture("rtx4090.json"), _fixture("garbage.json"), strict=True):
        assert float(bad["avg_ts"]) == pytest.approx(1000 * float(good["avg_ts"]))  # type: ignore[arg-type]


def test_multi_gpu_lists_every_device() -> None:
    for t in _fixture("multi_gpu.json"):
        assert str(t["gpu_info"]).split(", ") == ["NVIDIA GeForce RTX 4090"] * 2


def test_unknown_device_is_not_in_catalog() -> None:
    names = {a.lower() for g in GPUS for a in g["aliases"].split("|")} | {
        g["name"].lower() for g in GPUS
    }
    for t in _fixture("unknown_device.json"):
        assert str(t["gpu_info"]).lower() not in names
