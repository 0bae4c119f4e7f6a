"""`webapp/` is laid out by concern and its imports flow one way:

    dashboard ─► simulation ─► transports ─► runtime ─► coordinator_engine

(``management`` and the project's root modules may import any of them). A module that imports
against the flow fails here, with the offending import named."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WEBAPP = ROOT / "webapp"

#: What each package must never import.
FORBIDDEN = {
    "runtime": ("webapp.transports", "webapp.dashboard", "webapp.simulation"),
    "transports": ("webapp.dashboard", "webapp.simulation"),
    "simulation": ("webapp.dashboard",),
}


def imported_modules(path: Path) -> list[str]:
    """Absolute names of every module ``path`` imports, relative imports resolved."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names.extend([base] if node.module else [f"{base}.{a.name}" for a in node.names])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_package_never_imports_against_the_flow(package: str) -> None:
    modules = sorted((WEBAPP / package).rglob("*.py"))
    assert modules
    against = [
        (str(path.relative_to(ROOT)), name)
        for path in modules
        for name in imported_modules(path)
        if name.startswith(FORBIDDEN[package])
    ]
    assert against == []


def test_the_import_check_sees_relative_imports() -> None:
    names = imported_modules(WEBAPP / "transports" / "websocket" / "connection.py")
    assert "webapp.transports.websocket.codec" in names
    assert "webapp.runtime.coordinator_runtime" in names


def test_no_module_of_webapp_is_named_after_a_kafka_word_it_does_not_mean() -> None:
    """A Channels websocket handler is no Kafka "consumer"; "protocol" alone says nothing of
    which one."""
    names = {path.stem for path in WEBAPP.rglob("*.py")}
    assert names.isdisjoint({"consumers", "protocol", "views", "feed"})
