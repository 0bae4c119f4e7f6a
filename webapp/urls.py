"""HTTP routes: the dashboard's pages, sign-in, the Django admin, the health check, Prometheus'
metrics (``webapp.dashboard.metrics``), the JSON API (``webapp.dashboard.api``) and the staff
actions (``webapp.dashboard.actions``).

A group id may contain '/': ``<path:group_id>`` takes it whole, and the events route comes
first, so ``/api/groups/a/b/events`` is the history of group ``a/b``.
"""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

from .dashboard import actions, api, metrics, pages

urlpatterns = [
    path("", pages.overview, name="overview"),
    path("groups/<path:group_id>/", pages.group_page, name="group-page"),
    path("housekeeping/", pages.housekeeping_page, name="housekeeping-page"),
    path("analysis/", pages.analysis_page, name="analysis-page"),
    path("analysis/groups/<path:group_id>/", pages.analysis_page, name="group-analysis-page"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("healthz", api.healthz, name="healthz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("api/admin/<str:action>", actions.admin_action, name="admin-action"),
    path("api/housekeeping", api.housekeeping, name="housekeeping"),
    path("api/analysis", api.analysis, name="analysis"),
    path("api/analysis/groups/<path:group_id>", api.analysis, name="group-analysis"),
    path("api/groups", api.groups, name="groups"),
    path("api/groups/<path:group_id>/events", api.group_events, name="group-events"),
    path("api/groups/<path:group_id>", api.group_detail, name="group-detail"),
    path("api/topics", api.topics, name="topics"),
    path("api/topics/<str:name>", api.topic_detail, name="topic-detail"),
    path("api/simulations", api.simulations, name="simulations"),
    path(
        "api/simulations/<str:name>/<str:action>",
        api.simulation_action,
        name="simulation-action",
    ),
]
