"""Admin: create (shown once), list (no secrets) and revoke API keys."""

from fastapi import APIRouter, status
from sqlmodel import col, select

from service.api.deps import SessionDep, WriteSessionDep
from service.api.responses import AUTH, NOT_FOUND, TOO_LARGE, WRITE_AUTH
from service.api.security import AdminKey
from service.auth import create_api_key, revoke_api_key
from service.core.errors import NotFound
from service.models import ApiKey
from service.schemas.common import Page
from service.schemas.keys import ApiKeyCreate, ApiKeyCreated, ApiKeyRead

router = APIRouter(prefix="/keys", tags=["keys"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=ApiKeyCreated,
    responses=WRITE_AUTH | TOO_LARGE,
)
def create_key(body: ApiKeyCreate, _admin: AdminKey, session: WriteSessionDep) -> ApiKeyCreated:
    key, secret = create_api_key(session, body.name, body.role)
    session.commit()
    session.refresh(key)
    return ApiKeyCreated.model_validate({**key.model_dump(), "key": secret})


@router.get("", response_model=Page[ApiKeyRead], responses=AUTH)
def list_keys(_admin: AdminKey, session: SessionDep) -> Page[ApiKeyRead]:
    keys = session.exec(select(ApiKey).order_by(col(ApiKey.id))).all()
    return Page[ApiKeyRead](items=[ApiKeyRead.model_validate(k) for k in keys])


@router.delete("/{prefix}", response_model=ApiKeyRead, responses=WRITE_AUTH | NOT_FOUND)
def revoke_key(prefix: str, _admin: AdminKey, session: WriteSessionDep) -> ApiKeyRead:
    key = revoke_api_key(session, prefix)
    if key is None:
        raise NotFound(f"no API key with prefix '{prefix}'")
    session.commit()
    session.refresh(key)
    return ApiKeyRead.model_validate(key)
