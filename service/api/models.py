"""GET /models and GET /models/{slug}: the language-model catalog (service/catalog/models.csv)."""

from fastapi import APIRouter

from service.catalog import llm
from service.schemas.common import Page, Problem
from service.schemas.llm import ModelRead

router = APIRouter(tags=["models"])


@router.get("/models", response_model=Page[ModelRead], summary="Language models by slug")
def list_models() -> Page[ModelRead]:
    rows = sorted(llm.models().values(), key=lambda m: m.slug)
    return Page[ModelRead](items=[ModelRead.model_validate(m) for m in rows])


@router.get("/models/{slug}", response_model=ModelRead, responses={404: {"model": Problem}})
def get_model(slug: str) -> ModelRead:
    """One model; an unknown slug is a 404 with the closest known slugs."""
    return ModelRead.model_validate(llm.model(slug))
