"""DATABASE, Django's database as a URL (webapp.settings.database_from_url): SQLite files and
PostgreSQL servers, and an error naming what is wrong with anything else."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from webapp.settings import BASE_DIR, database_from_url


def test_a_sqlite_url_names_a_file_absolute_or_under_the_repository(tmp_path: Path) -> None:
    absolute = database_from_url("DATABASE", f"sqlite:///{tmp_path / 'new' / 'db.sqlite3'}")
    assert absolute["ENGINE"] == "django.db.backends.sqlite3"
    assert absolute["NAME"] == tmp_path / "new" / "db.sqlite3"
    assert (tmp_path / "new").is_dir()
    assert absolute["OPTIONS"] == {"init_command": "PRAGMA journal_mode=WAL;", "timeout": 20}
    relative = database_from_url("DATABASE", "sqlite:///var/db.sqlite3")
    assert relative["NAME"] == BASE_DIR / "var" / "db.sqlite3"


def test_a_postgres_url_gives_each_part_decoded() -> None:
    config = database_from_url(
        "DATABASE", "postgres://lab%20user:p%40ss%3Aword@db.example:5433/rebalance?sslmode=require"
    )
    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert (config["USER"], config["PASSWORD"]) == ("lab user", "p@ss:word")
    assert (config["HOST"], config["PORT"], config["NAME"]) == ("db.example", 5433, "rebalance")
    assert config["OPTIONS"] == {"sslmode": "require"}
    assert database_from_url("DATABASE", "postgresql://db/lab")["NAME"] == "lab"


def test_a_unix_socket_directory_is_the_host_parameter_its_case_kept() -> None:
    config = database_from_url("DATABASE", "postgres://lab@/lab?host=/tmp/PG.aBc")
    assert config["HOST"] == ""
    assert config["OPTIONS"] == {"host": "/tmp/PG.aBc"}


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://lab@db/lab", "got 'mysql://lab@db/lab': scheme 'mysql' is not supported"),
        ("/var/db.sqlite3", "got '/var/db.sqlite3': it has no scheme"),
        ("sqlite://", "DATABASE: sqlite URL without a path: 'sqlite://'"),
        ("postgres://lab@db:5432/", "DATABASE: postgres URL without a database name"),
        ("postgres://lab@db:fivefour/lab", "not a valid URL (is the port a number?"),
        ("postgres://lab@db/lab?hots=/tmp", "unknown connection parameter 'hots'"),
    ],
)
def test_a_bad_url_is_refused_naming_what_is_wrong(url: str, message: str) -> None:
    with pytest.raises(ImproperlyConfigured) as refused:
        database_from_url("DATABASE", url)
    assert message in str(refused.value)
    assert str(refused.value).startswith("DATABASE")


def test_a_refusal_never_shows_the_password() -> None:
    with pytest.raises(ImproperlyConfigured) as refused:
        database_from_url("DATABASE", "postgres://lab:s3cret@db:port/lab")
    assert "s3cret" not in str(refused.value)
    assert "'postgres://lab:***@db:port/lab'" in str(refused.value)
