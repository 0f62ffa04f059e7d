"""Ranking inside uncertainty: throughput order, and a tie-break where estimates are tied.

Pure, shared by the fixed-workload answers (recommend.py) and the LLM answers (llm_fit.py).
Design decisions:

- Two options are tied when the gap between their values is no wider than their band
  half-widths on the sides facing each other, added in quadrature (the spread of a difference
  of two independent errors): the estimates cannot say which is faster, so the caller's
  tie-break orders them (fewer GPUs, then more memory or headroom per GPU). Options not tied
  keep throughput order (tiered: each place goes to the least tie-break among the options
  that every faster unplaced one is tied with).
  Each band holding the other's value (the rule until 2026-12-07) asked a measured value, whose
  band is its results' spread, to fall inside that spread: the measured 2 x RTX 3090 on
  Llama-3.1-70B Q4_K_M (15.4 tokens/s, band 15.0-15.9) could never tie with 3 x RTX 5080
  estimated at 16.8 (14.3-19.7), and ranked below it at half its cost.
- The tie-break never puts an option above a faster one that costs less (what
  the budget pays: the cards and the box several need). Fewer GPUs and more memory are worth
  something only at a price: 3 x RTX 5080 ($4,778 with their box, ~230,028 tokens/s) had
  ranked above 4 x RTX 4080 Super ($4,607, ~266,694) for fewer GPUs, and 4 x RX 9070 above 4 x
  RTX 3080 Ti, 19% faster for $48 less, for more memory.
- Only estimates within TIE_RATIO of each other tie, however wide their bands: two spec-only
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

import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol, TypeVar


class Banded(Protocol):
    """What the ranking reads of an option: its GPU count, value and band."""

    @property
    def count(self) -> int: ...

    @property
    def throughput(self) -> float: ...

    @property
    def low(self) -> float: ...

    @property
    def high(self) -> float: ...


T = TypeVar("T", bound=Banded)


TIE_RATIO = 1.25  # the most one option may be faster than another it ties with (docstring)


def tied(a: Banded, b: Banded) -> bool:
    """Whether `a` and `b` are within TIE_RATIO and their gap, in log, is no wider than the
    faster one's band below it and the slower one's band above it, added in quadrature."""
    fast, slow = (a, b) if a.throughput >= b.throughput else (b, a)
    if slow.throughput <= 0 or fast.throughput > TIE_RATIO * slow.throughput:
        return False
    gap = math.log(fast.throughput / slow.throughput)
    below = math.log(fast.throughput / fast.low) if fast.low > 0 else math.inf
    above = math.log(slow.high / slow.throughput) if slow.high > 0 else 0.0
    return gap <= math.hypot(below, above)


def cheaper_tie(first: T, others: Sequence[T], paid: Callable[[T], float]) -> T | None:
    """The cheapest of `others` tied with `first` whose throughput per dollar beats `first`'s
    by more than TIE_RATIO, or None: what an answer led by a dearer option names beside it,
    since the estimates cannot say the dearer one is faster (one H100 PCIe, ~23.8 tokens/s on
    Llama-3.1-70B Q4_K_M at $29,200, and 2 x RTX 5090, ~23.7 at $10,214 with their box). A
    cheaper option that gives as much per dollar (4 x RTX 3080, 16% slower for 20% less) is
    no news."""
    value = first.throughput / paid(first) if paid(first) > 0 else math.inf
    better = [  # tied first: most options are not, and it needs no price
        o
        for o in others
        if tied(o, first) and paid(o) > 0 and o.throughput / paid(o) > TIE_RATIO * value
    ]
    return min(better, key=lambda o: (paid(o), -o.throughput), default=None)


def faster_below(ordered: Sequence[T], index: int) -> T | None:
    """The fastest option after `ordered[index]` that is faster than it (a tie-break put it
    lower: their estimates are tied), or None. `ordered` is every option, not only those a limit
    shows, so a row names a faster one past the limit too."""
    return fastest(faster_ones_below(ordered, index))


def fastest(options: Sequence[T]) -> T | None:
    """The fastest of `options` (the first of equals), or None."""
    return max(options, key=lambda o: o.throughput, default=None)


def faster_ones_below(ordered: Sequence[T], index: int) -> list[T]:
    """Every option after `ordered[index]` that is faster than it."""
    mine = ordered[index].throughput
    return [o for o in ordered[index + 1 :] if o.throughput > mine]


def common_reasons(
    reasons: Callable[[T, T], tuple[str, ...]], first: T, faster: Sequence[T]
) -> tuple[str, ...]:
    """The `reasons` `first` ranks above a faster option that hold against every one of
    `faster`: what a first row may claim over all it outranks ("Fewest GPUs among the
    fastest" had led an RX 7900 XTX above a faster single RTX 4080 Super, for its memory)."""
    if not faster:
        return ()
    own = reasons(first, faster[0])
    each = [set(reasons(first, f)) for f in faster[1:]]
    return tuple(r for r in own if all(r in e for e in each))


def tiered(
    ordered: Sequence[T],
    tie_break: Callable[[T], Any],
    same: Callable[[T], Hashable],
    paid: Callable[[T], float],
    places: int | None = None,
) -> list[T]:
    """`ordered` (fastest first, ties as the caller wants) reordered where estimates are tied:
    each next place goes to the least `tie_break` among the options no faster unplaced option
    must precede. One must precede another when it is faster and not tied with it (further
    apart than the bands or TIE_RATIO allow), costs less (`paid`), or is a faster count of the
    `same` GPU (see the module docstring). The fastest unplaced option is always free, so
    throughput order holds wherever the estimates can tell. A tier fixed around its leader had
    left a card tied with the first answer in the next tier when a faster configuration it was
    not tied with led the first: at $1,500 the measured RX 7900 XTX 24 GB ranked fourth, below
    2 x RTX 4070 12 GB, and first with max_gpus=1. `places`: place only the first so many
    (each place depends only on those before it), the rest following in `ordered`'s order."""
    n = len(ordered)
    cost = [paid(o) for o in ordered]
    keys = [tie_break(o) for o in ordered]
    groups = [same(o) for o in ordered]
    placed = [False] * n
    out: list[T] = []
    first = 0  # the fastest unplaced
    while first < n and (places is None or len(out) < places):
        floor = ordered[first].throughput / TIE_RATIO
        best = first
        i = first + 1
        while i < n and ordered[i].throughput >= floor:
            if (
                not placed[i]
                and keys[i] < keys[best]
                and _free(i, first, ordered, placed, cost, groups)
            ):
                best = i
            i += 1
        placed[best] = True
        out.append(ordered[best])
        while first < n and placed[first]:
            first += 1
    return out + [o for o, done in zip(ordered, placed, strict=True) if not done]


def _free(
    i: int,
    first: int,
    ordered: Sequence[T],
    placed: Sequence[bool],
    cost: Sequence[float],
    groups: Sequence[Hashable],
) -> bool:
    """Whether no unplaced option faster than `ordered[i]` must precede it."""
    o = ordered[i]
    for j in range(first, i):
        f = ordered[j]
        if placed[j] or f.throughput <= o.throughput:
            continue
        if groups[j] == groups[i] or cost[j] < cost[i] or not tied(f, o):
            return False
    return True
