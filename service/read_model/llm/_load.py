"""Reading an ask's data from the database: GPUs and prices, measured aggregates, scaling
profiles, and the decode or training reference the ask's estimates scale.
"""

import math
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable
from dataclasses import replace
from datetime import date
from functools import partial
from typing import TypeVar

from fastapi.concurrency import run_in_threadpool
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from service.catalog import llm
from service.catalog.peaks import peak_rates
from service.core.settings import Settings
from service.domain import llm_fit, memory, prefill
from service.domain.estimate import Estimate
from service.domain.prices import PriceObservation, current_price, shown_price
from service.domain.throughput_model import (
    DEFAULT_RELATIVE_NOISE,
    MIN_CONFORMAL,
    NOMINAL_COVERAGE,
)
from service.domain.vocabulary import ConditionChoice, Measurement
from service.models import Aggregate, Gpu, Price, Result, Workload
from service.read_model.estimates import estimate_model, estimates_for, model_key
from service.read_model.llm._data import (
    _UNREAD,
    MAX_REFERENCES,
    TRAIN_REFERENCE,
    TRAINED_MODELS,
    DecodeReference,
    GpuRow,
    LlmData,
    LlmDataKey,
    LlmRead,
    Measured,
    PrefillData,
    PrefillWorkload,
    ReferenceKey,
    TrainReference,
    _Unread,
)
from service.read_model.llm._prompt import reference_for
from service.read_model.llm._throughput import (
    _covering,
    _mean_context,
    _one_gpu_rooflines,
)
from service.read_model.memo import bounded
from service.read_model.ownership import load_ownership
from service.read_model.price_rows import observation as price_observation
from service.read_model.profiles import scaling_data
from service.read_model.snapshot import utc_today
from service.read_model.snapshot_cache import SnapshotCache

_TOKENS = re.compile(r"-(pp|tg)(\d+)$")
K = TypeVar("K", bound=Hashable)


def _quant_name(text: str | None) -> str:
    found = memory.find_quantization(text or "", list(llm.quantizations()))
    return found.name if found else (text or "")


def _train_reference(session: Session, precision: str) -> TrainReference | None:
    workload = session.exec(select(Workload).where(Workload.slug == TRAIN_REFERENCE)).first()
    if workload is None or not workload.flops_per_unit:
        return None
    # at the reference's own precision (bf16), GPUs without bf16 units train at fp16
    own = None if precision == workload.precision else precision
    return TrainReference(
        workload.flops_per_unit, estimates_for(session, workload, own), _trained(session)
    )


def _trained(session: Session) -> tuple[llm_fit.TrainedEnvelope, ...]:
    """The measured envelope of each TRAINED_MODELS workload the database has, at its own
    precision, with its model's parameters."""
    model = estimate_model(session)
    models = llm.models()
    out = []
    for slug, trained in TRAINED_MODELS.items():
        workload = session.exec(select(Workload).where(Workload.slug == slug)).first()
        spec = models.get(trained)
        if workload is None or spec is None:
            continue
        share = model.envelope(workload, workload.precision)
        if share is not None:
            out.append(llm_fit.TrainedEnvelope(slug, spec.params_b, share))
    return tuple(out)


def _same_bytes(a: str, b: memory.Quantization) -> bool:
    """Formats whose weights are the same bytes for a decode step: the same format, or float
    formats of one width (a GGUF F16 file for a bf16 ask)."""
    if a == b.name:
        return True
    found = memory.find_quantization(a, list(llm.quantizations()))
    return (
        found is not None
        and found.kind == b.kind == "float"
        and found.bits_per_weight == b.bits_per_weight
    )


def decode_reference(
    session: Session,
    ask: llm_fit.Ask,
    measured: list[Measured],
    move_half_widths: tuple[float, float] = (0.0, 0.0),
) -> DecodeReference | None:
    """The decode workload measured on one GPU for the asked model (or one of its shape) in
    the asked format (else one of the same bytes per weight) whose token count covers the
    asked context (_covering), with the throughput model's estimate for every GPU; None when
    nothing of the kind is measured (the ask keeps the roofline x learned efficiency)."""
    models = llm.models()
    found = [
        m
        for m in measured
        if m.phase == "decode"
        and m.count == 1
        and m.model in models
        and (m.model == ask.model.slug or llm.same_shape(models[m.model], ask.model))
        and _same_bytes(m.quant, ask.quant)
    ]
    other = None
    if found:
        # the token count _measured_for picks, so that a measured value's workload is this one
        best = min(
            found, key=lambda m: (m.quant != ask.quant.name, *_covering(m.tokens, ask.context))
        )
    else:
        nearest = _nearest_bytes_reference(
            ask, measured, models, _fit_half_width(session), move_half_widths
        )
        if nearest is None:
            return None
        best, other = nearest
    workload = session.exec(select(Workload).where(Workload.slug == best.workload)).first()
    if workload is None:
        return None
    model = estimate_model(session)  # one read of the cached fit for both
    frameworks = session.exec(
        select(Result.framework)
        .where(Result.workload_id == workload.id, Result.status == "accepted")
        .distinct()
    ).all()
    return DecodeReference(
        best.workload,
        _mean_context(best),
        model.estimates(workload, best.precision),
        model.single_result_half_width(workload, best.precision),
        model=other[0] if other else None,
        quant=other[1] if other else None,
        frameworks=tuple(sorted(frameworks)),
        envelope=model.envelope(workload, best.precision),
    )


def _fit_half_width(session: Session) -> Callable[[Measured], float]:
    """A measured workload's throughput-model band (its conformal half-width in log): how far
    its estimate for a GPU nobody measured on it may miss; infinite where the band is not its
    own (fewer measured GPUs than a conformal band needs, MIN_CONFORMAL: Llama 3 70B F16,
    measured on one card, carries the band pooled over its kind, which says nothing of it)."""
    model = estimate_model(session)

    def half_width(m: Measured) -> float:
        found = model.fitted.fits.get(model_key(m.workload, m.precision))
        if found is None or len(found.loo_log_errors) < MIN_CONFORMAL:
            return math.inf
        return found.half_width if math.isfinite(found.half_width) else math.inf

    return half_width


def _nearest_bytes_reference(
    ask: llm_fit.Ask,
    measured: list[Measured],
    models: dict[str, memory.ModelSpec],
    fit_half_width: Callable[[Measured], float] = lambda m: 0.0,
    move_half_widths: tuple[float, float] = (0.0, 0.0),
) -> tuple[Measured, tuple[memory.ModelSpec, memory.Quantization]] | None:
    """For a model no measured decode workload has the shape of (Qwen3 8B, Mixtral): the
    one-GPU decode workload of another model whose bytes per token are nearest the ask's, so
    that the throughput model's GPU, architecture and stack terms for decode carry over (an
    MI300X decodes with llama.cpp at about a third of its bandwidth; a bandwidth ratio alone
    put it at 5.3 x an RTX 4090 on Qwen3 8B Q4_K_M and 0.9 x on Llama 3.1 8B). The roofline
    ratio of the two then moves the estimate, as it moves one along the context. Models are
    compared at the asked context, and of the nearest model's workloads the one whose token
    count covers the asked context is taken, as for a measured model (decode_reference):
    the throughput model's estimates of one model's token counts differ by more than the
    roofline moves them (an architecture's term is per workload), and Qwen3 8B at 4,096 tokens
    had rested on the Llama 3 8B count nearest in bytes per step while Llama 3.1 8B rested on
    tg4096. Each measured (model, format) pair is expected to miss by the hypotenuse of its
    throughput-model band (`fit_half_width`, the median over its measured results, each token
    count's band once per GPU measured on it: what its estimate for an unmeasured GPU may
    miss) and of the move's (`move_half_widths`: to another format of one model, to another
    model); pairs expected to miss by more than REFERENCE_TIE above the least are left out,
    and of the rest one of the asked model's shape comes first, then the nearest in bytes.
    Llama 3.1 8B at fp8, int8, AWQ or GPTQ had rested on Llama 2 7B Q4_0 tg128 (6 GPUs,
    leave-one-out MdAPE 26%, its MHA KV cache making it nearest in bytes at 4,096 tokens)
    rather than Llama 3 8B Q4_K_M (19 GPUs, 4-6%), and Llama 2 7B in bf16 rested on that Q4_0
    workload, as its own shape, rather than on Llama 3 8B F16, measured on 15 GPUs; bands
    compared per workload and rounded to a tenth, one spelling of an 8-bit ask flipped between
    F16 and Q4_K_M on a 0.005 change of a half-width."""
    asked = llm_fit.decode_bytes_per_step(ask.model, ask.quant, ask.context, 1)
    formats = list(llm.quantizations())
    groups: dict[tuple[str, str], list[Measured]] = {}
    for m in measured:
        if m.phase == "decode" and m.count == 1 and m.model in models:
            groups.setdefault((m.model, m.quant), []).append(m)
    choices = []
    for (model, quant_name), runs in groups.items():
        quant = memory.find_quantization(quant_name, formats)
        if quant is None:
            continue
        spec = models[model]
        other_shape = not (model == ask.model.slug or llm.same_shape(spec, ask.model))
        band = statistics.median(fit_half_width(m) for m in runs)
        move = move_half_widths[1] if other_shape else move_half_widths[0]
        bytes_ = llm_fit.decode_bytes_per_step(spec, quant, ask.context, 1)
        miss = math.hypot(band, move)
        choices.append((miss, other_shape, abs(math.log(bytes_ / asked)), runs, spec, quant))
    if not choices:
        return None
    least = min(c[0] for c in choices)
    kept = [c for c in choices if c[0] <= least + REFERENCE_TIE]
    *_, runs, spec, quant = min(kept, key=lambda c: (c[1], c[2], c[3][0].workload))
    m = min(runs, key=lambda r: (_covering(r.tokens, ask.context), r.workload))
    return m, (spec, quant)


# How much more a reference's value may be expected to miss (log) than the least-missing one's
# and still be taken for being of the asked model's shape, or nearer in bytes: the run-to-run
# noise the throughput model assumes for one result (5%); bands closer than that are not told
# apart by the results they rest on.
REFERENCE_TIE = DEFAULT_RELATIVE_NOISE


def load(
    session: Session,
    condition: ConditionChoice,
    today: date,
    max_age_days: int,
    train_precision: str | None = None,
    allow_stale: bool = False,
) -> LlmData:
    """GPUs with current prices (older than `max_age_days` too with `allow_stale`), LLM
    aggregates and scaling profiles; with `train_precision` also the training reference
    estimates at that precision."""
    prices: dict[int, list[PriceObservation]] = defaultdict(list)
    every_price = session.exec(select(Price)).all()  # purchase and cloud rows, read once
    for p in every_price:
        if p.usd is None:
            continue
        prices[p.gpu_id].append(price_observation(p))
    gpus = session.exec(select(Gpu).order_by(col(Gpu.slug))).all()
    rows = []
    for g in gpus:
        observed = prices.get(g.id or -1, [])
        in_production = g.status == "in_production"
        price = current_price(observed, condition, today, max_age_days, in_production, allow_stale)
        rows.append(
            GpuRow(
                g.slug,
                g.name,
                g.memory_gb,
                g.memory_bandwidth_gbs,
                g.tdp_w,
                g.interconnect,
                peak_rates(g),
                price,
                g.unit_gpus or 1,
                g.sold_as,
                g.stack,
                g.status,
                price or shown_price(observed, condition, today, in_production),
                g.architecture,
            )
        )
    slug_of = {g.id: g.slug for g in gpus}
    measured = []
    query = (
        select(Aggregate, Workload)
        .join(Workload, col(Workload.id) == Aggregate.workload_id)
        .where(col(Workload.model).is_not(None), Aggregate.n > 0)
    )
    for agg, w in session.exec(query).all():
        tokens = _TOKENS.search(w.slug)
        if w.model is None or w.phase is None or tokens is None:
            continue
        measured.append(
            Measured(
                w.slug,
                w.model,
                _quant_name(w.quant or agg.precision),
                w.phase,
                int(tokens.group(2)),
                slug_of[agg.gpu_id],
                agg.gpu_count,
                Measurement(agg.median, agg.n, agg.mad),
                agg.precision,
            )
        )
    reference = _train_reference(session, train_precision) if train_precision else None
    points = _decode_points(measured, rows)  # once for the fixed costs and the half-widths
    fixed = llm_fit.fixed_costs(points)
    held_out = llm_fit.held_out_fixed_costs(points)  # the half-widths score moves as made cold
    data = LlmData(
        rows,
        measured,
        scaling_data(session).profiles,
        reference,
        load_ownership(session, today, max_age_days, every_price),
        today,
        max_age_days,
        decode_transfer_half_width=llm_fit.transfer_half_width(points, NOMINAL_COVERAGE, held_out),
        decode_move_half_width=llm_fit.context_move_half_width(points, NOMINAL_COVERAGE),
        decode_format_half_width=llm_fit.format_move_half_width(points, NOMINAL_COVERAGE, held_out),
        decode_fixed=fixed,
    )
    if train_precision is not None:  # a training ask reads no prompt
        return data
    return replace(data, prefill=_prefill_data(session, data))


def _prefill_data(session: Session, data: LlmData) -> PrefillData:
    """The one-GPU prompt workloads of catalog models (their estimates are read per ask's
    reference: prefill_reference), the attention weight and move band fitted to their results
    (service/domain/prefill.py), and the layer split's learned ratios on prompts."""
    models = llm.models()
    one_gpu = [
        m for m in data.measured if m.phase == "prefill" and m.count == 1 and m.model in models
    ]
    points = [
        prefill.PrefillPoint(m.gpu, models[m.model], m.quant, m.tokens, m.value.median)
        for m in one_gpu
    ]
    kinds = {(m.workload, m.precision): m for m in one_gpu}
    frameworks: dict[str, set[str]] = defaultdict(set)
    builds: dict[str, set[int]] = defaultdict(set)
    for slug, framework, version in session.exec(
        select(Workload.slug, Result.framework, Result.framework_version)
        .join(Result, col(Result.workload_id) == Workload.id)
        .where(col(Workload.slug).in_({w for w, _ in kinds}), Result.status == "accepted")
        .distinct()
    ).all():
        frameworks[slug].add(framework)
        found = _BUILD.search(version or "")
        if found is not None:
            builds[slug].add(int(found.group(1) or found.group(2)))
    measured_gpus = Counter(m.workload for m in one_gpu)
    workloads = tuple(
        PrefillWorkload(
            slug,
            m.model,
            m.quant,
            m.tokens,
            precision,
            tuple(sorted(frameworks[slug])),
            gpus=measured_gpus[slug],
            builds=tuple(sorted(builds[slug])),
        )
        for (slug, precision), m in sorted(kinds.items())
    )
    prompts = [m for m in data.measured if m.phase == "prefill"]
    moves = prefill.moves(points)  # built once for the fit and its band
    return PrefillData(
        workloads,
        moves.attention_weight(),
        moves.half_width(NOMINAL_COVERAGE),
        _split_ratios(prompts, lambda m: m.tokens),
        _split_ratios(prompts, lambda m: m.workload),
    )


# llama-bench's build: "b2824 (4426e298) CUDA" or "d5cb8684 (3891) ROCm"
_BUILD = re.compile(r"\bb(\d{3,6})\b|\((\d{3,6})\)")


def _split_ratios(
    prompts: list[Measured], group: Callable[[Measured], K]
) -> dict[K, dict[int, list[float]]]:
    """Per group (a prompt length, a workload) -> N -> N-GPU / 1-GPU ratios of llama.cpp's
    prompt results (llm_fit.split_ratios): the pipeline over a layer split gains with the
    prompt's length, and less for a large model (Llama 3 70B Q4_K_M pp8192 on 4 GPUs: 1.21-1.46
    x one on the cards measured alone; Llama 3 8B's: about 2.8)."""
    single = {(m.workload, m.gpu): m.value.median for m in prompts if m.count == 1}
    out = {}
    for key in sorted({group(m) for m in prompts}, key=str):
        multi = (
            ((m.workload, m.gpu), m.count, m.value.median)
            for m in prompts
            if group(m) == key and m.count > 1
        )
        out[key] = llm_fit.split_ratios(single, multi)
    return out


def prefill_reference(engine: Engine, shared: LlmData, ask: llm_fit.Ask) -> PrefillWorkload | None:
    """`ask`'s prompt reference (_prompt.reference_for) with every GPU's estimate, read (with a
    session of its own) the first time its workload is a reference for the data of `shared`."""
    chosen = reference_for(ask, shared)
    if chosen is None:
        return None

    def estimates() -> tuple[dict[str, Estimate], float] | None:
        with Session(engine) as session:
            workload = session.exec(
                select(Workload).where(Workload.slug == chosen.workload)
            ).first()
            if workload is None:
                return None
            model = estimate_model(session)
            return (
                model.estimates(workload, chosen.precision),
                model.single_result_half_width(workload, chosen.precision),
            )

    key = (chosen.workload, chosen.precision)
    found = bounded(shared.prefill_estimates, MAX_REFERENCES, key, estimates)
    return None if found is None else _with_estimates(chosen, found)


def _known_prefill_reference(shared: LlmData, ask: llm_fit.Ask) -> PrefillWorkload | _Unread | None:
    """`ask`'s prompt reference where no read is needed (none, or its estimates already read),
    else _UNREAD: an ask's data reads the database only on a miss."""
    chosen = reference_for(ask, shared)
    if chosen is None:
        return None
    found = shared.prefill_estimates.get((chosen.workload, chosen.precision), _UNREAD)
    if found is None or isinstance(found, _Unread):
        return found
    return _with_estimates(chosen, found)


def _with_estimates(
    chosen: PrefillWorkload, found: tuple[dict[str, Estimate], float]
) -> PrefillWorkload:
    estimates, half_width = found
    return replace(chosen, estimates=estimates, single_result_half_width=half_width)


def _decode_points(measured: list[Measured], gpus: list[GpuRow]) -> list[llm_fit.DecodePoint]:
    """The one-GPU decode results of catalog models with their rooflines (and what a token
    reads: the GPU's bandwidth over it): what the decode fixed costs and the transfer,
    format- and context-move half-widths (llm_fit) are measured over."""
    by_slug = {g.slug: g for g in gpus}
    models = llm.models()
    return [
        llm_fit.DecodePoint(
            m.gpu,
            m.model,
            m.value.median,
            roof,
            m.quant,
            m.tokens,
            by_slug[m.gpu].stack,
            models[m.model].layers,
            by_slug[m.gpu].bandwidth_gbs / roof,
        )
        for m, roof in _one_gpu_rooflines(measured, gpus, "decode")
    ]


def reference_memo(engine: Engine, shared: LlmData, ask: llm_fit.Ask) -> DecodeReference | None:
    """`ask`'s decode reference for the data of `shared`, read (with a session of its own) the
    first time this model, format and context are asked."""
    known = _known_reference(shared, ask)
    if not isinstance(known, _Unread):
        return known
    with Session(engine) as session:
        found = decode_reference(
            session,
            ask,
            shared.measured,
            (shared.decode_format_half_width, shared.decode_transfer_half_width),
        )
    if len(shared.references) >= MAX_REFERENCES:
        shared.references.clear()
    shared.references[_reference_key(ask)] = found
    return found


def _reference_key(ask: llm_fit.Ask) -> ReferenceKey:
    return (ask.model.slug, ask.quant.name, ask.context)


def _known_reference(shared: LlmData, ask: llm_fit.Ask) -> DecodeReference | _Unread | None:
    """The memo's entry for `ask`, read once (another thread may clear the memo)."""
    return shared.references.get(_reference_key(ask), _UNREAD)


async def read(
    engine: Engine,
    settings: Settings,
    snapshots: SnapshotCache,
    condition: ConditionChoice,
    ask: llm_fit.Ask,
    allow_stale: bool = False,
) -> LlmRead:
    """The data of one LLM ask: the shared LlmData from `snapshots` (loaded in the thread pool
    with a session of its own when missing or stale), with the ask's decode reference."""
    train_precision = ask.quant.compute_precision if ask.phase == "train" else None
    key = LlmDataKey(condition, train_precision, allow_stale, utc_today())

    def build() -> LlmData:
        with Session(engine) as session:
            return load(
                session,
                condition,
                key.day,
                settings.price_max_age_days,
                train_precision,
                allow_stale,
            )

    shared = snapshots.fresh(key)
    if not isinstance(shared, LlmData):
        shared = await run_in_threadpool(snapshots.get, key, build)
    assert isinstance(shared, LlmData)
    if ask.phase != "decode":
        return LlmRead(key, shared, shared)
    known = _known_reference(shared, ask)
    if isinstance(known, _Unread):
        reference = await run_in_threadpool(reference_memo, engine, shared, ask)
    else:
        reference = known
    prompt = _known_prefill_reference(shared, ask)
    if isinstance(prompt, _Unread):
        prompt = await run_in_threadpool(prefill_reference, engine, shared, ask)
    per_ask = replace(
        shared,
        decode_reference=reference,
        reference_for=partial(reference_memo, engine, shared),
        prefill_reference=prompt,
    )
    return LlmRead(key, shared, per_ask)
