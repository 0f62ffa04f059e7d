"""A result row as the gate builds it before the insert, and its group.

A slotted dataclass rather than a dict (issue 10): the physics, peers and statistics steps read
`value` and the group columns and set `status` and `reason`; every other field passes through
to the insert untouched. `COLUMNS` is the insert's column list, `values` a row's values in that
order (one C-level attrgetter call), so the insert needs no dict per row on Postgres.
Building one costs about what the dict did (no model_dump per item).
"""

from dataclasses import dataclass, fields
from datetime import datetime
from operator import attrgetter
from typing import Any

GroupKey = tuple[int, int, str, int]  # gpu_id, workload_id, precision, gpu_count
GROUP_COLUMNS = ("gpu_id", "workload_id", "precision", "gpu_count")


@dataclass(slots=True)
class NewRow:
    gpu_id: int
    workload_id: int
    value: float
    precision: str
    gpu_count: int
    batch_size: int | None
    framework: str
    framework_version: str | None
    driver: str | None
    cuda: str | None
    notes: str | None
    status: str
    reason: str | None
    submitter_id: int | None
    created_at: datetime
    updated_at: datetime
    source: str | None = None
    importer: str | None = "json"
    device_string: str | None = None
    system: str | None = None
    status_locked: bool = False

    @property
    def group(self) -> GroupKey:
        return (self.gpu_id, self.workload_id, self.precision, self.gpu_count)


COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(NewRow))
# The fields a ResultIn item hands over as they are (its other fields name the GPU and workload).
ITEM_FIELDS = (
    "value",
    "precision",
    "gpu_count",
    "batch_size",
    "framework",
    "framework_version",
    "driver",
    "cuda",
    "notes",
)
_values = attrgetter(*COLUMNS)


def values(row: NewRow) -> tuple[Any, ...]:
    """The row's column values in COLUMNS order."""
    return _values(row)
