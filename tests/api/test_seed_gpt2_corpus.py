"""The GPT-2 (124M) training corpus seeds through the ingestion gate like the other shipped files:
every shipped row is accepted, per GPU, under its own submitter; its single-GPU rows rank as
measured for llm-train; and the per-node-as-one-GPU reading that GPT2_MEASURED.md lists as a
trap is rejected by the physics gate."""

from collections import Counter
from dataclasses import replace

from sqlmodel import Session, col, select

from service.catalog.corpus import CORPUS_FILES, CorpusRow, load_corpus
from service.catalog.seed_results import SEED_PREFIX, seed_results
from service.models import ApiKey, Gpu, Result, Workload

KEY = next(k for k, name in CORPUS_FILES.items() if name == "gpt2_train_results.csv")


def _rows() -> list[CorpusRow]:
    return [r for r in load_corpus() if r.source_key == KEY]


def _stored(db) -> list[tuple[str, str, str | None, int]]:
    with Session(db) as s:
        return list(
            s.exec(
                select(Gpu.slug, Result.status, Result.reason, Result.gpu_count)
                .join(Result, col(Result.gpu_id) == Gpu.id)
                .join(ApiKey, col(ApiKey.id) == Result.submitter_id)
                .where(ApiKey.name == SEED_PREFIX + KEY)
            ).all()
        )


def test_every_shipped_row_is_accepted_per_gpu(db):
    rows = _rows()
    assert rows and {r.workload for r in rows} == {"llm-train"}
    with Session(db) as s:
        report = seed_results(s, rows)
        s.commit()
    assert report.stored == len(rows) and not report.skipped_gpu and not report.invalid
    stored = _stored(db)
    accepted = Counter(gpu for gpu, status, _reason, _n in stored if status == "accepted")
    assert accepted == Counter(r.gpu for r in rows)
    assert len(accepted) >= 5
    with Session(db) as s:
        assert seed_results(s, rows).already == len(rows)  # a re-seed stores nothing twice


def test_single_gpu_rows_rank_as_measured_for_llm_train(db, client):
    rows = _rows()
    with Session(db) as s:
        seed_results(s, rows)
        s.commit()
    single = {r.gpu for r in rows if r.gpu_count == 1}
    items = client.get("/rankings", params={"workload": "llm-train"}).json()["items"]
    measured = {i["gpu"] for i in items if i["basis"] == "measured"}
    assert single and single <= measured


def test_a_node_total_filed_as_one_gpu_is_rejected_by_the_physics_gate(db):
    nodes = [r for r in _rows() if r.gpu_count > 1]
    node = max(nodes, key=lambda r: r.value / r.gpu_count)  # the fastest node per GPU
    garbage = replace(node, gpu_count=1, source=node.source + " [misread as one GPU]")
    with Session(db) as s:
        flops = s.exec(select(Workload.flops_per_unit).where(Workload.slug == node.workload)).one()
        peak = s.exec(select(Gpu.bf16_tensor_tflops).where(Gpu.slug == node.gpu)).one()
        assert flops is not None and peak is not None
        assert garbage.value * flops / 1e12 > 1.05 * peak  # the reading implies more than the peak
        report = seed_results(s, [garbage])
        s.commit()
    assert report.statuses == Counter({"rejected": 1})
    assert [(g, st, reason) for g, st, reason, _n in _stored(db)] == [
        (node.gpu, "rejected", "exceeds_peak")
    ]
