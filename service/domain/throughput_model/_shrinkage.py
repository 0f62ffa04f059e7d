"""Partial pooling: one-way random-effects variance components and shrunk group means."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from service.domain.throughput_model._constants import Item, K


def shrink_groups(
    values: Mapping[Item, float], weights: Mapping[Item, float], groups: Mapping[Item, K]
) -> dict[K, float]:
    """Shrunk group means of `values` (per item, with item counts `weights`).

    One-way random effects: within-group variance W pooled over groups (around precision-
    weighted group means), prior variance of group means tau^2 = max(0, var of group means -
    mean W / n_j) by moments; with one group, or fewer items than groups + 1, tau^2 = W (prior
    as wide as the noise). A group's mean is shrunk to 0 by tau^2 / (tau^2 + W / n_j).
    """
    return _variance_components(values, weights, groups)[0]


def _shrink(mean: float, n: int | float, tau2: float, within: float) -> float:
    """A group mean over `n` items shrunk to 0 by tau^2 / (tau^2 + W / n)."""
    noise = within / n
    return mean * (tau2 / (tau2 + noise)) if tau2 + noise > 0 else 0.0


def _weighted_mean(
    items: Sequence[Item], values: Mapping[Item, float], weights: Mapping[Item, float]
) -> float:
    return float(np.average([values[i] for i in items], weights=[weights[i] for i in items]))


def _variance_components(
    values: Mapping[Item, float], weights: Mapping[Item, float], groups: Mapping[Item, K]
) -> tuple[dict[K, float], float, float]:
    """shrink_groups' shrunk means, with its tau^2 and W."""
    members: dict[K, list[Item]] = {}
    for item, g in groups.items():
        if item in values:
            members.setdefault(g, []).append(item)
    if not members:
        return {}, 0.0, 0.0
    means = {g: _weighted_mean(items, values, weights) for g, items in members.items()}
    sizes = {g: len(items) for g, items in members.items()}
    n_items = sum(sizes.values())
    dev = [values[i] - means[g] for g, items in members.items() for i in items]
    all_values = np.array([values[i] for items in members.values() for i in items])
    if n_items > len(members):
        within = float(np.sum(np.square(dev)) / (n_items - len(members)))
    else:
        within = float(np.var(all_values)) if len(all_values) > 1 else 0.0
    if len(members) >= 2 and n_items > len(members):
        m = np.array(list(means.values()))
        tau2 = max(
            0.0, float(np.var(m, ddof=1)) - float(np.mean([within / sizes[g] for g in members]))
        )
    else:
        tau2 = within
    return {g: _shrink(means[g], sizes[g], tau2, within) for g in members}, tau2, within


def _anova_components(cells: Sequence[Sequence[float]]) -> tuple[float, float]:
    """(tau^2, within) of one-way random effects over the cells with two or more items; (0, 0)
    with fewer than two such cells (no term)."""
    usable = [np.asarray(c, dtype=float) for c in cells if len(c) >= 2]
    k = len(usable)
    if k < 2:
        return 0.0, 0.0
    sizes = np.array([len(c) for c in usable], dtype=float)
    n = float(sizes.sum())
    means = np.array([c.mean() for c in usable])
    grand = float(np.sum(sizes * means) / n)
    msw = float(sum(np.sum(np.square(c - c.mean())) for c in usable) / (n - k))
    msb = float(np.sum(sizes * np.square(means - grand)) / (k - 1))
    n0 = (n - float(np.sum(sizes**2)) / n) / (k - 1)
    return max(0.0, (msb - msw) / n0), msw
