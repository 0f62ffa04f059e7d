"""Single-GPU estimates for a snapshot, from the throughput model fitted ONCE per data version.

Design decisions:
- The model (service/domain/throughput_model/) is fitted over every workload's single-GPU
  aggregates at once (it pools GPU, architecture and stack efficiencies across workloads), so
  the fit is shared by every snapshot: it is cached per process, keyed by a fingerprint of
  what it reads (aggregates, GPUs, workloads, accepted calibrations: counts, sums and newest
  timestamps, a few indexed aggregate queries). A write that changes any of them changes the
  fingerprint; a snapshot rebuilt for any other reason reuses the fit.
- Model workloads are (workload, precision) pairs, named ``slug@precision``: every workload at
  its own precision plus every measured pair. A snapshot at another precision with nothing
  measured gets a borrowed fit (FittedModel.with_workload).
- Measured GPUs keep their measured median (basis measured). With nothing measured anywhere
  the stated roofline prior of service/domain/estimate.py remains (model ``roofline-prior``):
  its band is the stated default, not calibrated.
- The model learns only from results in the database: no constant here or in the catalog is
  fitted to a benchmark.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from sqlalchemy import func
from sqlalchemy import select as sa_select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from service.catalog import llm as llm_catalog
from service.catalog.peaks import CALIBRATED_RATE, peak_rates
from service.domain import estimate as est
from service.domain import throughput_model as tm
from service.domain.plausibility import fp16_accumulate_tflops, peak_tflops
from service.domain.vocabulary import PRECISIONS, precisions_for
from service.models import Aggregate, Calibration, Gpu, Result, Workload

log = logging.getLogger(__name__)
# The statuses whose values feed an aggregate's median (ingest.groups.AGGREGATE_STATUSES; not
# imported: ingest.store needs the models imported first; a unit test checks they agree).
COUNTED_STATUSES = ("accepted", "verified")


def model_key(slug: str, precision: str) -> str:
    return f"{slug}@{precision}"


# A GGUF F16 model's prompt processing (llama-bench pp: a workload with the GGUF file type
# "f16" and phase prefill) multiplies a batch of more than 32 tokens with cuBLAS in fp16 with
# fp16 accumulation (CUBLAS_COMPUTE_16F) on NVIDIA GPUs from Volta on: ggml-cuda.cu
# ggml_cuda_op_mul_mat_cublas at ggml-org/llama.cpp@4426e298 (b2824, 2024-05-08, the build of
# most of the corpus's llama-bench rows), and still so for F16 weights in later builds. A
# GeForce card does that at twice its FP32-accumulate catalog rate. Costed at the catalog
# fp16 rate, the leave-one-GPU-out estimates of the four Llama-3-8B F16 prompt workloads
# put the RTX 4090, 4080 and 3090 at 0.62-0.77 of their measurements and the RTX 6000 Ada, A40
# and A6000 at 1.17-1.30 (median MdAPE 13.9-17.3%, p90 24.7-37.1%). Quantized weights are left
# at their compute precision (vocabulary.COMPUTE_PRECISION: int8 MMQ kernels since June 2024).
FP16_ACCUMULATE_QUANTS = frozenset({"f16", "fp16"})


def workload_spec(workload: Workload, precision: str) -> tm.WorkloadSpec:
    decode = workload.memory_bound or workload.phase == "decode"
    fp16_accumulate = workload.phase == "prefill" and workload.quant in FP16_ACCUMULATE_QUANTS
    return tm.WorkloadSpec(
        model_key(workload.slug, precision),
        precision,
        workload.flops_per_unit,
        decode,
        workload.phase or "",
        workload.unit,
        tm.FP16_ACCUMULATE if fp16_accumulate and precision == "fp16" else "",
        workload.suite,
        # the bandwidth ceiling of its estimates: the layer weights a decode token reads, in
        # its file's format, else (a memory-bound workload of a catalog model in no fixed
        # format: llm-inference, Llama 2 7B decode) in the asked precision's
        llm_catalog.decode_bytes_floor_of(
            workload.model,
            workload.quant or precision,
            workload.phase or ("decode" if workload.memory_bound else None),
        ),
        workload.slug,
    )


def _calibrations(session: Session) -> dict[int, dict[str, float]]:
    """gpu_id -> {"tensor:<precision>": achieved / spec, "memory": ...}, newest accepted CUDA
    calibration per GPU."""
    rows = session.exec(
        select(Calibration, Gpu)
        .join(Gpu, col(Gpu.id) == Calibration.gpu_id)
        .where(Calibration.status == "accepted", Calibration.device == "cuda")
        .order_by(col(Calibration.created_at))
    ).all()
    out: dict[int, dict[str, float]] = {}
    for calibration, gpu in rows:  # newest last, so it wins
        if gpu.id is None:
            continue
        cal: dict[str, float] = {}
        for precision, (measured_col, spec_col) in CALIBRATED_RATE.items():
            achieved, spec = getattr(calibration, measured_col), getattr(gpu, spec_col)
            if achieved and spec and achieved > 0 and spec > 0:
                cal[f"tensor:{precision}"] = min(achieved / spec, 1.0)
        out[gpu.id] = cal
    return out


def gpu_spec(gpu: Gpu, calibration: dict[str, float]) -> tm.GpuSpec:
    rates = peak_rates(gpu)
    return tm.GpuSpec(
        slug=gpu.slug,
        vendor=gpu.vendor,
        architecture=gpu.architecture,
        stack=gpu.stack or tm.derive_stack(gpu.vendor, gpu.market),
        matrix_tflops={
            **{p: peak_tflops(rates, p) for p in PRECISIONS},
            tm.FP16_ACCUMULATE: fp16_accumulate_tflops(rates),
        },
        fp32_tflops=gpu.fp32_tflops,
        bandwidth_gbs=gpu.memory_bandwidth_gbs,
        calibration=calibration,
        memory_gb=gpu.memory_gb,
        tdp_w=gpu.tdp_w,
        memory_type=gpu.memory_type,
    )


@dataclass
class ModelInputs:
    """What the model is fitted from: specs, workloads and single-GPU medians, by slug."""

    gpus: list[tm.GpuSpec]
    workloads: list[tm.WorkloadSpec]
    observations: list[tm.Observation]
    rows: dict[int, Gpu]
    calibration: dict[int, dict[str, float]]
    # (GPU slug, model workload key) -> frameworks of its counted single-GPU results: a
    # measured value from llm.c is not one from PyTorch, and the answer says which
    frameworks: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)


def load_inputs(session: Session) -> ModelInputs:
    gpus = session.exec(select(Gpu).order_by(col(Gpu.slug))).all()
    workloads = {w.id: w for w in session.exec(select(Workload)).all()}
    cal = _calibrations(session)
    specs = [gpu_spec(g, cal.get(g.id or -1, {})) for g in gpus]
    slug_of = {g.id: g.slug for g in gpus}
    wl_specs = {
        model_key(w.slug, w.precision): workload_spec(w, w.precision) for w in workloads.values()
    }
    # One observation per (GPU, workload, precision): the single-GPU median, else the per-GPU
    # share of the smallest multi-GPU system measured (Observation.per_gpu_of; MLPerf submits
    # 8-GPU systems only, and their results should still teach the model a stack's efficiency).
    # Only for workloads without a phase (training, throughput serving: N GPUs each doing a
    # share of the work); a prefill or decode test over N GPUs splits one model's layers and
    # its per-GPU share says nothing about one GPU.
    chosen: dict[tuple[int, int, str], Aggregate] = {}
    for agg in session.exec(select(Aggregate).where(Aggregate.n > 0)).all():
        w = workloads.get(agg.workload_id)
        if agg.gpu_count > 1 and (w is None or w.phase):
            continue
        key3 = (agg.gpu_id, agg.workload_id, agg.precision)
        held = chosen.get(key3)
        if held is None or agg.gpu_count < held.gpu_count:
            chosen[key3] = agg
    frameworks = _single_gpu_frameworks(session, slug_of, workloads)
    observations = []
    for agg in chosen.values():
        w = workloads.get(agg.workload_id)
        if w is None or agg.gpu_id not in slug_of:
            continue
        key = model_key(w.slug, agg.precision)
        wl_specs.setdefault(key, workload_spec(w, agg.precision))
        count = max(agg.gpu_count, 1)
        slug = slug_of[agg.gpu_id]
        observations.append(
            tm.Observation(
                slug,
                key,
                agg.median / count,
                agg.n,
                agg.mad / count,
                count,
                frameworks.get((slug, key), ()) if count == 1 else (),
            )
        )
    observations.sort(key=lambda o: (o.workload, o.gpu))
    return ModelInputs(
        specs,
        list(wl_specs.values()),
        observations,
        {g.id or -1: g for g in gpus},
        cal,
        frameworks,
    )


def group_frameworks(session: Session) -> dict[tuple[int, int, str, int], tuple[str, ...]]:
    """(gpu_id, workload_id, precision, gpu_count) -> the frameworks of the group's counted
    results, sorted: one read of the results per data version, by each cache that needs it."""
    rows = session.execute(
        sa_select(
            col(Result.gpu_id),
            col(Result.workload_id),
            col(Result.precision),
            col(Result.gpu_count),
            col(Result.framework),
        )
        .where(col(Result.status).in_(COUNTED_STATUSES))
        .distinct()
    ).all()
    out: dict[tuple[int, int, str, int], set[str]] = {}
    for gpu_id, workload_id, precision, count, framework in rows:
        out.setdefault((gpu_id, workload_id, precision, count), set()).add(framework)
    return {k: tuple(sorted(v)) for k, v in out.items()}


def _single_gpu_frameworks(
    session: Session, slug_of: dict[int | None, str], workloads: dict[int | None, Workload]
) -> dict[tuple[str, str], tuple[str, ...]]:
    """(GPU slug, workload@precision) -> frameworks of its counted single-GPU results."""
    out = {}
    for (gpu_id, workload_id, precision, count), fws in group_frameworks(session).items():
        w = workloads.get(workload_id)
        if count == 1 and w is not None and gpu_id in slug_of:
            out[(slug_of[gpu_id], model_key(w.slug, precision))] = fws
    return out


def fingerprint(session: Session) -> Hashable:
    """Cheap summary of everything the fit reads; changes whenever any of it is written."""
    agg = session.exec(
        select(
            func.count(),
            func.sum(Aggregate.n),
            func.max(Aggregate.updated_at),
            func.max(Aggregate.id),
        )
    ).one()
    gpu = session.exec(  # seed fills the memory type of a GPU stored without one
        select(
            func.count(),
            func.max(Gpu.updated_at),
            func.max(Gpu.id),
            func.count(col(Gpu.memory_type)),
        )
    ).one()
    wl = session.exec(  # seed names the suite of a workload stored without one
        select(func.count(), func.max(Workload.id), func.count(func.nullif(Workload.suite, "")))
    ).one()
    cal = session.exec(
        select(func.count(), func.max(Calibration.id)).where(Calibration.status == "accepted")
    ).one()
    bind = session.get_bind()
    return (
        str(bind.engine.url) if hasattr(bind, "engine") else "",
        tuple(agg),
        tuple(gpu),
        tuple(wl),
        tuple(cal),
    )


@dataclass
class EstimateModel:
    """The fitted model of one data version, and the inputs it was fitted from."""

    inputs: ModelInputs
    fitted: tm.FittedModel
    _extended: dict[str, tm.FittedModel] = field(default_factory=dict)

    @property
    def anything_measured(self) -> bool:
        return bool(self.fitted.observations)

    def single_result_half_width(self, workload: Workload, precision: str) -> float:
        """Log half-width of the band of a result of (workload, precision) measured once:
        that workload's pooled run-to-run noise."""
        return self.fitted.single_result_half_width(model_key(workload.slug, precision))

    def envelope(self, workload: Workload, precision: str) -> float | None:
        """The largest share of its binding ceiling any measured GPU reached on (workload,
        precision) (the fit's measured envelope); None where it has none."""
        return self.fitted.envelope.get(model_key(workload.slug, precision))

    def estimates(self, workload: Workload, precision: str) -> dict[str, est.Estimate]:
        """Every GPU's single-GPU estimate for (workload, precision), by slug; none for a GPU
        without the units the precision needs unless it was measured at it, alone or in an
        N-GPU system (`lacks_units`)."""
        found = self._bounded_by_bytes(workload, precision, self._estimates(workload, precision))
        lacking = lacks_units(self.inputs.rows.values(), precision)
        if not lacking:
            return found
        key = model_key(workload.slug, precision)
        # measured at it: on one GPU, or in an N-GPU system (MLPerf's fp4 B200 and GB200)
        ran = {gpu for gpu, w in self.fitted.observations if w == key}
        return {slug: e for slug, e in found.items() if slug not in lacking or slug in ran}

    def _bounded_by_bytes(
        self, workload: Workload, precision: str, found: dict[str, est.Estimate]
    ) -> dict[str, est.Estimate]:
        """`found` at most the workload's own precision's estimates x the ratio of their bytes
        per unit, where `precision` reads more of them (est.bounded_by_bytes): a memory-bound
        workload of a catalog model in no fixed format (llm-inference at fp32)."""
        if precision == workload.precision or not workload.memory_bound:
            return found
        asked = workload_spec(workload, precision).bytes_per_unit
        own = workload_spec(workload, workload.precision).bytes_per_unit
        if not (asked and own and asked > own):
            return found
        narrower = self._estimates(workload, workload.precision)
        return est.bounded_by_bytes(found, narrower, own / asked)

    def mixed_precision_estimates(self, workload: Workload) -> dict[str, est.Estimate]:
        """Estimates at the workload's own precision as an ask that names none reads them
        (mixed precision): a bf16 workload's GPUs without bf16 units at fp16 where the
        workload may run at fp16 (est.with_fp16_fallback)."""
        found = self.estimates(workload, workload.precision)
        may_run = precisions_for(workload.precision, workload.quant is not None)
        if workload.precision != "bf16" or "fp16" not in may_run:
            return found
        without = frozenset(g.slug for g in self.inputs.rows.values() if not g.bf16_tensor_tflops)
        return est.with_fp16_fallback(found, self.estimates(workload, "fp16"), without)

    def _estimates(self, workload: Workload, precision: str) -> dict[str, est.Estimate]:
        spec = workload_spec(workload, precision)
        model = self._extended.get(spec.slug)
        if model is None:
            model = self.fitted.with_workload(spec)
            self._extended[spec.slug] = model
        out: dict[str, est.Estimate] = {}
        obs = model.observations
        if self.anything_measured:
            prior: dict[str, est.Estimate] | None = None
            for g in self.inputs.gpus:
                p = model.predict(g.slug, spec.slug)
                if p is None:  # the model cannot say (too little data): the stated prior can
                    prior = prior if prior is not None else _prior(self.inputs, workload, precision)
                    if g.slug in prior:
                        out[g.slug] = prior[g.slug]
                    continue
                o = obs.get((g.slug, spec.slug))
                out[g.slug] = est.Estimate(
                    g.slug,
                    p.value,
                    p.basis,
                    p.n,
                    p.low,
                    p.high,
                    p.model,
                    o.mad if o is not None else None,
                    p.band,
                    self.inputs.frameworks.get((g.slug, spec.slug), ())
                    if p.basis == "measured"
                    else (),
                    p.stack_measured,
                )
            return out
        return _prior(self.inputs, workload, precision)


# A precision whose matrix math only units of its own run, by the catalog column that states
# them: no framework trains or serves FP8 on a GPU without FP8 tensor cores (Transformer
# Engine needs Ada, Hopper or newer), where the spec-rate fallback (the FP16 units) would
# estimate it anyway: an RTX 3080 Ti ranked for ResNet-50 at fp8, a V100 at 6x its own fp16.
# The same for int8 (a card without int8 units was estimated at its FP32 rate), and for fp4,
# which no catalog column states: an fp4 ask of a workload measured at another precision put
# every GPU, a B200 too, below its own bf16 figure (its fp4 rate fell back to FP32). Only a
# measured fp4 result (MLPerf) is answered at fp4.
UNITS_OF: dict[str, str | None] = {
    "fp8": "fp8_tensor_tflops",
    "int8": "int8_tops",
    "fp4": None,  # no column: no GPU states it
}


def lacks_units(gpus: Iterable[Gpu], precision: str) -> frozenset[str]:
    """The slugs of `gpus` that state no rate for `precision`'s own units (UNITS_OF): every
    one where the catalog has no column for it."""
    if precision not in UNITS_OF:
        return frozenset()
    column = UNITS_OF[precision]
    return frozenset(g.slug for g in gpus if column is None or not getattr(g, column))


def _prior(inputs: ModelInputs, workload: Workload, precision: str) -> dict[str, est.Estimate]:
    """Nothing measured on any workload: the stated roofline prior (estimate.roofline_prior)."""
    out = {}
    shape = est.WorkloadShape(
        workload.flops_per_unit, workload.memory_bound or workload.phase == "decode", precision
    )
    log_error = math.log1p(est.DEFAULT_BAND)
    for gid, g in inputs.rows.items():
        eff = inputs.calibration.get(gid, {}).get(f"tensor:{precision}", 1.0)
        perf = est.GpuPerf(
            g.slug, peak_tflops(peak_rates(g), precision) * eff, g.memory_bandwidth_gbs
        )
        value = est.roofline_prior(perf, shape) if perf.bandwidth_gbs > 0 else None
        if value is None or not (math.isfinite(value) and value > 0):
            continue
        out[g.slug] = est.Estimate(
            g.slug,
            value,
            "estimated",
            0,
            value * math.exp(-log_error),
            value * math.exp(log_error),
            "roofline-prior",
        )
    return out


class _ModelCache:
    """The fitted model per fingerprint (the newest few), fitted once, whoever asks."""

    KEEP = 4

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fit_lock = threading.Lock()
        self._models: dict[Hashable, EstimateModel] = {}

    def get(self, session: Session) -> EstimateModel:
        key = fingerprint(session)
        with self._lock:
            hit = self._models.get(key)
        if hit is not None:
            return hit
        with self._fit_lock:
            with self._lock:
                hit = self._models.get(key)
            if hit is not None:
                return hit
            inputs = load_inputs(session)
            fitted = tm.fit(inputs.gpus, inputs.workloads, inputs.observations)
            model = EstimateModel(inputs, fitted)
            with self._lock:
                self._models[key] = model
                while len(self._models) > self.KEEP:
                    self._models.pop(next(iter(self._models)))
            return model

    def clear(self) -> None:
        with self._lock:
            self._models.clear()


MODELS = _ModelCache()


def warm(engine: Engine) -> threading.Thread:
    """Fit the current data version's model in a background thread, so that the first
    /rankings or /recommend after start-up does not wait for it (about 10 s on the shipped
    corpus, two cores). A failure is logged; the first request then fits as before."""

    def run() -> None:
        try:
            with Session(engine) as session:
                MODELS.get(session)
        except Exception as exc:  # e.g. a database not migrated yet: the first request says so
            log.warning("warming the estimate model failed: %s", exc)

    thread = threading.Thread(target=run, name="warm-estimates", daemon=True)
    thread.start()
    return thread


def estimate_model(session: Session) -> EstimateModel:
    """The cached model of the session's data version (fitted on first use)."""
    return MODELS.get(session)


def estimates_for(
    session: Session, workload: Workload, precision: str | None
) -> dict[str, est.Estimate]:
    """Every GPU's single-GPU estimate for (workload, precision), from the cached model;
    precision None: the workload's own, as an ask that names none reads it (mixed precision:
    EstimateModel.mixed_precision_estimates)."""
    model = estimate_model(session)
    if precision is None:
        return model.mixed_precision_estimates(workload)
    return model.estimates(workload, precision)
