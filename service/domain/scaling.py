"""Multi-GPU scaling: parallel (data parallel in one box) and independent experiments."""

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


def scaling(
    profiles: Mapping[ProfileKey, float], mode: Mode, framework: str, interconnect: str, count: int
) -> Scaling:
    if count == 1:
        return Scaling(1.0, "single")
    if mode == "independent":
        return Scaling(float(count), "independent")
    eff, fw, link = efficiency(profiles, framework, interconnect, count)
    return Scaling(count * eff, f"profile:{fw}/{link}")
