"""The shipped MLPerf corpus (service/catalog/mlperf_results.csv) and its builder's traps.

The first half reads the CSV as the package ships it; the second half runs the builder's
parsers (tools/build_mlperf_corpus.py) on real-shaped snippets of MLPerf files.
"""

import csv
import importlib
import re
import sys
from collections import Counter
from datetime import date
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import get_args

import pytest

from service.catalog import loaders as catalog
from service.domain.plausibility import PeakRates, implied_tflops, peak_tflops
from service.domain.vocabulary import Precision

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = (
    "gpu,workload,value,precision,gpu_count,batch_size,framework,framework_version,"
    "source,source_date,device_string,system,note"
)
CITE = re.compile(r"^mlcommons/(inference|training)_results_v\d\.\d@[0-9a-f]{12} \S+")
TEXT = resources.files("service.catalog").joinpath("mlperf_results.csv").read_text("utf-8")
ROWS = list(csv.DictReader(TEXT.splitlines()))
WORKLOADS = {w.slug: w for w in catalog.load_workloads()}
GPUS = {g.slug: g for g in catalog.load_gpus()}


def _rates(slug: str) -> PeakRates:
    g = GPUS[slug]
    return PeakRates(
        g.fp32_tflops,
        g.fp16_tflops,
        g.tf32_tensor_tflops,
        g.fp16_tensor_tflops,
        g.bf16_tensor_tflops,
        g.fp8_tensor_tflops,
        g.int8_tops,
    )


def test_header_and_every_row_is_traceable() -> None:
    assert TEXT.splitlines()[0] == COLUMNS
    assert len(ROWS) >= 200
    for r in ROWS:
        assert CITE.match(r["source"]), r["source"]
        assert date.fromisoformat(r["source_date"]) >= date(2024, 8, 1)
        assert r["device_string"] and r["system"] and r["note"].startswith("MLPerf ")
        assert r["gpu"] in GPUS and r["workload"] in WORKLOADS
        assert r["precision"] in get_args(Precision)
        assert 1 <= int(r["gpu_count"]) <= 64 and float(r["value"]) > 0


def test_per_gpu_figure_in_the_note_is_value_over_count() -> None:
    for r in ROWS:
        match = re.search(r"per GPU = (?:\S+ / \d+ = )?([0-9.e+-]+)", r["note"])
        assert match, r["note"]
        assert float(match[1]) == pytest.approx(float(r["value"]) / int(r["gpu_count"]), rel=2e-3)


def test_amd_instinct_and_nvidia_share_the_workloads() -> None:
    stacks: dict[str, set[str]] = {}
    for r in ROWS:
        stacks.setdefault(r["workload"], set()).add(GPUS[r["gpu"]].stack or "")
    for workload in ("mlperf-llama2-70b-offline", "mlperf-llama2-70b-server"):
        assert {"cuda", "rocm-instinct"} <= stacks[workload]
    lora = {r["gpu"] for r in ROWS if r["workload"] == "mlperf-llama2-70b-lora-train"}
    assert {"amd-mi300x", "amd-mi325x", "amd-mi355x", "nvidia-h100-sxm", "nvidia-b200"} <= lora


def test_fp4_rows_are_blackwell_and_kept_apart_by_precision() -> None:
    fp4 = [r for r in ROWS if r["precision"] == "fp4"]
    assert fp4 and {GPUS[r["gpu"]].architecture for r in fp4} == {"blackwell"}
    assert all(r["workload"] != "mlperf-llama2-70b-lora-train" for r in fp4)


def test_every_row_is_below_its_gpus_peak() -> None:
    for r in ROWS:
        flops = WORKLOADS[r["workload"]].flops_per_unit
        assert flops is not None
        implied = implied_tflops(float(r["value"]), flops, int(r["gpu_count"]))
        assert implied < peak_tflops(_rates(r["gpu"]), r["precision"]), r


def test_no_result_is_shipped_twice() -> None:
    keys = Counter((r["gpu"], r["workload"], r["value"], r["system"]) for r in ROWS)
    assert max(keys.values()) == 1


def test_inference_flops_per_token_follows_the_stated_formula() -> None:
    n, layers, d = 68_976_648_192, 80, 8192
    prompt, output = 222.33, 294.45
    per_sample = (prompt + output) * 2 * n + 4 * layers * d * (prompt + output) ** 2 / 2
    for slug in ("offline", "server", "interactive"):
        assert WORKLOADS[f"mlperf-llama2-70b-{slug}"].flops_per_unit == pytest.approx(
            per_sample / output, rel=1e-3
        )
    lora = 8192 * (4 * n + 3 * 4 * layers * d * 4096)
    assert WORKLOADS["mlperf-llama2-70b-lora-train"].flops_per_unit == pytest.approx(lora, rel=1e-3)


# ---------------------------------------------------------------- the builder's parsers


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        return importlib.import_module("build_mlperf_corpus")
    finally:
        sys.path.remove(str(ROOT / "tools"))


def _log(*events: str) -> str:
    return "\n".join(f":::MLLOG {e}" for e in events) + "\n"


# NVIDIA's mlperf_common logs block_stop with the block's starting samples_count (v5.0 logs);
# the trained count is in the following eval_start / run_stop.
NVIDIA_STYLE = _log(
    '{"time_ms": 1000, "key": "run_start", "metadata": {}}',
    '{"time_ms": 1000, "key": "block_start", "metadata": {"samples_count": 0}}',
    '{"time_ms": 291000, "key": "block_stop", "metadata": {"samples_count": 0}}',
    '{"time_ms": 291000, "key": "eval_start", "metadata": {"samples_count": 1536}}',
    '{"time_ms": 306000, "key": "eval_stop", "metadata": {"samples_count": 1536}}',
    '{"time_ms": 306000, "key": "block_start", "metadata": {"samples_count": 1536}}',
    '{"time_ms": 379000, "key": "block_stop", "metadata": {"samples_count": 1536}}',
    '{"time_ms": 379000, "key": "eval_start", "metadata": {"samples_count": 1920}}',
    '{"time_ms": 394000, "key": "run_stop", '
    '"metadata": {"samples_count": 1920, "status": "success"}}',
)


def test_lora_rate_counts_training_blocks_only(tool: ModuleType) -> None:
    rate, samples, seconds, status = tool.lora_rate("noise line\n" + NVIDIA_STYLE)
    assert (samples, seconds, status) == (1920, 363.0, "success")  # evaluations excluded
    assert rate == pytest.approx(1920 / 363.0)


def test_lora_rate_refuses_a_log_without_blocks(tool: ModuleType) -> None:
    with pytest.raises(ValueError):
        tool.lora_rate(_log('{"time_ms": 1, "key": "run_stop", "metadata": {"status": "success"}}'))


TRT_CONFIG = """
class OfflineGPUBaseConfig(GPUBaseConfig):
    precision = "fp16"

class H100_SXM_80GB_TP2x1(OfflineGPUBaseConfig):
    system = KnownSystem.H100_SXM_80GBx2
    use_fp8 = True

class H100_SXM_80GB_TP2x4(H100_SXM_80GB_TP2x1):
    system = KnownSystem.H100_SXM_80GBx8

#    vboost_slider = 1
class SMC_H100(OfflineGPUBaseConfig):
    system = KnownSystem.SMC

#    vboost_slider = 1
    use_fp8 = True
"""


def test_trt_configs_run_fp8_only_when_every_system_class_does(tool: ModuleType) -> None:
    assert tool._trt_fp8(TRT_CONFIG) is True  # inherited flag; comment lines inside a class
    fp16_class = TRT_CONFIG + "\nclass L40S_x8(OfflineGPUBaseConfig):\n    system = KnownSystem.L\n"
    assert tool._trt_fp8(fp16_class) is False
    assert tool._trt_fp8("class A(B):\n    pass\n") is None
