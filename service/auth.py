"""API keys and host tokens: generate, hash, verify; which roles a key holds.

A secret looks like `gpa_<prefix>_<secret>`. Only the prefix (to find the row) and the SHA-256
of the whole string are stored; the secret is shown once at creation. SHA-256 without a salt is
fine here because the secrets are 32 random bytes, not passwords.
"""

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from sqlmodel import Session, select

from service.domain.vocabulary import Role
from service.models import ApiKey, utcnow

# An admin may do everything a submitter may.
ROLE_GRANTS: dict[str, set[str]] = {"submitter": {"submitter"}, "admin": {"submitter", "admin"}}


def grants(key: ApiKey, role: Role) -> bool:
    return role in ROLE_GRANTS.get(key.role, set())


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
    session.flush()  # the id; the caller commits
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


def revoke_api_key(session: Session, prefix: str) -> ApiKey | None:
    key = session.exec(select(ApiKey).where(ApiKey.prefix == prefix)).first()
    if key is not None and key.revoked_at is None:
        key.revoked_at = utcnow()
        session.add(key)
        session.flush()  # the caller commits
    return key
