"""A FastAPI route class that calls its endpoint without FastAPI's dependency solver.

FastAPI (0.165) solves a route's dependencies on every request with a general resolver
(overrides, caching, scopes, sub-dependencies, parameter extraction). For /recommend, whose
dependencies are the app-level `reject_unknown_query`, the read model and a QueryModel (each an
`async def` of the Request alone), that resolver was about a fifth of a computed answer's time
(cProfile, in process). `DirectRoute` checks once, when the route is built, that every
dependency is such a plain call and that the endpoint returns a Response itself; its handler
then awaits each dependency with the request and calls the endpoint with the results by name.
Anything else (a parameter FastAPI would extract, a `yield` dependency, nested dependencies, a
sync function, a body) keeps FastAPI's own handler, as do requests made while
`app.dependency_overrides` is non-empty (tests). Errors raised by a dependency or the endpoint
take the same path as in FastAPI's handler: `request_response` wraps both handlers with the
app's exception handlers, so a 422 or 404 reads the same either way (tests hold both equal).

`AnswerDirectly` goes one step further for a GET of such a route: it calls the same handler
before FastAPI's routing and exception layers, where the answer cache serves repeats, and
answers an exception with the app's handler for it. With both, a computed /recommend took
about 210 us in process instead of 430 us (2026-12-05, seeded SQLite, distinct budgets).
"""

import inspect
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any

from fastapi import routing as fastapi_routing
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from service.api.query_model import QueryModel
from service.core.middleware import every_route

Call = Callable[[Request], Awaitable[Any]]
Plan = tuple[tuple[str | None, Call], ...]
Handler = Callable[[Request], Coroutine[Any, Any, Response]]

_EXTRACTED = (
    "path_params",
    "query_params",
    "header_params",
    "cookie_params",
    "body_params",
)
_SPECIAL = (
    "websocket_param_name",
    "http_connection_param_name",
    "response_param_name",
    "background_tasks_param_name",
    "security_scopes_param_name",
)


def _takes_only_the_request(dependant: Dependant) -> bool:
    return not any(getattr(dependant, name) for name in _EXTRACTED + _SPECIAL)


def _is_plain_async(call: Any) -> bool:
    if isinstance(call, QueryModel):
        return True
    return inspect.iscoroutinefunction(call)


def _returns_response(call: Any) -> bool:
    annotation = inspect.signature(call).return_annotation
    return isinstance(annotation, type) and issubclass(annotation, Response)


def direct_plan(dependant: Dependant) -> Plan | None:
    """(parameter name or None, call) for each dependency, in FastAPI's order, when the route
    can be called directly; None when it needs FastAPI's resolver."""
    endpoint = dependant.call
    if endpoint is None or not inspect.iscoroutinefunction(endpoint):
        return None
    if not _takes_only_the_request(dependant) or not _returns_response(endpoint):
        return None
    plan: list[tuple[str | None, Call]] = []
    for sub in dependant.dependencies:
        if sub.dependencies or not _takes_only_the_request(sub) or not _is_plain_async(sub.call):
            return None
        if sub.request_param_name is None and _parameters(sub.call):
            return None  # takes something other than the request
        plan.append((sub.name, _with_request(sub)))
    return tuple(plan)


def _parameters(call: Any) -> list[inspect.Parameter]:
    target = call.__call__ if isinstance(call, QueryModel) else call
    return list(inspect.signature(target).parameters.values())


def _with_request(sub: Dependant) -> Call:
    call = sub.call
    assert call is not None
    if sub.request_param_name is None:
        return lambda _request: call()
    name = sub.request_param_name
    if isinstance(call, QueryModel) or _parameters(call)[0].name == name:
        return call  # positional: the request is its one parameter
    return lambda request: call(**{name: request})


def _effective(route: APIRoute) -> Any:
    """The route as included in the app (its dependant with the app's and routers'
    dependencies), which FastAPI 0.165 passes to get_route_handler in a context variable."""
    context_var = getattr(fastapi_routing, "_effective_route_context_var", None)
    context = context_var.get() if context_var is not None else None
    if context is not None and getattr(context, "original_route", None) is route:
        return context
    return route


def _overridden(overrides: Any) -> bool:
    return overrides is not None and bool(getattr(overrides, "dependency_overrides", None))


class DirectRoute(APIRoute):
    """An APIRoute whose handler calls a plain route directly (see the module docstring).
    `direct_handlers` holds that handler by the route's path as included in the app, for
    AnswerDirectly; a route FastAPI must resolve has none."""

    direct_handlers: dict[str, tuple[Handler, Any]]

    def get_route_handler(self) -> Handler:
        fastapi_handler = super().get_route_handler()
        route = _effective(self)
        dependant = route.dependant
        plan = direct_plan(dependant)
        endpoint = dependant.call
        if plan is None or endpoint is None:
            return fastapi_handler
        request_name = dependant.request_param_name
        overrides = route.dependency_overrides_provider

        async def direct(request: Request) -> Response:
            kwargs: dict[str, Any] = {}
            for name, call in plan:
                value = await call(request)
                if name is not None:
                    kwargs[name] = value
            if request_name is not None:
                kwargs[request_name] = request
            response: Response = await endpoint(**kwargs)
            return response

        async def handler(request: Request) -> Response:
            if _overridden(overrides):
                return await fastapi_handler(request)
            return await direct(request)

        if route is not self and "GET" in (self.methods or ()) and not route.param_convertors:
            # as included in the app: with the app's dependencies and its overrides
            if not hasattr(self, "direct_handlers"):
                self.direct_handlers = {}
            self.direct_handlers[route.path_format] = (direct, overrides)
        return handler


class AnswerDirectly:
    """ASGI middleware: a GET of a DirectRoute's path is answered here, before FastAPI's
    exception layers, routing and per-request exit stacks (about a fifth of a computed
    /recommend's server time, py-spy under load), by the route's direct handler with the
    route in the scope as routing would put it. An exception is answered by the app's own
    handler for it, picked as Starlette's ExceptionMiddleware picks it (a 422 or 404 reads
    the same either way; tests compare them byte for byte); one without a handler goes up to
    the server error middleware, a 500 as anywhere else. Until FastAPI has built the route
    as included in the app (on its first request) and while dependency overrides are set,
    requests go on to FastAPI."""

    def __init__(self, app: ASGIApp, router: Any) -> None:
        self.app = app
        self.router = router
        self._routes: list[DirectRoute] | None = None

    def _handler(self, path: str) -> tuple[DirectRoute, Handler] | None:
        if self._routes is None:  # routes are all added before the first request
            self._routes = [r for r in every_route(self.router) if isinstance(r, DirectRoute)]
        for route in self._routes:
            found = getattr(route, "direct_handlers", {}).get(path)
            if found is not None:
                direct, overrides = found
                return None if _overridden(overrides) else (route, direct)
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = (
            self._handler(scope["path"])
            if scope["type"] == "http" and scope["method"] == "GET"
            else None
        )
        if found is None:
            await self.app(scope, receive, send)
            return
        route, direct = found
        scope.update(route=route, endpoint=route.endpoint, path_params={})  # as routing sets
        request = Request(scope, receive)
        try:
            response = await direct(request)
        except Exception as exc:
            handler = _handler_for(scope["app"].exception_handlers, exc)
            if handler is None:
                raise  # a server error: the app's error middleware answers it
            response = await _call_handler(handler, request, exc)
        await response(scope, receive, send)


def _handler_for(handlers: Mapping[Any, Any], exc: Exception) -> Any | None:
    """The app's handler for `exc` as Starlette's ExceptionMiddleware picks it: an HTTP
    exception's status code first, then the nearest class; 500 and Exception are the server
    error middleware's, outside."""
    if isinstance(exc, HTTPException) and exc.status_code in handlers:
        return handlers[exc.status_code]
    for cls in type(exc).__mro__:
        if cls is Exception:
            return None
        if cls in handlers:
            return handlers[cls]
    return None


async def _call_handler(handler: Any, request: Request, exc: Exception) -> Response:
    if inspect.iscoroutinefunction(handler):
        response: Response = await handler(request, exc)
    else:
        response = await run_in_threadpool(handler, request, exc)
    return response
