"""Snapshot.costed: the cost account of costing.costed, computed once per configuration and
cost settings, in a memo that cannot grow without bound; Snapshot.ranked_configurations'
memo, keyed by client text, is bounded too."""

from service.domain.scaling import Profiles
from service.domain.tco import CostSettings, PlatformCost, PriceHistory
from service.models import Workload
from service.read_model import snapshot as snapshot_module
from service.read_model.costing import costed
from service.read_model.ownership import OwnershipData
from service.read_model.snapshot import Snapshot

PLATFORMS = {
    1: PlatformCost(1, 900.0, 850.0, "src-1"),
    4: PlatformCost(4, 2400.0, 1600.0, "src-4"),
}


def make_snapshot() -> Snapshot:
    workload = Workload(slug="w", name="W", unit="images/s", precision="fp16")
    ownership = OwnershipData(platforms=PLATFORMS, history={"gpu-a": PriceHistory(0.6, 4.0)})
    return Snapshot(workload, "fp16", [], {}, Profiles(), None, ownership=ownership)


def test_each_account_equals_costed_and_is_computed_once(monkeypatch):
    snapshot = make_snapshot()
    calls: list[str] = []

    def counting(*args: object) -> object:
        calls.append(str(args[2]))
        return costed(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(snapshot_module, "costed", counting)
    for settings in (CostSettings(), CostSettings(hours_per_day=24.0)):
        for count in (1, 4):
            want = costed(
                snapshot.ownership,
                "images/s",
                "gpu-a",
                800.0 * count,
                count,
                300.0,
                50.0,
                settings,
                None,
            )
            for _ in range(3):
                got = snapshot.costed("gpu-a", 800.0 * count, count, 300.0, 50.0, settings, None)
                assert got == want
    assert len(calls) == 4  # 2 settings x 2 counts, each once


def test_the_memo_starts_again_when_full(monkeypatch):
    monkeypatch.setattr(snapshot_module, "MAX_COSTED", 8)
    snapshot = make_snapshot()
    for i in range(50):
        snapshot.costed(
            "gpu-a", 800.0, 1, 300.0, 50.0, CostSettings(hours_per_day=1 + i / 10), None
        )
        assert len(snapshot._costed) <= 8


def test_ranked_configurations_are_kept_per_framework_up_to_a_bound(monkeypatch):
    """The framework is client text: a stream of distinct ones must not grow the memo."""
    monkeypatch.setattr(snapshot_module, "MAX_RANKED", 4)
    snapshot = make_snapshot()
    first = snapshot.ranked_configurations("parallel", "pytorch", 4)
    assert snapshot.ranked_configurations("parallel", "pytorch", 4) is first  # computed once
    for i in range(20):
        snapshot.ranked_configurations("parallel", f"fw-{i}", 4)
        assert len(snapshot._ranked) <= 4
