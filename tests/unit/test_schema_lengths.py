"""Every text field a client sends fits the column it is stored in, on both databases
(SQLite stores longer text silently; Postgres refuses it with a 500). Issue 16, defect 8."""

import annotated_types
import pytest
from pydantic import BaseModel

from service import models
from service.schemas import calibration, catalog, keys, results

# Request schema -> the table its fields are stored in (fields named like a column).
STORED_IN: list[tuple[type[BaseModel], type]] = [
    (catalog.GpuCreate, models.Gpu),
    (catalog.GpuUpdate, models.Gpu),
    (catalog.WorkloadCreate, models.Workload),
    (catalog.PriceCreate, models.Price),
    (results.ResultIn, models.Result),
    (keys.ApiKeyCreate, models.ApiKey),
    (calibration.HostCreate, models.Host),
    (calibration.JobFailure, models.Job),
    (calibration.CalibrationReport, models.Calibration),
]


def _max_length(field) -> int | None:
    lengths = [m.max_length for m in field.metadata if isinstance(m, annotated_types.MaxLen)]
    annotation = field.annotation
    for arg in getattr(annotation, "__args__", ()):  # Optional[Annotated[str, ...]]
        for meta in getattr(arg, "__metadata__", ()):
            for inner in getattr(meta, "metadata", [meta]):
                if isinstance(inner, annotated_types.MaxLen):
                    lengths.append(inner.max_length)
    return min(lengths) if lengths else None


def _is_text(field) -> bool:
    annotation = field.annotation
    return annotation is str or str in getattr(annotation, "__args__", ())


@pytest.mark.parametrize("schema, model", STORED_IN, ids=lambda x: getattr(x, "__name__", ""))
def test_every_text_field_fits_its_column(schema, model):
    table = model.__table__
    checked = 0
    for name, field in schema.model_fields.items():
        column = table.columns.get(name)
        length = getattr(column.type, "length", None) if column is not None else None
        if length is None or not _is_text(field):
            continue
        limit = _max_length(field)
        assert limit is not None, f"{schema.__name__}.{name} has no max_length"
        assert limit <= length, f"{schema.__name__}.{name}: {limit} > column {length}"
        checked += 1
    assert checked, f"no text field of {schema.__name__} matched a column"


def test_the_admin_reason_fits_with_its_prefix():
    field = results.ResultPatch.model_fields["reason"]
    column = models.Result.__table__.columns["reason"].type.length
    audit = models.ResultAudit.__table__.columns["reason"].type.length
    assert len(results.ADMIN_REASON_PREFIX) + _max_length(field) <= min(column, audit)


def test_joined_aliases_fit_the_column():
    assert models.Gpu.__table__.columns["aliases"].type.length >= catalog.ALIASES_COLUMN
