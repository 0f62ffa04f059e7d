"""The shipped measured corpus (service/catalog/measured_results.csv) and the converter's traps.

The first half reads the CSV exactly as the package ships it; the second half runs the converter
(tools/build_lambda_corpus.py) on small real-shaped tables holding each known trap.
"""

import csv
import importlib.util
import re
import sys
from collections import Counter
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any, get_args

import pytest

from service.catalog import loaders as catalog
from service.domain.plausibility import PeakRates, exceeds_peak
from service.domain.vocabulary import Precision

ROOT = Path(__file__).resolve().parents[2]
LAMBDA_DATA = Path("/work/shared/data/lambda-deeplearning-benchmark")
COLUMNS = (
    "gpu,workload,value,precision,gpu_count,batch_size,framework,framework_version,"
    "source,source_date,device_string,system,note"
)
NODE_ID = re.compile(r"\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}")


def _shipped() -> list[dict[str, str]]:
    text = (
        resources.files("service.catalog")
        .joinpath("measured_results.csv")
        .read_text(encoding="utf-8")
    )
    return list(csv.DictReader(text.splitlines()))


ROWS = _shipped()
WORKLOADS = {w.slug: w for w in catalog.load_workloads()}
GPUS = {g.slug: g for g in catalog.load_gpus()}


def _lambda_rows(column: str) -> list[dict[str, str]]:
    return [
        r for r in ROWS if r["source"].startswith("Lambda") and f"column {column}" in r["source"]
    ]


def test_header_is_the_documented_one() -> None:
    text = (
        resources.files("service.catalog")
        .joinpath("measured_results.csv")
        .read_text(encoding="utf-8")
    )
    assert text.splitlines()[0] == COLUMNS


def test_every_row_is_well_formed_and_sourced() -> None:
    for r in ROWS:
        assert r["workload"] in WORKLOADS, r
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", r["gpu"]), r
        assert 0 < float(r["value"]) < 1e9, r
        assert r["precision"] in get_args(Precision), r
        assert 1 <= int(r["gpu_count"]) <= 64, r
        assert r["batch_size"] == "" or int(r["batch_size"]) >= 1, r
        assert r["framework"] == "pytorch"
        assert re.search(r"@ [0-9a-f]{8}, \S+", r["source"]), r
        assert date.fromisoformat(r["source_date"]) <= date(2025, 12, 17)
        assert r["device_string"] and r["system"], r


def test_each_source_cell_appears_once() -> None:
    dupes = [s for s, n in Counter(r["source"] for r in ROWS).items() if n > 1]
    assert dupes == []


def test_coverage_targets() -> None:
    assert len(ROWS) >= 300
    assert len({r["gpu"] for r in ROWS}) >= 25
    assert len({r["workload"] for r in ROWS}) >= 8
    measured_resnet = {r["gpu"] for r in ROWS if r["workload"] == "resnet50-train"}
    assert len(measured_resnet & GPUS.keys()) >= 10


def test_not_run_cells_give_no_row() -> None:
    assert all(float(r["value"]) > 0 for r in ROWS)


@pytest.mark.skipif(not LAMBDA_DATA.is_dir(), reason="shared Lambda tables not present")
def test_every_zero_cell_of_the_source_tables_is_absent() -> None:
    shipped = {r["source"] for r in ROWS}
    zeros = 0
    for precision in ("fp16", "fp32"):
        name = f"pytorch-train-throughput-{precision}.csv"
        with (LAMBDA_DATA / name).open() as f:
            for rec in csv.DictReader(f):
                for model, cell in rec.items():
                    if cell in ("0.0", "0"):
                        zeros += 1
                        src = f"pytorch/{name}, row {rec['name_gpu']}, column {model}"
                        assert not any(s.endswith(src) for s in shipped), src
    assert zeros > 0  # the trap is really in the table


def test_ncf_and_maskrcnn_are_not_shipped() -> None:
    assert _lambda_rows("ncf") == [] and _lambda_rows("maskrcnn") == []
    assert not any("ncf" in w for w in WORKLOADS)


def test_backup_rows_are_dropped() -> None:
    assert not any("_bk" in r["device_string"] for r in ROWS)


def test_node_size_is_not_the_gpu_count() -> None:
    two_on_four = [r for r in ROWS if r["device_string"].startswith("LambdaOD_4x_Texas_2xH100")]
    assert two_on_four and {r["gpu_count"] for r in two_on_four} == {"2"}
    one_on_eight = [r for r in ROWS if r["device_string"].startswith("LambdaOD_8x_Texas_1xH100")]
    assert one_on_eight and {r["gpu_count"] for r in one_on_eight} == {"1"}


def test_node_address_stays_out_of_system() -> None:
    v2 = [r for r in ROWS if r["device_string"].endswith("_v2")]
    assert any(NODE_ID.search(r["device_string"]) for r in v2)
    assert not any(NODE_ID.search(r["system"]) for r in ROWS)


def test_vendor_prefixed_systems_are_kept_apart() -> None:
    h100 = [
        r
        for r in _lambda_rows("resnet50")
        if r["gpu"] == "nvidia-h100-sxm"
        and r["gpu_count"] == "1"
        and r["precision"] == "fp16"
        and "@ aa5addb6, pytorch/pytorch-train-throughput-fp16.csv" in r["source"]
    ]
    systems = {r["system"] for r in h100}
    assert {"Lambda", "Dell", "DellTexas", "SMC", "1CC", "RAIDZ1"} <= systems


def test_units_follow_what_each_model_counts() -> None:
    expected = {
        "resnet50": "images/s",
        "ssd": "images/s",
        "bert_base_squad": "sequences/s",
        "bert_large_squad": "sequences/s",
        "gnmt": "tokens/s",
        "transformerxlbase": "tokens/s",
        "transformerxllarge": "tokens/s",
        "tacotron2": "mels/s",
        "waveglow": "samples/s",
    }
    for column, unit in expected.items():
        rows = _lambda_rows(column)
        assert rows, column
        assert {WORKLOADS[r["workload"]].unit for r in rows} == {unit}, column


def test_squad_fine_tuning_is_not_pretraining() -> None:
    large = _lambda_rows("bert_large_squad")
    assert large and {r["workload"] for r in large} == {"bert-large-squad-finetune"}
    assert not any(r["workload"] == "bert-large-train" for r in ROWS)
    assert WORKLOADS["bert-large-squad-finetune"].unit == WORKLOADS["bert-large-train"].unit


def test_implausible_b200_bert_base_scaling_is_kept_and_noted() -> None:
    cells = {
        int(r["gpu_count"]): r
        for r in _lambda_rows("bert_base_squad")
        if r["gpu"] == "nvidia-b200" and r["precision"] == "fp16"
    }
    ratio = float(cells[8]["value"]) / float(cells[1]["value"])
    assert ratio > 16  # more than linear: the gate must flag it later, the corpus keeps it
    assert cells[8]["note"].startswith("suspect scaling")
    assert cells[1]["note"] == ""


def test_no_result_beats_its_gpus_peak() -> None:
    checked = 0
    for r in ROWS:
        gpu, workload = GPUS.get(r["gpu"]), WORKLOADS[r["workload"]]
        if gpu is None or workload.flops_per_unit is None:
            continue
        rates = PeakRates(
            gpu.fp32_tflops,
            gpu.fp16_tflops,
            gpu.tf32_tensor_tflops,
            gpu.fp16_tensor_tflops,
            gpu.bf16_tensor_tflops,
            gpu.fp8_tensor_tflops,
            gpu.int8_tops,
        )
        args = (float(r["value"]), workload.flops_per_unit, int(r["gpu_count"]), rates)
        assert not exceeds_peak(*args, r["precision"]), r
        checked += 1
    assert checked > 500


def test_gpus_missing_from_the_catalog_are_listed_for_adding() -> None:
    notes = resources.files("service.catalog").joinpath("MEASURED.md").read_text(encoding="utf-8")
    section = notes.split("## GPUs to add to the catalog", 1)[1].split("\n## ", 1)[0]
    missing = {r["gpu"] for r in ROWS} - GPUS.keys()
    assert missing, "expected some GPUs outside the catalog (GH200, A5500, laptop parts)"
    for slug in missing:
        assert f"`{slug}`" in section, slug


# ---- the converter on small real-shaped tables ----------------------------------------------


def _converter() -> Any:
    spec = importlib.util.spec_from_file_location(
        "build_lambda_corpus", ROOT / "tools" / "build_lambda_corpus.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


V1_TABLE = """name_gpu,num_gpu,watt,price,ssd,bert_base_squad,ncf,resnet50
H100 80GB SXM5,1.0,700.0,1.0,500.0,0.0,13000000000.0,2500.0
Dell 2x H100 80GB SXM5,2.0,1400.0,1.0,990.0,800.0,25000000.0,4990.0
LambdaCloud 4xV100 16GB,4.0,1200.0,1.0,700.0,600.0,20000000.0,3000.0
"""
V1_BS = """name_gpu,num_gpu,watt,price,ssd,bert_base_squad,ncf,resnet50
H100 80GB SXM5,1,700,1,64,32,1000000,256
"""
V2_TABLE = """,ssd,bert_base_squad,resnet50
LambdaOD_4x_Texas_2xH100_80GB_SXM5_192-222-52-139_v2,1800.0,0.0,5000.0
LambdaOD_1x_Test_1xGH200_96GB_192-222-56-184_v2_bk,0.0,800.0,2964.0
LambdaOD_test_8xB200_192GB_129-213-83-251_v2,8148.0,30221.0,24461.0
"""


@pytest.fixture
def converted(tmp_path: Path) -> tuple[list[Any], dict[str, int]]:
    mod = _converter()
    for p in ("fp16", "fp32"):
        (tmp_path / f"pytorch-train-throughput-{p}.csv").write_text(V1_TABLE)
        (tmp_path / f"pytorch-train-bs-{p}.csv").write_text(V1_BS)
        (tmp_path / f"pytorch-train-throughput-v2-{p}.csv").write_text(V2_TABLE)
    drops = mod.Drops({})
    args = mod.argparse.Namespace(
        lambda_dir=str(tmp_path), v0_dir=None, dle_resnet=None, lambda_git=None
    )
    return mod.build(args, drops), drops.counts


def test_converter_drops_zero_ncf_and_backup_cells(converted: Any) -> None:
    rows, drops = converted
    assert all(r.value > 0 for r in rows)
    assert not any("ncf" in r.source or r.device_string.endswith("_bk") for r in rows)
    per_precision = {k: v // 2 for k, v in drops.items()}
    assert per_precision["0.0 = not run"] == 2
    assert per_precision["_bk backup row"] == 2
    assert any(k.startswith("ncf") for k in drops)
    assert len(rows) == 2 * (2 + 3 + 3 + 2 + 3)


def test_converter_reads_counts_systems_and_batch(converted: Any) -> None:
    rows, _ = converted
    by_device = {(r.device_string, r.workload, r.precision): r for r in rows}
    dell = by_device[("Dell 2x H100 80GB SXM5", "resnet50-train", "fp16")]
    assert (dell.gpu, dell.gpu_count, dell.system) == ("nvidia-h100-sxm", 2, "Dell")
    v100 = by_device[("LambdaCloud 4xV100 16GB", "ssd300-train", "fp32")]
    assert (v100.gpu, v100.gpu_count, v100.system) == ("nvidia-v100-sxm2-16gb", 4, "LambdaCloud")
    assert by_device[("H100 80GB SXM5", "resnet50-train", "fp16")].batch_size == 256
    two = by_device[
        ("LambdaOD_4x_Texas_2xH100_80GB_SXM5_192-222-52-139_v2", "resnet50-train", "fp16")
    ]
    assert (two.gpu_count, two.system) == (2, "LambdaOD_4x_Texas")
    b200 = by_device[("LambdaOD_test_8xB200_192GB_129-213-83-251_v2", "resnet50-train", "fp32")]
    assert (b200.gpu, b200.gpu_count, b200.source_date) == ("nvidia-b200", 8, "2025-12-17")


def test_converter_notes_superlinear_scaling_against_the_same_system(converted: Any) -> None:
    rows, _ = converted
    dell = [r for r in rows if r.system == "Dell"]
    # Dell has no 1-GPU row in the table: nothing to compare against, so no note.
    assert dell and all(r.note == "" for r in dell)


def test_converter_rejects_a_name_whose_count_disagrees(tmp_path: Path) -> None:
    mod = _converter()
    with pytest.raises(ValueError):
        mod.parse_v0_v1_name("2x RTX 3090", 4, False)
    with pytest.raises(KeyError):
        mod.parse_v0_v1_name("RTX 9999", 1, False)
