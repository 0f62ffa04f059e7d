"""How long a GPU takes to read a prompt: a measured prompt-processing rate moved to another
model or prompt length. Pure functions, no I/O.

Design decisions (figures: the shipped corpus's one-GPU llama-bench prompt results, Llama 3
8B and 70B in Q4_K_M and F16 at 512-8,192 tokens, 2026-12):

- A prompt of s tokens is read at some tokens/s; moving a measured rate to another model or
  length keeps the GPU's time per unit of cost: rate_b = rate_a x cost_a / cost_b, with
  ``cost = 2 x active parameters + w x attention FLOPs`` per token (memory.flops_per_token's
  two terms, attention at the mean causal context s/2). With w = 1 (FLOPs alone) the move from
  a short prompt to a long one missed in one direction: measured rates at 8,192 tokens sat
  a median 38-43% (log) below Llama 3 8B's 512-token rates moved by FLOPs, 20% for 70B, and
  80% of all such moves on one GPU missed by up to x1.36. Attention's work is done at a lower
  rate than the weights' matrix products (its score matrix grows with the prompt; llama.cpp
  without flash attention writes it to memory). One weight w for every GPU and model, fitted
  to the database's results (least squares on the log errors of every move between two
  results of one GPU in one weight format, `fit_attention_weight`), keeps the move a
  roofline: no per-GPU or per-model constant.
- The move's band (`move_half_width`): the split-conformal quantile of the moves' absolute log
  errors, each GPU's moves scored with w fitted without that GPU's results (a card nobody
  measured takes w from the others). 0 where no GPU has two results.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import permutations

import numpy as np

from service.domain import memory
from service.domain.throughput_model import conformal_quantile

# attention weights searched, log-spaced from 0.5 to 40, with 1 (FLOPs alone) on the grid
_GRID = np.exp(np.linspace(math.log(0.5), math.log(40.0), 121))
_FLOPS_ALONE = int(np.argmin(np.abs(_GRID - 1.0)))
_GRID[_FLOPS_ALONE] = 1.0


@dataclass(frozen=True)
class PrefillPoint:
    """A measured one-GPU prompt rate: `value` tokens/s for a `tokens`-token prompt."""

    gpu: str
    model: memory.ModelSpec
    quant: str
    tokens: int
    value: float


def attention_flops(model: memory.ModelSpec, context: int) -> float:
    """Attention FLOPs per prompt token at `context` tokens: memory.flops_per_token's attention
    term (mean causal context s/2), a sliding-window layer attending to at most its window
    (mean W - W^2 / 2s over a prompt longer than the window: Gemma 2 and 3's local layers)."""
    dense = memory.flops_per_token(model, "prefill", 0)
    full = memory.flops_per_token(model, "prefill", context) - dense
    window, sliding = model.sliding_window, model.sliding_layers
    if not window or not sliding or context <= window or model.layers <= 0:
        return full
    mean_window = int(2 * window - window**2 / context)  # as a context whose half is the mean
    windowed = memory.flops_per_token(model, "prefill", mean_window) - dense
    return (full * (model.layers - sliding) + windowed * sliding) / model.layers


def token_cost(model: memory.ModelSpec, context: int, weight: float) -> float:
    """Cost of one prompt token: its weights' FLOPs plus `weight` x its attention FLOPs."""
    return memory.flops_per_token(model, "prefill", 0) + weight * attention_flops(model, context)


def moved_rate(
    value: float,
    from_model: memory.ModelSpec,
    from_tokens: int,
    to_model: memory.ModelSpec,
    to_tokens: int,
    weight: float,
) -> float:
    """A prompt rate measured for one model and length, moved to another at equal cost/s."""
    to_cost = token_cost(to_model, to_tokens, weight)
    return value * token_cost(from_model, from_tokens, weight) / to_cost if to_cost > 0 else 0.0


@dataclass(frozen=True)
class Moves:
    """Every ordered pair (a, b) of results of one GPU in one format that differ in model or
    length, as arrays: the log error of moving a to b at attention weight w is
    log(rate_a / rate_b) + log(dense_a + w attention_a) - log(dense_b + w attention_b)."""

    gpu: tuple[str, ...]
    log_ratio: np.ndarray
    dense_a: np.ndarray
    attention_a: np.ndarray
    dense_b: np.ndarray
    attention_b: np.ndarray

    def log_errors(self, weights: np.ndarray) -> np.ndarray:
        """(pairs x weights) log errors."""
        w = weights[None, :]
        a = np.log(self.dense_a[:, None] + w * self.attention_a[:, None])
        b = np.log(self.dense_b[:, None] + w * self.attention_b[:, None])
        return self.log_ratio[:, None] + a - b

    def attention_weight(self) -> float:
        """The grid's weight with the least squared log error over every move; 1 (FLOPs
        alone) without a move."""
        if not self.gpu:
            return 1.0
        squared = (self.log_errors(_GRID) ** 2).sum(axis=0)
        return float(_GRID[int(np.argmin(squared))])

    def half_width(self, coverage: float) -> float:
        """The `coverage` conformal quantile of |log error| of the moves, each GPU's with the
        weight fitted without its results (FLOPs alone where no other GPU has a move); 0
        without a move."""
        if not self.gpu:
            return 0.0
        errors = self.log_errors(_GRID)
        squared = errors**2
        total = squared.sum(axis=0)
        gpus = np.array(self.gpu)
        alone = len(set(self.gpu)) == 1
        out: list[float] = []
        for gpu in sorted(set(self.gpu)):
            own = gpus == gpu
            column = _FLOPS_ALONE if alone else int(np.argmin(total - squared[own].sum(axis=0)))
            out += np.abs(errors[own, column]).tolist()
        return conformal_quantile(out, coverage)


def moves(points: Iterable[PrefillPoint]) -> Moves:
    """The moves between the points (Moves), built once for the fit and its band."""
    by_key: dict[tuple[str, str], list[PrefillPoint]] = {}
    for p in points:
        if p.value > 0 and math.isfinite(p.value):
            by_key.setdefault((p.gpu, p.quant), []).append(p)
    pairs = [
        (a, b)
        for same in by_key.values()
        for a, b in permutations(same, 2)
        if (a.model.slug, a.tokens) != (b.model.slug, b.tokens)
    ]
    dense = {p: token_cost(p.model, p.tokens, 0.0) for pair in pairs for p in pair}
    attention = {p: attention_flops(p.model, p.tokens) for pair in pairs for p in pair}
    return Moves(
        tuple(a.gpu for a, _ in pairs),
        np.array([math.log(a.value / b.value) for a, b in pairs]),
        np.array([dense[a] for a, _ in pairs]),
        np.array([attention[a] for a, _ in pairs]),
        np.array([dense[b] for _, b in pairs]),
        np.array([attention[b] for _, b in pairs]),
    )


def fit_attention_weight(points: Sequence[PrefillPoint]) -> float:
    """The attention weight fitted to every move between two results of one GPU and format
    (least squares on the log errors, over a log-spaced grid); 1 without such a pair."""
    return moves(points).attention_weight()


def move_half_width(points: Sequence[PrefillPoint], coverage: float) -> float:
    """The moves' conformal half-width, each GPU scored with the weight fitted without it."""
    return moves(points).half_width(coverage)


def prompt_seconds(context: int, tokens_per_s: float) -> float | None:
    """Seconds to read a `context`-token prompt at `tokens_per_s`; None without a rate."""
    return context / tokens_per_s if tokens_per_s > 0 and math.isfinite(tokens_per_s) else None
