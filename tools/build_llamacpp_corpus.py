"""Write service/catalog/llamacpp_results.csv: llama.cpp `llama-bench` runs of Llama 2 7B Q4_0
(pp512 / tg128, the llama.cpp scoreboards' standard test) on AMD, Intel and NVIDIA GPUs.

Design decisions (provenance and the rows left out: service/catalog/LLAMACPP_MEASURED.md):
- The numbers below were transcribed by hand from the cited files; this script holds only the
  numbers, the citation and the device string each run printed (no third-party text).
- `--verify MIRRORS` re-reads every cited file at its commit from local git mirrors (as
  `fetch` lays them out: MIRRORS/<owner>+<name>/repo) and fails unless each value appears on a
  llama-bench table line of the cited file together with its test name, the model's parameter
  count (6.74 B) and the backend. Without mirrors the CSV is written unverified.
- One backend per GPU, the one its catalog stack names (ROCm/HIP on AMD, SYCL on Intel, CUDA on
  NVIDIA): a result group is (GPU, workload, precision, GPU count), so a Vulkan and a ROCm run of
  the same card would be pooled into one median that no one measured.
- Newest build per (GPU, backend, source); llama-bench defaults unless the source only ran
  otherwise (the run's flags are kept in `note`).

Run: python tools/build_llamacpp_corpus.py [--verify /work/.mirror]
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "service" / "catalog" / "llamacpp_results.csv"
# Same columns as llm_results.csv, which corpus.py reads both with.
COLUMNS = (OUT.parent / "llm_results.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
WORKLOAD = {"pp512": "llama-2-7b-q4_0-pp512", "tg128": "llama-2-7b-q4_0-tg128"}
FILE_NOTE = (
    "model llama-2-7b.Q4_0.gguf (TheBloke/Llama-2-7B-GGUF), "
    "printed as 'llama 7B Q4_0 3.56 GiB 6.74 B'"
)


@dataclass(frozen=True)
class Source:
    repo: str
    commit: str
    path: str
    where: str  # section of the file
    date: str  # first commit of the file that carries these numbers (git log -S)
    system: str


@dataclass(frozen=True)
class Run:
    source: str  # key of SOURCES
    gpu: str
    gpu_count: int
    device: str  # as the run printed it (one device; repeated gpu_count times)
    backend: str
    build: str  # llama-bench 'build:' line, or why it is missing
    flags: str
    values: dict[str, str]  # test -> t/s as printed
    model_file_named: bool = True  # the source names llama-2-7b.Q4_0.gguf


VAULT = "AUGMXNT/llm-tracker.info-vault"
VAULT_AT = "b56234c471c29f4e766ebccb0a6fcdfaa2c79b82"

SOURCES: dict[str, Source] = {
    "mi300x": Source(
        VAULT,
        VAULT_AT,
        "MI300X Testing.md",
        "'Inference / llama.cpp' llama-bench outputs",
        "2024-10-09",
        "Dell PowerEdge XE9680, 8x MI300X, 2x Xeon Platinum 8470, Ubuntu 22.04 (Hot Aisle)",
    ),
    "w7900": Source(
        VAULT,
        VAULT_AT,
        "SYCL for AMD.md",
        "'Benchmarks / ROCm' llama-bench output",
        "2024-12-16",
        "AMD EPYC 9274F workstation, Linux (same file's sycl-ls output)",
    ),
    "rdna3": Source(
        VAULT,
        VAULT_AT,
        "howto/AMD GPUs.md",
        "'2024-01-08 Testing' llama-bench outputs (last tested 2024-01-28)",
        "2024-01-28",
        "Linux, ROCm 6.0 (same section)",
    ),
    "pro6000": Source(
        VAULT,
        VAULT_AT,
        "RTX PRO 6000.md",
        "'llama.cpp / llama2-7b / 600W' llama-bench output",
        "2025-09-08",
        "Linux workstation, board power limit 600 W (the card's default)",
    ),
    "b580": Source(
        "hypengw/hypengw.github.io",
        "1c2545c2decdb20f308da9f47245640c8f5f46dd",
        "content/post/b580/index.md",
        "llama.cpp section, llama-bench -ngl 99 tables (post 'Intel B580', 2025-01-07)",
        "2025-01-12",
        "Fedora 41, kernel 6.12.11, Mesa 24.3.4, B580 as eGPU over M.2-to-OCuLink",
    ),
}

DEFAULTS = "-ngl 99, otherwise the llama-bench defaults of that build (no flash attention)"

RUNS: tuple[Run, ...] = (
    Run(
        "mi300x",
        "amd-mi300x",
        1,
        "AMD Instinct MI300X",
        "ROCm",
        "d5cb8684 (3891)",
        f"HIP_VISIBLE_DEVICES=0; {DEFAULTS}",
        {"pp512": "1334.37", "tg128": "183.18"},
    ),
    Run(
        "mi300x",
        "amd-mi300x",
        8,
        "AMD Instinct MI300X",
        "ROCm",
        "d5cb8684 (3891)",
        f"all 8 GPUs, default layer split; {DEFAULTS}",
        {"pp512": "1333.08", "tg128": "174.99"},
    ),
    Run(
        "w7900",
        "amd-radeon-pro-w7900",
        1,
        "AMD Radeon Pro W7900",
        "ROCm",
        "ba1cb19c (4327)",
        DEFAULTS,
        {"pp512": "2875.28", "tg128": "99.42"},
    ),
    Run(
        "rdna3",
        "amd-rx-7900-xt",
        1,
        "Radeon RX 7900 XT",
        "ROCm",
        "6db2b41a (1988)",
        "CUDA_VISIBLE_DEVICES=0, -p 3968 (its pp3968 is not a corpus workload); tg128 with "
        + DEFAULTS,
        {"tg128": "97.17"},
    ),
    Run(
        "rdna3",
        "amd-rx-7900-xtx",
        1,
        "Radeon RX 7900 XTX",
        "ROCm",
        "6db2b41a (1988)",
        "CUDA_VISIBLE_DEVICES=1, -p 3968 (its pp3968 is not a corpus workload); tg128 with "
        + DEFAULTS,
        {"tg128": "119.09"},
    ),
    Run(
        "pro6000",
        "nvidia-rtx-pro-6000-blackwell",
        1,
        "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
        "CUDA",
        "233d773d0 (6413)",
        "-fa 1 (the only flash-attention setting the source ran), -ngl 99",
        {"pp512": "16634.04", "tg128": "278.95"},
    ),
    Run(
        "b580",
        "intel-arc-b580",
        1,
        "Intel B580",  # the post's title; its SYCL run printed no device line
        "SYCL",
        "unknown (no build line; 2025-01)",
        "llama-bench -ngl 99; the post prints no build line (llama.cpp as of January 2025); SYCL "
        "build from the author's Dockerfile (hypengw/dockerfiles); "
        "model file not named in the post (params 6.74 B, 3.56 GiB = the Llama 2 7B shape)",
        {"pp512": "1982.69", "tg128": "34.83"},
        model_file_named=False,
    ),
)


def _citation(src: Source) -> str:
    return f"{src.repo}@{src.commit[:8]} '{src.path}', {src.where}"


def rows() -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for run in RUNS:
        src = SOURCES[run.source]
        for test, value in run.values.items():
            out.append(
                {
                    "gpu": run.gpu,
                    "workload": WORKLOAD[test],
                    "value": value,
                    "precision": "q4_0",
                    "gpu_count": str(run.gpu_count),
                    "batch_size": "1",
                    "framework": "llama.cpp",
                    "framework_version": f"{run.build} {run.backend}",
                    "source": _citation(src),
                    "source_date": src.date,
                    "device_string": ", ".join([run.device] * run.gpu_count),
                    "system": src.system,
                    "note": f"llama-bench {test}, {run.backend} backend; {run.flags}"
                    + (f"; {FILE_NOTE}" if run.model_file_named else ""),
                }
            )
    return out


def _file_at(mirrors: Path, src: Source) -> str:
    git_dir = mirrors / src.repo.replace("/", "+") / "repo"
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{src.commit}:{src.path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def verify(mirrors: Path) -> list[str]:
    """Problems found: each value must sit on a llama-bench table line of the cited file with
    its test name, the 6.74 B parameter count and the backend."""
    problems: list[str] = []
    texts: dict[str, list[str]] = {}
    for run in RUNS:
        src = SOURCES[run.source]
        if run.source not in texts:
            texts[run.source] = _file_at(mirrors, src).splitlines()
        for test, value in run.values.items():
            spaced = test.replace("pp", "pp ").replace("tg", "tg ")
            hits = [
                line
                for line in texts[run.source]
                if f" {value} " in line
                and "6.74 B" in line
                and run.backend in line
                and (test in line or spaced in line)
            ]
            if len(hits) != 1:
                problems.append(f"{run.gpu} x{run.gpu_count} {test} {value}: {len(hits)} matches")
            if run.device not in "\n".join(texts[run.source]):
                problems.append(f"{run.gpu}: device string {run.device!r} not in {src.path}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--verify", type=Path, help="folder of git mirrors (owner+name/repo)")
    args = parser.parse_args()
    if args.verify:
        problems = verify(args.verify)
        for p in problems:
            print("MISMATCH", p, file=sys.stderr)
        if problems:
            return 1
    with OUT.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows())
    print(f"wrote {OUT} ({len(rows())} rows{', verified' if args.verify else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
