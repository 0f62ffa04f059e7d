"""Pure calibration logic: when a host is due, its state, the run's verdict, device mapping."""

from datetime import UTC, datetime, timedelta

from service.catalog import loaders as catalog
from service.domain.calibration_gate import efficiencies, judge
from service.domain.due import due_reason, host_state
from service.domain.matching import map_device

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
DAY = 86400


def test_due_reasons_in_priority_order():
    recent = NOW - timedelta(hours=1)
    assert due_reason(NOW, None, DAY, False, False) == "never"
    assert due_reason(NOW, recent, DAY, False, False) is None
    assert due_reason(NOW, NOW - timedelta(days=1), DAY, False, False) == "interval"
    assert due_reason(NOW, recent, DAY, True, True) == "requested"
    assert due_reason(NOW, recent, DAY, False, True) == "stack_changed"


def test_host_state_derives_stale_from_silence():
    assert host_state(NOW, "pending", None, 300) == "pending"
    assert host_state(NOW, "healthy", NOW - timedelta(seconds=10), 300) == "healthy"
    assert host_state(NOW, "healthy", NOW - timedelta(seconds=301), 300) == "stale"
    assert host_state(NOW, "failing", NOW, 300) == "failing"
    assert host_state(NOW, "retired", None, 300) == "retired"


def test_verdict_rejects_beyond_peak_and_noise():
    peaks = {"fp16": 165.2, "fp32": 82.6, "fp8": None}
    assert judge({"fp16": 150.0, "fp32": 60.0}, peaks, 0.05).accepted
    over = judge({"fp16": 182.0}, peaks, 0.05)
    assert not over.accepted and over.reason.startswith("exceeds_peak:fp16")
    broken = judge({"fp16": 150.0, "fp32": 8.0}, peaks, 0.05)  # fp32 at 0.13 of its peak
    assert not broken.accepted and broken.reason.startswith("below_floor:fp32")
    noisy = judge({"fp16": 100.0}, peaks, 0.3)
    assert not noisy.accepted and noisy.reason.startswith("noisy")
    assert judge({"fp32": 1e6}, {}, 0.0).accepted  # unmapped/CPU: only noise is checked
    assert efficiencies({"fp16": 150.0, "fp32": 90.0, "fp8": 1.0}, peaks) == {
        "fp16": 150.0 / 165.2,
        "fp32": 1.0,
    }


CATALOG = [(g.slug, [g.name, *g.aliases], g.memory_gb) for g in catalog.load_gpus()]


def test_nvml_names_map_by_alias_and_memory_disambiguates():
    assert map_device("NVIDIA GeForce RTX 4090", 23.99, CATALOG) == ("nvidia-rtx-4090", "alias")
    assert map_device("NVIDIA H100 80GB HBM3", 79.6, CATALOG)[0] == "nvidia-h100-sxm"
    assert map_device("NVIDIA A100-SXM4-80GB", 80.0, CATALOG)[0] == "nvidia-a100-80gb"
    shared = [("a-8", ["Same Name"], 8.0), ("a-16", ["Same Name"], 16.0)]
    assert map_device("same name", 15.9, shared) == ("a-16", "alias+memory")
    assert map_device("same name", None, shared)[0] is None
    assert map_device("same name", 48.0, shared)[0] is None


def test_unknown_or_doubtful_devices_are_reported_not_guessed():
    slug, why = map_device("Totally Unknown Accelerator 9000", 32, CATALOG)
    assert slug is None and "no catalog GPU" in why
    # The name matches but the memory does not: not that GPU.
    slug, why = map_device("NVIDIA GeForce RTX 4090 D", 48.0, CATALOG)
    assert slug is None
