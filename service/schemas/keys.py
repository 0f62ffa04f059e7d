"""API keys."""

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from service.domain.vocabulary import Role
from service.schemas.common import Input


class ApiKeyCreate(Input):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=128)
    role: Role


class ApiKeyRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    prefix: str
    role: Role
    revoked_at: datetime | None
    created_at: datetime


class ApiKeyCreated(ApiKeyRead):
    key: str = Field(description="The secret. Shown once; store it now.")
