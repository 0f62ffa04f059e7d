"""MLPerf Inference results as the submission checker writes them (`summary.csv`).

Why this format: a LoadGen run leaves `mlperf_log_summary.txt`, which names no accelerator;
the system description lives in a separate `systems/<platform>.json`. Every submitter runs the
MLCommons submission checker over the finished tree (`python3 -m submission_checker.main
--input <tree> --csv summary.csv`, mandatory before a submission), and its CSV joins the two:
one row per (platform, benchmark, scenario) with the result, its units, the accelerator name and
count and the declared weight precision. That CSV is what a lab has after a run (MLCommons'
published results table, summary_results.json, carries the same fields), so it is the input.
Column names: mlcommons/inference tools/submission (`submission_checker_old.py` head list;
`submission_checker/results.py` adds `total_accelerators`, `design_power_watts`, `PrivateID`).
Details: service/catalog/MLPERF.md.

Design decisions:
- Workload = `mlperf-{model}-{scenario}`: the benchmark name without its accuracy-target suffix
  (`-99`, `-99.9`: both targets run the same model and data; the stricter one is still a run of
  the task) and `llama2-70b-interactive-99` (v5.0 naming) as scenario `interactive`. A name with
  no catalog workload is refused by the workload check with the name it would need.
- value = `Result` (the whole system's throughput, e.g. Tokens/s); gpu_count = accelerators:
  `total_accelerators`, else `number_of_nodes x accelerators_per_node`. A board that carries two
  GPUs (`... Dual ...`, e.g. Intel Arc Pro B60 Dual = 2 x B60 24 GB) counts as two.
- Skipped, not refused: the power row the checker appends after a power result (same result,
  Units W / J) and rows the checker marks `inferred=1` (a scenario result copied from another
  scenario's run is not a measurement of that scenario).
- Refused per row (422): open division (the model may be changed), mixed accelerators
  (`A (x32), B (x16)`: a result belongs to one GPU model), unreadable numbers, latency units
  (SingleStream/MultiStream report ms, not a rate), a declared weight type that is no known
  precision (`UNSET`).
- precision = the declared `weight_data_types` (a lab knows what it ran; the shipped v4.1 rows
  needed the code instead, see MLPERF.md); empty: the workload's precision.
- The accelerator name is made matcher-friendly (`NVIDIA Blackwell GPU (B200-SXM-180GB)` ->
  `NVIDIA B200 SXM`); memory is dropped except for families the catalog splits by memory
  (GH200 96/144 GB, A100 40/80 GB). The name as written stays in device_string.
"""

import csv
import io
import re
from typing import Any

from service.ingest.importers.base import Converted, ImportFailed, problem

# weight_data_types as declared in measurements/*.json -> the API's precision words
PRECISIONS: dict[str, str] = {
    "fp32": "fp32",
    "fp16": "fp16",
    "bf16": "bf16",
    "fp8": "fp8",
    "e4m3": "fp8",
    "int8": "int8",
    "fp4": "fp4",
    "nvfp4": "nvfp4",
    "mxfp4": "mxfp4",
    "int4": "int4",
    "uint4": "int4",
}
POWER_UNITS = ("w", "watts", "j", "joules", "millijoules", "mj")
THROUGHPUT_UNITS = ("tokens/s", "samples/s", "queries/s")
# Families the catalog holds as separate GPUs by memory size: keep the memory token for them.
MEMORY_SPLIT = ("GH200", "A100")

_NOISE = re.compile(r"^(hbm\d\w*|dlc|cts|nps\d|spx|cpx|dpx|\d+w|turbo)$", re.I)
_MEMORY = re.compile(r"^\d+(?:gb|g)$", re.I)
_BLACKWELL = re.compile(r"^NVIDIA Blackwell(?: Ultra)? GPU \((?P<inner>.+)\)$")
_COUNTED = re.compile(r"\s*\(x\d+\)$")
_ACCURACY = re.compile(r"-99(?:\.9)?$")


def accelerator_device(name: str) -> tuple[str, int]:
    """(name for the device matcher, GPUs per named board) of an accelerator_model_name."""
    text = _COUNTED.sub("", re.sub(r"^\[[^\]]*\]\s*", "", name.strip()))
    text = re.sub(r"^Virtualized\s+", "", text)
    blackwell = _BLACKWELL.match(text)
    if blackwell:
        text = "NVIDIA " + blackwell["inner"]
    text = text.replace("GraceHopper", "Grace Hopper")
    keep_memory = any(family in text for family in MEMORY_SPLIT)
    tokens = [
        "SXM" if t.upper() == "SXM5" else t
        for t in re.split(r"[\s_-]+", text)
        if t and not _NOISE.match(t) and (keep_memory or not _MEMORY.match(t))
    ]
    boards = 2 if "Dual" in tokens else 1
    return " ".join(t for t in tokens if t != "Dual"), boards


def workload_name(model: str, scenario: str) -> str:
    """`llama2-70b-99.9` + `Offline` -> `mlperf-llama2-70b-offline`."""
    base = _ACCURACY.sub("", model.strip().lower())
    scenario = scenario.strip().lower()
    if base.endswith("-interactive"):
        base, scenario = base.removesuffix("-interactive"), "interactive"
    return f"mlperf-{base.replace('.', '-').replace('_', '-')}-{scenario}"


def framework_slug(text: str) -> str:
    """The serving/training stack named in a system description's `framework` field."""
    lowered = text.lower()
    for pattern, slug in (
        (r"tensorrt[- ]?llm|trt[- ]?llm", "tensorrt-llm"),
        (r"\bvllm\b", "vllm"),
        (r"\bsglang\b", "sglang"),
        (r"\bllmboost\b", "llmboost"),
        (r"\btensorrt\b", "tensorrt"),
        (r"\bnemo\b", "nemo"),
        (r"\bpytorch\b", "pytorch"),
        (r"\bjax\b", "jax"),
    ):
        if re.search(pattern, lowered):
            return slug
    words = re.findall(r"[a-z0-9_.+-]+", lowered)
    return words[0][:32] if words else "unknown"


def _count(raw: dict[str, str]) -> int:
    total = (raw.get("total_accelerators") or "").strip()
    if total:
        return int(float(total))
    return int(float(raw["number_of_nodes"])) * int(float(raw["accelerators_per_node"]))


def parse_row(index: int, raw: dict[str, str]) -> Converted:
    """One throughput row of the CSV (also used by tools/build_mlperf_corpus.py); ValueError /
    KeyError name what is wrong."""
    name = raw["accelerator_model_name"].strip()
    if "," in name or len(re.findall(r"\(x\d+\)", name)) > 1:
        raise ValueError(f"accelerator_model_name {name!r} names several accelerators")
    device, per_board = accelerator_device(name)
    declared = (raw.get("weight_data_types") or "").strip()
    precision = PRECISIONS.get(declared.lower()) if declared else None
    if declared and precision is None:
        raise ValueError(f"weight_data_types {declared!r} is no known precision")
    model = (raw.get("MlperfModel") or raw["Model"]).strip()
    units = raw["Units"].strip()
    if units.lower() not in THROUGHPUT_UNITS:
        raise ValueError(f"Units {units!r}: a latency or unknown unit, not a throughput")
    framework = (raw.get("framework") or "").strip()
    system = " / ".join(
        p for p in (raw.get(k, "").strip() for k in ("Organization", "SystemName")) if p
    )
    notes = ", ".join(
        f"{k}={raw[k].strip()}"
        for k in ("version", "Platform", "Model", "Availability", "Accuracy", "Location")
        if (raw.get(k) or "").strip()
    )
    return Converted(
        index=index,
        device=device,
        gpu_count=_count(raw) * per_board,
        workload=workload_name(model, raw["Scenario"]),
        value=float(raw["Result"]),
        precision=precision,
        framework=framework_slug(framework),
        framework_version=framework[:64] or None,
        notes=f"MLPerf {units}; {notes}"[:2000],
        device_string=name[:512],
        system=system[:128] or None,
        workload_hint=f"{model} {raw['Scenario'].strip()}",
    )


def convert(text: str) -> list[Converted]:
    reader = csv.DictReader(io.StringIO(text.strip()))
    header = set(reader.fieldnames or [])
    needed = {"Division", "Scenario", "Result", "Units", "accelerator_model_name"}
    if not header or not needed <= header or not header & {"Model", "MlperfModel"}:
        raise ImportFailed.one(
            ("body",),
            "not an MLPerf submission-checker summary CSV (needs Division, Model, Scenario, "
            f"Result, Units, accelerator_model_name); missing {sorted(needed - header)}",
            "csv_invalid",
        )
    out: list[Converted] = []
    errors: list[dict[str, Any]] = []
    for index, raw in enumerate(reader):
        if (raw.get("Units") or "").strip().lower() in POWER_UNITS:
            continue  # the power row of a power result
        if (raw.get("inferred") or "0").strip() in ("1", "True", "true"):
            continue  # copied from another scenario's run
        division = (raw.get("Division") or "").strip().lower()
        if division != "closed":
            errors.append(
                problem(
                    index,
                    "Division",
                    f"division {division or '(empty)'!r}: only closed-division results run the "
                    "benchmark's model and data unchanged",
                    "open_division",
                )
            )
            continue
        try:
            out.append(parse_row(index, raw))
        except (KeyError, TypeError, ValueError) as exc:
            errors.append(problem(index, "row", f"unreadable MLPerf row: {exc}", "mlperf_row"))
    if errors:
        raise ImportFailed(errors)
    return out
