"""read_model/memo.py: the bounded memo behind per-snapshot caches keyed by client input."""

from service.read_model.memo import bounded


def test_a_miss_computes_once_and_a_hit_does_not():
    store: dict[object, object] = {}
    calls: list[str] = []

    def compute(key: str) -> str:
        calls.append(key)
        return key.upper()

    assert bounded(store, 4, "a", lambda: compute("a")) == "A"
    assert bounded(store, 4, "a", lambda: compute("a")) == "A"
    assert calls == ["a"]


def test_a_full_store_is_emptied_before_the_next_key_so_it_never_grows_past_its_bound():
    store: dict[object, object] = {}
    for i in range(50):
        bounded(store, 8, i, lambda i=i: i * i)
        assert len(store) <= 8
    assert store[49] == 49 * 49
    assert bounded(store, 8, None, lambda: "none") == "none"  # a None value is kept too
    assert bounded(store, 8, None, lambda: "again") == "none"
