"""Constants of the throughput model: resources, thresholds, clamps, the nominal band."""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Literal, TypeVar

from service.domain.vocabulary import two_sided_z

RESOURCES: tuple[str, ...] = ("tensor", "vector", "memory", "capacity")


Basis = Literal["measured", "estimated"]


K = TypeVar("K", bound=Hashable)


Item = TypeVar("Item", bound=Hashable)


NOMINAL_COVERAGE = 0.8


FP16_ACCUMULATE = "fp16+acc16"  # matrix_tflops key: fp16 GEMMs with fp16 accumulation


MIN_NNLS_GPUS = 5  # a free fit of 4 work terms + overhead: at least as many GPUs as terms


MIN_CONFORMAL = 5  # fewer own leave-one-out errors: pool over workloads of the same kind


# fewer measured GPUs: no measured envelope (the best of one or two cards bounds nothing)
MIN_ENVELOPE_GPUS = 5


SIMILAR_WORKLOADS = 3


SAME_STEP_PRECISIONS = frozenset({"fp16", "bf16"})  # one step, two formats of the same width


# a step at fp8 is a 16-bit step whose matrix math runs at the fp8 rate: FP8 training keeps
# master weights, optimizer state and the non-matmul work at 16 or 32 bits (Micikevicius et
# al. 2022, "FP8 Formats for Deep Learning", sec. 4); it borrows the 16-bit fit (_twin), as
# an int8 one does (int8 inference quantizes the matmuls: GPT-2 training at int8, borrowed per
# FLOP, had put a B200 at 2.3 times its bf16 measurement)
NARROW_STEP_PRECISIONS = frozenset({"fp8", "int8"})


BACKFIT_ROUNDS = 3


IRLS_ROUNDS = 6


# Run-to-run noise when no workload has two results of one GPU to measure it: an assumption,
# stated, that keeps a single result's band from being zero-width. Replaced by data.
DEFAULT_RELATIVE_NOISE = 0.05


MAD_TO_SIGMA = 1.4826


RATE_MIN, RATE_MAX = 1e-6, 1e9  # TFLOPS or GB/s: clamps that keep 1 / rate finite


VALUE_MIN, VALUE_MAX = 1e-9, 1e12  # units/s a median may have to be used at all


MAX_LOG_HALF_WIDTH = math.log(1e3)  # a band wider than x1000 either way says nothing more


MAX_LOG_MULTIPLIER = math.log(1e3)  # a pooled efficiency beyond x1000 is a data error


def _clamp_rate(x: float) -> float:
    return min(max(x, RATE_MIN), RATE_MAX) if math.isfinite(x) else RATE_MIN


_z = two_sided_z  # a band's half-width in sigmas at a coverage
