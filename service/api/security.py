"""Who is calling: API keys (with roles and the write rate limit) and host tokens.

Both are bearer tokens and go through one check, `_bearer_owner`: no credentials or unknown
ones are a 401 with `WWW-Authenticate: Bearer`. Only the lookup differs (keys by role, host
tokens by host).
"""

from collections.abc import Callable
from typing import Annotated, TypeVar

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlmodel import Session

from service import ratelimit
from service.api.deps import EngineDep, SessionDep, SettingsDep, WriteSessionDep
from service.auth import find_api_key, grants
from service.core.errors import Forbidden, RateLimited, Unauthorized
from service.domain.vocabulary import Role
from service.hosts.lifecycle import find_host
from service.models import ApiKey, Host

Owner = TypeVar("Owner")
Credentials = HTTPAuthorizationCredentials | None
_api_key = HTTPBearer(auto_error=False, description="API key: `Authorization: Bearer gpa_...`")
_host_token = HTTPBearer(
    auto_error=False, description="Host token: `Authorization: Bearer hst_...`"
)


def _bearer_owner(
    session: Session,
    credentials: Credentials,
    find: Callable[[Session, str], Owner | None],
    missing: str,
    invalid: str,
) -> Owner:
    """The row the bearer token belongs to; 401 when there is no token or it matches none."""
    if credentials is None:
        raise Unauthorized(missing)
    owner = find(session, credentials.credentials)
    if owner is None:
        raise Unauthorized(invalid)
    return owner


def require_role(role: Role) -> object:
    """Dependency factory: the caller's ApiKey, 401 without a valid key, 403 without the role,
    429 over the write rate limit."""

    def dependency(
        request: Request,
        session: SessionDep,
        settings: SettingsDep,
        engine: EngineDep,
        credentials: Annotated[Credentials, Depends(_api_key)],
    ) -> ApiKey:
        key = _bearer_owner(
            session,
            credentials,
            find_api_key,
            "missing API key: send 'Authorization: Bearer <key>'",
            "invalid or revoked API key",
        )
        # One connection per request: the lookup's read transaction ends here, before the
        # rate limit's write and the route's session, so a request never holds two
        # connections (on SQLite, a held read connection also pins an old snapshot).
        session.close()
        if not grants(key, role):
            raise Forbidden(f"this endpoint needs the '{role}' role")
        if request.method not in ("GET", "HEAD") and settings.write_rate_limit and key.id:
            retry_after = ratelimit.hit(
                engine, key.id, settings.write_rate_limit, settings.rate_window_s
            )
            if retry_after:
                raise RateLimited(
                    f"more than {settings.write_rate_limit} writes in "
                    f"{settings.rate_window_s} s for this key; retry later",
                    retry_after,
                )
        request.state.api_key_id = key.id
        return key

    return Depends(dependency)


def current_host(
    session: WriteSessionDep, credentials: Annotated[Credentials, Depends(_host_token)]
) -> Host:
    return _bearer_owner(
        session, credentials, find_host, "missing host token", "invalid or retired host token"
    )


SubmitterKey = Annotated[ApiKey, require_role("submitter")]
AdminKey = Annotated[ApiKey, require_role("admin")]
HostDep = Annotated[Host, Depends(current_host)]
