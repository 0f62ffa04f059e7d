"""Schemathesis against the app's own OpenAPI schema, in process, on the real test database.

Every operation is fuzzed (positive and negative inputs) with valid credentials: an admin API
key everywhere (an admin may do all a submitter may), a host token on /agent/*. No answer may
be a 5xx, and each must have a status code, content type and body the schema declares. Plain
tests then check the schema itself: every `$ref` resolves, and the error statuses the app
answers with (401/403/404/413/422, and 503 in a database outage) are declared where they apply.

The schema is loaded once, in process, from an app built like the one under test (the OpenAPI
document depends on the code, not on the database). Each operation is its own pytest test, so
each starts from a reset and re-seeded database and calls a fresh `create_app(settings)`.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import not_a_server_error
from schemathesis.python import asgi
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from sqlalchemy.engine import Engine
from sqlmodel import Session

from service.core.settings import Settings
from service.hosts.lifecycle import register_host
from service.main import create_app
from tests.conftest import Keys

SEED = 20240601
MAX_EXAMPLES = 25
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

# The OpenAPI document is a function of the code alone; this app never opens its database.
SCHEMA_APP = create_app(Settings(database_url="sqlite://"))
schema = schemathesis.openapi.from_asgi(
    "/openapi.json", SCHEMA_APP, config=schemathesis.Config(seed=SEED)
)


@pytest.fixture
def app(db: Engine, settings: Settings) -> Iterator[FastAPI]:
    """The app under test, created after `db` reset and seeded the database."""
    application = create_app(settings)
    yield application
    # Schemathesis starts an app's lifespan on its first request and keeps it for the process;
    # stop it here, so each test's engine (and its pooled connections) is disposed of.
    asgi.shutdown_lifespans()


@pytest.fixture
def host_token(db: Engine) -> str:
    with Session(db) as session, session.begin():
        return register_host(session, "schemathesis-host", 86400)[1]


@schema.parametrize()
@hypothesis_settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    # `app`, `keys` and `host_token` are made once per operation, not once per example, on
    # purpose: the examples of one operation share its database, which they may fill at will.
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
def test_api_conforms_to_its_schema(
    case: schemathesis.Case, app: FastAPI, keys: Keys, host_token: str
) -> None:
    secret = host_token if case.operation.path.startswith("/agent/") else keys.admin
    response = case.call_and_validate(app=app, headers=Keys.auth(secret), checks=CHECKS)
    # Negative cases may leave the Authorization header out on purpose (and expect the 401);
    # any request that did carry the credentials must get past authentication.
    if "Authorization" in response.request.headers:
        assert response.status_code not in (401, 403), (
            f"{case.operation.label} refused valid credentials: {response.status_code} "
            f"{response.text[:300]}"
        )


# --- The schema itself ---------------------------------------------------------------------


def _document() -> dict[str, Any]:
    return SCHEMA_APP.openapi()


def _operations() -> list[tuple[str, str, dict[str, Any], list[dict[str, Any]]]]:
    """(method, path, operation, parameters incl. path-level ones) for every operation."""
    found = []
    for path, item in _document()["paths"].items():
        shared = item.get("parameters", [])
        for method in METHODS:
            if method in item:
                operation = item[method]
                found.append((method, path, operation, shared + operation.get("parameters", [])))
    return found


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _resolves(document: dict[str, Any], ref: str) -> bool:
    if not ref.startswith("#/"):
        return False  # the document is meant to be self-contained
    node: Any = document
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def test_every_schema_reference_resolves() -> None:
    document = _document()
    dangling = sorted({ref for ref in _refs(document) if not _resolves(document, ref)})
    assert not dangling, f"$refs to nothing in /openapi.json: {dangling}"


def test_error_statuses_are_declared() -> None:
    """What the app can answer is what it declares:

    - an operation that takes credentials can answer 401 (none, invalid, revoked) and 403;
    - an operation with a parameter or a body can answer 422;
    - an operation with a path parameter can answer 404;
    - an operation with a request body can answer 413 (BodySizeLimit runs before any handler).
    """
    missing: list[str] = []
    for method, path, operation, parameters in _operations():
        has_body = "requestBody" in operation
        wanted: set[str] = set()
        if operation.get("security"):
            wanted |= {"401", "403"}
        if has_body or parameters:
            wanted.add("422")
        if any(p["in"] == "path" for p in parameters):
            wanted.add("404")
        if has_body:
            wanted.add("413")
        declared = set(operation.get("responses", {}))
        missing += [f"{method.upper()} {path}: {code}" for code in sorted(wanted - declared)]
    assert not missing, "undeclared error statuses:\n" + "\n".join(missing)


def _sample(schema: dict[str, Any]) -> Any:
    """A simple value a parameter's schema accepts."""
    for option in schema.get("anyOf", []):
        if option.get("type") != "null":
            return _sample(option)
    if "enum" in schema:
        return schema["enum"][0]
    return {"integer": 1, "number": 1, "boolean": True}.get(schema.get("type", ""), "x")


def test_database_outage_is_declared(tmp_path: Path) -> None:
    """During a database outage every operation that needs the database answers 503
    (service/errors.py), never a 500, and declares the 503. Probed with one minimal request per
    operation against an app whose database cannot be opened."""
    outage = create_app(Settings(database_url=f"sqlite:///{tmp_path}/missing/gpu-advisor.db"))
    # Well-formed secrets, so that authentication has to look them up in the database.
    api_key, host_token = "gpa_00000000_outage", "hst_00000000_outage"
    wrong: list[str] = []
    with TestClient(outage, raise_server_exceptions=False) as client:
        for method, path, operation, parameters in _operations():
            url, query = path, {}
            for parameter in parameters:
                value = _sample(parameter.get("schema", {}))
                if parameter["in"] == "path":
                    url = url.replace("{" + parameter["name"] + "}", str(value))
                elif parameter["in"] == "query" and parameter.get("required"):
                    query[parameter["name"]] = value
            secret = host_token if path.startswith("/agent/") else api_key
            response = client.request(
                method,
                url,
                params=query,
                json={} if "requestBody" in operation else None,
                headers=Keys.auth(secret),
            )
            label = f"{method.upper()} {path}"
            if response.status_code == 503:
                if "503" not in operation.get("responses", {}):
                    wrong.append(f"{label}: answers 503, does not declare it")
            elif response.status_code >= 500:
                wrong.append(f"{label}: answers {response.status_code} {response.text[:200]}")
    assert not wrong, "during a database outage:\n" + "\n".join(wrong)


def test_every_error_response_has_a_json_schema() -> None:
    """Declared 4xx/5xx answers have a JSON body schema, so clients can rely on its shape."""
    bare = []
    for method, path, operation, _parameters in _operations():
        for code, response in operation.get("responses", {}).items():
            if code[0] in "45" and "application/json" not in response.get("content", {}):
                bare.append(f"{method.upper()} {path}: {code}")
    assert not bare, "error responses without a JSON body schema:\n" + "\n".join(bare)
