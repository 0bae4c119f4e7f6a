"""Who may read and who may act (docs/dashboard.md, "Pages" and "Staff actions").

* Reading (pages, feeds, the JSON API's GET): anyone while ``REBALANCE_LAB_ANONYMOUS_READ`` is
  on (the default), signed-in users otherwise.
* The JSON API's writes (topics, simulations): staff with a session and the CSRF token, or
  anyone when ``REBALANCE_LAB_OPEN_API`` is on (scripts and benchmarks on a trusted machine).
* The dashboard's actions (``/api/admin/<action>``): staff with a session and the CSRF token,
  always.
* ``/metrics`` has its own rule (``webapp.dashboard.metrics``): bearers of
  ``REBALANCE_LAB_METRICS_TOKEN``, or loopback clients when no token is set.

Refusals are JSON errors in the API's shape (``{"error": {"code", "message"}}``): 401 when
signing in would help, 403 when it would not (not staff, no CSRF token).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt

__all__ = ["api_view", "may_read", "staff_view"]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

AsyncView = Callable[..., Awaitable[HttpResponse]]


def may_read(user: User | AnonymousUser) -> bool:
    return settings.REBALANCE_LAB_ANONYMOUS_READ or bool(user.is_authenticated)


def _refuse(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status)


def _csrf_refusal(request: HttpRequest) -> JsonResponse | None:
    # Django's own check (Origin/Referer, the csrftoken cookie against X-CSRFToken), answered
    # in JSON instead of its HTML page.
    if CsrfViewMiddleware(lambda r: HttpResponse()).process_view(request, None, (), {}) is None:
        return None
    return _refuse(
        403,
        "csrf_failed",
        "CSRF verification failed: send the csrftoken cookie's value in the X-CSRFToken header",
    )


async def _staff_refusal(request: HttpRequest) -> JsonResponse | None:
    user = await request.auser()
    if not user.is_authenticated:
        return _refuse(401, "login_required", "sign in as a staff user to do this")
    if not user.is_staff:
        return _refuse(403, "staff_only", f"{user.get_username()} is not a staff user")
    return _csrf_refusal(request)


def api_view(view: AsyncView) -> AsyncView:
    """A JSON API view: reads as :func:`may_read` says; writes by staff (with the CSRF
    token), or by anyone with ``REBALANCE_LAB_OPEN_API``."""

    @csrf_exempt  # checked here, so that the refusal is JSON
    @functools.wraps(view)
    async def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method in SAFE_METHODS:
            if not may_read(await request.auser()):
                return _refuse(401, "login_required", "sign in to read this")
        elif not settings.REBALANCE_LAB_OPEN_API:
            refusal = await _staff_refusal(request)
            if refusal is not None:
                return refusal
        return await view(request, *args, **kwargs)

    return guarded


def staff_view(view: AsyncView) -> AsyncView:
    """A view for staff only, with the CSRF token, whatever the settings."""

    @csrf_exempt  # checked here, so that the refusal is JSON
    @functools.wraps(view)
    async def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        refusal = await _staff_refusal(request)
        if refusal is not None:
            return refusal
        return await view(request, *args, **kwargs)

    return guarded
