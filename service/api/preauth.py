"""Bearer check before a request body is read (see core.middleware.BodySizeLimit).

Only whether the token belongs to a live API key or host: roles, rate limits and the answer's
401/403 stay with the route's own dependencies (api.security). One short read transaction.
"""

from collections.abc import Callable

from sqlalchemy.engine import Engine
from sqlmodel import Session

from service.auth import find_api_key
from service.hosts.lifecycle import find_host


def bearer_checker(engine: Engine) -> Callable[[str], bool]:
    """A function: is this bearer token a live API key or host token? (blocking)."""

    def known(token: str) -> bool:
        with Session(engine) as session:
            if token.startswith("hst_"):
                return find_host(session, token) is not None
            return find_api_key(session, token) is not None

    return known
