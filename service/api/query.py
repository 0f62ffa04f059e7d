"""Unknown query parameters are a 422 naming them, on every GET route of the API.

FastAPI ignores query parameters a route does not declare, so a typo (`vram=24` for
`min_memory_gb=24`) would silently answer as if it were absent. One app-level dependency
compares the request's parameter names with those the matched route declares (a query model's
fields count by name or alias; sub-dependencies too) and rejects the rest. The allowed names
are computed once per route. HTML pages, outside the API schema, are left to show their own
form errors. Repeats served by the answer cache never get here, and never need to: only
answers to valid requests are stored.
"""

from typing import Any

from fastapi import Request
from pydantic import BaseModel

from service.core.errors import InvalidInput

_allowed: dict[int, frozenset[str]] = {}


def _declared(dependant: Any) -> set[str]:
    """Query parameter names a route (or dependency) and its sub-dependencies declare."""
    names: set[str] = set()
    for field in dependant.query_params:
        annotation = getattr(field.field_info, "annotation", None)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            for name, info in annotation.model_fields.items():
                names.add(info.alias or name)
        else:
            names.add(field.alias)
    for sub in dependant.dependencies:
        names |= _declared(sub)
    return names


async def reject_unknown_query(request: Request) -> None:
    """422 listing each query parameter the route does not take (GET only)."""
    if request.method != "GET" or not request.scope.get("query_string"):
        return
    route = request.scope.get("route")
    if route is None or not hasattr(route, "dependant") or not route.include_in_schema:
        return  # HTML pages (not in the API schema) read their form fields and show errors
    allowed = _allowed.get(id(route))
    if allowed is None:
        allowed = _allowed[id(route)] = frozenset(_declared(route.dependant))
    unknown = [name for name in dict.fromkeys(request.query_params.keys()) if name not in allowed]
    if unknown:
        raise InvalidInput(
            [
                {
                    "loc": ["query", name],
                    "msg": f"unknown query parameter {name!r}; this route takes: "
                    + (", ".join(sorted(allowed)) or "none"),
                    "type": "unknown_parameter",
                }
                for name in unknown
            ]
        )
