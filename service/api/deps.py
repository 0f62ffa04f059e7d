"""Shared FastAPI dependencies: the only module that reads `app.state`.

Routers ask for what they need (a session, the settings, the read model, the metrics) through
these dependencies, so the wiring done in main.py is read in one place. The getters are
`async def`: FastAPI runs a plain `def` dependency in the thread pool, a hop that costs more
than the read it wraps (a third of /recommend's throughput on computed answers).
"""

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Path, Request
from sqlalchemy.engine import Engine
from sqlmodel import Session

from service.api.query_model import QueryModel
from service.core.db import session_scope, write_engine
from service.core.observability import Metrics
from service.core.settings import Settings
from service.read_model.accuracy import AccuracyService
from service.read_model.reads import ReadModel
from service.schemas.tco import CostQuery


def get_session(request: Request) -> Iterator[Session]:
    """One read session per request on the app's engine."""
    yield from session_scope(request.app.state.engine)


def get_write_session(request: Request) -> Iterator[Session]:
    """A session for requests that write (BEGIN IMMEDIATE on SQLite)."""
    yield from session_scope(write_engine(request.app.state.engine))


async def get_app_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


async def get_read_model(request: Request) -> ReadModel:
    read_model: ReadModel = request.app.state.read_model
    return read_model


async def get_accuracy(request: Request) -> AccuracyService:
    accuracy: AccuracyService = request.app.state.accuracy
    return accuracy


async def get_metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


async def get_head_revision(request: Request) -> str | None:
    head: str | None = request.app.state.head_revision
    return head


SessionDep = Annotated[Session, Depends(get_session)]
# Requests that write: on SQLite the transaction takes the write lock at BEGIN, so it never has
# to upgrade a read snapshot that another writer has moved past (SQLITE_BUSY_SNAPSHOT).
WriteSessionDep = Annotated[Session, Depends(get_write_session)]
SettingsDep = Annotated[Settings, Depends(get_app_settings)]
EngineDep = Annotated[Engine, Depends(get_engine)]
ReadModelDep = Annotated[ReadModel, Depends(get_read_model)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
AccuracyDep = Annotated[AccuracyService, Depends(get_accuracy)]
HeadRevisionDep = Annotated[str | None, Depends(get_head_revision)]
# Row ids in paths: within a 32-bit integer column, so no id can overflow the database.
RowId = Annotated[int, Path(ge=1, le=2**31 - 1)]


# Cost-of-ownership assumptions shared by /rankings and /compare (api/query_model.py).
CostQueryDep = Annotated[CostQuery, Depends(QueryModel(CostQuery))]
