"""The shared words of the domain, defined once: every layer (schemas, services, agent) imports
them from here, so a precision, a basis or a role means the same thing everywhere.

The MAD band lives here too: a measured median m with median absolute deviation d is shown as
m +- 1.4826 d (1.4826 x MAD estimates the standard deviation of normally distributed values).
"""

from dataclasses import dataclass
from typing import Literal, get_args

Precision = Literal["fp32", "tf32", "fp16", "bf16", "fp8", "int8"]
PRECISIONS: tuple[Precision, ...] = get_args(Precision)
Basis = Literal["measured", "estimated"]  # a measured median, or a model's estimate
Mode = Literal["parallel", "independent"]  # one job over n GPUs, or n jobs at once
Role = Literal["submitter", "admin"]
ROLES: tuple[Role, ...] = get_args(Role)
Device = Literal["cuda", "cpu"]
Condition = Literal["new", "used", "msrp", "cloud"]  # price kinds: street new, used, launch, rent
ConditionChoice = Literal["new", "used", "any"]  # what a purchase is priced at (cloud is per hour)

MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class Measurement:
    """Median, count and median absolute deviation (unscaled) of a group of results."""

    median: float
    n: int
    mad: float

    def band(self) -> tuple[float, float]:
        """(low, high) = median -+ 1.4826 x MAD, never below zero."""
        spread = MAD_TO_SIGMA * self.mad
        return max(self.median - spread, 0.0), self.median + spread
