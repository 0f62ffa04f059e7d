"""What an importer produces, before the catalog is consulted."""

from dataclasses import dataclass, field
from typing import Any

from service.core.errors import InvalidInput


class ImportFailed(InvalidInput):
    """The file could not be read as the format, or items name unknown devices/workloads."""


@dataclass
class Converted:
    """One result as a tool reported it: a device name (not yet a slug), a workload name."""

    index: int  # position in the file, for error locations
    device: str  # the device string as printed (one GPU's name)
    gpu_count: int
    workload: str
    value: float
    precision: str | None  # None: take the workload's
    framework: str
    framework_version: str | None = None
    batch_size: int | None = None
    notes: str | None = None
    device_string: str | None = None  # the whole string as printed
    system: str | None = None
    source: str | None = None
    workload_hint: str = ""  # what the workload name was derived from, for error messages
    extra: dict[str, Any] = field(default_factory=dict)


def problem(index: int, field_name: str, msg: str, type_: str, **more: Any) -> dict[str, Any]:
    return {"loc": ["body", index, field_name], "msg": msg, "type": type_, **more}
