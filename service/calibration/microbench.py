"""Matmul throughput and memory bandwidth of this host, measured the way the careful tools do.

One measuring path (`run_microbench`) drives one of two backends with the same interface:
`TorchCudaBackend` (torch on a CUDA device, imported lazily, so the package works without torch)
and `NumpyCpuBackend` (numpy float32 on the CPU). The method follows triton.testing.do_bench,
stas00's mamf-finder and nvbandwidth:

* **Large shapes, a sweep.** Achievable ("maximum achievable matmul FLOPS", mamf-finder) throughput
  depends on the shape: tile quantisation and wave quantisation make some sizes run well below
  others. Several big shapes are measured and the best median per dtype is the headline
  (`best_tflops`); the others stay in the report.
* **Random inputs.** GPUs draw measurably less power, so clock higher, on all-zero or constant
  operands; `randn` inputs give the throughput real tensors get.
* **Warm-up.** The first calls pay for cuBLAS handle creation, kernel selection, lazy module
  loading and clock ramp-up; they are run and thrown away.
* **Cache flush between timed iterations.** Without it iteration i+1 finds its operands already
  in L2 (or the CPU's last-level cache) from iteration i, a state a real training step rarely
  sees. Writing a buffer larger than the cache (`.zero_()` on 256 MiB on the GPU, a fill of
  64 MiB on the CPU) evicts them. The flush runs outside the timed region.
* **Per-iteration timing.** CUDA events recorded on the stream around each matmul (host timers
  would measure the launch, not the kernel), one `torch.cuda.synchronize()` after the loop;
  `time.perf_counter_ns` around each call on the CPU.
* **Median and IQR, not mean and min.** Iteration times are skewed by rare slow outliers
  (preemption, a clock dip, a page fault); the median ignores them and the interquartile range
  (75th - 25th percentile) is a robust spread. A large IQR / median (`noise`) marks a run taken
  on a busy or throttling machine.
* **Copies count 2x bytes.** A device-to-device copy of N bytes reads N and writes N, so DRAM
  moved 2N bytes (the convention of nvbandwidth and STREAM "copy"). Host-to-device moves N bytes
  over PCIe/NVLink-C2C once, from pinned memory (pageable memory would add a staging copy).

TFLOPS = 2*m*n*k / seconds / 1e12 (one multiply and one add per inner-product term); bandwidths
are in GB/s with GB = 1e9 bytes, as vendors quote them.
"""

import contextlib
import importlib.metadata
import platform
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from service.calibration.identity import cpu_name, cuda_version, text
from service.domain.vocabulary import Device
from service.schemas.calibration import CalibrationReport, MatmulDtype, MatmulMeasurement, Telemetry

MIB = 2**20
GIB = 2**30
Shape = tuple[int, int, int]  # (m, n, k): (m x k) @ (k x n)


@dataclass(frozen=True)
class BenchPlan:
    """How much to measure: the matmul shapes, iteration counts and transfer sizes."""

    shapes: tuple[Shape, ...]
    warmup: int
    repeats: int
    copy_bytes: int
    h2d_bytes: int
    copy_repeats: int


PLANS: dict[tuple[Device, bool], BenchPlan] = {
    ("cuda", False): BenchPlan(
        shapes=((4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 4096)),
        warmup=10,
        repeats=50,
        copy_bytes=GIB,
        h2d_bytes=256 * MIB,
        copy_repeats=20,
    ),
    ("cuda", True): BenchPlan(
        shapes=((4096, 4096, 4096), (2048, 2048, 2048)),
        warmup=5,
        repeats=20,
        copy_bytes=GIB,
        h2d_bytes=256 * MIB,
        copy_repeats=10,
    ),
    ("cpu", False): BenchPlan(
        shapes=((1024, 1024, 1024), (2048, 2048, 1024)),
        warmup=2,
        repeats=10,
        copy_bytes=256 * MIB,
        h2d_bytes=0,
        copy_repeats=5,
    ),
    ("cpu", True): BenchPlan(
        shapes=((512, 512, 512), (1024, 1024, 512)),
        warmup=1,
        repeats=5,
        copy_bytes=64 * MIB,
        h2d_bytes=0,
        copy_repeats=3,
    ),
}


def bench_plan(device: Device, quick: bool) -> BenchPlan:
    return PLANS[(device, quick)]


# --- pure helpers ---------------------------------------------------------------------------


def matmul_tflops(m: int, n: int, k: int, seconds: float) -> float:
    """Throughput of one (m x k) @ (k x n) matmul that took `seconds`: 2*m*n*k FLOPs."""
    if seconds <= 0:
        raise ValueError("seconds must be positive")
    return 2 * m * n * k / seconds / 1e12


def summarize_times(seconds_list: list[float], m: int, n: int, k: int) -> tuple[float, float]:
    """(median TFLOPS, IQR TFLOPS) over per-iteration times of one (m, n, k) matmul."""
    if not seconds_list:
        raise ValueError("no timings to summarize")
    tflops = np.array([matmul_tflops(m, n, k, s) for s in seconds_list])
    q25, q50, q75 = np.percentile(tflops, [25, 50, 75])
    return float(q50), float(q75 - q25)


def transfer_gbs(nbytes: int, seconds_list: list[float], passes: int) -> float:
    """GB/s (1e9) of a transfer of `nbytes` touching memory `passes` times, from the median time."""
    if not seconds_list:
        raise ValueError("no timings to summarize")
    seconds = statistics.median(seconds_list)
    if seconds <= 0:
        raise ValueError("seconds must be positive")
    return passes * nbytes / seconds / 1e9


# --- backends -------------------------------------------------------------------------------


class Backend(Protocol):
    """What `run_microbench` needs from a device: timed matmuls, timed copies, telemetry."""

    device_name: str
    gpu_uuid: str | None

    def dtypes(self) -> list[MatmulDtype]: ...

    def time_matmul(
        self, dtype: MatmulDtype, shape: Shape, warmup: int, repeats: int
    ) -> list[float]: ...

    def time_copy(self, nbytes: int, repeats: int) -> list[float]: ...

    def time_h2d(self, nbytes: int, repeats: int) -> list[float] | None: ...

    def telemetry(self) -> Telemetry: ...

    def stack(self) -> dict[str, str]: ...

    def close(self) -> None: ...


def base_stack() -> dict[str, str]:
    return {"python": platform.python_version(), "numpy": np.__version__}


class NumpyCpuBackend:
    """numpy float32 matmuls and copies on the CPU, timed with perf_counter_ns."""

    FLUSH_BYTES = 64 * MIB  # larger than the last-level cache of most CPUs

    def __init__(self) -> None:
        self.device_name = cpu_name()
        self.gpu_uuid: str | None = None
        self._flush = np.zeros(self.FLUSH_BYTES // 8, dtype=np.float64)
        self._rng = np.random.default_rng(0)

    def dtypes(self) -> list[MatmulDtype]:
        return ["fp32"]  # numpy has no fast fp16/bf16 matmul path

    def flush_cache(self) -> None:
        self._flush.fill(float(self._rng.random()))

    def time_matmul(
        self, dtype: MatmulDtype, shape: Shape, warmup: int, repeats: int
    ) -> list[float]:
        m, n, k = shape
        a = self._rng.standard_normal((m, k), dtype=np.float32)
        b = self._rng.standard_normal((k, n), dtype=np.float32)
        out = np.empty((m, n), dtype=np.float32)
        return self._time(lambda: np.matmul(a, b, out=out), warmup, repeats, flush=True)

    def time_copy(self, nbytes: int, repeats: int) -> list[float]:
        src = np.ones(nbytes // 8, dtype=np.float64)
        dst = np.zeros_like(src)
        return self._time(lambda: np.copyto(dst, src), 1, repeats, flush=False)

    def time_h2d(self, nbytes: int, repeats: int) -> list[float] | None:
        return None

    def telemetry(self) -> Telemetry:
        return Telemetry()

    def stack(self) -> dict[str, str]:
        stack = base_stack()
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            stack["torch"] = importlib.metadata.version("torch")[:64]
        return stack

    def close(self) -> None:
        pass

    def _time(
        self, fn: Callable[[], object], warmup: int, repeats: int, *, flush: bool
    ) -> list[float]:
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(repeats):
            if flush:
                self.flush_cache()
            start = time.perf_counter_ns()
            fn()
            times.append((time.perf_counter_ns() - start) / 1e9)
        return times


class TorchCudaBackend:
    """torch matmuls and copies on the current CUDA device, timed with CUDA events."""

    FLUSH_BYTES = 256 * MIB  # larger than any current GPU's L2 (H100 50 MB, B200 126 MB)

    def __init__(self) -> None:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("CUDA is not available to torch")
        self.torch: Any = torch
        self.dev: Any = torch.device("cuda", torch.cuda.current_device())
        self.props: Any = torch.cuda.get_device_properties(self.dev)
        self.device_name = str(torch.cuda.get_device_name(self.dev))[:128]
        uuid = getattr(self.props, "uuid", None)
        self.gpu_uuid = None if uuid is None else "GPU-" + str(uuid).removeprefix("GPU-")
        flush_bytes = max(self.FLUSH_BYTES, 2 * int(getattr(self.props, "L2_cache_size", 0)))
        self._flush: Any = torch.empty(flush_bytes // 4, dtype=torch.int32, device=self.dev)
        self._nvml, self._handle = open_nvml(self.gpu_uuid, self.dev.index)

    def capability(self) -> tuple[int, int]:
        return (int(self.props.major), int(self.props.minor))

    def dtypes(self) -> list[MatmulDtype]:
        dtypes: list[MatmulDtype] = ["fp32", "fp16"]
        if self.capability() >= (8, 0):  # tf32 and native bf16 arrived with Ampere
            dtypes += ["tf32", "bf16"]
        if self.fp8_supported():
            dtypes.append("fp8")
        return dtypes

    def fp8_supported(self) -> bool:
        t = self.torch
        return (
            hasattr(t, "float8_e4m3fn") and hasattr(t, "_scaled_mm") and self.capability() >= (8, 9)
        )

    def matmul_op(self, dtype: MatmulDtype, shape: Shape) -> Callable[[], object]:
        t, (m, n, k) = self.torch, shape
        if dtype == "fp8":
            a = t.randn(m, k, device=self.dev, dtype=t.float16).to(t.float8_e4m3fn)
            # _scaled_mm wants the second operand column-major: a (n x k) row-major, transposed.
            b = t.randn(n, k, device=self.dev, dtype=t.float16).to(t.float8_e4m3fn).t()
            one = t.ones((), device=self.dev, dtype=t.float32)
            return lambda: t._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=t.bfloat16)
        torch_dtype = {"fp32": t.float32, "tf32": t.float32, "fp16": t.float16, "bf16": t.bfloat16}[
            dtype
        ]
        a = t.randn(m, k, device=self.dev, dtype=torch_dtype)
        b = t.randn(k, n, device=self.dev, dtype=torch_dtype)
        out = t.empty(m, n, device=self.dev, dtype=torch_dtype)
        return lambda: t.matmul(a, b, out=out)

    @contextlib.contextmanager
    def tf32(self, enabled: bool) -> Iterator[None]:
        """allow_tf32 set for the duration (True only for "tf32"), restored afterwards."""
        matmul = self.torch.backends.cuda.matmul
        previous = matmul.allow_tf32
        matmul.allow_tf32 = enabled
        try:
            yield
        finally:
            matmul.allow_tf32 = previous

    def time_matmul(
        self, dtype: MatmulDtype, shape: Shape, warmup: int, repeats: int
    ) -> list[float]:
        with self.tf32(dtype == "tf32"):
            op = self.matmul_op(dtype, shape)
            return self._time(op, warmup, repeats, flush=True)

    def time_copy(self, nbytes: int, repeats: int) -> list[float]:
        src = self.torch.empty(nbytes, dtype=self.torch.uint8, device=self.dev).fill_(1)
        dst = self.torch.empty_like(src)
        return self._time(lambda: dst.copy_(src), 2, repeats, flush=False)

    def time_h2d(self, nbytes: int, repeats: int) -> list[float] | None:
        host = self.torch.ones(nbytes, dtype=self.torch.uint8).pin_memory()
        dst = self.torch.empty(nbytes, dtype=self.torch.uint8, device=self.dev)
        return self._time(lambda: dst.copy_(host, non_blocking=True), 2, repeats, flush=False)

    def telemetry(self) -> Telemetry:
        return nvml_telemetry(self._nvml, self._handle)

    def stack(self) -> dict[str, str]:
        t = self.torch
        stack = base_stack()
        stack["torch"] = str(t.__version__)[:64]
        if t.version.cuda:
            stack["cuda"] = str(t.version.cuda)[:64]
        with contextlib.suppress(Exception):
            cudnn = t.backends.cudnn.version()
            if cudnn is not None:
                stack["cudnn"] = str(cudnn)[:64]
        if self._nvml is not None:
            with contextlib.suppress(Exception):
                stack["driver"] = text(self._nvml.nvmlSystemGetDriverVersion())[:64]
            with contextlib.suppress(Exception):
                cuda = cuda_version(int(self._nvml.nvmlSystemGetCudaDriverVersion()))
                stack["cuda_driver"] = cuda
        return stack

    def close(self) -> None:
        self._flush = None
        if self._nvml is not None:
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()
            self._nvml = None
        self.torch.cuda.empty_cache()

    def _time(
        self, fn: Callable[[], object], warmup: int, repeats: int, *, flush: bool
    ) -> list[float]:
        cuda = self.torch.cuda
        for _ in range(warmup):
            fn()
        cuda.synchronize()
        starts = [cuda.Event(enable_timing=True) for _ in range(repeats)]
        ends = [cuda.Event(enable_timing=True) for _ in range(repeats)]
        for start, end in zip(starts, ends, strict=True):
            if flush:
                self._flush.zero_()
            start.record()
            fn()
            end.record()
        cuda.synchronize()
        return [start.elapsed_time(end) / 1e3 for start, end in zip(starts, ends, strict=True)]


# --- NVML telemetry (every failure is a None field) -----------------------------------------


def open_nvml(gpu_uuid: str | None, index: int | None) -> tuple[Any, Any]:
    """(pynvml, handle) for the torch device, matched by UUID (CUDA_VISIBLE_DEVICES renumbers
    devices, NVML does not), else by index; (None, None) when NVML is unusable."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return None, None
    try:
        if gpu_uuid is not None:
            return pynvml, pynvml.nvmlDeviceGetHandleByUUID(gpu_uuid)
    except Exception:
        pass
    try:
        return pynvml, pynvml.nvmlDeviceGetHandleByIndex(index or 0)
    except Exception:
        return pynvml, None


def nvml_reading(read: Callable[[], Any], scale: float = 1.0) -> float | None:
    try:
        value = float(read()) * scale
    except Exception:
        return None
    return value if 0 <= value < 1e9 else None


def nvml_telemetry(nvml: Any, handle: Any) -> Telemetry:
    if nvml is None or handle is None:
        return Telemetry()
    temperature = nvml_reading(
        lambda: nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)
    )
    return Telemetry(
        sm_clock_mhz=nvml_reading(lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)),
        memory_clock_mhz=nvml_reading(
            lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM)
        ),
        temperature_c=temperature if temperature is not None and temperature <= 200 else None,
        power_w=nvml_reading(lambda: nvml.nvmlDeviceGetPowerUsage(handle), scale=1e-3),  # mW
    )


# --- the run --------------------------------------------------------------------------------


def make_backend(device: Device) -> Backend:
    return TorchCudaBackend() if device == "cuda" else NumpyCpuBackend()


def measure_matmul(
    backend: Backend, dtype: MatmulDtype, shape: Shape, plan: BenchPlan
) -> MatmulMeasurement:
    m, n, k = shape
    seconds = backend.time_matmul(dtype, shape, plan.warmup, plan.repeats)
    median, iqr = summarize_times(seconds, m, n, k)
    return MatmulMeasurement(
        dtype=dtype, m=m, n=n, k=k, repeats=len(seconds), tflops_median=median, tflops_iqr=iqr
    )


def run_microbench(device: Device, *, quick: bool = False) -> CalibrationReport:
    """Measure matmul TFLOPS per dtype and shape, memory and host-to-device bandwidth."""
    started = time.perf_counter()
    plan = bench_plan(device, quick)
    backend = make_backend(device)
    try:
        before = backend.telemetry()
        matmul = [
            measure_matmul(backend, dtype, shape, plan)
            for dtype in backend.dtypes()
            for shape in plan.shapes
        ]
        bandwidth = transfer_gbs(
            plan.copy_bytes, backend.time_copy(plan.copy_bytes, plan.copy_repeats), passes=2
        )
        h2d_times = backend.time_h2d(plan.h2d_bytes, plan.copy_repeats)
        h2d = None if h2d_times is None else transfer_gbs(plan.h2d_bytes, h2d_times, passes=1)
        after = backend.telemetry()
        stack = backend.stack()
    finally:
        backend.close()
    return CalibrationReport(
        device=device,
        device_name=backend.device_name,
        gpu_uuid=backend.gpu_uuid,
        matmul=matmul,
        bandwidth_gbs=bandwidth,
        h2d_gbs=h2d,
        before=before,
        after=after,
        stack=stack,
        duration_s=time.perf_counter() - started,
    )
