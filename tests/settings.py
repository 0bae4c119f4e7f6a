"""The settings the test run uses in-process: ``webapp.settings`` with a secret key of the run's
own (a server refuses to start without one, ``webapp.secret_key``; nothing a test signs needs
to outlive the run). Servers the tests start in subprocesses get theirs from
``tests.live_server``."""

import secrets

from webapp.settings import *  # noqa: F403

SECRET_KEY = secrets.token_urlsafe(50)
