"""Non-negative least squares, and the work fit in log space built on it."""

from __future__ import annotations

import math

import numpy as np

from service.domain.throughput_model._constants import IRLS_ROUNDS, RATE_MAX


def nnls(a: np.ndarray, b: np.ndarray, max_iter: int | None = None) -> np.ndarray:
    """min ||a x - b|| subject to x >= 0 (Lawson-Hanson active set)."""
    m, n = a.shape
    max_iter = max_iter or 3 * n + 30
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    tol = 10 * np.finfo(float).eps * max(m, n) * max(float(np.abs(a).sum(axis=0).max()), 1.0)
    w = a.T @ (b - a @ x)
    iterations = 0
    while (~passive).any() and float(w[~passive].max()) > tol and iterations < max_iter:
        j = int(np.argmax(np.where(passive, -np.inf, w)))
        passive[j] = True
        while True:
            iterations += 1
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all() or iterations >= max_iter:
                break
            bad = passive & (z <= 0)
            alpha = float(np.min(x[bad] / (x[bad] - z[bad])))
            x = x + alpha * (z - x)
            passive &= x > tol
            x[~passive] = 0.0
        x = np.where(passive, np.maximum(z, 0.0), 0.0)
        w = a.T @ (b - a @ x)
    return x


def _design(rates: np.ndarray) -> np.ndarray:
    """Rows [1/tensor, 1/vector, 1/memory, 1/capacity, 1] (the last column is the overhead);
    a resource switched off (rate RATE_MAX) is a zero column, so no work is fitted to it."""
    inverse = np.where(rates >= RATE_MAX, 0.0, 1.0 / rates)
    return np.hstack([inverse, np.ones((rates.shape[0], 1))])


def fit_work_log(design: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Non-negative x minimising the squared log errors of design @ x against times (IRLS)."""
    scale = np.linalg.norm(design, axis=0)
    scale[scale == 0] = 1.0
    d = design / scale
    p = times.copy()
    best, best_sse = np.zeros(d.shape[1]), math.inf
    for _ in range(IRLS_ROUNDS):
        x = nnls(d / p[:, None], times / p)
        pred = d @ x
        if not (pred > 0).all():
            break
        sse = float(np.sum(np.log(pred / times) ** 2))
        if sse < best_sse - 1e-15:
            best, best_sse = x, sse
        elif sse >= best_sse:
            break
        p = pred
    return best / scale
