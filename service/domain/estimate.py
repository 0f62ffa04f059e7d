"""Performance estimate per (GPU, workload, precision): measured where results exist, else a
model fitted on the measured GPUs, else a spec-only ratio, else a roofline prior.

Model (>= 3 measured GPUs): log y = a + b log C + (1 - b) log B, with C the effective compute
rate (spec peak for the precision x calibration efficiency) and B the memory bandwidth. The
exponents are tied to sum to 1 (a GPU that is twice as fast in every respect is twice as
fast), which leaves one shape parameter b in [0, 1]: b -> 1 is compute-bound, b -> 0 is
bandwidth-bound. With one free shape parameter the fit is stable on a handful of GPUs, where a
free two-exponent fit extrapolates wildly. The error band is the leave-one-out RMS log error.
"""

import logging
import math
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace

import numpy as np

from service.domain.vocabulary import Basis, Measurement

# A band with one anchor or none has no data to size it: a wide, stated default.
DEFAULT_BAND = 0.5
# Roofline prior without any measurement: fraction of peak a real training step reaches
# (model FLOPs utilisation) and of bandwidth a decode step streams. Assumptions, said as such.
PRIOR_COMPUTE_UTILISATION = 0.35
PRIOR_BANDWIDTH_UTILISATION = 0.6
BYTES_PER_PARAM = {"fp32": 4.0, "tf32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0}
# Weight formats: bits_per_weight / 8 from service/catalog/quantizations.csv (a test holds
# them equal), so a decode prior for a q4_k_m workload streams 0.6 bytes per param, not 2.
BYTES_PER_PARAM.update(
    {
        "int4": 4.156 / 8,
        "fp4": 4.5 / 8,
        "nf4": 4.127 / 8,
        "nvfp4": 4.5 / 8,
        "mxfp4": 4.25 / 8,
        "awq": 4.156 / 8,
        "gptq": 4.156 / 8,
        "q8_0": 8.5 / 8,
        "q6_k": 6.56 / 8,
        "q5_k_m": 5.66 / 8,
        "q4_k_m": 4.82 / 8,
        "q4_k_s": 4.58 / 8,
        "q4_0": 4.55 / 8,
    }
)
# Robustness: every quantity enters the model through safe_log, clamped to [1e-30, 1e30]; a
# band's log half-width is capped at MAX_LOG_ERROR (x/÷ e^5, about 148x). The schema already
# bounds stored values to [1e-6, 1e12); these guards make any stored row (older data, a row an
# admin wrote) degrade one estimate at worst, never raise for the whole workload.
LOG_FLOOR = math.log(1e-30)
LOG_CEIL = math.log(1e30)
MAX_LOG_ERROR = 5.0
log = logging.getLogger(__name__)


def safe_log(value: float) -> float:
    """log(value) clamped to [LOG_FLOOR, LOG_CEIL]; NaN, zero and negatives give LOG_FLOOR."""
    if not (value > 0) or math.isnan(value):
        return LOG_FLOOR
    if math.isinf(value):
        return LOG_CEIL
    return min(max(math.log(value), LOG_FLOOR), LOG_CEIL)


def safe_exp(value: float) -> float:
    """exp(value) with the exponent clamped the same way (never overflows, never 0)."""
    if math.isnan(value):
        return math.exp(LOG_FLOOR)
    return math.exp(min(max(value, LOG_FLOOR), LOG_CEIL))


@dataclass(frozen=True)
class GpuPerf:
    """What the model knows of one GPU for one precision."""

    slug: str
    compute_tflops: float  # effective: spec peak for the precision x calibration efficiency
    bandwidth_gbs: float


@dataclass(frozen=True)
class Estimate:
    slug: str
    value: float
    basis: Basis
    n: int  # results behind a measured value; measured GPUs behind an estimate
    low: float
    high: float
    model: str  # measured | fit | spec-ratio | roofline-prior
    mad: float | None = None  # of the measured results, when measured
    band: float = 0.8  # nominal coverage of low..high
    frameworks: tuple[str, ...] = ()  # of the measured results, when measured (llm.c, pytorch)
    stack_measured: bool = True  # False: no GPU of its stack measured at this phase of work
    precision: str = ""  # the precision the figure is at where it is not the asked one

    @property
    def relative_error(self) -> float:
        return (self.high - self.low) / (2 * self.value) if self.value else 0.0


def bounded_by_bytes(
    wider: Mapping[str, Estimate], narrower: Mapping[str, Estimate], ratio: float
) -> dict[str, Estimate]:
    """A memory-bound step at a precision that reads more bytes per unit (`wider`) no faster
    than the same step at one that reads fewer (`narrower`) times `ratio`, their bytes per
    unit's (< 1): decode time goes with the bytes it reads. Each precision borrows its work
    split from different neighbours, and Llama 2 7B decode at fp32 had come out above fp16 on
    a B200 (175.9 against 147.2 tokens/s) and an H100 SXM. A measured value stands."""
    out = dict(wider)
    for slug, e in wider.items():
        n = narrower.get(slug)
        if e.basis == "measured" or n is None or e.value <= n.value * ratio:
            continue
        out[slug] = replace(
            e,
            value=n.value * ratio,
            low=n.low * ratio,
            high=n.high * ratio,
            n=n.n,
            model=n.model if n.basis != "measured" else e.model,
            stack_measured=n.stack_measured,
        )
    return out


def with_fp16_fallback(
    bf16: Mapping[str, Estimate],
    fp16: Mapping[str, Estimate],
    without_bf16_units: AbstractSet[str],
) -> dict[str, Estimate]:
    """Mixed-precision training where a GPU has no bf16 units: at fp16, as training scripts
    do (karpathy/nanoGPT train.py: bfloat16 where torch.cuda.is_bf16_supported(), else float16
    with a GradScaler). Asked at bf16 by default, a V100, T4 or RTX 2080 Ti was ranked at its
    FP32 rate (bf16 runs through FP32 arithmetic there), where fp16 runs on its tensor cores:
    on llm-train the V100 at 0.147 of an RTX 4090, the 2080 Ti at 0.126 and the T4 at 0.076,
    about a GTX 1080 Ti (0.106) or below it; at fp16 0.674, 0.342 and 0.232. Such a GPU takes
    its fp16 figure where that is the higher (marked
    `precision="fp16"`); every other GPU keeps its bf16 one."""
    out = dict(bf16)
    for slug in without_bf16_units:
        half = fp16.get(slug)
        if half is None:
            continue
        own = bf16.get(slug)
        if own is None or half.value > own.value:
            out[slug] = replace(half, precision="fp16")
    return out


def precision_note(precision: str) -> str:
    """What a why adds for a figure at another precision than the asked one (Estimate.precision,
    set by with_fp16_fallback), else ""."""
    if not precision:
        return ""
    # "no bf16 units" was said of the A10G and the DGX Spark too, whose Ampere and Blackwell
    # dies have them: the catalog states no tensor rate of theirs (none published)
    return (
        f"; at {precision}: the catalog states no bf16 tensor rate for this GPU (it has no bf16 "
        "units, or none is published), so mixed precision is counted at fp16"
    )


def figure(value: float) -> str:
    """A figure in a why: thousands separated from 100 up, else three significant digits."""
    return f"{value:,.0f}" if value >= 100 else f"{value:,.3g}"


def counted(n: int, noun: str) -> str:
    """'1 result', '3 results': a count in a why."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def unmeasured_stack_note(stack: str) -> str:
    """What a why adds for an estimate whose stack has no result of that kind of work
    (Estimate.stack_measured False): fixed workloads and model asks say it alike."""
    return (
        f"no {stack} GPU is measured on this kind of work, so its software is taken at the "
        "measured stacks' average and the band spans their spread"
    )


@dataclass(frozen=True)
class WorkloadShape:
    """What the estimator needs of a workload (the table row is service.models.Workload)."""

    flops_per_unit: float | None
    memory_bound: bool
    precision: str


def _features(gpu: GpuPerf) -> tuple[float, float]:
    """(log C - log B, log B): the regressor and the offset of the tied model."""
    log_b = safe_log(gpu.bandwidth_gbs)
    return safe_log(gpu.compute_tflops) - log_b, log_b


def fit_shape(gpus: Sequence[GpuPerf], values: Sequence[float]) -> tuple[float, float]:
    """Least-squares (a, b) of log y - log B = a + b (log C - log B), b clipped to [0, 1]."""
    x = np.array([_features(g)[0] for g in gpus])
    y = np.array([safe_log(v) - _features(g)[1] for g, v in zip(gpus, values, strict=True)])
    if len(x) < 2 or float(np.ptp(x)) < 1e-9:
        b = 0.5
    else:
        b = float(np.clip(np.polyfit(x, y, 1)[0], 0.0, 1.0))
    a = float(np.mean(y - b * x))
    return a, b


def predict(a: float, b: float, gpu: GpuPerf) -> float:
    x, log_b = _features(gpu)
    return safe_exp(a + b * x + log_b)


def leave_one_out_log_rmse(gpus: Sequence[GpuPerf], values: Sequence[float]) -> float:
    """RMS of the log errors predicting each measured GPU from a fit on all the others.

    Closed form instead of n refits: for least squares the leave-one-out residual is
    e_i / (1 - h_ii), with leverage h_ii = 1/n + (x_i - mean x)^2 / Sxx for the line and 1/n
    for a constant. When the full fit's shape b sits on a bound of [0, 1], b is fixed and only
    the constant is fitted, so the constant's formula applies.
    """
    x = np.array([_features(g)[0] for g in gpus])
    y = np.array([safe_log(v) - _features(g)[1] for g, v in zip(gpus, values, strict=True)])
    n = len(x)
    a, b = fit_shape(gpus, values)
    residuals = y - (a + b * x)
    sxx = float(np.sum((x - x.mean()) ** 2))
    if 0.0 < b < 1.0 and sxx > 1e-12:
        leverage = 1.0 / n + (x - x.mean()) ** 2 / sxx
    else:
        leverage = np.full(n, 1.0 / n)
    loo = residuals / np.clip(1.0 - leverage, 1e-9, None)
    return float(np.sqrt(np.mean(np.square(loo))))


def _band(value: float, log_error: float) -> tuple[float, float]:
    """value x/÷ e^log_error, computed in log space so neither end over- or underflows."""
    half = min(max(log_error, 0.0), MAX_LOG_ERROR) if math.isfinite(log_error) else MAX_LOG_ERROR
    center = safe_log(value)
    return safe_exp(center - half), safe_exp(center + half)


def _spec_score(gpu: GpuPerf, memory_bound: bool) -> float:
    return gpu.bandwidth_gbs if memory_bound else gpu.compute_tflops


def roofline_prior(gpu: GpuPerf, workload: WorkloadShape) -> float | None:
    """Throughput from specs alone, for a workload nobody has measured yet."""
    if workload.flops_per_unit is None:
        return None
    if workload.memory_bound:
        # Decode streams every weight once per token: bytes = params x bytes/param, and
        # params = FLOPs per token / 2.
        bytes_per_unit = workload.flops_per_unit / 2 * BYTES_PER_PARAM[workload.precision]
        return gpu.bandwidth_gbs * 1e9 * PRIOR_BANDWIDTH_UTILISATION / bytes_per_unit
    return gpu.compute_tflops * 1e12 * PRIOR_COMPUTE_UTILISATION / workload.flops_per_unit


def estimate_all(
    gpus: Sequence[GpuPerf], measured: Mapping[str, Measurement], workload: WorkloadShape
) -> dict[str, Estimate]:
    """An estimate for every GPU that has enough specs, by the best basis available."""
    anchors = [g for g in gpus if g.slug in measured]
    anchor_values = [measured[g.slug].median for g in anchors]
    out: dict[str, Estimate] = {}
    fit: tuple[float, float] | None = None
    log_error = math.log1p(DEFAULT_BAND)
    if len(anchors) >= 3:
        try:
            fit = fit_shape(anchors, anchor_values)
            log_error = max(leave_one_out_log_rmse(anchors, anchor_values), 0.02)
        except (ArithmeticError, ValueError):  # numpy's LinAlgError is a ValueError
            log.warning("shape fit failed; falling back to spec ratios", exc_info=True)
            fit = None
    elif len(anchors) == 2:
        # Predict each anchor from the other: the only error we can measure with two.
        s = [safe_log(_spec_score(g, workload.memory_bound)) for g in anchors]
        v = [safe_log(x) for x in anchor_values]
        cross = (v[0] - s[0]) - (v[1] - s[1])
        log_error = max(abs(cross), math.log1p(0.1))
    if not math.isfinite(log_error):
        log_error = MAX_LOG_ERROR

    # Spec-ratio: the mean log ratio of measured value to spec score, in log space.
    log_ratio = (
        float(
            np.mean(
                [
                    safe_log(v) - safe_log(_spec_score(g, workload.memory_bound))
                    for g, v in zip(anchors, anchor_values, strict=True)
                ]
            )
        )
        if anchors
        else 0.0
    )
    for gpu in gpus:
        try:
            estimate = _estimate_one(gpu, measured, workload, fit, log_ratio, anchors, log_error)
        except (ArithmeticError, ValueError):
            # One GPU's degenerate numbers cost that GPU its estimate, never the workload's.
            log.warning("no estimate for %s: degenerate inputs", gpu.slug, exc_info=True)
            continue
        if estimate is not None:
            out[gpu.slug] = estimate
    return out


def _estimate_one(
    gpu: GpuPerf,
    measured: Mapping[str, Measurement],
    workload: WorkloadShape,
    fit: tuple[float, float] | None,
    log_ratio: float,
    anchors: Sequence[GpuPerf],
    log_error: float,
) -> Estimate | None:
    m = measured.get(gpu.slug)
    if m is not None:
        if not (math.isfinite(m.median) and m.median > 0):
            return None
        low, high = m.band()
        if not (math.isfinite(low) and math.isfinite(high)):
            low, high = _band(m.median, MAX_LOG_ERROR)
        return Estimate(gpu.slug, m.median, "measured", m.n, low, high, "measured")
    if fit is not None:
        value, model = predict(*fit, gpu), "fit"
    elif anchors:
        score = _spec_score(gpu, workload.memory_bound)
        value, model = safe_exp(safe_log(score) + log_ratio), "spec-ratio"
    else:
        prior = roofline_prior(gpu, workload)
        if prior is None:
            return None
        value, model = prior, "roofline-prior"
    if not (math.isfinite(value) and value > 0):
        return None  # degenerate specs or workload: no number is better than a wrong one
    value = safe_exp(safe_log(value))  # within the clamp, like its band
    low, high = _band(value, log_error)
    return Estimate(gpu.slug, value, "estimated", len(anchors), low, high, model)
