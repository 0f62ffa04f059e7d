"""Converted rows -> gate input: device strings through the calibration matcher, workload names
checked against the database. Every problem is collected; any problem refuses the whole file
(422 per item, like unknown slugs in a JSON batch)."""

from typing import Any

from pydantic import ValidationError
from sqlmodel import Session, select

from service.catalog.lookup import device_names
from service.domain.matching import map_device, suggest
from service.ingest.importers.base import Converted, ImportFailed, problem
from service.models import Workload
from service.schemas.results import ResultIn


def resolve(
    session: Session, rows: list[Converted], importer: str
) -> tuple[list[ResultIn], list[dict[str, Any]]]:
    catalog = device_names(session)
    slugs = [slug for slug, _names, _mem in catalog]
    workloads = {w.slug: w for w in session.exec(select(Workload)).all()}
    devices: dict[str, tuple[str | None, str]] = {}
    items: list[ResultIn] = []
    provenance: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    for row in rows:
        if row.device not in devices:
            devices[row.device] = map_device(row.device, None, catalog)
        slug, how = devices[row.device]
        if slug is None:
            errors.append(
                problem(
                    row.index,
                    "gpu_info",
                    f"unmapped device {row.device!r}: {how}",
                    "unknown_device",
                    device=row.device,
                    suggestions=suggest(row.device, slugs),
                )
            )
        workload = workloads.get(row.workload)
        if workload is None:
            errors.append(
                problem(
                    row.index,
                    "workload",
                    f"no workload '{row.workload}' (from {row.workload_hint!r}); "
                    "add it to the catalog or post to an existing one",
                    "unknown_workload",
                    workload=row.workload,
                    suggestions=suggest(row.workload, workloads),
                ),
            )
        if slug is None or workload is None:
            continue
        try:
            item = ResultIn.model_validate(
                {
                    "gpu": slug,
                    "workload": workload.slug,
                    "value": row.value,
                    "precision": row.precision or workload.precision,
                    "gpu_count": row.gpu_count,
                    "batch_size": row.batch_size,
                    "framework": row.framework,
                    "framework_version": row.framework_version,
                    "notes": row.notes,
                }
            )
        except ValidationError as exc:
            errors.extend(
                problem(row.index, ".".join(str(p) for p in e["loc"]), e["msg"], e["type"])
                for e in exc.errors(include_url=False, include_input=False)
            )
            continue
        items.append(item)
        provenance.append(
            {
                "source": row.source,
                "importer": importer,
                "device_string": row.device_string,
                "system": row.system,
            }
        )
    if errors:
        raise ImportFailed(errors)
    return items, provenance
