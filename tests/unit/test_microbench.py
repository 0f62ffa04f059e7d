"""The calibration microbenchmark: its pure helpers, a real quick CPU run, the host identity."""

import math
import time

import pytest

from service.calibration.identity import host_identity
from service.calibration.microbench import (
    matmul_tflops,
    run_microbench,
    summarize_times,
    transfer_gbs,
)
from service.calibration.report import best_tflops, noise, stack_fingerprint
from service.schemas.calibration import CalibrationReport, HostIdentity, MatmulMeasurement


def measurement(dtype: str, m: int, median: float, iqr: float) -> MatmulMeasurement:
    return MatmulMeasurement.model_validate(
        {"dtype": dtype, "m": m, "n": m, "k": m, "repeats": 5}
        | {"tflops_median": median, "tflops_iqr": iqr}
    )


def report(*measurements: MatmulMeasurement) -> CalibrationReport:
    return CalibrationReport(
        device="cuda", device_name="Test GPU", matmul=list(measurements), bandwidth_gbs=1000.0
    )


@pytest.fixture(scope="module")
def quick_cpu_run() -> tuple[CalibrationReport, float]:
    started = time.perf_counter()
    result = run_microbench("cpu", quick=True)
    return result, time.perf_counter() - started


def test_matmul_tflops_counts_two_flops_per_multiply_add() -> None:
    assert matmul_tflops(4096, 4096, 4096, 1e-3) == pytest.approx(137.438953472, rel=1e-12)
    assert matmul_tflops(1000, 1000, 1000, 1.0) == pytest.approx(2e-3)
    assert matmul_tflops(8192, 8192, 4096, 2e-3) == pytest.approx(
        matmul_tflops(4096, 4096, 4096, 1e-3) * 2
    )


def test_matmul_tflops_rejects_non_positive_time() -> None:
    with pytest.raises(ValueError):
        matmul_tflops(1, 1, 1, 0.0)


def test_summarize_times_median_and_iqr_of_per_iteration_tflops() -> None:
    # 2*1000^3 FLOPs = 2e9: 1, 2, 4, 5, 10 ms -> 2.0, 1.0, 0.5, 0.4, 0.2 TFLOPS.
    median, iqr = summarize_times([1e-3, 2e-3, 4e-3, 5e-3, 10e-3], 1000, 1000, 1000)
    assert median == pytest.approx(0.5)
    assert iqr == pytest.approx(1.0 - 0.4)  # linear-interpolated 75th - 25th percentile


def test_summarize_times_constant_times_have_zero_spread() -> None:
    median, iqr = summarize_times([1e-3] * 7, 4096, 4096, 4096)
    assert median == pytest.approx(137.438953472)
    assert iqr == 0.0


def test_summarize_times_ignores_a_single_outlier() -> None:
    median, _ = summarize_times([1e-3, 1e-3, 1e-3, 1e-3, 1.0], 1000, 1000, 1000)
    assert median == pytest.approx(2.0)


def test_summarize_times_rejects_empty_input() -> None:
    with pytest.raises(ValueError):
        summarize_times([], 1, 1, 1)


def test_transfer_gbs_uses_median_and_passes() -> None:
    gib = 2**30
    assert transfer_gbs(gib, [1e-3, 1e-3, 9.0], passes=2) == pytest.approx(2 * gib / 1e-3 / 1e9)
    assert transfer_gbs(10**9, [0.5], passes=1) == pytest.approx(2.0)


def test_best_tflops_takes_best_median_per_dtype() -> None:
    r = report(
        measurement("fp16", 4096, 600.0, 5.0),
        measurement("fp16", 8192, 700.0, 7.0),
        measurement("bf16", 4096, 650.0, 1.0),
        measurement("fp32", 4096, 50.0, 0.5),
    )
    assert best_tflops(r) == {"fp16": 700.0, "bf16": 650.0, "fp32": 50.0}


def test_noise_is_the_largest_relative_iqr() -> None:
    r = report(measurement("fp16", 4096, 600.0, 6.0), measurement("fp32", 4096, 50.0, 5.0))
    assert noise(r) == pytest.approx(0.1)
    assert noise(report(measurement("fp32", 1024, 1.0, 0.0))) == 0.0


def test_quick_cpu_run_is_a_valid_report(quick_cpu_run: tuple[CalibrationReport, float]) -> None:
    result, wall = quick_cpu_run
    CalibrationReport.model_validate(result.model_dump())
    assert result.device == "cpu"
    assert result.device_name
    assert result.gpu_uuid is None
    assert result.h2d_gbs is None
    assert result.bandwidth_gbs > 0
    assert wall < 10
    assert 0 < result.duration_s <= wall
    assert result.before.model_dump() == dict.fromkeys(result.before.model_dump())
    assert {"python", "numpy"} <= result.stack.keys()


def test_quick_cpu_run_measures_fp32_matmuls(
    quick_cpu_run: tuple[CalibrationReport, float],
) -> None:
    result, _ = quick_cpu_run
    assert {m.dtype for m in result.matmul} == {"fp32"}
    assert len(result.matmul) >= 2
    for m in result.matmul:
        assert m.tflops_median > 0
        assert math.isfinite(m.tflops_median)
        assert m.tflops_iqr >= 0
        assert m.repeats >= 3
    assert best_tflops(result)["fp32"] == max(m.tflops_median for m in result.matmul)
    assert noise(result) >= 0


def test_cpu_host_identity_validates() -> None:
    identity = host_identity("cpu")
    HostIdentity.model_validate(identity.model_dump())
    assert identity.device == "cpu"
    assert len(identity.gpus) == 1
    cpu = identity.gpus[0]
    assert cpu.name
    assert cpu.uuid is None
    assert cpu.memory_gb is not None and cpu.memory_gb > 0


def test_stack_fingerprint_is_stable() -> None:
    identity = host_identity("cpu")
    fingerprint = stack_fingerprint(identity)
    assert len(fingerprint) == 64
    int(fingerprint, 16)
    assert stack_fingerprint(host_identity("cpu")) == fingerprint
    assert stack_fingerprint(identity.model_copy(update={"agent_version": "9.9"})) == fingerprint


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "Other CPU (test)"),
        ("uuid", "GPU-test"),
        ("driver", "0.0.test"),
        ("cuda", "0.0"),
        ("torch", "0.0.0+test"),
    ],
)
def test_stack_fingerprint_changes_with_the_stack(field: str, value: str) -> None:
    identity = host_identity("cpu")
    changed_gpu = identity.gpus[0].model_copy(update={field: value})
    changed = identity.model_copy(update={"gpus": [changed_gpu]})
    assert stack_fingerprint(changed) != stack_fingerprint(identity)


def test_stack_fingerprint_ignores_device_order() -> None:
    base = host_identity("cpu")
    a = base.gpus[0].model_copy(update={"name": "GPU A", "uuid": "GPU-a"})
    b = base.gpus[0].model_copy(update={"name": "GPU B", "uuid": "GPU-b"})
    forward = base.model_copy(update={"gpus": [a, b]})
    backward = base.model_copy(update={"gpus": [b, a]})
    assert stack_fingerprint(forward) == stack_fingerprint(backward)
