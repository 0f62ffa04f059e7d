"""Multi-GPU scaling: parallel (data parallel in one box) and independent experiments.

Precedence, per (GPU, workload, precision, count) in parallel mode:
1. measured: an accepted multi-GPU median for exactly that GPU, workload, precision and count
   is the answer (recommend.configurations; `scaling_basis=measured`);
2. fitted: a profile pooled from the measured scalings of the GPUs that have them, for the
   framework and the box's interconnect (`fitted:<framework>/<interconnect>`), for a GPU of a
   software stack whose boxes it pools (`fitted_on`): the shipped corpus measures CUDA boxes
   only (Lambda, MLPerf), whose NCCL all-reduce and PCIe peer-to-peer a Radeon or Arc box does
   not have, so those take the assumed row (4 x RX 7900 XTX: 3.6x, not the fitted 3.78x; 8:
   6.56x, not 7.41x);
3. assumed: the guide's rows in catalog/scaling_profiles.csv (`profile:<framework>/<link>`).

Measured scaling = multi-GPU median / (count x the same GPU's 1-GPU median), same workload and
precision, from accepted aggregates (MeasuredScaling).

Fitting (fit_profiles), per (framework, interconnect, count):
- The pooled efficiency is the MEDIAN over (GPU, workload, precision) pairs, capped at 1.0.
  Why a median and not a log-space mean with shrinkage: Lambda's tables have broken multi-GPU
  runs (an 8x RTX 2080 Ti cell at 0.03x linear, 4x cells at 0.07x) next to 1.0-1.2x cells the
  gate accepts, so any mean is pulled by a few cells; a median ignores up to half the pairs
  being wrong and needs no tuning constant (shrinkage would need a prior weight we would have to
  invent). Every GPU measured on the same Lambda model set contributes about the same number of
  pairs, so pairs weigh GPUs about equally.
- A pair feeds a profile only when both groups' results came from one framework (the one the
  profile is for), the workload is data-parallel (not memory-bound, not an LLM prefill or
  decode split, which llama.cpp measures as a layer split), and it does not claim more than
  plausibility.SUPERLINEAR_FACTOR x linear (what the gate calls superlinear_scaling; outliers
  are not in the aggregates to begin with).
- A row needs pairs from at least MIN_GPUS different GPUs: one box is that box, not a profile.
- Efficiency never rises with count: a fitted count above a lower fitted count is capped at it
  (a smaller box of the same link never scales worse per GPU; different GPU mixes per count can
  make raw medians do so).
- Counts between two fitted counts (3, 5, 6, 7 between 2, 4, 8) are interpolated linearly in
  log2(count), as the assumed table does, with 1 GPU = 1.0 by definition as the lowest anchor;
  their basis is `fitted` and their source says "interpolated". Counts above the largest fitted
  count are not extrapolated: the assumed row answers.

Interconnect of a box (box_interconnect): a card (`sold_as=card`) marked `nvlink` has an NVLink
bridge, which joins two cards (NVIDIA: NVLink "is also available in A100 PCIe configurations
with two GPUs", nvidia.com/de-de/data-center/nvlink; A100 40GB PCIe product brief
PB-10137-001_v03, Sept 2020, "NVLink Bridge Support"; gmasse/gpu-specs @ 578a5d7 lists A100
PCIe 40/80 GB and H100 PCIe as "PCIe Gen4/Gen5"). A box of three or more such cards all-reduces
over PCIe, so its profile is `pcie`. Lambda's measured boxes agree (shipped corpus, median
efficiency over pairs): 4 / 8 bridge cards 0.916 / 0.919 (10 / 8 GPUs), PCIe-only cards 0.946 /
0.930 (5 / 4 GPUs), NVLink-fabric platforms 0.965 / 0.921 (5 / 7 GPUs); A100 PCIe 40GB 0.884 /
0.851 against A100 SXM4 40GB 0.970 / 0.951. Bridge cards' boxes scale no better than PCIe-only
ones. HGX/OAM platforms and superchip systems keep their fabric at any count. (The H200 NVL's
optional 4-way bridge is treated as 2-way: conservative.)

Memory-bound decode (batch-1 LLM inference) is never scaled by data-parallel training profiles:
one token cannot be split across data-parallel replicas. In parallel mode it is tensor-parallel:
each GPU streams 1/N of the weights, so bandwidth adds, less an interconnect cost of one
all-reduce per layer per token. ASSUMED (no measured source in the corpus): each GPU beyond
the first adds TP_COST[link] to the time per token relative to perfect scaling, speedup =
N / (1 + cost x (N - 1)); 0.15 over PCIe, 0.05 over NVLink. mode=independent is N replicas
(N x one GPU), as for any workload.
"""

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from statistics import median

from service.domain.plausibility import superlinear
from service.domain.throughput_model import NOMINAL_COVERAGE, conformal_quantile
from service.domain.vocabulary import Mode

ProfileKey = tuple[str, str, int]  # framework, interconnect, gpu_count
FALLBACK_FRAMEWORK = "default"
FALLBACK_INTERCONNECT = "pcie"
BRIDGED_GPUS = 2  # an NVLink bridge on PCIe cards joins this many cards
MIN_GPUS = 2  # distinct GPUs behind a fitted row
ANY_COUNT = 0  # scaling_half_widths' key for a link's every count
ANY_LINK = ""  # and for every link


@dataclass(frozen=True)
class Scaling:
    speedup: float  # throughput of `count` GPUs / throughput of one
    basis: str  # single | independent | profile:<fw>/<link> | fitted:<fw>/<link> | tensor-...
    # log half-width of the speedup's band (NOMINAL_COVERAGE): how far measured boxes sit
    # from the row it was read from (scaling_half_widths); 0 where nothing sizes it
    log_half_width: float = 0.0


def box_interconnect(interconnect: str, sold_as: str | None, count: int) -> str:
    """What links the GPUs of a `count`-GPU box (see the module docstring); `sold_as` None:
    the label as given."""
    if sold_as == "card" and interconnect == "nvlink" and count > BRIDGED_GPUS:
        return "pcie"
    return interconnect


def data_parallel(memory_bound: bool, phase: str | None) -> bool:
    """Whether a workload's multi-GPU results measure data-parallel scaling."""
    return not memory_bound and phase in (None, "", "train")


def efficiency(
    profiles: Mapping[ProfileKey, float], framework: str, interconnect: str, count: int
) -> tuple[float, str, str]:
    """Efficiency (speedup / count) from the profiles, with the framework and interconnect used.

    Unknown frameworks use the conservative `default` profile; unknown interconnects use PCIe.
    Counts beyond the profile use its last (lowest) efficiency: scaling never gets better.
    """
    frameworks = {k[0] for k in profiles}
    fw = framework if framework in frameworks else FALLBACK_FRAMEWORK
    links = {k[1] for k in profiles if k[0] == fw}
    link = interconnect if interconnect in links else FALLBACK_INTERCONNECT
    counts = sorted(k[2] for k in profiles if k[0] == fw and k[1] == link)
    if not counts:
        return 1.0 if count == 1 else 0.5, fw, link
    known = max((c for c in counts if c <= count), default=counts[0])
    return min(profiles[(fw, link, known)], 1.0), fw, link


def unprofiled_note(framework: str, bases: Iterable[str]) -> str | None:
    """What an answer says when `framework` has no profile and a row's GPUs scale by the
    `default` one (its `scaling_basis` says profile:default/...): 'pytorh' was taken silently,
    and 4 GPUs scaled 3.0x instead of pytorch's 3.74x."""
    if framework == FALLBACK_FRAMEWORK:
        return None
    if not any(b.startswith(f"profile:{FALLBACK_FRAMEWORK}/") for b in bases):
        return None
    return (
        f"framework={framework} has no scaling profile: several GPUs scale by the conservative "
        f"{FALLBACK_FRAMEWORK} profile (GET /scaling-profiles lists the frameworks that have one)"
    )


TP_COST = {"pcie": 0.15, "nvlink": 0.05}  # assumed, see the module docstring


def tensor_parallel(interconnect: str, count: int) -> Scaling:
    """Decode speedup on `count` GPUs split tensor-parallel (assumed interconnect cost)."""
    link = "nvlink" if "nvlink" in interconnect.lower() else "pcie"
    return Scaling(count / (1 + TP_COST[link] * (count - 1)), f"tensor-parallel:{link}")


def scaling(
    profiles: Mapping[ProfileKey, float],
    mode: Mode,
    framework: str,
    interconnect: str,
    count: int,
    decode: bool = False,
    fitted: Mapping[ProfileKey, float] | None = None,
    sold_as: str | None = None,
    stack: str | None = None,
    fitted_stacks: Mapping[ProfileKey, frozenset[str]] | None = None,
    half_widths: Mapping[tuple[str, int], float] | None = None,
) -> Scaling:
    """Speedup of `count` GPUs; `decode`: a memory-bound decode workload (tensor-parallel).
    A data-parallel speedup carries the band half-width of its (link, count)
    (scaling_half_widths).

    `profiles` are the assumed rows, `fitted` the rows fitted from measurements (they win for
    the exact framework, box interconnect and count, for a GPU of a `stack` whose boxes are
    among those measured, `fitted_stacks`); `sold_as` lets a bridged card's box of more than
    two fall back to PCIe (box_interconnect).
    """
    if count == 1:
        return Scaling(1.0, "single")
    if mode == "independent":
        return Scaling(float(count), "independent")
    link = box_interconnect(interconnect, sold_as, count)
    if decode:
        return tensor_parallel(link, count)
    width = half_width(half_widths or {}, link, count)
    measured = (fitted or {}).get((framework, link, count))
    if measured is not None and fitted_on(
        stack, (fitted_stacks or {}).get((framework, link, count))
    ):
        return Scaling(count * min(measured, 1.0), f"fitted:{framework}/{link}", width)
    eff, fw, used = efficiency(profiles, framework, link, count)
    return Scaling(count * eff, f"profile:{fw}/{used}", width)


@dataclass(frozen=True)
class Profiles:
    """The scaling rows a read scales configurations by: the assumed rows, the rows fitted from
    measurements, and the software stacks whose boxes each fitted row pools (fitted_on)."""

    assumed: Mapping[ProfileKey, float] = field(default_factory=dict)
    fitted: Mapping[ProfileKey, float] = field(default_factory=dict)
    fitted_stacks: Mapping[ProfileKey, frozenset[str]] = field(default_factory=dict)
    # (interconnect, count) -> log half-width of a data-parallel speedup (scaling_half_widths)
    half_widths: Mapping[tuple[str, int], float] = field(default_factory=dict)

    def scaling(
        self,
        mode: Mode,
        framework: str,
        interconnect: str,
        count: int,
        decode: bool = False,
        sold_as: str | None = None,
        stack: str | None = None,
    ) -> Scaling:
        """`scaling` over these rows."""
        return scaling(
            self.assumed,
            mode,
            framework,
            interconnect,
            count,
            decode=decode,
            fitted=self.fitted,
            sold_as=sold_as,
            stack=stack,
            fitted_stacks=self.fitted_stacks,
            half_widths=self.half_widths,
        )


def fitted_on(stack: str | None, measured_stacks: frozenset[str] | None) -> bool:
    """Whether a fitted row speaks for a GPU of `stack`: its boxes were of that stack (None on
    either side: not known, taken as yes). A row fitted on CUDA boxes (NCCL all-reduce, P2P over
    PCIe) says nothing of a Radeon or Arc box's collectives; such a GPU takes the assumed row."""
    return stack is None or measured_stacks is None or stack in measured_stacks


# ------------------------------------------------------------------ fitting from measurements


@dataclass(frozen=True)
class MeasuredScaling:
    """One GPU's measured scaling on one workload and precision at one count."""

    gpu: str
    workload: str
    precision: str
    count: int
    multi_median: float
    single_median: float
    multi_n: int
    single_n: int
    framework: str | None  # the one framework of both groups' results; None when mixed
    interconnect: str  # of the box at this count (box_interconnect)
    data_parallel: bool = True

    @property
    def efficiency(self) -> float:
        return self.multi_median / (self.count * self.single_median)

    @property
    def n(self) -> int:
        return self.multi_n + self.single_n

    @property
    def poolable(self) -> bool:
        """Whether this scaling may feed a fitted profile (module docstring)."""
        return (
            self.framework is not None
            and self.data_parallel
            and self.count > 1
            and self.single_median > 0
            and not superlinear(self.multi_median, self.count, self.single_median)
        )


@dataclass(frozen=True)
class FittedProfile:
    framework: str
    interconnect: str
    count: int
    efficiency: float
    pairs: int  # (GPU, workload, precision) scalings pooled
    gpus: tuple[str, ...]  # the GPUs among them
    n: int  # results behind them (multi-GPU and 1-GPU groups)
    source: str  # how the row was made

    @property
    def key(self) -> ProfileKey:
        return (self.framework, self.interconnect, self.count)


def _pooled(key: ProfileKey, pairs: list[MeasuredScaling]) -> FittedProfile:
    fw, link, count = key
    gpus = tuple(sorted({p.gpu for p in pairs}))
    value = min(median(p.efficiency for p in pairs), 1.0)
    return FittedProfile(
        fw,
        link,
        count,
        value,
        len(pairs),
        gpus,
        sum(p.n for p in pairs),
        f"fitted: median of {len(pairs)} measured {count}-GPU/1-GPU scalings over "
        f"{len(gpus)} GPUs ({', '.join(gpus)}), {fw}, {link} boxes",
    )


def _non_increasing(rows: list[FittedProfile]) -> list[FittedProfile]:
    """Cap each row (by count) at the lowest efficiency of the rows below it."""
    out: list[FittedProfile] = []
    for row in rows:
        floor = min((r.efficiency for r in out), default=1.0)
        if row.efficiency > floor:
            lower = min(out, key=lambda r: (r.efficiency, r.count))
            row = replace(
                row,
                efficiency=floor,
                source=f"{row.source}; median {row.efficiency:.3f} capped at the "
                f"{lower.count}-GPU value (efficiency never rises with count)",
            )
        out.append(row)
    return out


def _interpolated(lo: FittedProfile | None, hi: FittedProfile, count: int) -> FittedProfile:
    """A row between two fitted counts (`lo` None: 1 GPU = 1.0), linear in log2(count)."""
    lo_count, lo_eff = (lo.count, lo.efficiency) if lo else (1, 1.0)
    t = (math.log2(count) - math.log2(lo_count)) / (math.log2(hi.count) - math.log2(lo_count))
    between = (
        f"the fitted {lo_count}- and {hi.count}-GPU rows"
        if lo
        else (f"1 GPU (1.0 by definition) and the fitted {hi.count}-GPU row")
    )
    return FittedProfile(
        hi.framework,
        hi.interconnect,
        count,
        lo_eff + t * (hi.efficiency - lo_eff),
        hi.pairs + (lo.pairs if lo else 0),
        tuple(sorted(set(hi.gpus) | set(lo.gpus if lo else ()))),
        hi.n + (lo.n if lo else 0),
        f"fitted: interpolated in log2(count) between {between}; pairs and n are theirs",
    )


def fit_profiles(measured: Iterable[MeasuredScaling]) -> dict[ProfileKey, FittedProfile]:
    """Profiles per (framework, interconnect, count) pooled from measured scalings."""
    groups: dict[ProfileKey, list[MeasuredScaling]] = defaultdict(list)
    for m in measured:
        if m.poolable:
            assert m.framework is not None
            groups[(m.framework, m.interconnect, m.count)].append(m)
    curves: dict[tuple[str, str], list[FittedProfile]] = defaultdict(list)
    for key, pairs in groups.items():
        if len({p.gpu for p in pairs}) >= MIN_GPUS:
            curves[key[:2]].append(_pooled(key, pairs))
    out: dict[ProfileKey, FittedProfile] = {}
    for rows in curves.values():
        rows = _non_increasing(sorted(rows, key=lambda r: r.count))
        below: FittedProfile | None = None
        for row in rows:
            lo_count = below.count if below else 1
            for c in range(lo_count + 1, row.count):
                out[(row.framework, row.interconnect, c)] = _interpolated(below, row, c)
            out[row.key] = row
            below = row
    return out


def scaling_half_widths(
    measured: Iterable[MeasuredScaling],
    assumed: Mapping[ProfileKey, float],
    fitted: Mapping[ProfileKey, FittedProfile],
) -> dict[tuple[str, int], float]:
    """(interconnect, count) -> the split-conformal quantile at the bands' nominal coverage
    (throughput_model.conformal_quantile) of |log(measured efficiency / the row it would be
    scaled by)| over the poolable measured scalings of that link and count (the fitted row where
    one exists, else the assumed one); a (link, count) without any takes the quantile over every
    count of its link, then over every link (the ANY_COUNT and ANY_LINK keys below). A speedup
    read from a profile was given the single GPU's band alone: 8 x RTX 5090 by the fitted PCIe
    row answered +-3.5%, where the measured 8-GPU PCIe boxes of the shipped corpus sit from
    that row by up to 21% (80% quantile over 217 boxes)."""
    errors: dict[tuple[str, int], list[float]] = defaultdict(list)
    for m in measured:
        if not m.poolable:
            continue
        assert m.framework is not None
        row = fitted.get((m.framework, m.interconnect, m.count))
        eff = (
            row.efficiency if row else efficiency(assumed, m.framework, m.interconnect, m.count)[0]
        )
        if eff > 0:
            errors[(m.interconnect, m.count)].append(abs(math.log(m.efficiency / eff)))
    by_link: dict[str, list[float]] = defaultdict(list)
    for (link, _count), e in errors.items():
        by_link[link] += e
    out = {key: conformal_quantile(e, NOMINAL_COVERAGE) for key, e in errors.items()}
    out |= {
        (link, ANY_COUNT): conformal_quantile(e, NOMINAL_COVERAGE) for link, e in by_link.items()
    }
    everything = [x for e in errors.values() for x in e]
    if everything:
        out[(ANY_LINK, ANY_COUNT)] = conformal_quantile(everything, NOMINAL_COVERAGE)
    return out


def half_width(widths: Mapping[tuple[str, int], float], link: str, count: int) -> float:
    """The (link, count) half-width, else its link's, else every link's, else 0."""
    for key in ((link, count), (link, ANY_COUNT), (ANY_LINK, ANY_COUNT)):
        if key in widths:
            return widths[key]
    return 0.0
