"""Shared FastAPI dependencies."""

from typing import Annotated

from fastapi import Depends, Request
from sqlmodel import Session

from service.db import get_session
from service.settings import Settings

SessionDep = Annotated[Session, Depends(get_session)]


def get_app_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


SettingsDep = Annotated[Settings, Depends(get_app_settings)]
