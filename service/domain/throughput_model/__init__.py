"""Throughput model: time per unit = sum over resources of work / rate, plus an overhead.

Pure functions on plain dataclasses (no database, no I/O). Design decisions:
- Resources. A step uses matrix math at the workload's precision (``tensor``: the fastest dense
  unit a run at that precision can use, which is the FP32 rate on a GPU without tensor cores),
  vector FP32 math (``vector``), memory traffic (``memory``) and memory size (``capacity``:
  benchmarks run at the largest batch that fits, so per-step fixed costs are amortised over a
  batch proportional to memory size; with it, held-out cold-GPU errors on the shipped corpus fell
  from a median MdAPE of 9.7% to 8.0%, p90 21.0% to 19.6%; switched off where the harness
  fixes the batch, an LLM phase: WorkloadSpec.batch_fixed). A GPU's rate for a resource is
  spec x calibration efficiency where a calibration exists. Time per unit on GPU g for workload
  w is ``t = (sum_r work_w[r] / rate_g[r] + overhead_w) / e_g`` with ``work_w >= 0``: a workload
  can be partly compute- and partly memory-bound, which a log-linear fit with tied exponents
  cannot express. Units: work in TFLOP (tensor, vector) and GB (memory), overhead in seconds.
- Odd data never raises: rates are clamped to [RATE_MIN, RATE_MAX], medians outside
  [VALUE_MIN, VALUE_MAX] or not finite are ignored, log half-widths are capped at
  ``MAX_LOG_HALF_WIDTH``, and a workload whose fit fails numerically is left unfitted.

The model lives in small private modules behind this public face (import from here):

- `_specs`: GPU and workload specs, measured medians, predictions, a fitted workload (Dies).
- `_nnls`: non-negative least squares and the work fit in log space.
- `_shrinkage`: one-way random-effects variance components and shrunk group means.
- `_efficiency`: the board-power, stack, architecture, workload and GPU terms (Efficiency,
  Architecture x workload, Board power).
- `_suites`: a stack's term in a suite without data of it (Suites).
- `_borrowing`: work borrowed from similar workloads (Nothing measured, Few data).
- `_ceilings`: the physics ceilings and the measured envelope (Physics, Measured envelope).
- `_bands`: run-to-run and framework noise, the split-conformal quantile (Bands).
- `_model`: FittedModel, what a fit answers with.
- `_fitting`: `fit` itself, its backfitting rounds and leave-one-out errors (Fit).
- `_constants`: thresholds, clamps and the nominal coverage.

Each module's docstring states its design decisions and the figures behind them.
"""

from service.domain.throughput_model._bands import conformal_quantile, framework_noise
from service.domain.throughput_model._borrowing import _similar as _similar
from service.domain.throughput_model._borrowing import borrow_errors, prior_shape
from service.domain.throughput_model._ceilings import (
    bandwidth_ceiling,
    binding_ceiling,
    borrowed_envelope,
    compute_ceiling,
    measured_envelope,
    physics_ceiling,
)
from service.domain.throughput_model._constants import (
    DEFAULT_RELATIVE_NOISE,
    FP16_ACCUMULATE,
    MAX_LOG_HALF_WIDTH,
    MIN_CONFORMAL,
    MIN_ENVELOPE_GPUS,
    NOMINAL_COVERAGE,
    RESOURCES,
    Basis,
)
from service.domain.throughput_model._constants import _z as _z
from service.domain.throughput_model._efficiency import (
    Efficiencies,
    pool_efficiencies,
    pool_workload_terms,
    power_trend,
)
from service.domain.throughput_model._fitting import fit
from service.domain.throughput_model._model import FittedModel
from service.domain.throughput_model._model import _throughput as _throughput
from service.domain.throughput_model._nnls import fit_work_log, nnls
from service.domain.throughput_model._shrinkage import shrink_groups
from service.domain.throughput_model._specs import (
    GpuSpec,
    Observation,
    Prediction,
    WorkloadFit,
    WorkloadSpec,
    base_kind,
    derive_stack,
    efficiency_kind,
)
from service.domain.throughput_model._suites import across_suites, stack_centre

__all__ = [
    "DEFAULT_RELATIVE_NOISE",
    "FP16_ACCUMULATE",
    "MAX_LOG_HALF_WIDTH",
    "MIN_CONFORMAL",
    "MIN_ENVELOPE_GPUS",
    "NOMINAL_COVERAGE",
    "RESOURCES",
    "Basis",
    "Efficiencies",
    "FittedModel",
    "GpuSpec",
    "Observation",
    "Prediction",
    "WorkloadFit",
    "WorkloadSpec",
    "across_suites",
    "bandwidth_ceiling",
    "base_kind",
    "binding_ceiling",
    "borrow_errors",
    "borrowed_envelope",
    "compute_ceiling",
    "conformal_quantile",
    "derive_stack",
    "efficiency_kind",
    "fit",
    "fit_work_log",
    "framework_noise",
    "measured_envelope",
    "nnls",
    "physics_ceiling",
    "pool_efficiencies",
    "pool_workload_terms",
    "power_trend",
    "prior_shape",
    "shrink_groups",
    "stack_centre",
]
