"""What a module of this project imports, read from its source (ast), for the layout tests
(tests/engine/test_layout.py, tests/webapp/test_layout.py)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests import ROOT


def module_name(path: Path) -> str:
    """The dotted name of the module at ``path`` (a package's ``__init__``: the package)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    """Whether ``name`` is a module or package of this project."""
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imported_modules(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports: ``import x`` counts ``x``; ``from x
    import y`` counts ``x.y`` when that is a module of this project, else ``x``. Relative
    imports are resolved; imports under ``TYPE_CHECKING`` count too."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if _is_module(candidate) else base)
    return found
