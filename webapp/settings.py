"""Django settings for Rebalance Lab, read from the environment (healthchecks' ``hc/settings.py``
style: every knob is an environment variable with a typed helper and a working default).

* ``STATE_DIR`` (``var``): where a run keeps its state (the defaults below, the secret key,
  the staff password, ``make run``'s logs): two labs on one machine each get their own.
* ``REBALANCE_LAB_LOG_PATH`` (``STATE_DIR/coordinator.db``): the coordinator's record log (SQLite).
* ``DATABASE`` (``sqlite:///STATE_DIR/db.sqlite3``): Django's database, ``sqlite:///path`` or
  ``postgres://user:password@host:port/name`` (psycopg; libpq's parameters in the query, e.g.
  ``postgres://lab@/lab?host=/run/postgresql`` for a Unix socket); docs/operations.md,
  "PostgreSQL".
* ``CHANNEL_LAYER`` (``redis``): ``redis``, at ``REDIS_URL``
  (``redis://127.0.0.1:6379/0``), or ``memory`` (one process; tests).
* ``ADVERTISED_HOST`` / ``ADVERTISED_PORT`` (``127.0.0.1`` / ``8000``, or ``serve``'s
  ``--host``/``--port``): the node FindCoordinator answers.
* ``KAFKA_PORT`` (9092; 0: a free port the system picks; ``off``: no Kafka listener) and
  ``KAFKA_ADVERTISED_HOST`` (``ADVERTISED_HOST``): where ``serve`` listens for Kafka's own
  wire protocol (on ``--host``) and the address Metadata and FindCoordinator give Kafka
  clients (``webapp.transports.kafka``); ``KAFKA_RECORDS_PATH`` (``STATE_DIR/records.db``) and
  ``KAFKA_RETENTION_MS`` (7 days): where the batches producers send are kept, and how long.
* ``KAFKA_SASL`` (``off``; ``required``): whether a Kafka client must authenticate (SASL) before
  it is served, with one of ``KAFKA_SASL_MECHANISMS`` (``SCRAM-SHA-256,PLAIN``);
  ``KAFKA_ALLOW_ANONYMOUS`` (off): serve the Kafka listener without SASL on an address beyond
  loopback, which ``serve`` otherwise refuses (docs/kafka.md, "Authentication").
* ``COORDINATOR_<FIELD>`` (Kafka's defaults): any int field of ``CoordinatorConfig``, e.g.
  ``COORDINATOR_GROUP_INITIAL_REBALANCE_DELAY_MS=0``; ``COORDINATOR_OWNED_PARTITIONS``: the
  comma-separated coordinator partitions this process serves (default all).
* ``REBALANCE_LAB_PROFILE_ENGINE`` (off): add up the time spent inside the engine's calls and
  report it in ``/healthz`` (``engine_profile``), for benchmarks.
* ``REBALANCE_LAB_ANONYMOUS_READ`` (on): anonymous visitors may read the dashboard and the
  API; ``REBALANCE_LAB_OPEN_API`` (off): the API's write methods need no staff session.
* ``REBALANCE_LAB_METRICS_TOKEN`` (none): ``/metrics`` answers only requests bearing this
  token (``Authorization: Bearer …``); without one, only requests from a loopback address.
* ``SECRET_KEY``, or ``SECRET_KEY_FILE`` (``STATE_DIR/secret-key``) a file holding it: what sessions
  and CSRF tokens are signed with. There is no default: ``make run`` creates a random one once in
  ``STATE_DIR/secret-key``; a server without one refuses to start (``webapp.secret_key``).
* ``CELERY_BROKER_URL`` (``REDIS_URL``): Celery's broker. ``HOUSEKEEPING_RETRIES`` (5),
  ``HOUSEKEEPING_RETRY_BACKOFF_S`` (2, doubling, at most 60) and
  ``HOUSEKEEPING_CONTROL_TIMEOUT_S`` (30): how long a housekeeping task waits for the runtime's
  answer, and how often it tries again while no runtime answers (``webapp.housekeeping``).
* ``SPARK_MASTER`` (``local[*]``): where the rebalance report runs (``spark://host:7077`` for a
  cluster); ``SPARK_DRIVER_MEMORY`` (``4g``): the report's driver heap (with a local master, all
  of the job's memory); ``SPARK_UI`` (on): the report's Spark UI (port 4040 or the next free one);
  ``REPORT_TIMEOUT_S`` (1800); ``REPORT_AFTER_START_S`` (60): beat sends one report this long
  after it starts, so a new installation has one without waiting an hour (0: none);
  ``ANALYSIS_DIR`` (``STATE_DIR/analysis``): the Parquet history and the reports
  (``webapp.analysis``).
* ``DEBUG``, ``ALLOWED_HOSTS`` (``*``), ``LOG_LEVEL`` (``INFO``): as in Django.

Relative paths are relative to the repository root. A malformed value fails at start-up with
``ImproperlyConfigured`` naming the variable.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from coordinator_engine import CoordinatorConfig

BASE_DIR = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- typed helpers


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}")


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


def env_path(name: str, default: str) -> Path:
    path = Path(env_str(name, default)).expanduser()
    return path if path.is_absolute() else BASE_DIR / path


def state_path(name: str, leaf: str) -> Path:
    """``env_path(name)``, by default ``leaf`` under ``STATE_DIR``."""
    return env_path(name, str(STATE_DIR / leaf))


#: The query parameters of a ``postgres://`` DATABASE that Django's backend takes itself
#: (the others are libpq's connection parameters, e.g. ``host`` for a socket directory).
DJANGO_POSTGRES_OPTIONS = frozenset(
    {"isolation_level", "assume_role", "server_side_binding", "pool"}
)


def _redacted(url: str) -> str:
    """``url`` with its password, if any, as ``***`` (for error messages)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rpartition("@")
    user = netloc[0].partition(":")[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[2]}"))


def database_from_url(name: str, url: str) -> dict[str, Any]:
    """Django's DATABASES entry for ``sqlite:///path`` or ``postgres://user:pw@host:port/db``
    (``dj_database_url``'s parsing; ``?host=/run/postgresql`` reaches a server by its Unix
    socket). Anything else is ImproperlyConfigured, naming ``name`` and what is wrong."""
    shown = _redacted(url)
    expected = "a sqlite:///path or postgres://user:password@host:port/name URL"
    scheme = urlsplit(url).scheme
    if scheme not in ("sqlite", "postgres", "postgresql"):
        what = f"scheme {scheme!r} is not supported" if scheme else "it has no scheme"
        raise ImproperlyConfigured(f"{name} must be {expected}, got {shown!r}: {what}")
    try:
        config: dict[str, Any] = dict(dj_database_url.parse(url))
    except ValueError:
        raise ImproperlyConfigured(
            f"{name} must be {expected}, got {shown!r}: not a valid URL (is the port a number? "
            "are the user and password percent-encoded?)"
        ) from None
    if scheme == "sqlite":
        if config["NAME"] in ("", ":memory:"):
            raise ImproperlyConfigured(f"{name}: sqlite URL without a path: {shown!r}")
        path = Path(config["NAME"]).expanduser()
        path = path if path.is_absolute() else BASE_DIR / path
        # Like the record log, a database under a fresh var/ just works (SQLite will not
        # create the directory).
        path.parent.mkdir(parents=True, exist_ok=True)
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": path,
            # WAL: the history writer and the views do not block each other.
            "OPTIONS": {"init_command": "PRAGMA journal_mode=WAL;", "timeout": 20},
        }
    if not config["NAME"]:
        raise ImproperlyConfigured(
            f"{name}: postgres URL without a database name (…/name at its end): {shown!r}"
        )
    unknown = sorted(set(config.get("OPTIONS", {})) - _postgres_parameters(name))
    if unknown:
        raise ImproperlyConfigured(
            f"{name}: unknown connection parameter {', '.join(map(repr, unknown))} in {shown!r} "
            "(the query takes libpq's parameters, e.g. ?host=/run/postgresql&sslmode=require)"
        )
    return config


def _postgres_parameters(name: str) -> frozenset[str]:
    """The query parameters a ``postgres://`` DATABASE may have: libpq's and Django's."""
    try:
        import psycopg
    except ImportError:
        raise ImproperlyConfigured(
            f"{name} is a postgres:// URL but psycopg is not installed "
            "(pip install -r requirements.txt)"
        ) from None
    libpq = {option.keyword.decode() for option in psycopg.pq.Conninfo.get_defaults()}
    return frozenset(libpq) | DJANGO_POSTGRES_OPTIONS


def coordinator_config_from_env() -> CoordinatorConfig:
    """``CoordinatorConfig`` with every ``COORDINATOR_<FIELD>`` variable applied."""
    overrides: dict[str, Any] = {}
    for field in dataclasses.fields(CoordinatorConfig):
        variable = f"COORDINATOR_{field.name.upper()}"
        if field.name == "owned_partitions":
            if os.environ.get(variable, "").strip():
                try:
                    overrides[field.name] = frozenset(int(p) for p in env_list(variable, ""))
                except ValueError:
                    raise ImproperlyConfigured(
                        f"{variable} must be comma-separated partition numbers"
                    ) from None
        elif variable in os.environ:
            overrides[field.name] = env_int(variable, 0)
    try:
        return CoordinatorConfig(**overrides)
    except (TypeError, ValueError) as exc:
        raise ImproperlyConfigured(f"COORDINATOR_* settings: {exc}") from None


def parse_kafka_port(text: str) -> int | None:
    """A Kafka listener's port as written (``KAFKA_PORT``, ``serve --kafka-port``): a port (0:
    one the system picks), or None for ``off``; ValueError saying what it must be."""
    if text.strip().lower() == "off":
        return None
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise ValueError(f"must be a port (0-65535) or off, got {text!r}")
    return port


def kafka_port_from_env() -> int | None:
    """``KAFKA_PORT`` (default 9092), by ``parse_kafka_port``."""
    raw = os.environ.get("KAFKA_PORT", "")
    if raw.strip() == "":
        return 9092
    try:
        return parse_kafka_port(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"KAFKA_PORT {exc}") from None


#: Where a run keeps its state; every path below defaults to a file in it.
STATE_DIR = env_path("STATE_DIR", "var")

# ---------------------------------------------------------------- Django


def secret_key_from_env() -> str:
    """``SECRET_KEY``, else the contents of ``SECRET_KEY_FILE`` if it exists, else "" (Django
    then refuses any use of it, and the servers refuse to start: ``webapp.secret_key``)."""
    key = os.environ.get("SECRET_KEY", "").strip()
    if key:
        return key
    path = state_path("SECRET_KEY_FILE", "secret-key")
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise ImproperlyConfigured(f"SECRET_KEY_FILE={path} cannot be read: {exc}") from None


SECRET_KEY = secret_key_from_env()
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "*")

INSTALLED_APPS = [
    "daphne",  # first: its runserver serves ASGI (websockets included)
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    # Housekeeping's schedules (edited in the admin) and its task results (docs/operations.md).
    "django_celery_beat",
    "django_celery_results",
    "webapp",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Daphne serves no files: ServeStatic (WhiteNoise's async-capable fork; WhiteNoise's own
    # middleware is sync-only and would push every async view through a thread) serves
    # static/ and the npm-installed D3.
    "servestatic.middleware.ServeStaticMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    }
]

STATIC_URL = "/static/"
STATICFILES_DIRS = [
    BASE_DIR / "static",
    # D3 from the npm registry (package.json / package-lock.json; `make` runs `npm ci`).
    ("vendor/d3", BASE_DIR / "node_modules" / "d3" / "dist"),
]
STATIC_ROOT = BASE_DIR / "var" / "static"
# Files are served from the finders (no collectstatic step): a handful of files, read at start.
SERVESTATIC_USE_FINDERS = True

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

#: Anonymous visitors may read the dashboard and the JSON API (REBALANCE_LAB_ANONYMOUS_READ,
#: on). Off: pages redirect to the login, feeds close with 4401, the API answers 401.
REBALANCE_LAB_ANONYMOUS_READ = env_bool("REBALANCE_LAB_ANONYMOUS_READ", True)
#: The JSON API's write methods (POST/PATCH/DELETE on /api/topics and /api/simulations) without
#: a staff session, for scripts and benchmarks on a trusted machine (REBALANCE_LAB_OPEN_API,
#: off). Off, they need a staff session and the CSRF token, like the dashboard's actions.
REBALANCE_LAB_OPEN_API = env_bool("REBALANCE_LAB_OPEN_API", False)
#: Who may scrape /metrics: bearers of this token; when empty, loopback clients only
#: (REBALANCE_LAB_METRICS_TOKEN, docs/operations.md "Metrics").
REBALANCE_LAB_METRICS_TOKEN = env_str("REBALANCE_LAB_METRICS_TOKEN", "")

ROOT_URLCONF = "webapp.urls"
ASGI_APPLICATION = "webapp.asgi.application"

DATABASES = {
    "default": database_from_url(
        "DATABASE", env_str("DATABASE", f"sqlite:///{STATE_DIR / 'db.sqlite3'}")
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

USE_TZ = True
TIME_ZONE = "UTC"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "webapp": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
        "daphne": {"handlers": ["console"], "level": "INFO"},
        # The Celery worker and beat log through this configuration too (webapp.housekeeping).
        "celery": {"handlers": ["console"], "level": "INFO"},
    },
}

# ---------------------------------------------------------------- channel layer

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
CHANNEL_LAYER = env_str("CHANNEL_LAYER", "redis").strip().lower()
if CHANNEL_LAYER == "memory":
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
elif CHANNEL_LAYER == "redis":
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    raise ImproperlyConfigured(f"CHANNEL_LAYER must be 'redis' or 'memory', got {CHANNEL_LAYER!r}")

# ---------------------------------------------------------------- the coordinator runtime

REBALANCE_LAB_LOG_PATH = state_path("REBALANCE_LAB_LOG_PATH", "coordinator.db")
ADVERTISED_HOST = env_str("ADVERTISED_HOST", "127.0.0.1")
ADVERTISED_PORT = env_int("ADVERTISED_PORT", 8000)
KAFKA_PORT = kafka_port_from_env()
KAFKA_ADVERTISED_HOST = env_str("KAFKA_ADVERTISED_HOST", "")
KAFKA_RECORDS_PATH = state_path("KAFKA_RECORDS_PATH", "records.db")
KAFKA_RETENTION_MS = env_int("KAFKA_RETENTION_MS", 7 * 24 * 3600 * 1000)
KAFKA_SASL = env_str("KAFKA_SASL", "off").strip().lower() or "off"
if KAFKA_SASL not in ("off", "required"):
    raise ImproperlyConfigured(f"KAFKA_SASL must be 'off' or 'required', got {KAFKA_SASL!r}")
KAFKA_SASL_MECHANISMS = env_list("KAFKA_SASL_MECHANISMS", "SCRAM-SHA-256,PLAIN")
KAFKA_ALLOW_ANONYMOUS = env_bool("KAFKA_ALLOW_ANONYMOUS", False)
COORDINATOR_CONFIG = coordinator_config_from_env()
REBALANCE_LAB_PROFILE_ENGINE = env_bool("REBALANCE_LAB_PROFILE_ENGINE", False)

# ---------------------------------------------------------------- Celery (webapp.housekeeping)

CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
# Results in Django's database, visible in the admin (django-celery-results), with the task's
# name and arguments (extended).
CELERY_RESULT_BACKEND = "django-db"
CELERY_RESULT_EXTENDED = True
CELERY_TASK_TRACK_STARTED = True
# Schedules are rows staff edit in the admin (django-celery-beat); the defaults are a migration.
# Its database scheduler, which also tells the server that beat is alive (liveness.py).
CELERY_BEAT_SCHEDULER = "webapp.housekeeping.liveness:AnnouncingScheduler"
# Beat writes each task's last run (the admin's and the Housekeeping page's "next run" read it)
# after every send, not every three minutes: sends are minutes apart.
CELERY_BEAT_SYNC_EVERY = 1
CELERY_TIMEZONE = TIME_ZONE
# Every task is idempotent: a task lost with its worker runs again rather than never.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

HOUSEKEEPING_RETRIES = env_int("HOUSEKEEPING_RETRIES", 5)
HOUSEKEEPING_RETRY_BACKOFF_S = float(env_int("HOUSEKEEPING_RETRY_BACKOFF_S", 2))
HOUSEKEEPING_CONTROL_TIMEOUT_S = float(env_int("HOUSEKEEPING_CONTROL_TIMEOUT_S", 30))

# ------------------------------------------------------- the Spark report (webapp.analysis)

SPARK_MASTER = env_str("SPARK_MASTER", "local[*]")
SPARK_DRIVER_MEMORY = env_str("SPARK_DRIVER_MEMORY", "4g")
SPARK_UI = env_bool("SPARK_UI", True)
REPORT_TIMEOUT_S = env_int("REPORT_TIMEOUT_S", 1800)
REPORT_AFTER_START_S = env_int("REPORT_AFTER_START_S", 60)
ANALYSIS_DIR = state_path("ANALYSIS_DIR", "analysis")
