"""HTTP routes: the health check and the JSON API (``webapp.views``).

A group id may contain '/': ``<path:group_id>`` takes it whole, and the events route comes
first, so ``/api/groups/a/b/events`` is the history of group ``a/b``.
"""

from django.urls import path

from . import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("api/groups", views.groups, name="groups"),
    path("api/groups/<path:group_id>/events", views.group_events, name="group-events"),
    path("api/groups/<path:group_id>", views.group_detail, name="group-detail"),
    path("api/topics", views.topics, name="topics"),
    path("api/topics/<str:name>", views.topic_detail, name="topic-detail"),
    path("api/simulations", views.simulations, name="simulations"),
    path(
        "api/simulations/<str:name>/<str:action>",
        views.simulation_action,
        name="simulation-action",
    ),
]
