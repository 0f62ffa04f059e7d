"""GET /compare?gpu=...&count=...: rent or buy - the cheapest cloud offer against cost of
ownership, and the hours of use at which buying breaks even."""

from typing import Annotated

from fastapi import APIRouter, Query

from service.api.deps import CostQueryDep, ReadModelDep
from service.domain.vocabulary import ConditionChoice, Precision
from service.read_model.compare import comparison
from service.read_model.reads import snapshot_key
from service.schemas.queries import MAX_GPUS
from service.schemas.tco import Comparison

router = APIRouter(tags=["recommend"])


@router.get("/compare", response_model=Comparison, summary="Rent or buy one GPU configuration")
async def compare(
    read_model: ReadModelDep,
    costs: CostQueryDep,
    gpu: Annotated[str, Query(min_length=1, max_length=64)],
    count: Annotated[int, Query(ge=1, le=MAX_GPUS)] = 1,
    workload: Annotated[str | None, Query(min_length=1, max_length=64)] = None,
    precision: Precision | None = None,
    condition: ConditionChoice = "any",
) -> Comparison:
    key = snapshot_key(workload or read_model.settings.default_workload, precision, condition)
    snapshot = await read_model.snapshot(key)
    return comparison(snapshot, gpu, count, costs.settings())
