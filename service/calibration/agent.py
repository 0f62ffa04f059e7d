"""The calibration agent on a host: heartbeat, claim, measure, report; no inbound port.

It survives server restarts and network errors (exponential backoff up to 30 s) and stops
cleanly on SIGTERM/SIGINT: a run in progress finishes (or fails) and is reported first.
Reporting is idempotent per job on the server, so a retried post never stores twice.
"""

import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from service.calibration.identity import host_identity
from service.calibration.microbench import run_microbench
from service.domain.vocabulary import Device
from service.schemas.calibration import CalibrationReport, HostIdentity

log = logging.getLogger("gpu_advisor.agent")
MAX_BACKOFF_S = 30.0


class TokenRefused(Exception):
    """The server does not accept this host token (wrong, or the host was retired)."""


class Retryable(Exception):
    """The server could not answer now (network error, 5xx, 429)."""


@dataclass
class Agent:
    server: str
    token: str
    device: Device
    quick: bool = False
    measure: Callable[[Device, bool], CalibrationReport] = field(
        default=lambda device, quick: run_microbench(device, quick=quick)
    )
    identify: Callable[[Device], HostIdentity] = host_identity
    stop: threading.Event = field(default_factory=threading.Event)
    poll_s: float = 30.0
    timeout_s: float = 60.0
    jobs_done: int = 0

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.server.rstrip("/"),
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=self.timeout_s,
        )

    def _post(self, http: httpx.Client, path: str, body: Any = None) -> httpx.Response:
        try:
            response = http.post(path, json=body)
        except httpx.TransportError as exc:
            raise Retryable(f"{path}: {exc}") from exc
        if response.status_code == 401:
            raise TokenRefused(response.text)
        if response.status_code >= 500 or response.status_code == 429:
            raise Retryable(f"{path}: HTTP {response.status_code}")
        return response

    def _with_retries(self, action: Callable[[], Any], what: str, attempts: int | None) -> Any:
        """Run `action`, backing off on Retryable; `attempts=None` retries until stopped."""
        delay, tries = 1.0, 0
        while True:
            try:
                return action()
            except Retryable as exc:
                tries += 1
                if attempts is not None and tries >= attempts:
                    raise
                log.warning("%s failed (%s); retrying in %.0f s", what, exc, delay)
                if self.stop.wait(delay) and attempts is None:
                    raise
                delay = min(delay * 2, MAX_BACKOFF_S)

    def cycle(self, http: httpx.Client, identity: HostIdentity) -> bool:
        """One heartbeat + claim (+ run + report). True when a job ran."""
        beat = self._post(http, "/agent/heartbeat", identity.model_dump()).json()
        self.poll_s = float(beat.get("poll_interval_s", self.poll_s))
        claimed = self._post(http, "/agent/jobs/claim")
        if claimed.status_code == 204:
            return False
        claimed.raise_for_status()
        job = claimed.json()
        log.info("claimed job %s (%s, attempt %s)", job["id"], job["reason"], job["attempts"])
        try:
            report = self.measure(self.device, self.quick)
        except Exception as exc:  # the run itself failed: tell the server, which retries later
            log.exception("job %s failed", job["id"])
            error = f"{type(exc).__name__}: {exc}"[:2000]
            self._with_retries(
                lambda: self._post(
                    http,
                    f"/agent/jobs/{job['id']}/fail",
                    {"error": error},
                ),
                "reporting the failure",
                attempts=None if not self.stop.is_set() else 3,
            )
            return True
        # Keep trying to deliver a finished run, even across a server restart; once asked to
        # stop, give up after a few tries (the lease expires and the job runs again).
        answer = self._with_retries(
            lambda: self._post(http, f"/agent/jobs/{job['id']}/result", report.model_dump()),
            "reporting the result",
            attempts=3 if self.stop.is_set() else None,
        )
        if answer.status_code >= 400:
            log.error(
                "server refused job %s's result: %s %s",
                job["id"],
                answer.status_code,
                answer.text[:500],
            )
        else:
            body = answer.json()
            log.info("job %s: calibration %s %s", job["id"], body["status"], body["reason"] or "")
        self.jobs_done += 1
        return True

    def run(self, once: bool = False) -> int:
        """Loop until stopped (or one cycle with `once`). 0 = clean exit, 2 = token refused."""
        identity = self.identify(self.device)
        delay = 1.0
        with self.client() as http:
            while not self.stop.is_set():
                try:
                    self.cycle(http, identity)
                    delay = 1.0
                except TokenRefused as exc:
                    log.error("host token refused: %s", exc)
                    return 2
                except Retryable as exc:
                    log.warning("server unavailable (%s); retrying in %.0f s", exc, delay)
                    self.stop.wait(delay)
                    delay = min(delay * 2, MAX_BACKOFF_S)
                    continue
                if once:
                    return 0
                self.stop.wait(self.poll_s)
        return 0


def install_signal_handlers(stop: threading.Event) -> None:
    def handler(signum: int, _frame: Any) -> None:
        log.info("signal %s: finishing the current job, then exiting", signum)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def main(server: str, token: str, device: Device, once: bool, quick: bool) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s agent %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    agent = Agent(server=server, token=token, device=device, quick=quick)
    install_signal_handlers(agent.stop)
    started = time.monotonic()
    code = agent.run(once=once)
    log.info("exiting after %.0f s, %d job(s) run", time.monotonic() - started, agent.jobs_done)
    return code
