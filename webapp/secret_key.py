"""The servers refuse to start without a secret key of this installation's own.

Django signs session cookies and CSRF tokens with ``SECRET_KEY``: anyone who knows it can forge
a staff session. There is no default to fall back to (a key in the repository is a key everyone
has). ``make run`` creates a random key once and keeps it in ``var/secret-key``; ``manage.py
serve`` and ``webapp.asgi`` (``daphne webapp.asgi:application``) call :func:`require` first.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

MISSING = (
    "no SECRET_KEY: the server will not start without a secret key of its own (sessions and "
    "CSRF tokens are signed with it). `make run` creates one in var/secret-key; otherwise set "
    "SECRET_KEY, or SECRET_KEY_FILE to a file that holds one, e.g. the output of "
    "`python -c 'import secrets; print(secrets.token_urlsafe(50))'`"
)


def require() -> None:
    """Raise ``ImproperlyConfigured`` saying how to make a key, unless there is one."""
    try:
        key = settings.SECRET_KEY
    except ImproperlyConfigured:  # Django's own refusal of an empty key, which says no more
        key = ""
    if not key:
        raise ImproperlyConfigured(MISSING)
