"""Checks on bench/data/heldout_gpu_insights.csv and the rules of the tool that writes it.

The file is the held-out public table of bench/heldout.py: what it must guarantee is provenance
per row, catalog GPUs only, that it is not in the shipped corpus (else the bench would measure
nothing), and that the garbage rules drop what the tool's docstring says they drop.
"""

from __future__ import annotations

import csv
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "data" / "heldout_gpu_insights.csv"
CATALOG = ROOT / "service" / "catalog"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "build_heldout_gpu_insights", ROOT / "tools" / "build_heldout_gpu_insights.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


TOOL = _tool()
ROWS = list(csv.DictReader(DATA.open(newline="", encoding="utf-8")))


def test_every_row_has_a_source_a_date_and_a_catalog_gpu() -> None:
    with (CATALOG / "gpus.csv").open(newline="", encoding="utf-8") as f:
        slugs = {g["slug"] for g in csv.DictReader(f)}
    source = re.compile(
        r"^xiaoran007/GPU-Insights@[0-9a-f]{12} docs-src/public/data/benchmark-data\.json "
        r"benchmarks\[\d+\] \(.+\)$"
    )
    assert len(ROWS) > 50
    for r in ROWS:
        assert source.match(r["source"]), r
        assert re.fullmatch(r"20\d\d-\d\d-\d\d", r["source_date"]), r
        assert r["gpu"] in slugs, r
        assert r["precision"] in {"fp32", "fp16", "bf16"}, r
        assert r["table"].endswith("-" + r["precision"]), r
        assert float(r["value"]) > 0, r


def test_no_held_out_row_is_in_the_shipped_corpus() -> None:
    corpus_sources = set()
    for path in CATALOG.glob("*results.csv"):
        with path.open(newline="", encoding="utf-8") as f:
            corpus_sources |= {r.get("source", "") for r in csv.DictReader(f)}
    assert corpus_sources
    assert not any("GPU-Insights" in s for s in corpus_sources)


def _entry(device: str, **kw: object) -> dict[str, object]:
    row: dict[str, object] = {
        "model": "vit",
        "version": "ver2",
        "device": device,
        "memory": "24GB",
        "fp32": 1000,
        "fp32bs": 0,
        "fp16": 2000,
        "fp16bs": 0,
        "note": "",
        "date": "2026.4.12",
    }
    row.update(kw)
    return row


@pytest.mark.parametrize(
    ("entry", "dropped_columns"),
    [
        (_entry("NVIDIA GeForce RTX 3090"), set()),
        (_entry("NVIDIA GeForce RTX 3090 - 2 GPUs"), {"fp32", "fp16"}),
        (_entry("NVIDIA vGPU (RTX 4090)"), {"fp32", "fp16"}),
        (_entry("NVIDIA GeForce RTX 2080 Ti", memory="22GB"), {"fp32", "fp16"}),
        (_entry("NVIDIA GeForce RTX 2080 Ti", memory="11GB"), set()),
        (_entry("NVIDIA TITAN Xp", note="FP16 Not Officially Supported By Pascal Arch"), {"fp16"}),
        (_entry("Intel Arc A770 Graphics", note="GradScaler Not Work"), {"fp16"}),
        (_entry("Apple M1 Max GPU", fp16=1000), {"fp16"}),
        (_entry("NVIDIA L40S", note="partial precision run"), {"fp32", "fp16"}),
    ],
)
def test_garbage_rules(entry: dict[str, object], dropped_columns: set[str]) -> None:
    kept, dropped = TOOL.build({"benchmarks": [entry]})
    kept_columns = {"fp32" if r["precision"] == "fp32" else "fp16" for r in kept}
    assert kept_columns == {"fp32", "fp16"} - dropped_columns
    assert len(dropped) == len(dropped_columns)


def test_bf16_runs_are_their_own_tables() -> None:
    kept, _ = TOOL.build(
        {"benchmarks": [_entry("NVIDIA L40S", note="main_auto ver.2; BF16; CUDA CC 8.9")]}
    )
    assert {(r["table"], r["precision"]) for r in kept} == {
        ("vit-ver2-fp32", "fp32"),
        ("vit-ver2-bf16", "bf16"),
    }


def test_an_explicit_batch_run_gives_way_to_the_auto_batch_run() -> None:
    auto = _entry("NVIDIA GeForce RTX 3090", fp32=20166, fp16=44323)
    explicit = _entry("NVIDIA GeForce RTX 3090", fp32=19614, fp32bs=256, fp16=36035, fp16bs=256)
    kept, dropped = TOOL.build({"benchmarks": [explicit, auto]})
    assert sorted(r["value"] for r in kept) == [20166, 44323]
    assert len(dropped) == 2
