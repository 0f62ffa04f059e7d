"""Ranking inside uncertainty: throughput order, and a tie-break where estimates are tied.

Pure, shared by the fixed-workload answers (recommend.py) and the LLM answers (llm_fit.py).
Design decisions:

- A tier is a leader (the fastest not yet placed) and the options after it tied with it: the
  gap between the two values is no wider than their band half-widths on the sides facing each
  other, added in quadrature (the spread of a difference of two independent errors). Inside it
  the estimates cannot say which is faster, so the caller's tie-break orders it (fewer GPUs,
  then more memory or headroom per GPU). Tiers keep throughput order between them.
  Each band holding the other's value (the rule until 2026-12-07) asked a measured value, whose
  band is its results' spread, to fall inside that spread: the measured 2 x RTX 3090 on
  Llama-3.1-70B Q4_K_M (15.4 tokens/s, band 15.0-15.9) could never tie with 3 x RTX 5080
  estimated at 16.8 (14.3-19.7), and ranked below it at half its cost.
- The tie-break never puts an option above a faster one of its tier that costs less (what
  the budget pays: the cards and the box several need). Fewer GPUs and more memory are worth
  something only at a price: 3 x RTX 5080 ($4,778 with their box, ~230,028 tokens/s) had
  ranked above 4 x RTX 4080 Super ($4,607, ~266,694) for fewer GPUs, and 4 x RX 9070 above 4 x
  RTX 3080 Ti, 19% faster for $48 less, for more memory.
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

import math
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
    """The cheapest of `others` tied with `first` that costs less than `first` by more than
    TIE_RATIO, or None: what an answer led by the fastest names beside it, since the estimates
    cannot say the dearer one is faster (one H100 PCIe, ~23.8 tokens/s on Llama-3.1-70B Q4_K_M
    at $29,200, and 2 x RTX 5090, ~23.7 at $10,214 with their box)."""
    cheaper = [o for o in others if paid(o) * TIE_RATIO < paid(first) and tied(o, first)]
    return min(cheaper, key=lambda o: (paid(o), -o.throughput), default=None)


def faster_below(ordered: Sequence[T], index: int) -> T | None:
    """The fastest option after `ordered[index]` that is faster than it (a tie-break put it
    lower: their estimates are tied), or None. `ordered` is every option, not only those a limit
    shows, so a row names a faster one past the limit too."""
    mine = ordered[index].throughput
    faster = [o for o in ordered[index + 1 :] if o.throughput > mine]
    return max(faster, key=lambda o: o.throughput, default=None)


def tiered(
    ordered: Sequence[T],
    tie_break: Callable[[T], Any],
    same: Callable[[T], Hashable],
    paid: Callable[[T], float],
) -> list[T]:
    """`ordered` (fastest first, ties as the caller wants) with each tier of tied options put
    in `tie_break` order, except that an option never goes above a faster one of its tier that
    costs less (`paid`), and the options of one `same` GPU keep throughput order among
    themselves: each next place goes to the least `tie_break` among the fastest unplaced option
    of each GPU in the tier that no faster unplaced option undercuts (see the module
    docstring). So an option ranked above a faster one of its tier is ahead of that one, or of
    its GPU's faster option, on the tie-break: putting a GPU's larger count in the place its
    smaller count had earned had ranked 2 x RTX 3090 above one RTX 5080 "for more memory per
    GPU"."""
    out: list[T] = []
    i = 0
    while i < len(ordered):
        leader = ordered[i]
        j = i + 1
        while j < len(ordered) and tied(ordered[j], leader):
            j += 1
        out.extend(_placed(ordered[i:j], tie_break, same, paid))
        i = j
    return out


def _placed(
    tier: Sequence[T],
    tie_break: Callable[[T], Any],
    same: Callable[[T], Hashable],
    paid: Callable[[T], float],
) -> list[T]:
    by_gpu: dict[Hashable, list[T]] = {}
    for o in tier:
        by_gpu.setdefault(same(o), []).append(o)
    for options in by_gpu.values():
        options.sort(key=lambda o: (-o.throughput, o.count), reverse=True)  # fastest last: popped
    cost = {id(o): paid(o) for o in tier}
    keys = {id(o): tie_break(o) for o in tier}
    fastest_first = sorted(tier, key=lambda o: -o.throughput)
    placed: set[int] = set()
    out: list[T] = []
    while by_gpu:
        heads = {id(options[-1]): k for k, options in by_gpu.items()}
        chosen = min(_not_undercut(fastest_first, placed, heads, cost), key=lambda o: keys[id(o)])
        key = heads[id(chosen)]
        out.append(by_gpu[key].pop())
        placed.add(id(chosen))
        if not by_gpu[key]:
            del by_gpu[key]
    return out


def _not_undercut(
    fastest_first: Sequence[T], placed: set[int], heads: dict[int, Hashable], cost: dict[int, float]
) -> list[T]:
    """The heads no faster unplaced option undercuts (costs less than), in one pass down
    `fastest_first`: the least cost of the strictly faster options so far says it. The fastest
    head always qualifies."""
    found: list[T] = []
    cheapest_faster = math.inf
    i = 0
    while i < len(fastest_first):
        value = fastest_first[i].throughput
        cheapest_here = math.inf
        while i < len(fastest_first) and fastest_first[i].throughput == value:
            o = fastest_first[i]
            if id(o) not in placed:
                if id(o) in heads and cost[id(o)] <= cheapest_faster:
                    found.append(o)
                cheapest_here = min(cheapest_here, cost[id(o)])
            i += 1
        cheapest_faster = min(cheapest_faster, cheapest_here)
    return found
