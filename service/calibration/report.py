"""What the server reads from an agent's report and identity: the best rate per dtype, the
run's noise, and the fingerprint of its software stack. Small and free of any benchmark or
device code, so the server side (service.hosts) never imports the agent's machinery."""

import hashlib
import json

from service.schemas.calibration import CalibrationReport, HostIdentity, MatmulDtype


def best_tflops(report: CalibrationReport) -> dict[MatmulDtype, float]:
    """The best median TFLOPS across shapes, per dtype."""
    best: dict[MatmulDtype, float] = {}
    for m in report.matmul:
        best[m.dtype] = max(best.get(m.dtype, 0.0), m.tflops_median)
    return best


def noise(report: CalibrationReport) -> float:
    """The largest relative spread (IQR / median) of any measurement in the report."""
    return max(m.tflops_iqr / m.tflops_median for m in report.matmul)


def stack_fingerprint(identity: HostIdentity) -> str:
    """sha256 hex of the sorted (name, uuid, driver, cuda, torch) tuples of the devices."""
    rows = sorted(json.dumps([g.name, g.uuid, g.driver, g.cuda, g.torch]) for g in identity.gpus)
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()
