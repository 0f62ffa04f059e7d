"""Multi-GPU scaling: parallel (data parallel in one box) and independent experiments.

Memory-bound decode (batch-1 LLM inference) is never scaled by data-parallel training profiles:
one token cannot be split across data-parallel replicas. In parallel mode it is tensor-parallel:
each GPU streams 1/N of the weights, so bandwidth adds, less an interconnect cost of one
all-reduce per layer per token. ASSUMED (no measured source in the corpus): each GPU beyond
the first adds TP_COST[link] to the time per token relative to perfect scaling, speedup =
N / (1 + cost x (N - 1)); 0.15 over PCIe, 0.05 over NVLink. mode=independent is N replicas
(N x one GPU), as for any workload. Measured multi-GPU results override both (recommend.py).
"""

from collections.abc import Mapping
from dataclasses import dataclass

from service.domain.vocabulary import Mode

ProfileKey = tuple[str, str, int]  # framework, interconnect, gpu_count
FALLBACK_FRAMEWORK = "default"
FALLBACK_INTERCONNECT = "pcie"


@dataclass(frozen=True)
class Scaling:
    speedup: float  # throughput of `count` GPUs / throughput of one
    basis: str  # profile:<framework>/<interconnect> | independent | single


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
) -> Scaling:
    """Speedup of `count` GPUs; `decode`: a memory-bound decode workload (tensor-parallel)."""
    if count == 1:
        return Scaling(1.0, "single")
    if mode == "independent":
        return Scaling(float(count), "independent")
    if decode:
        return tensor_parallel(interconnect, count)
    eff, fw, link = efficiency(profiles, framework, interconnect, count)
    return Scaling(count * eff, f"profile:{fw}/{link}")
