"""The engine is laid out by group kind, as Kafka's group-coordinator module is: one package per
kind (``classic/``, ``handoff/``, ``consumer/``), the shared modules beside them, and the façade
(``coordinator.py``, with the package's ``__init__``) the only one to import the kinds. Its
imports flow one way:

    __init__ ─► coordinator (the façade) ─► each kind's package ─► the shared modules

A kind never imports another kind, a shared module never imports a kind, and no module
imports itself back through others. Imports under ``TYPE_CHECKING`` count too: a cycle that
only the type checker sees is still a cycle in the design."""

from __future__ import annotations

import pytest

from tests import ROOT
from tests.imports import imported_modules, module_name

ENGINE = ROOT / "coordinator_engine"
#: The group kinds' packages.
KINDS = (
    "coordinator_engine.classic",
    "coordinator_engine.handoff",
    "coordinator_engine.consumer",
)
#: The modules that may import a kind: the façade and the package's root.
FACADE = ("coordinator_engine", "coordinator_engine.coordinator")


PATHS = {module_name(path): path for path in sorted(ENGINE.rglob("*.py"))}
MODULES = set(PATHS)
IMPORTS = {
    name: {m for m in imported_modules(path) if m.partition(".")[0] == "coordinator_engine"}
    for name, path in PATHS.items()
}


def kind_of(module: str) -> str | None:
    return next((k for k in KINDS if module == k or module.startswith(k + ".")), None)


def test_the_import_check_sees_the_engine_as_it_is() -> None:
    assert "coordinator_engine.classic" in IMPORTS["coordinator_engine.coordinator"]
    assert "coordinator_engine.context" in IMPORTS["coordinator_engine.classic.manager"]
    assert "coordinator_engine.handoff.state" in IMPORTS["coordinator_engine.handoff.manager"]
    assert "coordinator_engine.records.codec" in IMPORTS["coordinator_engine.handoff.records"]
    assert "coordinator_engine.consumer" in IMPORTS["coordinator_engine.coordinator"]
    assert "coordinator_engine.server_assignors" in IMPORTS["coordinator_engine.consumer.target"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_kind_never_imports_another_kind(kind: str) -> None:
    against = sorted(
        (module, imported)
        for module, imported_set in IMPORTS.items()
        if kind_of(module) == kind
        for imported in imported_set
        if kind_of(imported) not in (None, kind)
    )
    assert against == []


def test_only_the_facade_imports_a_kind() -> None:
    against = sorted(
        (module, imported)
        for module, imported_set in IMPORTS.items()
        if kind_of(module) is None and module not in FACADE
        for imported in imported_set
        if kind_of(imported) is not None
    )
    assert against == []


def test_no_import_cycle_among_the_engines_modules() -> None:
    """Edges are the import statements. The parent package that Python loads before a module
    is not an edge: every module would otherwise cycle through an ``__init__`` that
    re-exports it."""

    def edges(module: str) -> set[str]:
        return {m for m in IMPORTS[module] if m in MODULES and m != module}

    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(edges(module)):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(MODULES):
        if module not in state:
            visit(module)
    assert cycles == []


def test_the_check_finds_a_cycle_and_a_cross_kind_import() -> None:
    """The checks above fail on what they look for: a cycle between two modules, and a kind
    importing another."""
    saved = {k: set(v) for k, v in IMPORTS.items()}
    try:
        IMPORTS["coordinator_engine.context"].add("coordinator_engine.offsets")
        with pytest.raises(AssertionError):
            test_no_import_cycle_among_the_engines_modules()
        IMPORTS["coordinator_engine.handoff.manager"].add("coordinator_engine.classic.group")
        with pytest.raises(AssertionError):
            test_a_kind_never_imports_another_kind("coordinator_engine.handoff")
        IMPORTS["coordinator_engine.consumer.manager"].add("coordinator_engine.classic.group")
        with pytest.raises(AssertionError):
            test_a_kind_never_imports_another_kind("coordinator_engine.consumer")
        IMPORTS["coordinator_engine.offsets"].add("coordinator_engine.handoff")
        with pytest.raises(AssertionError):
            test_only_the_facade_imports_a_kind()
    finally:
        IMPORTS.clear()
        IMPORTS.update(saved)


def test_a_request_type_claimed_by_two_group_kinds_is_refused_at_construction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from coordinator_engine import coordinator
    from coordinator_engine.classic import ClassicGroupManager

    monkeypatch.setattr(coordinator, "GROUP_KINDS", (ClassicGroupManager, ClassicGroupManager))
    with pytest.raises(ValueError, match="registered twice"):
        coordinator.GroupCoordinator()


def test_every_registered_kind_has_its_own_package_and_name() -> None:
    from coordinator_engine.coordinator import GROUP_KINDS

    packages = [kind.__module__.rpartition(".")[0] for kind in GROUP_KINDS]
    assert packages == list(KINDS)
    assert [kind.kind for kind in GROUP_KINDS] == [k.rpartition(".")[2] for k in KINDS]
