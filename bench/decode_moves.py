"""How far a measured decode rate moved along the roofline misses, with and without the fixed
time per layer (service/domain/llm_fit.py, FixedCosts and moved_decode_rate).

Usage: .venv/bin/python bench/decode_moves.py [--database-url URL]

A model= ask that nothing measured in its model or format rests on another decode workload,
moved by the decode roofline. Over every pair of one-GPU decode results on the same GPU, this
moves one to the other and prints the conformal 80% quantile of |log error| (what the answer's
band adds, llm_fit.transfer_half_width and its kin), for three kinds of move: to another model
(transfer), to another format of one model (format), to another token count of one model and
format (context). Each is printed for the whole time moved by the roofline ratio
(proportional, the old move), with the fixed time per layer learned from every GPU
(in-sample), and learned without the GPU whose pairs are scored (leave-one-GPU-out, what a card
nobody measured gets). The corpus is a fresh seeded database in a temporary folder unless
--database-url names one. A few seconds.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from llm_asks import database, llm_data  # noqa: E402

from service.domain import llm_fit  # noqa: E402
from service.domain.throughput_model import NOMINAL_COVERAGE, conformal_quantile  # noqa: E402
from service.read_model.llm import _load  # noqa: E402

Pair = Callable[[llm_fit.DecodePoint, llm_fit.DecodePoint], bool]
MOVES: dict[str, Pair] = {
    "transfer (another model)": lambda a, b: a.model != b.model,
    "format (same model)": lambda a, b: a.model == b.model and a.quant != b.quant,
    "context (same model and format)": lambda a, b: (
        a.model == b.model and a.quant == b.quant and a.tokens != b.tokens
    ),
}


def quantile(errors: list[float]) -> str:
    return f"{conformal_quantile(errors, NOMINAL_COVERAGE):.3f}" if errors else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    start = time.perf_counter()
    url, tmp = database(args.database_url)
    data = llm_data(url)
    if tmp is not None:
        tmp.cleanup()
    points = _load._decode_points(data.measured, data.gpus)
    everyone = llm_fit.fixed_costs(points)
    held_out = llm_fit.held_out_fixed_costs(points)  # what the service's bands are scored with
    print(
        f"{len(points)} one-GPU decode results; fixed time per layer (ms), in-sample: "
        + ", ".join(f"{s} {a * 1e3:.3f}" for s, a in sorted(everyone.by_stack.items()))
        + f", any other stack {everyone.pooled * 1e3:.3f}"
    )
    print(f"{'move':34} {'pairs':>6} {'proportional':>13} {'in-sample':>10} {'held-out':>9}")
    for name, pair in MOVES.items():
        old: list[float] = []
        inside: list[float] = []
        held: list[float] = []
        for gpu in sorted({p.gpu for p in points}):
            without = held_out(gpu)
            same = [p for p in points if p.gpu == gpu]
            for a in same:
                for b in same:
                    if not pair(a, b):
                        continue
                    for errors, fixed in (
                        (old, llm_fit.NO_FIXED_COSTS),
                        (inside, everyone),
                        (held, without),
                    ):
                        errors.append(
                            abs(math.log(b.measured / llm_fit.moved_between(a, b, fixed)))
                        )
        print(
            f"{name:34} {len(old):6} {quantile(old):>13} {quantile(inside):>10} {quantile(held):>9}"
        )
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
