"""Shared FastAPI dependencies."""

from typing import Annotated

from fastapi import Depends, Path, Request
from sqlmodel import Session

from service.db import get_session, get_write_session
from service.settings import Settings

SessionDep = Annotated[Session, Depends(get_session)]
# Requests that write: on SQLite the transaction takes the write lock at BEGIN, so it never has
# to upgrade a read snapshot that another writer has moved past (SQLITE_BUSY_SNAPSHOT).
WriteSessionDep = Annotated[Session, Depends(get_write_session)]


def get_app_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


SettingsDep = Annotated[Settings, Depends(get_app_settings)]
# Row ids in paths: within a 32-bit integer column, so no id can overflow the database.
RowId = Annotated[int, Path(ge=1, le=2**31 - 1)]
