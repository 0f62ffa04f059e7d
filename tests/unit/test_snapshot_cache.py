"""The snapshot cache: single-flight rebuilds, stale answers while one rebuild runs."""

import threading

from service.read_model.snapshot_cache import SnapshotCache


def test_one_rebuild_at_a_time_and_stale_served_meanwhile():
    cache = SnapshotCache(ttl_s=3600)
    builds: list[str] = []
    release = threading.Event()

    def build(tag: str, wait: bool = False):
        def _build():
            builds.append(tag)
            if wait:
                release.wait(5)
            return tag

        return _build

    assert cache.get("k", build("v1")) == "v1"
    assert cache.get("k", build("never")) == "v1"  # fresh: no rebuild
    cache.invalidate()  # a local write
    answers: list[str] = []
    rebuilding = threading.Thread(target=lambda: answers.append(cache.get("k", build("v2", True))))
    rebuilding.start()
    while builds[-1] != "v2":
        pass
    assert cache.get("k", build("racing")) == "v1"  # stale while v2 is being built
    release.set()
    rebuilding.join()
    assert answers == ["v2"] and builds == ["v1", "v2"]
    assert cache.get("k", build("never")) == "v2"


def test_a_missing_snapshot_is_built_once_for_concurrent_callers():
    cache = SnapshotCache(ttl_s=3600)
    builds: list[int] = []
    gate = threading.Event()

    def build():
        builds.append(1)
        gate.wait(5)
        return "v"

    threads = [threading.Thread(target=lambda: cache.get("k", build)) for _ in range(4)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join()
    assert builds == [1]


def test_expiry_by_ttl():
    cache = SnapshotCache(ttl_s=0)
    assert cache.get("k", lambda: "a") == "a"
    assert cache.get("k", lambda: "b") == "b"


def test_an_earlier_days_entries_go_when_a_later_day_is_built():
    from datetime import date

    from service.read_model.llm import LlmDataKey
    from service.read_model.snapshot import SnapshotKey

    cache = SnapshotCache(ttl_s=3600)
    monday, tuesday = date(2026, 11, 30), date(2026, 12, 1)
    keys = [
        SnapshotKey("llm-train", None, "any", monday),
        SnapshotKey("resnet50-train", "fp16", "used", monday),
        LlmDataKey("any", None, False, monday),
    ]
    for key in keys:
        cache.get(key, lambda: "monday")
    cache.get("no day", lambda: "kept")
    assert all(cache.fresh(k) == "monday" for k in keys)
    cache.get(SnapshotKey("llm-train", None, "any", tuesday), lambda: "tuesday")
    assert all(cache.fresh(k) is None for k in keys)
    assert cache.fresh("no day") == "kept"
    assert cache.fresh(SnapshotKey("llm-train", None, "any", tuesday)) == "tuesday"
