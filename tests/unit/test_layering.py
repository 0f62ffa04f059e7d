"""The package's import rules, read from the source with ast (nothing is imported or run).

Routers never import routers (what two routes share lives in a module that is not a router:
schemas/, api/asks.py, api/presenters.py, ...), and nothing outside service/api imports
service.api except service/main.py, which wires the routers into the app.
"""

import ast
from pathlib import Path

SERVICE = Path(__file__).resolve().parents[2] / "service"


def module_name(path: Path) -> str:
    parts = path.relative_to(SERVICE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in SERVICE.rglob("*.py")}


def imported(source: str, name: str, known: set[str]) -> set[str]:
    """Every service module `source` (module `name`) imports, anywhere in the file: `from a
    import b` counts as module a.b when a.b is a module, else as a."""
    package = (
        name
        if name in known and (SERVICE.parent / name.replace(".", "/")).is_dir()
        else (name.rpartition(".")[0])
    )
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return {m for m in found if m == "service" or m.startswith("service.")}


def is_router(source: str) -> bool:
    """A module that makes an APIRouter at top level (`router = APIRouter(...)`)."""
    for node in ast.parse(source).body:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        if isinstance(value, ast.Call):
            func = value.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if called == "APIRouter":
                return True
    return False


def test_the_checks_see_routers_and_imports() -> None:
    """Guard against a check that passes because it sees nothing."""
    found = modules()
    routers = {m for m, p in found.items() if is_router(p.read_text(encoding="utf-8"))}
    assert {"service.api.recommend", "service.api.rankings", "service.api.web.pages"} <= routers
    assert "service.api.asks" not in routers and "service.api.deps" not in routers
    known = set(found)
    source = "from service.api import recommend\nfrom .asks import ask_for\nimport service.api.gpus"
    assert imported(source, "service.api.rankings", known) == {
        "service.api.recommend",
        "service.api.asks",
        "service.api.gpus",
    }
    assert imported("from service.api.web import gpu_page", "x", known) == {
        "service.api.web.gpu_page"
    }


def test_no_router_imports_another_router() -> None:
    found = modules()
    known = set(found)
    sources = {m: p.read_text(encoding="utf-8") for m, p in found.items()}
    routers = {m for m, s in sources.items() if is_router(s)}
    crossings = sorted(
        f"{m} imports {other}"
        for m in routers
        for other in imported(sources[m], m, known)
        if other in routers and other != m
    )
    assert crossings == []


def test_only_main_imports_the_api_from_outside_it() -> None:
    found = modules()
    known = set(found)
    outside = {
        m: p
        for m, p in found.items()
        if m != "service.main" and m != "service.api" and not m.startswith("service.api.")
    }
    crossings = sorted(
        f"{m} imports {other}"
        for m, p in outside.items()
        for other in imported(p.read_text(encoding="utf-8"), m, known)
        if other == "service.api" or other.startswith("service.api.")
    )
    assert crossings == []
