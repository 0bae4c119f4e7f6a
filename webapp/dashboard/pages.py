"""The dashboard's pages (docs/dashboard.md): Django templates whose scripts follow the live
feeds (``webapp.dashboard.feeds``) and call the staff actions
(``webapp.dashboard.actions``)."""

from __future__ import annotations

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from webapp.runtime.coordinator_runtime import current_runtime

from .access import may_read


def _context(request: HttpRequest, **extra: object) -> dict[str, object]:
    return {"is_staff": bool(request.user.is_authenticated and request.user.is_staff), **extra}


@ensure_csrf_cookie  # the actions send the csrftoken cookie's value back
def overview(request: HttpRequest) -> HttpResponse:
    if not may_read(request.user):
        return redirect_to_login(request.get_full_path())
    runtime = current_runtime()
    # Where real Kafka clients connect (serve's Kafka listener), when it is open.
    kafka_address = runtime.listeners.get("kafka") if runtime is not None else None
    return render(
        request, "dashboard/overview.html", _context(request, kafka_address=kafka_address)
    )


@ensure_csrf_cookie
def group_page(request: HttpRequest, group_id: str) -> HttpResponse:
    if not may_read(request.user):
        return redirect_to_login(request.get_full_path())
    return render(request, "dashboard/group.html", _context(request, group_id=group_id))


@ensure_csrf_cookie
def housekeeping_page(request: HttpRequest) -> HttpResponse:
    if not may_read(request.user):
        return redirect_to_login(request.get_full_path())
    return render(request, "dashboard/housekeeping.html", _context(request))


@ensure_csrf_cookie
def analysis_page(request: HttpRequest, group_id: str | None = None) -> HttpResponse:
    """The Spark report: all groups, or one (``/analysis/groups/<id>/``, linked from its
    group page)."""
    if not may_read(request.user):
        return redirect_to_login(request.get_full_path())
    return render(request, "dashboard/analysis.html", _context(request, group_id=group_id))
