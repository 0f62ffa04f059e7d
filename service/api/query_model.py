"""Query models validated in one pydantic call, documented as FastAPI documents them.

FastAPI (0.165) reads a `Annotated[Model, Query()]` parameter field by field on every request:
an alias lookup and a recursive "is this annotation a sequence" test per field before the one
validation. For /recommend's 26 fields that was 150 us of a 700 us computed answer, in
process. `QueryModel(Model)` is a dependency that reads the query string once and calls
`Model.model_validate` (2.5 us); a bad value raises the same RequestValidationError (loc
`["query", field]`) FastAPI would.

The dependency has no parameters of its own, so FastAPI cannot document the fields:
`document_query_models` adds to the OpenAPI schema the parameters (and the 422 answer)
FastAPI generates for the same model, and api/query.py reads `QueryModel.model` to allow the
fields' names. Tests hold both (errors and schema) equal to FastAPI's own handling.

Only models with single-valued fields are accepted (a list field would need `getlist`).
"""

from types import UnionType
from typing import Any, Generic, TypeVar, Union, get_args, get_origin

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.constants import REF_PREFIX
from fastapi.openapi.utils import (
    validation_error_definition,
    validation_error_response_definition,
)
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


def is_sequence(annotation: Any) -> bool:
    """Whether a parameter of this type takes several values (`?gpu=a&gpu=b`)."""
    origin = get_origin(annotation)
    if origin in (list, tuple, set, frozenset):
        return True
    if origin in (Union, UnionType):
        return any(is_sequence(arg) for arg in get_args(annotation))
    return False


class QueryModel(Generic[M]):
    """Dependency: the request's query string as a `model` (use with `Depends`)."""

    def __init__(self, model: type[M]) -> None:
        for name, field in model.model_fields.items():
            if is_sequence(field.annotation):
                raise TypeError(f"{model.__name__}.{name}: several values are not supported")
        self.model = model
        self.names = tuple(field.alias or name for name, field in model.model_fields.items())

    async def __call__(self, request: Request) -> M:  # async: no thread-pool hop (api/deps.py)
        given = request.query_params
        data = {name: given[name] for name in self.names if name in given}
        try:
            return self.model.model_validate(data)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            raise RequestValidationError(
                [{**error, "loc": ("query", *error["loc"])} for error in errors]
            ) from None


def query_model_of(dependant: Any) -> QueryModel[Any] | None:
    """The QueryModel a route's sub-dependency is, if it is one."""
    call = getattr(dependant, "call", None)
    return call if isinstance(call, QueryModel) else None


def query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    """OpenAPI query parameters for `model`'s fields, as FastAPI writes them for
    `Annotated[model, Query()]`."""
    schema = model.model_json_schema()
    required = set(schema.get("required", ()))
    out: list[dict[str, Any]] = []
    for name, prop in schema["properties"].items():
        parameter: dict[str, Any] = {"name": name, "in": "query", "required": name in required}
        if prop.get("default", 0) is None:
            prop = {k: v for k, v in prop.items() if k != "default"}  # FastAPI leaves it out
        parameter["schema"] = prop
        if "description" in prop:
            parameter["description"] = prop["description"]
        out.append(parameter)
    return out


def document_query_models(schema: dict[str, Any], routes: list[Any]) -> None:
    """Add the query model's parameters, and FastAPI's 422 answer for invalid ones, to each
    operation of `routes` that uses a QueryModel."""
    for route in routes:
        models = [q.model for sub in _sub_dependants(route) if (q := query_model_of(sub))]
        if not models or not getattr(route, "include_in_schema", False):
            continue
        for method in route.methods:
            operation = schema["paths"].get(route.path_format, {}).get(method.lower())
            if operation is None:
                continue
            parameters = operation.setdefault("parameters", [])
            for model in models:
                parameters.extend(query_parameters(model))
            _document_validation_error(schema, operation)


def _document_validation_error(schema: dict[str, Any], operation: dict[str, Any]) -> None:
    responses = operation.setdefault("responses", {})
    if any(status in responses for status in ("422", "4XX", "default")):
        return
    responses["422"] = {
        "description": "Validation Error",
        "content": {"application/json": {"schema": {"$ref": REF_PREFIX + "HTTPValidationError"}}},
    }
    definitions = schema.setdefault("components", {}).setdefault("schemas", {})
    definitions.setdefault("ValidationError", validation_error_definition)
    definitions.setdefault("HTTPValidationError", validation_error_response_definition)


def _sub_dependants(route: Any) -> list[Any]:
    dependant = getattr(route, "dependant", None)
    out: list[Any] = []
    stack = list(getattr(dependant, "dependencies", []))
    while stack:
        sub = stack.pop()
        out.append(sub)
        stack.extend(sub.dependencies)
    return out
