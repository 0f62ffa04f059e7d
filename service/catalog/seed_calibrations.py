"""Published matmul calibrations (calibrations.csv), stored as calibrations of retired hosts.

Why: the estimator scales each GPU's spec rate by its calibration efficiency (achieved / spec,
service/read_model/estimates.py). Out of the box no host has calibrated anything, so a
datacenter card counts at 100% of its datasheet rate, and datasheets are not equally honest:
Stas Bekman's measured maximum achievable BF16 matmul is 80% of spec on an H100 SXM and 51% on
an MI300X. The published table is a calibration (the same measurement the agent makes), so it
is stored as one, under a host named for its source, and passes the same acceptance gate
(service/domain/calibration_gate.py: at most 1.10 x the spec peak).

Design decisions:
- One host per source (the CSV's `host`, `public:<source>`), retired at creation: it is never
  due, never given a job, and no token works for it (its secret is discarded). /calibrations
  lists its runs with the host's name, so every figure says where it came from; `stats.source`
  carries the citation. Sources: Stas Bekman's MAMF table (`public:stas00-mamf`) and this
  project's own agent run on a lent H200 (`public:gpu-advisor-gpu-check`, bench/gpu_check.sh),
  the only bf16 figure for that card.
- Only GPUs the table names unambiguously: "A100 SXM" and "A100 PCIe" do not say 40 or 80 GB, so
  they are left out rather than guessed (catalog SOURCES.md says which).
- Idempotent: a (host, GPU) pair already stored is not stored again; the newest accepted
  calibration of a GPU wins in the estimator, so a later source (or an admin's own run)
  replaces an older one rather than mixing dtypes from two machines.
"""

from datetime import UTC, datetime

from sqlmodel import Session, col, select

from service.auth import generate_secret
from service.catalog.loaders import load_calibrations
from service.catalog.peaks import spec_peaks
from service.domain import calibration_gate
from service.models import Calibration, Gpu, Host

SOURCE_HOST = "public:stas00-mamf"  # the MAMF table's host, the first rows of the CSV


def _source_host(session: Session, name: str) -> Host:
    host = session.exec(select(Host).where(Host.name == name)).first()
    if host is not None:
        return host
    secret = generate_secret("hst")  # discarded: nobody can act as this host
    now = datetime.now(UTC)
    host = Host(
        name=name,
        token_prefix=secret.prefix,
        token_sha256=secret.sha256,
        state="retired",
        retired_at=now,
    )
    session.add(host)
    session.flush()
    return host


def seed_calibrations(session: Session) -> tuple[int, int]:
    """Store the published calibrations not stored yet: (accepted, rejected) counts."""
    gpus = {g.slug: g for g in session.exec(select(Gpu)).all()}
    rows = [c for c in load_calibrations() if c.gpu in gpus]
    if not rows:
        return 0, 0
    hosts = {name: _source_host(session, name) for name in dict.fromkeys(c.host for c in rows)}
    stored = set(
        session.exec(
            select(Calibration.host_id, Calibration.gpu_id).where(
                col(Calibration.host_id).in_([h.id for h in hosts.values()])
            )
        ).all()
    )
    accepted = rejected = 0
    for c in rows:
        gpu, host = gpus[c.gpu], hosts[c.host]
        assert host.id is not None
        if (host.id, gpu.id) in stored:
            continue
        peaks = spec_peaks(gpu)
        verdict = calibration_gate.judge(c.tflops, peaks, 0.0)
        session.add(
            Calibration(
                host_id=host.id,
                gpu_id=gpu.id,
                device="cuda",  # the accelerator path (ROCm's torch calls it cuda too)
                device_name=c.device_name,
                fp32_tflops=c.tflops.get("fp32"),
                tf32_tflops=c.tflops.get("tf32"),
                fp16_tflops=c.tflops.get("fp16"),
                bf16_tflops=c.tflops.get("bf16"),
                fp8_tflops=c.tflops.get("fp8"),
                bandwidth_gbs=c.bandwidth_gbs,
                h2d_gbs=c.h2d_gbs,
                stack={"torch": c.torch_version},
                stats={
                    "source": c.source,
                    "best_shape": c.best_shapes,
                    "efficiency": calibration_gate.efficiencies(c.tflops, peaks),
                    "note": c.note,
                },
                status="accepted" if verdict.accepted else "rejected",
                reason=verdict.reason,
                created_at=datetime(
                    c.observed_at.year, c.observed_at.month, c.observed_at.day, tzinfo=UTC
                ),
            )
        )
        accepted += verdict.accepted
        rejected += not verdict.accepted
    session.flush()
    return accepted, rejected
