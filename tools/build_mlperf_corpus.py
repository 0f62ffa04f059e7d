"""Build service/catalog/mlperf_results.csv from MLCommons results repositories (run by hand).

Inputs are local git copies of mlcommons/inference_results_vX.Y and training_results_vX.Y,
given as arguments; nothing is downloaded and the service never runs this script. Every row
cites the repository, the commit and the file its number comes from.

Inference (Llama 2 70B, closed division): one row per (submitter, platform, scenario) from
`results/<platform>/llama2-70b-99[.9]/<scenario>/performance/run_1/mlperf_log_summary.txt`
(the LoadGen result line), with the accelerator and its count from `systems/<platform>.json`
and the weight precision from `measurements/<platform>/<benchmark>/<scenario>/*.json`. The
rows are shaped like the submission checker's summary.csv and read by the `mlperf` importer's
own row parser, so the shipped corpus and a lab's import read MLPerf the same way.

Training (Llama 2 70B LoRA, closed division): one row per system, the median over its run logs
`result_N.txt`. MLPerf reports time to train; a run's rate is sequences trained / seconds inside
the logged training blocks (`block_start` -> `block_stop`, MLPerf's evaluation pauses excluded).
Each sequence is a packed 8192-token GovReport sample. Precision comes from the submitter's
implementation configs (`export FP8=True` in all of them); where FP8 is off in some configs, or
FP4 recipes sit beside FP8 ones on a GPU that has FP4, a system's precision cannot be told from
the files and it is left out.

Dropped rows are counted per reason and printed (service/catalog/MLPERF.md lists them).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from service.domain.matching import map_device  # noqa: E402
from service.ingest.importers import mlperf  # noqa: E402

# The one header every shipped corpus file has (service/catalog/corpus.py reads them alike).
COLUMNS = (
    (ROOT / "service/catalog/measured_results.csv").read_text("utf-8").splitlines()[0].split(",")
)
MAX_GPUS = 64  # ResultIn.gpu_count limit
LORA_WORKLOAD = "mlperf-llama2-70b-lora-train"
LORA_TOKENS = 8192
# Rounds whose declared weight_data_types contradict the submitted code (see code_precision).
CODE_PRECISION_ROUNDS = ("v4.1",)
# Architectures without an FP4 matrix unit: an FP4 recipe cannot be what they ran.
NO_FP4 = ("hopper", "ada", "ampere", "cdna3")
# Accelerators the device matcher would place on a catalog GPU they are not.
NOT_IN_CATALOG = {
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": "Server Edition is its own SKU; the "
    "catalog holds the Workstation and Max-Q editions only",
    "MS-Intel Arc Pro B60 Dual 48G Turbo": "int4 weights (UINT4); the compute path (W4A16 or "
    "W4A8) is not stated, so no honest physics ceiling",
    "[MAXSUN] MS-Intel Arc Pro B60 Dual 48G Turbo": "int4 weights (UINT4); the compute path "
    "(W4A16 or W4A8) is not stated, so no honest physics ceiling",
}


class Git:
    def __init__(self, path: Path, name: str) -> None:
        self.path, self.name = path, name
        self.head = self._run("rev-parse", "HEAD").strip()
        self.files = self._run("ls-tree", "-r", "--name-only", "HEAD").splitlines()

    def _run(self, *args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(self.path), *args], capture_output=True, text=True, check=True
        ).stdout

    def show(self, path: str) -> str | None:
        result = subprocess.run(
            ["git", "-C", str(self.path), "show", f"HEAD:{path}"],
            capture_output=True,
            text=True,
        )
        return result.stdout if result.returncode == 0 else None

    def date(self, path: str) -> str:
        return self._run("log", "-1", "--format=%cs", "--", path).strip()

    def cite(self, path: str) -> str:
        return f"{self.name}@{self.head[:12]} {path}"


@dataclass
class Report:
    rows: list[dict[str, str]] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def drop(self, reason: str, what: str, n: int = 1) -> None:
        self.dropped[reason] += n
        self.examples.setdefault(reason, [])
        if len(self.examples[reason]) < 40 and what not in self.examples[reason]:
            self.examples[reason].append(what)


def catalog() -> list[tuple[str, list[str], float]]:
    with open(ROOT / "service/catalog/gpus.csv", newline="", encoding="utf-8") as f:
        return [
            (
                r["slug"],
                [r["name"], *[a for a in r["aliases"].split("|") if a]],
                float(r["memory_gb"]),
            )
            for r in csv.DictReader(f)
        ]


def architectures() -> dict[str, str]:
    with open(ROOT / "service/catalog/gpus.csv", newline="", encoding="utf-8") as f:
        return {r["slug"]: r["architecture"] for r in csv.DictReader(f)}


def gpu_slug(name: str, cat: list[tuple[str, list[str], float]]) -> tuple[str | None, str]:
    """Catalog slug of an accelerator name as the importer's resolver would map it."""
    if name in NOT_IN_CATALOG:
        return None, NOT_IN_CATALOG[name]
    device, _boards = mlperf.accelerator_device(name)
    return map_device(device, None, cat)


def _json(git: Git, path: str) -> dict[str, object] | None:
    text = git.show(path)
    try:
        return json.loads(text) if text else None
    except json.JSONDecodeError:
        return None


# ---------------------------------------------------------------- inference

_SUMMARY = re.compile(
    r"^(?:Completed tokens per second|Tokens per second)\s*:\s*(?P<v>[0-9.eE+]+)", re.M
)


def _weight_types(git: Git, sub: str, platform: str, bench: str, scenario: str) -> str:
    folder = f"closed/{sub}/measurements/{platform}/{bench}/{scenario}/"
    for path in git.files:
        if (
            path.startswith(folder)
            and path.endswith(".json")
            and path.count("/") == folder.count("/")
        ):
            data = _json(git, path)
            if data and "weight_data_types" in data:
                return str(data["weight_data_types"])
    return ""


def inference(
    git: Git, version: str, cat: list[tuple[str, list[str], float]], report: Report
) -> None:
    pattern = re.compile(
        r"^closed/(?P<sub>[^/]+)/results/(?P<platform>[^/]+)/(?P<bench>llama2-70b[^/]*)/"
        r"(?P<scenario>Offline|Server|Interactive)/performance/run_1/mlperf_log_summary\.txt$"
    )
    published = _published(git)
    code_fp8: dict[str, tuple[str | None, str]] = {}
    power_runs = {
        f.split("/performance/power/")[0] for f in git.files if "/performance/power/" in f
    }
    kept: dict[tuple[str, str, str, str], dict[str, str]] = {}
    # llama2-70b-99 before -99.9, so a run submitted under both is kept as the -99 result
    for path in sorted(git.files, key=lambda p: p.replace("-99.9/", "-99~/")):
        m = pattern.match(path)
        if not m:
            continue
        sub, platform, bench, scenario = m["sub"], m["platform"], m["bench"], m["scenario"]
        what = f"{version} {sub}/{platform} {bench} {scenario}"
        system_path = f"closed/{sub}/systems/{platform}.json"
        system = _json(git, system_path)
        text = git.show(path) or ""
        value = _SUMMARY.search(text)
        if system is None:
            report.drop("no readable systems/<platform>.json", what)
            continue
        if "Result is : VALID" not in text or value is None:
            report.drop("summary not VALID or without a tokens/s line", what)
            continue
        status = str(system.get("status", "")).lower()
        if status != "available":
            report.drop(f"availability '{status}' (preview/RDI hardware or software)", what)
            continue
        if "datacenter" not in str(system.get("system_type", "")):
            report.drop("edge system (datacenter suite only)", what)
            continue
        location = path.rsplit("/performance/", 1)[0]
        pub = published.get(location)
        if pub is not None and str(pub.get("inferred", 0)) not in ("0", "False"):
            report.drop("inferred from another scenario (not a run of this one)", what)
            continue
        if location in power_runs:
            report.drop("power-measured run (MaxQ/power-capped submission)", what)
            continue
        name = str(system.get("accelerator_model_name", "")).strip()
        if "," in name:
            report.drop("mixed accelerators in one system (a result is one GPU model's)", what)
            continue
        slug, how = gpu_slug(name, cat)
        if slug is None:
            report.drop(f"accelerator not in the catalog: {name} ({how})", what)
            continue
        checker_row = {
            "Organization": str(system.get("submitter", sub)),
            "Availability": status,
            "Division": str(system.get("division", "")),
            "SystemName": str(system.get("system_name", "")),
            "Platform": platform,
            "Model": bench,
            "MlperfModel": bench,
            "Scenario": scenario,
            "Result": value["v"],
            "number_of_nodes": str(system.get("number_of_nodes", "1")),
            "accelerator_model_name": name,
            "accelerators_per_node": str(system.get("accelerators_per_node", "")),
            "framework": str(system.get("framework", "")),
            "version": version,
            "Units": "Tokens/s",
            "weight_data_types": _weight_types(git, sub, platform, bench, scenario),
        }
        if checker_row["Division"].lower() != "closed":
            report.drop("system description says open division", what)
            continue
        try:
            row = mlperf.parse_row(0, checker_row)
        except (KeyError, ValueError) as exc:
            report.drop(f"unreadable: {exc}", what)
            continue
        declared = checker_row["weight_data_types"]
        evidence = f"weight_data_types {declared} (measurements json)"
        if version in CODE_PRECISION_ROUNDS:
            if sub not in code_fp8:
                code_fp8[sub] = code_precision(git, sub)
            precision, why = code_fp8[sub]
            if precision is None:
                report.drop(f"precision not attributable ({why})", what)
                continue
            if precision != row.precision:
                evidence = f"{why}; the measurements json declares {declared}"
            row.precision = precision
        if row.precision is None:
            report.drop("no weight_data_types declared", what)
            continue
        if row.gpu_count > MAX_GPUS:
            report.drop(f"more than {MAX_GPUS} accelerators", what)
            continue
        published_value = float(str(pub["Performance_Result"])) if pub is not None else row.value
        if abs(published_value - row.value) > 1e-3 * row.value:
            report.drop("log value differs from MLCommons' summary_results.json", what)
            continue
        key = (sub, platform, scenario, value["v"])
        if key in kept:
            report.drop("same run submitted under llama2-70b-99 and -99.9 (kept once)", what)
            continue
        per_gpu = row.value / row.gpu_count
        kept[key] = {
            "gpu": slug,
            "workload": row.workload,
            "value": value["v"],  # as the log prints it
            "precision": row.precision,
            "gpu_count": str(row.gpu_count),
            "batch_size": "",
            "framework": row.framework,
            "framework_version": row.framework_version or "",
            "source": f"{git.cite(path)}; {system_path}",
            "source_date": git.date(path),
            "device_string": name,
            "system": (row.system or "")[:128],
            "note": (
                f"MLPerf Inference {version} closed, {bench} {scenario}, Result VALID, "
                f"tokens/s of the whole system; per GPU = {value['v']} / {row.gpu_count} = "
                f"{per_gpu:.1f} tokens/s; precision: {evidence}; platform {platform}"
            ),
        }
    report.rows.extend(kept.values())


_CLASS = re.compile(r"^class (\w+)\((\w+)\):\n((?:[ \t#].*\n|\n)*)", re.M)


def _trt_fp8(text: str) -> bool | None:
    """Whether every system class of an NVIDIA-harness llama2-70b config runs fp8 (use_fp8 on the
    class or an ancestor); None when the file registers no system."""
    classes = {m[1]: (m[2], m[3]) for m in _CLASS.finditer(text)}

    def fp8(name: str) -> bool:
        parent, body = classes.get(name, ("", ""))
        flag = re.search(r"^\s+use_fp8\s*=\s*(True|False)", body, re.M)
        if flag:
            return flag[1] == "True"
        if re.search(r"^\s+precision\s*=\s*[\"']fp8[\"']", body, re.M):
            return True
        return fp8(parent) if parent in classes else False

    systems = [n for n, (_p, body) in classes.items() if re.search(r"^\s+system\s*=", body, re.M)]
    if not systems:
        return None
    return all(fp8(n) for n in systems)


def code_precision(git: Git, sub: str) -> tuple[str | None, str]:
    """fp8 where the submitter's llama2-70b code says so (v4.1 declarations are not reliable:
    NVIDIA-harness submissions declare fp16 while every system class sets use_fp8)."""
    root = f"closed/{sub}/configs/llama2-70b/"
    configs = [f for f in git.files if f.startswith(root) and f.endswith(".py")]
    scenarios = {f[len(root) :].split("/")[0] for f in configs if f.count("/") > root.count("/")}
    # a scenario's classes may inherit from a sibling file's (`from . import *`): read them together
    texts = [
        "\n".join(
            git.show(f) or ""
            for f in configs
            if f.startswith(f"{root}{sc}/") or "/" not in f[len(root) :]
        )
        for sc in sorted(scenarios)
    ]
    verdicts = [v for v in (_trt_fp8(t) for t in texts) if v is not None]
    if verdicts:
        if all(verdicts):
            return "fp8", f"use_fp8 = True on every system class in closed/{sub}/configs/llama2-70b"
        return None, "a system class in the llama2-70b configs has no use_fp8 = True (as parsed)"
    code = [f for f in git.files if f.startswith(f"closed/{sub}/code/llama2-70b")]
    if any("VllmFp8" in f for f in code):
        return "fp8", f"vLLM FP8 harness closed/{sub}/code/llama2-70b-99/VllmFp8"
    for f in code:
        if f.endswith("README.md") and "FP8 quantization" in (git.show(f) or ""):
            return "fp8", f"{f}: model converted to FP8 before serving"
    return None, "no llama2-70b code states the precision"


def _published(git: Git) -> dict[str, dict[str, object]]:
    """MLCommons' summary_results.json of the round (v5.1 on), keyed by result folder."""
    text = git.show("summary_results.json")
    if not text:
        return {}
    return {str(r["Location"]): r for r in json.loads(text) if "Location" in r}


# ---------------------------------------------------------------- training


def _mllog(text: str) -> list[dict[str, object]]:
    events = []
    for line in text.splitlines():
        _, sep, payload = line.partition(":::MLLOG ")
        if sep:
            try:
                events.append(json.loads(payload))
            except json.JSONDecodeError:
                continue
    return events


def lora_rate(text: str) -> tuple[float, int, float, str]:
    """(sequences/s inside training blocks, sequences, seconds, run_stop status).

    Sequences trained = the last logged samples_count (run_stop, eval_start, block_stop) minus
    the first block_start's: NVIDIA's mlperf_common logs block_stop with the block's starting
    count, so block_stop counts alone undercount."""
    events = _mllog(text)
    counts: list[int] = []
    first: int | None = None
    seconds, start, status = 0.0, None, ""
    for e in events:
        meta = e.get("metadata") or {}
        assert isinstance(meta, dict)
        key = e.get("key")
        if "samples_count" in meta and key in ("run_stop", "eval_start", "block_stop"):
            counts.append(int(meta["samples_count"]))
        if key == "block_start":
            start = int(str(e["time_ms"]))
            if first is None:
                first = int(meta.get("samples_count", 0))
        elif key == "block_stop" and start is not None:
            seconds += (int(str(e["time_ms"])) - start) / 1000
            start = None
        elif key == "run_stop":
            status = str(meta.get("status", ""))
    samples = max(counts, default=0) - (first or 0)
    if seconds <= 0 or samples <= 0:
        raise ValueError("no block_start/block_stop pair and samples_count")
    return samples / seconds, samples, seconds, status


def _training_precision(git: Git, sub: str) -> tuple[str | None, str]:
    folder = f"{sub}/benchmarks/llama2_70b_lora/"
    fp8, fp4 = set(), False
    for path in git.files:
        if path.startswith(folder) and re.search(r"/config[^/]*\.sh$", path):
            text = git.show(path) or ""
            fp8.update(re.findall(r"^\s*export\s+FP8=(\S+)", text, re.M))
            fp4 = (
                fp4
                or "fp4" in path.rsplit("/", 1)[1].lower()
                or bool(re.search(r"^\s*export\s+FP4=True|config_common_fp4", text, re.M))
            )
    if fp8 - {"True"}:
        return None, "FP8 on in some configs and off in others: a system's precision is not stated"
    if not fp8:
        return None, "no implementation config states the precision"
    if fp4:
        return None, "FP4 and FP8 recipes side by side: a system's precision is not stated"
    return "fp8", "export FP8=True in every config"


def training(
    git: Git, version: str, cat: list[tuple[str, list[str], float]], report: Report
) -> None:
    """One row per system: the median of its runs' rates (MLPerf itself scores a system by the
    olympic mean of its runs' times); runs that did not converge or have no rate are dropped."""
    arch = architectures()
    power = {
        f.split("/llama2_70b_lora/power/")[0] for f in git.files if "/llama2_70b_lora/power/" in f
    }
    pattern = re.compile(r"^(?P<sub>[^/]+)/results/(?P<sys>[^/]+)/llama2_70b_lora/result_\d+\.txt$")
    runs: dict[tuple[str, str], list[str]] = {}
    for path in git.files:
        m = pattern.match(path)
        if m:
            runs.setdefault((m["sub"], m["sys"]), []).append(path)
    precision_of: dict[str, tuple[str | None, str]] = {}
    for (sub, sysname), paths in sorted(runs.items()):
        what = f"{version} {sub}/{sysname}"
        system_path = f"{sub}/systems/{sysname}.json"
        system = _json(git, system_path)
        if system is None:
            report.drop("no readable systems/<system>.json", what)
            continue
        if str(system.get("division", "")).lower() != "closed":
            report.drop("open division", what)
            continue
        if f"{sub}/results/{sysname}" in power:
            report.drop("power-measured run", what)
            continue
        status = str(system.get("status", ""))
        if not status.lower().startswith("available"):
            report.drop(f"availability '{status}'", what)
            continue
        name = str(system.get("accelerator_model_name", "")).strip()
        slug, how = gpu_slug(name, cat)
        if slug is None:
            report.drop(f"accelerator not in the catalog: {name} ({how})", what)
            continue
        count = int(str(system["accelerators_per_node"])) * int(str(system["number_of_nodes"]))
        if count > MAX_GPUS:
            report.drop(f"more than {MAX_GPUS} accelerators", what)
            continue
        if sub not in precision_of:
            precision_of[sub] = _training_precision(git, sub)
        precision, why = precision_of[sub]
        if precision is None and why.startswith("FP4 and FP8") and arch.get(slug) in NO_FP4:
            precision, why = "fp8", f"FP8=True configs; {arch[slug]} has no FP4 unit"
        if precision is None:
            report.drop(f"precision not attributable ({why})", what)
            continue
        rates = []
        for path in paths:
            try:
                rate, _samples, _seconds, run_status = lora_rate(git.show(path) or "")
            except (KeyError, ValueError) as exc:
                report.drop(f"run log unreadable (run dropped): {exc}", what)
                continue
            if run_status != "success":
                report.drop("run_stop status is not success (run dropped, system kept)", what)
                continue
            rates.append(rate)
        if not rates:
            continue
        value = statistics.median(rates)
        folder = f"{sub}/results/{sysname}/llama2_70b_lora"
        framework = str(system.get("framework", ""))
        report.rows.append(
            {
                "gpu": slug,
                "workload": LORA_WORKLOAD,
                "value": f"{value:.5g}",
                "precision": precision,
                "gpu_count": str(count),
                "batch_size": "",
                "framework": mlperf.framework_slug(framework),
                "framework_version": framework[:64],
                "source": f"{git.cite(folder)}/result_*.txt; {system_path}",
                "source_date": git.date(folder),
                "device_string": name,
                "system": f"{system.get('submitter', sub)} / {system.get('system_name', sysname)}"[
                    :128
                ],
                "note": (
                    f"MLPerf Training {version} closed, llama2_70b_lora; median over "
                    f"{len(rates)} runs (range {min(rates):.4g}-{max(rates):.4g}) of sequences "
                    f"({LORA_TOKENS} tokens, packed) trained / seconds inside "
                    "block_start->block_stop (evaluations excluded); per GPU = "
                    f"{value / count:.4g} seq/s; precision {precision} ({why}); system {sysname}"
                ),
            }
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--inference", nargs=2, action="append", default=[], metavar=("VERSION", "GIT_DIR")
    )
    parser.add_argument(
        "--training", nargs=2, action="append", default=[], metavar=("VERSION", "GIT_DIR")
    )
    parser.add_argument("--out", type=Path, default=ROOT / "service/catalog/mlperf_results.csv")
    args = parser.parse_args()
    cat = catalog()
    report = Report()
    for version, path in args.inference:
        inference(Git(Path(path), f"mlcommons/inference_results_{version}"), version, cat, report)
    for version, path in args.training:
        training(Git(Path(path), f"mlcommons/training_results_{version}"), version, cat, report)
    with open(args.out, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(report.rows)
    print(f"{len(report.rows)} rows -> {args.out}")
    for reason, n in report.dropped.most_common():
        print(f"dropped {n:4d}  {reason}: {'; '.join(report.examples[reason])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
