"""The web page: GET / (form, recommendations, charts) and GET /gpu/{slug} (one GPU), as HTML.

Design: the page reads through the same ReadModel as /recommend and /rankings (no HTTP calls to
itself), validates its form with the same query models, and draws its charts as inline SVG
(service/domain/charts.py). The form is a plain GET form: it works without JavaScript. These
routes are left out of the OpenAPI schema (they answer HTML, not the API's JSON).
"""

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from pydantic import ValidationError
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from service.api.asks import recommendation_ask
from service.api.deps import EngineDep, ReadModelDep
from service.api.web import gpu_page
from service.api.web.index import charts_for, fmt
from service.catalog.lookup import by_slugs
from service.core.errors import SHOWN_SLUG_CHARS, InvalidInput
from service.models import Gpu, Workload
from service.schemas.queries import RecommendQuery
from service.schemas.tco import CostQuery

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
templates.env.filters["fmt"] = fmt
FORM_FIELDS = (
    "budget",
    "workload",
    "mode",
    "condition",
    "max_gpus",
    "min_memory_gb",
    "sort",
    "horizon_years",
    "hours_per_day",
    "electricity_usd_per_kwh",
    "resale",
    "platform_usd",
    "host_power_w",
    "max_power_w",
)


def _workloads(engine: Engine) -> list[Workload]:
    with Session(engine) as session:
        return list(session.exec(select(Workload).order_by(col(Workload.slug))).all())


@router.get("/", response_class=HTMLResponse)
async def index(request: Request, read_model: ReadModelDep, engine: EngineDep) -> HTMLResponse:
    raw = {k: v for k, v in request.query_params.items() if k in FORM_FIELDS and v.strip()}
    workloads = await run_in_threadpool(_workloads, engine)
    errors: list[str] = []
    status = 200
    items: list[Any] = []
    hint = None
    costs = CostQuery()
    query: RecommendQuery | None = None
    try:
        costs = CostQuery.model_validate(
            {k: v for k, v in raw.items() if k in CostQuery.model_fields}
        )
        if "budget" in raw:
            query = RecommendQuery.model_validate(raw)
    except ValidationError as exc:
        errors = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        status = 422
    workload = raw.get("workload")
    charts: list[str] = []
    unit = ""
    try:
        if query is not None:
            read = await read_model.recommendations(recommendation_ask(query))
            items, hint, unit = read.rows, read.hint, read.snapshot.workload.unit
        condition = query.condition if query else raw.get("condition", "any")
        ranked = await read_model.rankings(
            workload,
            None,
            condition if condition in ("new", "used", "any") else "any",  # type: ignore[arg-type]
            None,
            "performance",
            costs.settings(),
        )
        unit = ranked.snapshot.workload.unit
        charts = charts_for(
            ranked.rows,
            unit,
            costs,
            ranked.snapshot.workload.slug,
            read_model.settings.reference_gpu,
        )
        workload = ranked.snapshot.workload.slug
    except InvalidInput as exc:
        errors += [str(e.get("msg")) for e in exc.errors]
        status = 422
    context = {
        "request": request,
        "form": raw,
        "costs": costs,
        "workloads": workloads,
        "workload": workload,
        "items": items,
        "hint": hint,
        "asked": query is not None,
        "unit": unit,
        "charts": charts,
        "errors": errors,
    }
    return templates.TemplateResponse(request, "index.html", context, status_code=status)


def _closest_gpus(engine: Engine, slug: str) -> list[str]:
    """The catalog GPUs closest to a slug that names none (as GET /gpus/{slug} suggests)."""
    with Session(engine) as session:
        return by_slugs(session, Gpu, [slug])[1].get(slug, [])


@router.get("/gpu/{slug}", response_class=HTMLResponse)
async def gpu(
    request: Request, slug: str, read_model: ReadModelDep, engine: EngineDep
) -> HTMLResponse:
    page = await run_in_threadpool(gpu_page.load, engine, slug)
    if page is None:
        suggestions = await run_in_threadpool(_closest_gpus, engine, slug)
        missing = {"request": request, "slug": slug[:SHOWN_SLUG_CHARS], "suggestions": suggestions}
        return templates.TemplateResponse(request, "not_found.html", missing, status_code=404)
    ranked = await read_model.rankings(
        None, None, "any", None, "performance", CostQuery().settings()
    )
    row = next((r for r in ranked.rows if r.gpu == slug), None)
    context: dict[str, Any] = {
        "request": request,
        "page": page,
        "ranking": row,
        "ranking_workload": ranked.snapshot.workload.slug,
        "ranking_total": len(ranked.rows),
    }
    return templates.TemplateResponse(request, "gpu.html", context)
