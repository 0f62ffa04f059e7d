"""Who was measured: the host, its devices and the software stack under them.

A calibration is only comparable with another one taken on the same hardware *and* the same
driver / CUDA / torch stack: a driver update can move matmul throughput by several percent. So
`host_identity` records, per device, the name, UUID, memory, driver, CUDA driver version and torch
version, and `service.calibration.report.stack_fingerprint` hashes exactly the fields that
define the stack (name, uuid,
driver, cuda, torch). The fingerprint changes when any of them changes and is independent of the
order the devices were enumerated in.

On CUDA hosts everything comes from NVML (pynvml, from the nvidia-ml-py package, imported
lazily). Without NVML there is no trustworthy identity, so a CUDA request raises
``RuntimeError("NVML not available: ...")``. On CPU hosts the one "device" is the CPU, named from
/proc/cpuinfo, with the machine's memory.

Memory is reported in GB as vendors label it (2**30 bytes: an "80 GB" H100 reads ~79.6).
"""

import importlib.metadata
import os
import platform
import socket
from typing import Any, Literal

from service import __version__
from service.schemas.calibration import GpuIdentity, HostIdentity

GIB = 2**30
MAX_DEVICES = 16  # HostIdentity.gpus holds at most 16


def host_identity(device: Literal["cuda", "cpu"]) -> HostIdentity:
    """The identity of this host for a calibration on `device`."""
    gpus = nvml_gpu_identities() if device == "cuda" else [cpu_identity()]
    return HostIdentity(
        hostname=hostname(), device=device, gpus=gpus, agent_version=__version__[:32]
    )


def hostname() -> str:
    return (socket.gethostname() or platform.node() or "unknown")[:255]


def package_version(name: str) -> str | None:
    """An installed distribution's version without importing it (torch takes seconds to import)."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def cpu_name() -> str:
    """The CPU model ("model name" in /proc/cpuinfo), else platform's best guess."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                    return value.strip()[:128]
    except OSError:
        pass
    return (platform.processor() or platform.machine() or "cpu")[:128]


def host_memory_gb() -> float | None:
    """Physical memory in GB (2**30 bytes), from /proc/meminfo or sysconf."""
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024 / GIB
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GIB
    except (AttributeError, ValueError, OSError):
        return None


def cpu_identity() -> GpuIdentity:
    return GpuIdentity(
        name=cpu_name(), uuid=None, memory_gb=host_memory_gb(), torch=package_version("torch")
    )


def text(value: Any) -> str:
    """NVML strings are bytes in older pynvml releases and str in newer ones."""
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def cuda_version(code: int) -> str:
    """NVML's CUDA driver version integer (12040) as "12.4"."""
    return f"{code // 1000}.{code % 1000 // 10}"


def load_nvml() -> Any:
    """pynvml, initialised; RuntimeError("NVML not available: ...") when it cannot be."""
    try:
        import pynvml
    except ImportError as exc:
        raise RuntimeError(f"NVML not available: pynvml is not installed ({exc})") from exc
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        raise RuntimeError(f"NVML not available: {exc}") from exc
    return pynvml


def nvml_gpu_identities() -> list[GpuIdentity]:
    """One GpuIdentity per NVML device (the first 16)."""
    nvml = load_nvml()
    try:
        driver = text(nvml.nvmlSystemGetDriverVersion())[:64]
        cuda = cuda_version(int(nvml.nvmlSystemGetCudaDriverVersion()))
        torch_version = package_version("torch")
        count = min(int(nvml.nvmlDeviceGetCount()), MAX_DEVICES)
        gpus = [nvml_gpu(nvml, i, driver, cuda, torch_version) for i in range(count)]
    except Exception as exc:
        raise RuntimeError(f"NVML not available: {exc}") from exc
    finally:
        nvml.nvmlShutdown()
    if not gpus:
        raise RuntimeError("NVML not available: no CUDA devices found")
    return gpus


def nvml_gpu(nvml: Any, index: int, driver: str, cuda: str, torch: str | None) -> GpuIdentity:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    return GpuIdentity(
        name=text(nvml.nvmlDeviceGetName(handle))[:128],
        uuid=text(nvml.nvmlDeviceGetUUID(handle))[:128],
        memory_gb=int(nvml.nvmlDeviceGetMemoryInfo(handle).total) / GIB,
        driver=driver,
        cuda=cuda,
        torch=torch[:64] if torch else None,
    )
