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

from service.api.asks import (
    MODEL_ASK_PARAMS,
    check_ask_kind,
    llm_limits,
    model_ask,
    recommendation_ask,
)
from service.api.deps import EngineDep, ReadModelDep
from service.api.web import gpu_page
from service.api.web.index import charts_for, fmt
from service.catalog import llm as llm_catalog
from service.catalog.lookup import by_slugs
from service.core.errors import SHOWN_SLUG_CHARS, InvalidInput, NotFound
from service.models import Gpu, Workload
from service.read_model import llm as llm_rows
from service.read_model.reads import ReadModel
from service.schemas.queries import RecommendQuery
from service.schemas.rankings import RankingItem, Recommendation
from service.schemas.tco import CostQuery

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
templates.env.filters["fmt"] = fmt
MODEL_FIELDS = ("model", "task", "quant", "context", "batch")  # a language-model ask
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
    *MODEL_FIELDS,
)
TASKS = ("inference", "lora", "qlora", "full-finetune")


def _workloads(engine: Engine) -> list[Workload]:
    with Session(engine) as session:
        return list(session.exec(select(Workload).order_by(col(Workload.slug))).all())


@router.get("/", response_class=HTMLResponse)
async def index(request: Request, read_model: ReadModelDep, engine: EngineDep) -> HTMLResponse:
    raw = {k: v for k, v in request.query_params.items() if k in FORM_FIELDS and v.strip()}
    if "model" not in raw:  # the form always sends a task; without a model nothing reads it
        raw = {k: v for k, v in raw.items() if k not in MODEL_FIELDS}
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
            # a model ask names its model, not a workload (the form sends both)
            asked = {k: v for k, v in raw.items() if k != "workload"} if "model" in raw else raw
            query = RecommendQuery.model_validate(asked)
    except ValidationError as exc:
        errors = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        status = 422
    workload = raw.get("workload")
    charts: list[str] = []
    unit = ""
    asked_for = ""
    try:
        if query is not None and query.model is not None:
            check_ask_kind(query.model_fields_set, MODEL_ASK_PARAMS)
            items, hint, rows, asked_for = await _model_answer(read_model, query)
            charts = charts_for(
                rows, llm_rows.UNIT, costs, asked_for, read_model.settings.reference_gpu
            )
            context = _context(request, raw, costs, workloads, asked_for, items, hint)
            context |= {"unit": llm_rows.UNIT, "charts": charts, "asked_for": asked_for}
            return templates.TemplateResponse(request, "index.html", context)
        if query is not None:
            read = await read_model.recommendations(recommendation_ask(query))
            items, hint, unit = read.rows, read.hint, read.snapshot.workload.unit
            asked_for = read.snapshot.workload.name
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
    except NotFound as exc:  # an unknown model: its closest names, as the API answers them
        close = f" (closest: {', '.join(exc.suggestions)})" if exc.suggestions else ""
        errors.append(f"{exc.detail}{close}")
        status = 404
    context = _context(request, raw, costs, workloads, workload, items, hint)
    context |= {
        "asked": query is not None,
        "unit": unit,
        "charts": charts,
        "errors": errors,
        "asked_for": asked_for,
    }
    return templates.TemplateResponse(request, "index.html", context, status_code=status)


def _context(
    request: Request,
    raw: dict[str, str],
    costs: CostQuery,
    workloads: list[Workload],
    workload: str | None,
    items: list[Any],
    hint: str | None,
) -> dict[str, Any]:
    """What every answer of the page shows: the form as asked, its choices, and the rows."""
    return {
        "request": request,
        "form": raw,
        "costs": costs,
        "workloads": workloads,
        "models": list(llm_catalog.models()),
        "tasks": TASKS,
        "workload": workload,
        "items": items,
        "hint": hint,
        "asked": True,
        "errors": [],
    }


async def _model_answer(
    read_model: ReadModel, q: RecommendQuery
) -> tuple[list[Recommendation], str | None, list[RankingItem], str]:
    """A model ask, as GET /recommend?model=... answers it (rows and hint), with the model's
    one-configuration-per-GPU ranking for the charts and the words naming the ask."""
    ask = model_ask(q)
    read = await read_model.llm(q.condition, ask, q.allow_stale)
    items, hint = llm_rows.recommendation_rows(ask, read.data, llm_limits(q), q.framework, q.limit)
    reference = read_model.settings.reference_gpu
    llm_rows.relative_to(items, ask, read.data, q.framework, reference)
    pool = llm_rows.Pool(q.stack, q.min_memory_gb or 0.0)
    rows = llm_rows.ranking_rows(
        ask, read.data, q.max_gpus, q.framework, "performance", pool, q.settings()
    )
    llm_rows.relative_to(rows, ask, read.data, q.framework, reference)
    words = f"{ask.model.slug} {ask.task} ({ask.quant.name}, context {ask.context})"
    return items, hint, rows, words


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
