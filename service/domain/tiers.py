"""Ranking inside uncertainty: throughput order, and a tie-break where estimates overlap.

Pure, shared by the fixed-workload answers (recommend.py) and the LLM answers (llm_fit.py).
Design decisions:

- A tier is a leader (the fastest not yet placed) and the options after it whose bands and
  the leader's each hold the other's value (mutual overlap): inside it the estimates cannot
  say which is faster, so the caller's tie-break orders it (fewer GPUs, then more memory or
  headroom per GPU). Tiers keep throughput order between them.
- Only estimates within TIE_RATIO of the leader tie, however wide their bands: two spec-only
  estimates each 2.7x either way had ranked one H100 PCIe (~366 sequences/s) above 4 x RTX 5090
  (~947) on BERT-large "for fewer GPUs". A band says how far an estimate may be off, not that
  two estimates 2.6x apart are alike. 1.25 is the error the estimator is held to at its 90th
  percentile (issue 13's target): closer than that, the point estimates do not order two
  configurations either.
- Counts of one GPU keep throughput order among themselves: their bands overlap because they
  share the one-GPU estimate, not because their order is uncertain (8 x H100 PCIe is faster
  than 7 x whatever the card does alone; "fewer GPUs" had put the 7, ~3,639 tokens/s, first on
  a $300,000 LoRA ask that buys the 8, ~4,156).
"""

from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol, TypeVar


class Banded(Protocol):
    """What a tier reads of an option: its GPU count, value and band."""

    @property
    def count(self) -> int: ...

    @property
    def throughput(self) -> float: ...

    @property
    def low(self) -> float: ...

    @property
    def high(self) -> float: ...


T = TypeVar("T", bound=Banded)


TIE_RATIO = 1.25  # the most a tier's leader may be faster than a member (module docstring)


def overlap(a: Banded, b: Banded) -> bool:
    """Whether each of `a` and `b` lies inside the other's band, within TIE_RATIO."""
    inside = b.low <= a.throughput <= b.high and a.low <= b.throughput <= a.high
    near = max(a.throughput, b.throughput) <= TIE_RATIO * min(a.throughput, b.throughput)
    return inside and near


def faster_below(ordered: Sequence[T], index: int) -> T | None:
    """The fastest option after `ordered[index]` that is faster than it (a tie-break put it
    lower: their estimates overlap), or None. `ordered` is every option, not only those a limit
    shows, so a row names a faster one past the limit too."""
    mine = ordered[index].throughput
    faster = [o for o in ordered[index + 1 :] if o.throughput > mine]
    return max(faster, key=lambda o: o.throughput, default=None)


def tiered(
    ordered: Sequence[T],
    tie_break: Callable[[T], Any],
    same: Callable[[T], Hashable],
) -> list[T]:
    """`ordered` (fastest first, ties as the caller wants) with each tier of mutually
    overlapping bands put in `tie_break` order, except that the options of one `same` GPU keep
    throughput order among themselves: each next place goes to the least `tie_break` among the
    fastest unplaced option of each GPU in the tier (see the module docstring). So an option
    ranked above a faster one of its tier is ahead of that one, or of its GPU's faster option,
    on the tie-break: putting a GPU's larger count in the place its smaller count had earned
    had ranked 2 x RTX 3090 above one RTX 5080 "for more memory per GPU"."""
    out: list[T] = []
    i = 0
    while i < len(ordered):
        leader = ordered[i]
        j = i + 1
        while j < len(ordered) and overlap(ordered[j], leader):
            j += 1
        out.extend(_placed(ordered[i:j], tie_break, same))
        i = j
    return out


def _placed(
    tier: Sequence[T], tie_break: Callable[[T], Any], same: Callable[[T], Hashable]
) -> list[T]:
    by_gpu: dict[Hashable, list[T]] = {}
    for o in tier:
        by_gpu.setdefault(same(o), []).append(o)
    for options in by_gpu.values():
        options.sort(key=lambda o: (-o.throughput, o.count), reverse=True)  # fastest last: popped
    out: list[T] = []
    while by_gpu:
        key = min(by_gpu, key=lambda k: tie_break(by_gpu[k][-1]))
        out.append(by_gpu[key].pop())
        if not by_gpu[key]:
            del by_gpu[key]
    return out
