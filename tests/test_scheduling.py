"""How ``make test`` shares the test files between its workers (``tests/conftest.py``): a file
at a time, but the Spark tests' files all on one worker."""

from __future__ import annotations

import pytest

from tests.conftest import LoadFileSparkTogether, pytest_xdist_make_scheduler


@pytest.fixture
def two_workers(pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch) -> pytest.Config:
    """This run's configuration, as ``-n 2 --dist loadfile`` would have it."""
    monkeypatch.setattr(pytestconfig.option, "tx", ["2*popen"])
    monkeypatch.setattr(pytestconfig.option, "dist", "loadfile")
    return pytestconfig


def test_the_spark_files_are_one_unit_and_every_other_file_its_own(
    two_workers: pytest.Config,
) -> None:
    scheduler = pytest_xdist_make_scheduler(two_workers, None)  # type: ignore[arg-type]
    assert isinstance(scheduler, LoadFileSparkTogether)
    units = {
        scheduler._split_scope(nodeid)
        for nodeid in (
            "tests/spark/test_run.py::test_a",
            "tests/spark/test_cli.py::test_b[local]",
            "tests/spark/test_tuning.py::test_c",
        )
    }
    assert units == {"tests/spark/"}
    assert scheduler._split_scope("tests/engine/test_modes.py::Modes::test_d") == (
        "tests/engine/test_modes.py"
    )
    # A file elsewhere whose path merely begins like the directory's name is its own unit.
    assert scheduler._split_scope("tests/sparkle/test_e.py::test_f") == "tests/sparkle/test_e.py"


def test_other_distributions_keep_xdist_s_own_scheduler(
    two_workers: pytest.Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(two_workers.option, "dist", "load")
    assert pytest_xdist_make_scheduler(two_workers, None) is None  # type: ignore[arg-type]
