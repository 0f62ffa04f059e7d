"""The shipped measured corpus: rows of measured_results.csv, llm_results.csv,
llamacpp_results.csv, mlperf_results.csv and gpt2_train_results.csv.

Design: rows are read as plain records (no validation here); the seed sends them through the
same ingestion gate as POST /results, so a shipped number gets no easier path than a posted one.
Each row keeps its citation (`source`), the name the source used (`device_string`) and the
system it ran on; `source_key` names the submitter ("seed:<key>") the row is stored under.
"""

import csv
import io
from dataclasses import dataclass
from importlib import resources

CORPUS_FILES: dict[str, str] = {
    "lambda": "measured_results.csv",
    "llm": "llm_results.csv",
    "llamacpp": "llamacpp_results.csv",  # llama-bench Llama 2 7B Q4_0 on AMD/Intel/NVIDIA
    "mlperf": "mlperf_results.csv",
    "gpt2": "gpt2_train_results.csv",  # GPT-2 124M training (llm.c, compiled PyTorch)
}


@dataclass(frozen=True)
class CorpusRow:
    source_key: str  # which shipped file / submitter: lambda, dle, llm ...
    gpu: str
    workload: str
    value: float
    precision: str
    gpu_count: int
    batch_size: int | None
    framework: str
    framework_version: str | None
    source: str
    source_date: str
    device_string: str | None
    system: str | None
    note: str | None


def _source_key(default: str, source: str) -> str:
    """Rows from NVIDIA DeepLearningExamples get their own submitter: a separate source."""
    return "nvidia-dle" if "DeepLearningExamples" in source else default


def _row(default_key: str, raw: dict[str, str]) -> CorpusRow:
    source = raw["source"].strip()
    return CorpusRow(
        source_key=_source_key(default_key, source),
        gpu=raw["gpu"].strip(),
        workload=raw["workload"].strip(),
        value=float(raw["value"]),
        precision=raw["precision"].strip(),
        gpu_count=int(raw["gpu_count"] or 1),
        batch_size=int(raw["batch_size"]) if raw.get("batch_size") else None,
        framework=raw["framework"].strip() or "unknown",
        framework_version=raw.get("framework_version") or None,
        source=source,
        source_date=raw.get("source_date", "").strip(),
        device_string=raw.get("device_string") or None,
        system=raw.get("system") or None,
        note=raw.get("note") or None,
    )


def load_corpus(files: dict[str, str] | None = None) -> list[CorpusRow]:
    """Every shipped measured row, 1-GPU rows first (so multi-GPU rows meet their baseline)."""
    rows: list[CorpusRow] = []
    base = resources.files("service.catalog")
    for key, name in (files or CORPUS_FILES).items():
        path = base / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        rows.extend(_row(key, raw) for raw in csv.DictReader(io.StringIO(text, newline="")))
    rows.sort(key=lambda r: r.gpu_count)
    return rows
