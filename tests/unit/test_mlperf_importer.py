"""The `mlperf` importer's parser: submission-checker summary.csv rows -> Converted rows.

Fixtures (tests/fixtures/mlperf/README.md) are real MLPerf Inference v5.1 rows in the checker's
column layout; the traps are the ones the checker really writes (power rows, inferred rows,
latency units, mixed systems) plus hand-made bad cells.
"""

import csv
import io
from pathlib import Path

import pytest

from service.ingest.importers import mlperf
from service.ingest.importers.base import ImportFailed

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mlperf"


def _text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def _rows(name: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(_text(name))))


def _csv(rows: list[dict[str, str]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def test_fixture_rows_become_results_and_the_power_and_inferred_rows_are_skipped() -> None:
    raw = _rows("summary_v5.1.csv")
    rows = mlperf.convert(_text("summary_v5.1.csv"))
    throughput = [r for r in raw if r["Units"] == "Tokens/s"]
    assert len(rows) == len(throughput) == len(raw) - 2  # the Watts row and the inferred row
    assert [r.value for r in rows] == [float(r["Result"]) for r in throughput]
    by_platform = {(r.system, r.workload): r for r in rows}
    amd = [r for r in rows if r.device == "AMD Instinct MI300X"]
    assert {r.workload for r in amd} == {
        "mlperf-llama2-70b-offline",
        "mlperf-llama2-70b-server",
        "mlperf-llama2-70b-interactive",
    }
    assert all(r.gpu_count == 8 and r.precision == "fp8" and r.framework == "vllm" for r in amd)
    gb200 = [r for r in rows if r.device == "NVIDIA GB200"]
    assert len(gb200) == 1 and gb200[0].gpu_count == 4 and gb200[0].precision == "fp4"
    mi325x = [r for r in rows if r.device == "AMD Instinct MI325X"]
    assert mi325x[0].workload == "mlperf-llama2-70b-offline"  # llama2-70b-99.9: same task
    assert all(r.device_string and r.notes and "MLPerf Tokens/s" in r.notes for r in rows)
    assert len(by_platform) == len(rows)


@pytest.mark.parametrize(
    ("name", "device", "per_board"),
    [
        ("NVIDIA Blackwell GPU (B200-SXM-180GB)", "NVIDIA B200 SXM", 1),
        ("NVIDIA Blackwell Ultra GPU (GB300)", "NVIDIA GB300", 1),
        ("NVIDIA H200-NVL-141GB", "NVIDIA H200 NVL", 1),
        ("NVIDIA H200-SXM5-141GB", "NVIDIA H200 SXM", 1),
        ("Virtualized NVIDIA H200-SXM-141GB", "NVIDIA H200 SXM", 1),
        ("NVIDIA H200-SXM-141GB-CTS", "NVIDIA H200 SXM", 1),
        (
            "NVIDIA GH200 Grace Hopper Superchip 144GB",
            "NVIDIA GH200 Grace Hopper Superchip 144GB",
            1,
        ),
        ("NVIDIA A100-SXM-80GB", "NVIDIA A100 SXM 80GB", 1),
        ("AMD Instinct MI300X-NPS1-SPX-192GB-750W", "AMD Instinct MI300X", 1),
        ("AMD Instinct MI325X 256GB HBM3E DLC", "AMD Instinct MI325X", 1),
        ("[MAXSUN] MS-Intel Arc Pro B60 Dual 48G Turbo", "MS Intel Arc Pro B60", 2),
        ("AMD Instinct MI355X 288GB HBM3e (x87)", "AMD Instinct MI355X", 1),
    ],
)
def test_accelerator_names_are_made_matchable(name: str, device: str, per_board: int) -> None:
    assert mlperf.accelerator_device(name) == (device, per_board)


@pytest.mark.parametrize(
    ("model", "scenario", "workload"),
    [
        ("llama2-70b-99", "Offline", "mlperf-llama2-70b-offline"),
        ("llama2-70b-99.9", "Server", "mlperf-llama2-70b-server"),
        ("llama2-70b-interactive-99", "Server", "mlperf-llama2-70b-interactive"),
        ("llama3.1-8b", "Offline", "mlperf-llama3-1-8b-offline"),
    ],
)
def test_workload_names(model: str, scenario: str, workload: str) -> None:
    assert mlperf.workload_name(model, scenario) == workload


def test_a_dual_gpu_board_counts_two_gpus() -> None:
    row = _rows("summary_v5.1.csv")[0]
    row |= {
        "accelerator_model_name": "[MAXSUN] MS-Intel Arc Pro B60 Dual 48G Turbo",
        "accelerators_per_node": "4",
        "total_accelerators": "4",
        "weight_data_types": "UINT4",
    }
    (converted,) = mlperf.convert(_csv([row]))
    assert converted.gpu_count == 8 and converted.precision == "int4"


def test_open_division_is_refused_naming_the_field() -> None:
    row = _rows("summary_v5.1.csv")[0] | {"Division": "open"}
    with pytest.raises(ImportFailed) as err:
        mlperf.convert(_csv([row]))
    (problem,) = err.value.errors
    assert problem["loc"] == ["body", 0, "Division"] and problem["type"] == "open_division"


def test_mixed_accelerators_are_refused() -> None:
    with pytest.raises(ImportFailed) as err:
        mlperf.convert(_text("mixed_accelerators.csv"))
    (problem,) = err.value.errors
    assert "several accelerators" in problem["msg"]


@pytest.mark.parametrize(
    ("column", "cell", "says"),
    [
        ("Result", "n/a", "could not convert"),
        ("weight_data_types", "UNSET", "no known precision"),
        ("Units", "Latency (ms)", "not a throughput"),
    ],
)
def test_garbage_cells_are_refused(column: str, cell: str, says: str) -> None:
    rows = _rows("summary_v5.1.csv")[:2]
    rows[1] = rows[1] | {column: cell}
    with pytest.raises(ImportFailed) as err:
        mlperf.convert(_csv(rows))
    (problem,) = err.value.errors
    assert problem["loc"][1] == 1 and says in problem["msg"]


def test_a_file_that_is_not_a_checker_csv_is_refused() -> None:
    with pytest.raises(ImportFailed) as err:
        mlperf.convert("name_gpu,num_gpu,resnet50\nRTX 4090,1,1000\n")
    assert err.value.errors[0]["type"] == "csv_invalid"


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("vLLM 0.9.0.2.dev108, Pytorch 2.7.0, ROCm 6.4.1", "vllm"),
        ("TensorRT 10.11, CUDA 12.9, TensorRT-LLM 0.21", "tensorrt-llm"),
        ("TensorRT 10.2, CUDA 12.4, cuDNN 8.9.7", "tensorrt"),
        ("NVIDIA NeMo Framework Release 25.04", "nemo"),
        ("PyTorch 2.6.0, ROCm 6.4", "pytorch"),
        ("", "unknown"),
    ],
)
def test_framework_slug(text: str, slug: str) -> None:
    assert mlperf.framework_slug(text) == slug
