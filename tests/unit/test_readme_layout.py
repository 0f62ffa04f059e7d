"""README's "Layout" section names every module of the tree, each under its package, and
names no module that does not exist (a move or a new module must update it)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVICE = ROOT / "service"
PACKAGE_LINE = re.compile(r"^  ([a-z_]+)/")


def layout_block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```\nservice/\n", 1)[1].split("```", 1)[0]


def sections(block: str) -> tuple[dict[str, str], str]:
    """{top-level package: its text}, and the text of the lines naming top-level modules."""
    by_package: dict[str, str] = {}
    loose: list[str] = []
    current: str | None = None
    for line in block.splitlines():
        found = PACKAGE_LINE.match(line)
        if found:
            current = found.group(1)
            by_package[current] = line
        elif line.startswith("   ") and current is not None:
            by_package[current] += "\n" + line
        else:
            current = None
            loose.append(line)
    return by_package, "\n".join(loose)


def named(text: str) -> set[str]:
    return set(re.findall(r"\b([a-z_0-9]+\.py)\b", text))


def test_the_layout_names_every_package_and_module_where_it_lives() -> None:
    by_package, loose = sections(layout_block())
    packages = {p.name for p in SERVICE.iterdir() if (p / "__init__.py").exists()}
    assert set(by_package) == packages
    for package, text in by_package.items():
        root = SERVICE / package
        modules = {p for p in root.rglob("*.py") if p.name != "__init__.py"}
        assert {p.name for p in modules} <= named(text), package
        assert named(text) <= {p.name for p in modules}, f"{package} names a missing module"
        for sub in {p.parent for p in modules} - {root}:
            assert f"{sub.relative_to(root).as_posix()}/" in text, f"{package}: {sub.name}/"
    top = {p.name for p in SERVICE.glob("*.py") if p.name != "__init__.py"}
    assert named(loose) == top


def test_the_check_reads_the_block() -> None:
    by_package, loose = sections(layout_block())
    assert "snapshot.py" in by_package["read_model"] and "main.py" in loose
