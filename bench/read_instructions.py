"""Instructions per read request, counted with callgrind: repeatable on a busy machine.

Wall-clock benchmarks (bench/recommend.py) mean nothing while other work shares the cores; an
instruction count barely moves with load. This script drives the app in process (TestClient on
a SQLite copy of the seeded catalog with its measured corpus) under `valgrind --tool=callgrind`:
the app starts, every mode's URL is asked once (snapshots built, estimates fitted), then each
mode runs its requests between two markers. A marker is a ctypes call (libffi's `ffi_call`,
which nothing else calls here) and callgrind dumps its counters before each one
(`--dump-before=ffi_call`), so each dump holds one mode's requests, all threads together (the
test client's, the event loop's and the thread pool's). Printed: instructions per request.
Hash seeds are fixed and caches outlive the run, so two runs of the same code count alike.

    .venv/bin/python bench/read_instructions.py              # all modes
    .venv/bin/python bench/read_instructions.py --scale 0.5  # half the requests per mode

Modes: recommend-cached (one URL again and again: the answer cache), recommend-computed
(distinct budgets: the snapshot cached, the answer computed), rankings-cached,
rankings-computed (distinct cost horizons), recommend-llm (an LLM ask, computed each time).
"""

import argparse
import ctypes
import logging
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's service package, also in the measured process

# mode -> (URL of the i-th request, requests)
MODES: dict[str, tuple[Callable[[int], str], int]] = {
    "recommend-cached": (lambda i: "/recommend?budget=2000&workload=resnet50-train", 400),
    "recommend-computed": (lambda i: f"/recommend?budget={1000 + i}&workload=resnet50-train", 100),
    "rankings-cached": (lambda i: "/rankings?workload=resnet50-train", 400),
    "rankings-computed": (
        lambda i: f"/rankings?workload=resnet50-train&horizon_years={1 + i / 1000}",
        100,
    ),
    "recommend-llm": (lambda i: f"/recommend?budget={3000 + i}&model=llama-2-7b", 10),
}


def prepare(path: Path) -> None:
    """A migrated SQLite database with the catalog and the measured corpus."""
    from service.catalog.seed import seed
    from service.core.db import make_engine
    from service.core.migrations import upgrade

    url = f"sqlite:///{path}"
    upgrade(url)
    engine = make_engine(url)
    seed(engine, results=True)
    engine.dispose()


def drive(database: Path, modes: list[str], scale: float) -> None:
    """The measured process: app start, one warm-up request per mode, then each mode's requests
    between markers."""
    from fastapi.testclient import TestClient

    from service.core.settings import Settings
    from service.main import create_app

    logging.getLogger("httpx").setLevel(logging.WARNING)  # the client's log, not the server's
    marker = ctypes.CDLL(None).getpid  # called through ffi_call: callgrind dumps before it
    # A day of cache lifetime: under callgrind the run is ~50x slower than real time, and a
    # snapshot that expired mid-run (30 s by default) would be rebuilt inside some mode's count.
    settings = Settings(
        database_url=f"sqlite:///{database}", price_max_age_days=36500, cache_ttl_s=86400
    )
    with TestClient(create_app(settings)) as client:
        for mode in modes:
            url, _ = MODES[mode]
            assert client.get(url(-1)).status_code == 200
        for mode in modes:
            url, n = MODES[mode]
            marker()
            for i in range(max(1, round(n * scale))):
                response = client.get(url(i))
                assert response.status_code == 200, response.text
        marker()


def measure(modes: list[str], scale: float) -> dict[str, float]:
    """Instructions per request of each mode, from one callgrind run."""
    with tempfile.TemporaryDirectory() as tmp:
        database = Path(tmp) / "seeded.db"
        prepare(database)
        out = Path(tmp) / "callgrind.out"
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT)}
        cmd = [
            "valgrind",
            "--tool=callgrind",
            "--dump-before=ffi_call",
            f"--callgrind-out-file={out}",
            sys.executable,
            str(Path(__file__).resolve()),
            "--drive",
            str(database),
            "--modes",
            ",".join(modes),
            "--scale",
            str(scale),
        ]
        subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=ROOT)
        dumps = sorted(Path(tmp).glob("callgrind.out.*"), key=lambda p: int(p.suffix[1:]))
        totals = [int(re.search(r"^summary: (\d+)", d.read_text(), re.M).group(1)) for d in dumps]  # type: ignore[union-attr]
    # dump 1: start and warm-up; dumps 2..: one mode each (shutdown goes to the unnumbered file)
    assert len(totals) == len(modes) + 1, f"{len(totals)} dumps: something else called ffi_call"
    return {
        mode: totals[k + 1] / max(1, round(MODES[mode][1] * scale)) for k, mode in enumerate(modes)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--scale", type=float, default=1.0, help="times each mode's requests")
    parser.add_argument("--drive", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    modes = args.modes.split(",")
    if args.drive is not None:
        drive(args.drive, modes, args.scale)
        return
    for mode, per in measure(modes, args.scale).items():
        print(f"{mode:20s} {per:14,.0f} instructions/request", flush=True)


if __name__ == "__main__":
    main()
