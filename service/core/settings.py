"""Configuration from GPU_ADVISOR_* environment variables (see the README table)."""

from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GPU_ADVISOR_", env_file=".env", extra="ignore")

    database_url: str = Field(
        "sqlite:///./gpu-advisor.db",
        description="SQLAlchemy URL; postgresql+psycopg://... in production.",
    )
    host: str = Field("127.0.0.1", description="Address `gpu-advisor serve` binds to.")
    port: int = Field(8000, ge=1, le=65535, description="Port `gpu-advisor serve` listens on.")
    log_level: str = Field("info", description="Python log level name.")
    max_body_bytes: int = Field(1024 * 1024, ge=1024, description="Larger request bodies get 413.")
    max_inflight_body_bytes: int = Field(
        64 * 1024 * 1024,
        ge=1024,
        description="Request-body bytes buffered by all requests in flight, per process; "
        "a request that would pass it gets 503 with Retry-After.",
    )
    body_timeout_s: float = Field(
        10.0, gt=0, description="A request body not complete this long after it starts gets 408."
    )
    max_header_bytes: int = Field(
        64 * 1024,
        ge=4096,
        description="Request line + headers larger than this get 431 (service/core/server.py).",
    )
    header_timeout_s: float = Field(
        10.0,
        gt=0,
        description="A connection that has not sent a full request head in this long "
        "is closed (slowloris).",
    )
    keep_alive_s: int = Field(5, ge=1, description="Idle keep-alive connections close after this.")
    max_connections: int = Field(
        2048, ge=1, description="Concurrent connections + tasks per process; more get 503."
    )
    write_rate_limit: int = Field(
        600, ge=0, description="Writes per API key per rate window; 0 turns the limit off."
    )
    rate_window_s: int = Field(60, ge=1, description="Length of the rate-limit window.")
    price_max_age_days: int = Field(
        180,
        ge=1,
        description="Prices older than this are stale: shown, but ranked only with allow_stale.",
    )
    reference_gpu: str = Field(
        "nvidia-rtx-4090", description="GPU whose performance is 1.0 in relative figures."
    )
    default_workload: str = Field(
        "llm-train", description="Workload /recommend uses when none is given."
    )
    cache_ttl_s: float = Field(
        30.0, ge=0, description="Seconds a process reuses ranking data another process may change."
    )
    warm_on_start: bool = Field(
        True,
        description="Fit the estimate model in the background at start-up, so the first "
        "ranking does not wait for it.",
    )
    accuracy_min_interval_s: float = Field(
        3600.0,
        ge=0,
        description="GET /model/accuracy recomputes its report for new data at most this often.",
    )
    calibration_interval_s: int = Field(
        86400, ge=60, description="Default interval between calibrations of a host."
    )
    agent_poll_s: int = Field(30, ge=1, description="How often agents heartbeat and poll.")
    host_stale_after_s: int = Field(
        300, ge=5, description="A host silent this long shows as `stale`."
    )
    job_lease_s: int = Field(600, ge=1, description="How long a claimed job stays leased.")
    job_max_attempts: int = Field(3, ge=1, description="Attempts before a host is `failing`.")


@lru_cache
def get_settings() -> Settings:
    """Settings read once per process; tests build their own `Settings(...)`."""
    return Settings()
