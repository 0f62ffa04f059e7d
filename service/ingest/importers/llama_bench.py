"""llama-bench `-o json` (one JSON array) and `-o jsonl` (one object per line).

Design decisions (field meanings: tests/fixtures/llama_bench/README.md and
service/catalog/LLM_MEASURED.md):
- A prompt test (n_prompt > 0, n_gen = 0) is workload `{model}-{quant}-pp{n_prompt}`, a
  generation test (n_prompt = 0, n_gen > 0) `{model}-{quant}-tg{n_gen}`; a test with both, or
  with n_depth > 0, gets a name with `-pp{p}-tg{g}` / `-d{depth}` that no shipped workload has,
  so it is refused with the name it would need (never folded into another workload).
- The model slug comes from `model_n_params` where the parameter count is known (it names the
  generation: `llama 8B` alone could be Llama 3 or 3.1), else from `model_type`'s arch and size.
- `gpu_info` lists every GPU joined with ", ": N equal names are N GPUs of that model; mixed
  boxes are refused (a result belongs to one GPU model).
- value = avg_ts (tokens/s); stddev, flash_attn, KV types, n_depth and test_time go to notes.
"""

import json
import re
from typing import Any

from service.ingest.importers.base import Converted, ImportFailed, problem

# model_n_params -> model slug, from the llama-bench params column of published runs
# (LLM_MEASURED.md): these counts are exact and name one model generation.
KNOWN_PARAMS: dict[int, str] = {
    8030261248: "llama-3-8b",
    70553706496: "llama-3-70b",
    6738415616: "llama-2-7b",
    7241732096: "mistral-7b",
}

# llama_model_ftype_name() strings -> quantization slug (LLM_MEASURED.md)
FTYPES: dict[str, str] = {
    "Q4_0": "q4_0",
    "Q4_K - Medium": "q4_k_m",
    "Q4_K - Small": "q4_k_s",
    "Q5_K - Medium": "q5_k_m",
    "Q6_K": "q6_k",
    "Q8_0": "q8_0",
    "F16": "f16",
    "BF16": "bf16",
    "all F32": "f32",
}

_TYPE = re.compile(
    r"^(?P<arch>\S+)\s+(?P<size>[\d.]+[A-Za-z]?(?:\.A[\d.]+[A-Za-z]?)?)\s+(?P<ftype>.+)$"
)


def parse(text: str) -> list[dict[str, Any]]:
    """The test records of a JSON array or JSONL file."""
    stripped = text.strip()
    if not stripped:
        raise ImportFailed.one(("body",), "empty llama-bench output", "empty_body")
    try:
        if stripped.startswith("["):
            records = json.loads(stripped)
        else:
            records = [json.loads(line) for line in stripped.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise ImportFailed.one(
            ("body",),
            f"not llama-bench JSON or JSONL: {exc.msg} (line {exc.lineno})",
            "json_invalid",
        ) from None
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ImportFailed.one(("body",), "expected a list of llama-bench tests", "not_a_list")
    return records


def model_and_quant(record: dict[str, Any]) -> tuple[str, str]:
    """(model slug, quant slug) of a test, e.g. ('llama-3-8b', 'q4_k_m')."""
    model_type = str(record.get("model_type", "")).replace(" mostly ", " ").strip()
    match = _TYPE.match(model_type)
    if match is None:
        raise ValueError(f"unreadable model_type {model_type!r}")
    ftype = match["ftype"].strip()
    quant = FTYPES.get(ftype, ftype.lower().replace(" - ", "_").replace(" ", "_"))
    params = record.get("model_n_params")
    model = KNOWN_PARAMS.get(params) if isinstance(params, int) else None
    if model is None:
        model = f"{match['arch'].lower()}-{match['size'].lower()}"
    return model, quant


def workload_name(record: dict[str, Any], model: str, quant: str) -> str:
    n_prompt, n_gen = int(record.get("n_prompt", 0)), int(record.get("n_gen", 0))
    depth = int(record.get("n_depth", 0) or 0)
    if n_prompt > 0 and n_gen == 0:
        name = f"{model}-{quant}-pp{n_prompt}"
    elif n_gen > 0 and n_prompt == 0:
        name = f"{model}-{quant}-tg{n_gen}"
    else:
        name = f"{model}-{quant}-pp{n_prompt}-tg{n_gen}"
    return f"{name}-d{depth}" if depth else name


def _notes(record: dict[str, Any]) -> str:
    keys = (
        "stddev_ts",
        "n_depth",
        "flash_attn",
        "type_k",
        "type_v",
        "n_batch",
        "n_ubatch",
        "split_mode",
        "test_time",
        "model_filename",
    )
    return "llama-bench " + ", ".join(f"{k}={record[k]}" for k in keys if k in record)


def convert(text: str) -> list[Converted]:
    """Every test of the output as a Converted row; ImportFailed lists unreadable tests."""
    out: list[Converted] = []
    errors: list[dict[str, Any]] = []
    for index, record in enumerate(parse(text)):
        try:
            model, quant = model_and_quant(record)
            value = float(record["avg_ts"])
            names = [n.strip() for n in str(record["gpu_info"]).split(",") if n.strip()]
        except (KeyError, TypeError, ValueError) as exc:
            errors.append(
                problem(index, "test", f"unreadable llama-bench test: {exc}", "llama_bench_test")
            )
            continue
        if not names or len(set(names)) > 1:
            errors.append(
                problem(
                    index,
                    "gpu_info",
                    f"gpu_info {record.get('gpu_info')!r} names no single "
                    "GPU model (mixed boxes are not one result)",
                    "mixed_devices",
                )
            )
            continue
        commit, build = record.get("build_commit"), record.get("build_number")
        version = " ".join(
            str(p) for p in (commit, f"({build})" if build else None, record.get("backends")) if p
        )
        out.append(
            Converted(
                index=index,
                device=names[0],
                gpu_count=len(names),
                workload=workload_name(record, model, quant),
                value=value,
                precision=None,
                framework="llama.cpp",
                framework_version=version[:64] or None,
                batch_size=1,
                notes=_notes(record)[:2000],
                device_string=str(record["gpu_info"])[:512],
                system=str(record.get("cpu_info") or "")[:128] or None,
                workload_hint=str(record.get("model_type")),
            )
        )
    if errors:
        raise ImportFailed(errors)
    return out
