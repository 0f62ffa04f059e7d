"""The llama-bench corpus (llamacpp_results.csv) and the catalog gaps filled on branch `data`
seed through the gate: AMD Radeon, AMD Instinct and Intel Arc end up measured, each row keeps its
citation, and the GPUs added to the catalog stop being skipped."""

from collections import Counter

from sqlmodel import Session, col, select

from service.catalog.corpus import load_corpus
from service.catalog.seed import seed
from service.models import ApiKey, Gpu, Result, Workload

LLAMA2 = ("llama-2-7b-q4_0-pp512", "llama-2-7b-q4_0-tg128")


def _llama2_results(engine):
    with Session(engine) as s:
        return s.exec(
            select(Gpu.slug, Gpu.stack, Workload.slug, Result)
            .join(Result, col(Result.gpu_id) == Gpu.id)
            .join(Workload, col(Workload.id) == Result.workload_id)
            .where(col(Workload.slug).in_(LLAMA2))
        ).all()


def test_llamacpp_rows_seed_accepted_per_stack_with_their_source(db):
    report = seed(db).results
    rows = _llama2_results(db)
    corpus = [r for r in load_corpus() if r.source_key == "llamacpp"]
    assert len(rows) == len(corpus)
    accepted = [(g, stack) for g, stack, _, r in rows if r.status == "accepted"]
    by_stack = Counter(stack for _, stack in accepted)
    assert by_stack["rocm-radeon"] >= 3 and by_stack["rocm-instinct"] >= 2
    assert by_stack["oneapi"] >= 2 and by_stack["cuda"] >= 2
    gpus = {g for g, _ in accepted}
    assert {"amd-radeon-pro-w7900", "amd-mi300x", "intel-arc-b580"} <= gpus
    for _, _, _, r in rows:
        assert r.source and "@" in r.source and r.device_string, r
        assert r.framework_version and r.framework_version.split()[-1] in {"ROCm", "SYCL", "CUDA"}
    with Session(db) as s:
        assert s.exec(select(ApiKey).where(ApiKey.name == "seed:llamacpp")).first() is not None
    assert not {"nvidia-rtx-a5500", "nvidia-rtx-4000-ada"} & set(report.skipped_gpu)
    assert not {"apple-m2-ultra-76c", "apple-m1-max-32c", "apple-m3-max-40c"} & set(
        report.skipped_gpu
    )


def test_catalog_gaps_now_carry_measured_results(db):
    seed(db)
    with Session(db) as s:
        per_gpu = Counter(
            slug
            for slug, _ in s.exec(
                select(Gpu.slug, Result.id)
                .join(Result, col(Result.gpu_id) == Gpu.id)
                .where(Result.status == "accepted")
            ).all()
        )
    for slug in ("nvidia-rtx-a5500", "nvidia-rtx-4000-ada", "apple-m2-ultra", "apple-m3-max"):
        assert per_gpu[slug] >= 20, slug
