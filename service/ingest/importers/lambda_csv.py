"""Lambda deeplearning-benchmark tables (`pytorch-train-throughput[-v2]-{fp16,fp32}.csv`).

Design decisions (the traps are in service/catalog/MEASURED.md):
- One row per system, one column per model; a column maps to the workload named after what
  was measured (`bert_large_squad` is SQuAD fine-tuning, not BERT pretraining).
- `0.0` / empty = not run: no result. `ncf` and `maskrcnn` have no workload (and NCF cells are
  garbage): skipped. Any other unknown column is refused by the workload check.
- Vendor/cloud prefixes (LambdaCloud, Dell, SMC, 1CC ...) are systems, kept in `system`; the
  GPU part of the name goes through the device matcher. v2 names carry `Nx<GPU>` as the count.
- Precision: a `precision` column when present, else fp16 (the AMP tables); post the fp32
  tables with a `precision` column.
"""

import csv
import io
import re

from service.ingest.importers.base import Converted, ImportFailed, problem

MODEL_WORKLOAD = {
    "ssd": "ssd300-train",
    "bert_base_squad": "bert-base-squad-finetune",
    "bert_large_squad": "bert-large-squad-finetune",
    "gnmt": "gnmt-train",
    "resnet50": "resnet50-train",
    "tacotron2": "tacotron2-train",
    "transformerxlbase": "transformerxl-base-train",
    "transformerxllarge": "transformerxl-large-train",
    "waveglow": "waveglow-train",
}
SKIPPED_MODELS = ("ncf", "maskrcnn")
META_COLUMNS = ("name_gpu", "", "num_gpu", "watt", "price", "precision")
PREFIXES = (
    "LambdaCloud",
    "Lambda Cloud",
    "DellTexas",
    "Dell",
    "SMC",
    "1CC",
    "RAIDZ1",
    "Linode Cloud",
)
_V1 = re.compile(
    r"^(?:(?P<sys>" + "|".join(PREFIXES) + r")(?:\s+—)?\s+)?(?:(?P<n>\d+)x\s*)?(?P<gpu>.+)$"
)
_V2 = re.compile(r"^(?P<sys>.*?)_?(?P<n>\d+)x(?P<gpu>[A-Z]+\d+_\d+GB(?:_(?:SXM5?|PCIe))?)_.*$")


def _name(name: str) -> tuple[str, int | None, str]:
    """(device name, count from the name or None, system)."""
    v2 = _V2.match(name)
    if v2:
        return v2["gpu"].replace("_", " "), int(v2["n"]), v2["sys"] or "Lambda"
    v1 = _V1.match(name)
    assert v1 is not None  # `.+` matches any non-empty name
    return v1["gpu"].strip(), int(v1["n"]) if v1["n"] else None, v1["sys"] or "Lambda"


def convert(text: str) -> list[Converted]:
    reader = csv.DictReader(io.StringIO(text.strip()))
    header = reader.fieldnames or []
    if not header or not any(h in MODEL_WORKLOAD for h in header):
        raise ImportFailed.one(
            ("body",), "not a Lambda benchmark table (no model columns)", "csv_invalid"
        )
    name_col = "name_gpu" if "name_gpu" in header else header[0]
    out: list[Converted] = []
    errors = []
    for index, raw in enumerate(reader):
        name = (raw.get(name_col) or "").strip()
        if not name or name.endswith("_bk"):
            continue  # backup rows of another run
        device, named_count, system = _name(name)
        try:
            count = int(float(raw["num_gpu"])) if raw.get("num_gpu") else (named_count or 1)
        except ValueError:
            errors.append(problem(index, "num_gpu", f"num_gpu {raw['num_gpu']!r}", "not_a_number"))
            continue
        precision = (raw.get("precision") or "fp16").strip().lower()
        for column, cell in raw.items():
            if column is None or column in META_COLUMNS or column in SKIPPED_MODELS:
                continue
            try:
                value = float(cell) if cell not in (None, "") else 0.0
            except ValueError:
                errors.append(problem(index, column, f"{cell!r} is not a number", "not_a_number"))
                continue
            if value == 0.0:
                continue  # not run
            out.append(
                Converted(
                    index=index,
                    device=device,
                    gpu_count=count,
                    workload=MODEL_WORKLOAD.get(column, column),
                    value=value,
                    precision=precision,
                    framework="pytorch",
                    device_string=name[:512],
                    system=system[:128],
                    workload_hint=f"column {column}",
                )
            )
    if errors:
        raise ImportFailed(errors)
    return out
