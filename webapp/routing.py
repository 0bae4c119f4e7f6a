"""Websocket routes (the ``websocket`` branch of ``webapp.asgi.application``).

The consumer protocol needs no session: it skips the auth middleware (a database lookup per
connection). The dashboard's feeds carry the visitor's session (who may read); they check
themselves that a browser opened them from a page of this site (``webapp.dashboard``).
"""

from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.generic.websocket import AsyncWebsocketConsumer
from django.urls import path

from .consumers import ConsumerProtocolConsumer
from .dashboard import GroupFeedConsumer, OverviewFeedConsumer


def _dashboard(consumer: type[AsyncWebsocketConsumer]) -> Any:
    return AuthMiddlewareStack(consumer.as_asgi())


websocket_urlpatterns = [
    path("ws/consumer/", ConsumerProtocolConsumer.as_asgi()),
    path("ws/dashboard/groups/", _dashboard(OverviewFeedConsumer)),
    path("ws/dashboard/groups/<path:group_id>/", _dashboard(GroupFeedConsumer)),
]
