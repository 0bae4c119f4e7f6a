"""The engine stays sans-IO: no framework, event loop, socket, thread or clock in its code."""

from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "coordinator_engine"
FORBIDDEN_MODULES = {
    "asyncio",
    "celery",
    "channels",
    "django",
    "redis",
    "select",
    "selectors",
    "socket",
    "socketserver",
    "threading",
    "multiprocessing",
    "concurrent",
    "time",
    "datetime",
    "random",
    "secrets",
}


def _imported_modules(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_engine_modules_import_no_io_framework_thread_clock_or_randomness() -> None:
    files = sorted(ENGINE.rglob("*.py"))
    assert len(files) > 10
    offenders = {
        str(path.relative_to(ENGINE)): sorted(
            _imported_modules(ast.parse(path.read_text())) & FORBIDDEN_MODULES
        )
        for path in files
    }
    assert {path: mods for path, mods in offenders.items() if mods} == {}
