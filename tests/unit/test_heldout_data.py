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

from service.domain.throughput_model import Observation

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "data" / "heldout_gpu_insights.csv"
CATALOG = ROOT / "service" / "catalog"


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


TOOL = _load("build_heldout_gpu_insights", ROOT / "tools" / "build_heldout_gpu_insights.py")
BENCH = _load("heldout_bench", ROOT / "bench" / "heldout.py")
ROWS = list(csv.DictReader(DATA.open(newline="", encoding="utf-8")))


def test_every_row_has_a_source_a_date_and_a_catalog_gpu() -> None:
    with (CATALOG / "gpus.csv").open(newline="", encoding="utf-8") as f:
        slugs = {g["slug"] for g in csv.DictReader(f)}
    source = re.compile(
        rf"^xiaoran007/GPU-Insights@{TOOL.SOURCE_AT} docs-src/public/data/benchmark-data\.json "
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


@pytest.mark.parametrize("cold", [False, True])
def test_the_bench_never_trains_on_what_it_predicts(cold: bool) -> None:
    """Each GPU is predicted by a model trained without its rows in any held-out table (and,
    cold, without its corpus rows); every other row is trained on."""
    corpus = [Observation("a", "w", 1.0, 1, 0.0), Observation("b", "w", 2.0, 1, 0.0)]
    tables = [
        Observation(g, t, v, 1, 0.0)
        for t in ("heldout:t1", "heldout:t2")
        for g, v in (("a", 3.0), ("b", 4.0), ("c", 5.0))
    ]
    seen: dict[str, list[Observation]] = {}

    def train(observations):  # type: ignore[no-untyped-def]
        trained = list(observations)

        def predict(gpu: str, workload: str) -> tuple[float, float, float]:
            seen[gpu] = trained
            return (1.0, 0.5, 2.0)

        return predict

    held = BENCH.held_out(train, corpus, tables, {"heldout:t1"}, cold)
    assert sorted((h.gpu, h.workload) for h in held) == [
        ("a", "heldout:t1"),
        ("b", "heldout:t1"),
        ("c", "heldout:t1"),
    ]
    for gpu, trained in seen.items():
        assert not [o for o in trained if o.gpu == gpu and o.workload.startswith("heldout:")]
        assert bool([o for o in trained if o.gpu == gpu]) == (not cold and gpu != "c")
        others = [o for o in [*corpus, *tables] if o.gpu != gpu]
        assert all(o in trained for o in others)
