"""API keys and host tokens: generate, hash, verify; FastAPI dependencies that enforce roles.

A secret looks like `gpa_<prefix>_<secret>`. Only the prefix (to find the row) and the SHA-256
of the whole string are stored; the secret is shown once at creation. SHA-256 without a salt is
fine here because the secrets are 32 random bytes, not passwords.
"""

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlmodel import Session, select

from service import ratelimit
from service.db import get_session
from service.models import ApiKey, utcnow

Role = Literal["submitter", "admin"]
ROLES: tuple[Role, ...] = ("submitter", "admin")
# An admin may do everything a submitter may.
ROLE_GRANTS: dict[str, set[str]] = {"submitter": {"submitter"}, "admin": {"submitter", "admin"}}


@dataclass(frozen=True)
class NewSecret:
    prefix: str
    secret: str
    sha256: str


def generate_secret(kind: str = "gpa") -> NewSecret:
    prefix = secrets.token_hex(4)
    secret = f"{kind}_{prefix}_{secrets.token_urlsafe(32)}"
    return NewSecret(prefix=prefix, secret=secret, sha256=hash_secret(secret))


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def split_prefix(secret: str, kind: str = "gpa") -> str | None:
    parts = secret.split("_", 2)
    if len(parts) != 3 or parts[0] != kind or not parts[1]:
        return None
    return parts[1]


def secret_matches(secret: str, stored_sha256: str) -> bool:
    return hmac.compare_digest(hash_secret(secret), stored_sha256)


def create_api_key(session: Session, name: str, role: Role) -> tuple[ApiKey, str]:
    """Store a new key and return it with its secret (the only time the secret exists)."""
    new = generate_secret()
    key = ApiKey(name=name, prefix=new.prefix, sha256=new.sha256, role=role)
    session.add(key)
    session.commit()
    session.refresh(key)
    return key, new.secret


def find_api_key(session: Session, secret: str) -> ApiKey | None:
    """The live (not revoked) key this secret belongs to, or None."""
    prefix = split_prefix(secret)
    if prefix is None:
        return None
    key = session.exec(select(ApiKey).where(ApiKey.prefix == prefix)).first()
    if key is None or key.revoked_at is not None or not secret_matches(secret, key.sha256):
        return None
    return key


_bearer = HTTPBearer(auto_error=False, description="API key: `Authorization: Bearer gpa_...`")


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(401, detail=detail, headers={"WWW-Authenticate": "Bearer"})


def require_role(role: Role) -> object:
    """Dependency factory: the caller's ApiKey, 401 without a valid key, 403 without the role."""

    def dependency(
        request: Request,
        session: Annotated[Session, Depends(get_session)],
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> ApiKey:
        if credentials is None:
            raise _unauthorized("missing API key: send 'Authorization: Bearer <key>'")
        key = find_api_key(session, credentials.credentials)
        if key is None:
            raise _unauthorized("invalid or revoked API key")
        if role not in ROLE_GRANTS.get(key.role, set()):
            raise HTTPException(403, detail=f"this endpoint needs the '{role}' role")
        settings = request.app.state.settings
        if request.method not in ("GET", "HEAD") and settings.write_rate_limit and key.id:
            retry_after = ratelimit.hit(
                request.app.state.engine, key.id, settings.write_rate_limit, settings.rate_window_s
            )
            if retry_after:
                raise HTTPException(
                    429,
                    detail=f"more than {settings.write_rate_limit} writes in "
                    f"{settings.rate_window_s} s for this key; retry later",
                    headers={"Retry-After": str(retry_after)},
                )
        request.state.api_key_id = key.id
        return key

    return Depends(dependency)


SubmitterKey = Annotated[ApiKey, require_role("submitter")]
AdminKey = Annotated[ApiKey, require_role("admin")]


def revoke_api_key(session: Session, prefix: str) -> ApiKey | None:
    key = session.exec(select(ApiKey).where(ApiKey.prefix == prefix)).first()
    if key is not None and key.revoked_at is None:
        key.revoked_at = utcnow()
        session.add(key)
        session.commit()
        session.refresh(key)
    return key
