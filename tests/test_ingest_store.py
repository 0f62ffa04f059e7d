"""The gate's bulk writes on the database under test: ids in row order, and values that come
back bit for bit (on Postgres they travel as array literals built by service.ingest.store)."""

from sqlmodel import Session, col, select

from service.ingest.rows import COLUMNS, ITEM_FIELDS, NewRow
from service.ingest.store import (
    StatusChange,
    insert_results,
    pg_array,
    update_statuses,
    upsert_aggregates,
)
from service.models import Aggregate, Gpu, Result, Workload, utcnow
from service.schemas.results import ResultIn

AWKWARD = ["plain", 'with "quotes"', "back\\slash", "comma, {brace}", "NULL", "", None]
FLOATS = [1 / 3, 0.1 + 0.2, 1e-300, 123456789.123456789, 5e-324, 2.0**60 + 1]


def _ids(session):
    gpu = session.exec(select(Gpu.id).where(Gpu.slug == "nvidia-rtx-4090")).one()
    workload = session.exec(select(Workload.id).order_by(col(Workload.id))).first()
    return gpu, workload


def _row(gpu_id, workload_id, value, now):
    return NewRow(
        gpu_id=gpu_id, workload_id=workload_id, value=value, precision="fp16", gpu_count=1,
        batch_size=None, framework="pytorch", framework_version=None, driver=None, cuda=None,
        notes=None, status="accepted", reason=None, submitter_id=None, created_at=now,
        updated_at=now,
    )  # fmt: skip


def test_array_literals_quote_text_and_keep_floats_exact():
    assert pg_array([1, 2, 30], "int[]") == "{1,2,30}"
    assert pg_array(["a b", None, 'q"'], "text[]") == '{"a b",NULL,"q\\""}'
    assert [float(x) for x in pg_array(FLOATS, "float8[]")[1:-1].split(",")] == FLOATS


def test_inserted_ids_follow_row_order_and_statuses_round_trip(db):
    now = utcnow()
    with Session(db) as s:
        gpu, workload = _ids(s)
        values = [float(v) for v in range(1, len(AWKWARD) + 1)]
        ids = insert_results(s, [_row(gpu, workload, v, now) for v in values])
        update_statuses(
            s,
            [StatusChange(i, "outlier", reason) for i, reason in zip(ids, AWKWARD, strict=True)],
            now,
        )
        s.commit()
        stored = {r.id: r for r in s.exec(select(Result).where(col(Result.id).in_(ids)))}
    assert [stored[i].value for i in ids] == values
    assert [stored[i].reason for i in ids] == AWKWARD
    assert {stored[i].status for i in ids} == {"outlier"}


def test_aggregate_upsert_inserts_then_replaces_with_exact_values(db):
    now = utcnow()
    with Session(db) as s:
        gpu, workload = _ids(s)
        rows = [
            {
                "gpu_id": gpu,
                "workload_id": workload,
                "precision": p,
                "gpu_count": 1,
                "median": x,
                "n": 3,
                "mad": x / 7,
                "stats_n": 4,
                "stats_median": x * 3,
                "stats_mad": 0.0,
                "stats_mean_ad": x / 11,
                "evaluated_n": 4,
            }
            for p, x in zip(["fp16", "fp32", "bf16", "fp8", "int8", "tf32"], FLOATS, strict=True)
        ]
        upsert_aggregates(s, rows, now)
        upsert_aggregates(s, [{**rows[0], "median": 2.5, "n": 9}], now)
        s.commit()
        stored = {a.precision: a for a in s.exec(select(Aggregate).where(Aggregate.gpu_id == gpu))}
    assert (stored["fp16"].median, stored["fp16"].n) == (2.5, 9)
    for row in rows[1:]:
        got = stored[row["precision"]]
        assert (got.median, got.mad, got.stats_median, got.stats_mean_ad) == (
            row["median"],
            row["mad"],
            row["stats_median"],
            row["stats_mean_ad"],
        )


def test_new_rows_carry_every_field_a_result_item_has():
    """A field added to ResultIn must reach the stored row: the gate copies ITEM_FIELDS."""
    assert set(ResultIn.model_fields) - {"gpu", "workload"} == set(ITEM_FIELDS)
    assert set(ITEM_FIELDS) <= set(COLUMNS)
    assert set(COLUMNS) <= set(Result.model_fields) - {"id"}
