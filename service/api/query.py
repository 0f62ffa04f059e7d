"""Unknown or repeated query parameters are a 422 naming them, on every GET route of the API.

FastAPI ignores query parameters a route does not declare, so a typo (`vram=24` for
`min_memory_gb=24`) would silently answer as if it were absent. One app-level dependency
compares the request's parameter names with those the matched route declares (a QueryModel's
fields count by name or alias; sub-dependencies too) and rejects the rest. The allowed names
are computed once per route. HTML pages, outside the API schema, are left to show their own
form errors. A parameter that takes one value, given twice (`/compare?gpu=a&gpu=b`), is a 422
too: FastAPI keeps the last and silently drops the others. Repeats served by the answer cache
never get here, and never need to: only answers to valid requests are stored. On a route that
needs a bearer token, a request without one is left to the route's 401: who asks is checked
before what is asked (`GET /keys?x=1` answered 422 to anyone).
"""

from collections import Counter
from typing import Any

from fastapi import Request
from fastapi.security.http import HTTPBase

from service.api.query_model import is_sequence, query_model_of
from service.core.errors import InvalidInput

# per route: (names it takes, names that take several values)
_allowed: dict[int, tuple[frozenset[str], frozenset[str]]] = {}
_bearer: dict[int, bool] = {}  # per route: whether it needs a bearer token (_needs_bearer)


def _declared(dependant: Any) -> dict[str, bool]:
    """Query parameter names a route (or dependency) and its sub-dependencies declare, each
    with whether it takes several values."""
    names: dict[str, bool] = {}
    for field in dependant.query_params:
        names[field.alias] = is_sequence(getattr(field.field_info, "annotation", None))
    for sub in dependant.dependencies:
        query = query_model_of(sub)
        if query is not None:
            names |= dict.fromkeys(query.names, False)  # single-valued: QueryModel checks
        names |= _declared(sub)
    return names


def _names(route: Any) -> tuple[frozenset[str], frozenset[str]]:
    found = _allowed.get(id(route))
    if found is None:
        declared = _declared(route.dependant)
        found = _allowed[id(route)] = (
            frozenset(declared),
            frozenset(name for name, many in declared.items() if many),
        )
    return found


def _needs_bearer(route: Any) -> bool:
    """Whether the route (or a dependency of it) reads a bearer token; computed once per
    route."""
    found = _bearer.get(id(route))
    if found is None:
        found = _bearer[id(route)] = _reads_bearer(route.dependant)
    return found


def _reads_bearer(dependant: Any) -> bool:
    return any(
        isinstance(sub.call, HTTPBase) or _reads_bearer(sub) for sub in dependant.dependencies
    )


async def reject_unknown_query(request: Request) -> None:
    """422 listing each query parameter the route does not take, and each one-value parameter
    given more than once (GET only)."""
    if request.method != "GET" or not request.scope.get("query_string"):
        return
    route = request.scope.get("route")
    if route is None or not hasattr(route, "dependant") or not route.include_in_schema:
        return  # HTML pages (not in the API schema) read their form fields and show errors
    allowed, repeatable = _names(route)
    names = [name for name, _ in request.query_params.multi_items()]
    if len(names) == len(set(names)) and allowed.issuperset(names):
        return  # the common case, without counting
    if "authorization" not in request.headers and _needs_bearer(route):
        return  # the route answers 401 first: who asks comes before what is asked
    given = Counter(names)
    errors = [
        {
            "loc": ["query", name],
            "msg": f"unknown query parameter {name!r}; this route takes: "
            + (", ".join(sorted(allowed)) or "none"),
            "type": "unknown_parameter",
        }
        for name in given
        if name not in allowed
    ] + [
        {
            "loc": ["query", name],
            "msg": f"{name!r} takes one value and was given {times} times",
            "type": "repeated_parameter",
        }
        for name, times in given.items()
        if times > 1 and name in allowed and name not in repeatable
    ]
    if errors:
        raise InvalidInput(errors)
