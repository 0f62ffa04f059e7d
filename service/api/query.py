"""Unknown query parameters are a 422 naming them, on every GET route.

FastAPI ignores query parameters a route does not declare, so a typo (`vram=24` for
`min_memory_gb=24`) would silently answer as if it were absent. One app-level dependency
compares the request's parameter names with those the matched route declares (a query model's
fields count by name or alias) and rejects the rest. The allowed names are computed once per
route. Repeats served by the answer cache never get here, and they never need to: only answers
to valid requests are stored.
"""

from typing import Any

from fastapi import Request
from pydantic import BaseModel

from service.core.errors import InvalidInput

_allowed: dict[int, frozenset[str]] = {}


def _declared(route: Any) -> frozenset[str]:
    names: set[str] = set()
    for field in route.dependant.query_params:
        annotation = getattr(field.field_info, "annotation", None)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            for name, info in annotation.model_fields.items():
                names.add(info.alias or name)
        else:
            names.add(field.alias)
    for sub in route.dependant.dependencies:
        names.update(f.alias for f in sub.query_params)
    return frozenset(names)


async def reject_unknown_query(request: Request) -> None:
    """422 listing each query parameter the route does not take (GET only)."""
    if request.method != "GET" or not request.scope.get("query_string"):
        return
    route = request.scope.get("route")
    if route is None or not hasattr(route, "dependant"):
        return
    allowed = _allowed.get(id(route))
    if allowed is None:
        allowed = _allowed[id(route)] = _declared(route)
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
