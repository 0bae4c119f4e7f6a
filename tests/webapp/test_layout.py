"""`webapp/` is laid out by concern and its imports flow one way:

    dashboard ─► simulation ─► transports ─► runtime ─► coordinator_engine
    dashboard ─► housekeeping ─► analysis ─► spark_tasks.schema
                 housekeeping ─► runtime (control messages)

(``management`` and the project's root modules may import any of them). A module that imports
against the flow fails here, with the offending import named. And each of the engine's and the
web host's shared names is written once: the consumer protocol type, an error code's name,
the decoding of subscribed topics, ``TopicPartition``."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import ROOT
from tests.imports import imported_modules

WEBAPP = ROOT / "webapp"

#: What each package must never import.
FORBIDDEN = {
    "runtime": (
        "webapp.transports",
        "webapp.dashboard",
        "webapp.simulation",
        "webapp.housekeeping",
        "webapp.analysis",
    ),
    "housekeeping": ("webapp.dashboard", "webapp.simulation", "webapp.transports"),
    "analysis": (
        "webapp.dashboard",
        "webapp.simulation",
        "webapp.transports",
        "webapp.housekeeping",
        "webapp.runtime",
    ),
    "transports": ("webapp.dashboard", "webapp.simulation"),
    "simulation": ("webapp.dashboard",),
}


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
    assert "webapp.runtime.api" in names


def test_no_module_of_webapp_is_named_after_a_kafka_word_it_does_not_mean() -> None:
    """A Channels websocket handler is no Kafka "consumer"; "protocol" alone says nothing of
    which one."""
    names = {path.stem for path in WEBAPP.rglob("*.py")}
    assert names.isdisjoint({"consumers", "protocol", "views", "feed"})


# -- one of each ----------------------------------------------------------------------------------

SOURCES = sorted([*(ROOT / "coordinator_engine").rglob("*.py"), *WEBAPP.rglob("*.py")])


def where(predicate: object) -> list[str]:
    """Modules (relative paths) with a node for which ``predicate(node)`` is true."""
    found = []
    for path in SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(predicate(node) for node in ast.walk(tree)):  # type: ignore[operator]
            found.append(str(path.relative_to(ROOT)))
    return found


def assigns(name: str) -> object:
    def predicate(node: ast.AST) -> bool:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        defines = isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name == name
        return defines or any(isinstance(t, ast.Name) and t.id == name for t in targets)

    return predicate


def calls(name: str) -> object:
    def predicate(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and (
            (isinstance(node.func, ast.Name) and node.func.id == name)
            or (isinstance(node.func, ast.Attribute) and node.func.attr == name)
        )

    return predicate


def test_the_consumer_protocol_type_is_defined_once() -> None:
    assert where(assigns("CONSUMER_PROTOCOL_TYPE")) == ["coordinator_engine/consumer_protocol.py"]


def test_topic_partition_means_the_engines_dataclass_only() -> None:
    assert where(assigns("TopicPartition")) == ["coordinator_engine/requests.py"]


def test_error_codes_are_named_in_one_place() -> None:
    """``Errors.name_of`` (unknown codes included); ``Errors(code).name`` raised on a code the
    enum does not hold."""

    def names_an_errors_call(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and node.attr == "name"
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "Errors"
        )

    assert where(names_an_errors_call) == []


def test_subscribed_topics_are_decoded_in_one_place() -> None:
    """``consumer_protocol.subscribed_topics`` (remembered); the client's assignors alone read
    the whole subscription (owned partitions, user data)."""
    assert where(calls("decode_subscription")) == [
        "coordinator_engine/client/protocol.py",
        "coordinator_engine/consumer_protocol.py",
    ]


def test_the_history_generator_needs_no_django() -> None:
    """``webapp.simulation.history`` runs anywhere Python and pyarrow do (a Spark driver, a
    benchmark): none of its modules imports Django or the runtime, which needs it."""
    modules = sorted((WEBAPP / "simulation" / "history").glob("*.py"))
    assert len(modules) > 1
    django = [
        (str(path.relative_to(ROOT)), name)
        for path in modules
        for name in imported_modules(path)
        if name == "django" or name.startswith(("django.", "webapp.runtime"))
    ]
    assert django == []


def test_a_django_process_starts_without_the_analysis_libraries(tmp_path: Path) -> None:
    """pyarrow (with pandas behind its datasets) and PySpark load where a report is exported,
    run or read, not as a Django process starts: every ``manage.py`` command, ``serve`` and the
    Celery worker import the URLs and the tasks, and most never touch a report (with them, a
    ``manage.py check`` took 3.3 s and 198 MiB instead of 2.3 s and 99 MiB)."""
    program = (
        "import sys, django\n"
        "django.setup()\n"
        "from django.core.management import call_command\n"
        "call_command('check', verbosity=0)\n"
        "import webapp.asgi\n"
        "from webapp.housekeeping.celery_app import app\n"
        "app.loader.import_default_modules()\n"
        "print(' '.join(sorted({name.split('.')[0] for name in sys.modules})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "webapp.settings",
            "SECRET_KEY": "a-test-key-" * 5,
            "DATABASE": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    loaded = set(done.stdout.split())
    assert {"django", "coordinator_engine", "celery", "daphne"} <= loaded, done.stdout
    assert loaded & {"pyarrow", "pandas", "pyspark", "spark_tasks"} == set()
