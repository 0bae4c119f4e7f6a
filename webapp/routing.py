"""Websocket routes (the ``websocket`` branch of ``webapp.asgi.application``).

The consumer protocol needs no session: it skips the auth middleware (a database lookup per
connection). The dashboard's feeds carry the visitor's session (who may read); they check
themselves that a browser opened them from a page of this site (``webapp.dashboard.feeds``).
"""

from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.generic.websocket import AsyncWebsocketConsumer
from django.urls import path

from .dashboard.feeds import GroupFeedSocket, OverviewFeedSocket
from .transports.websocket.connection import ConsumerProtocolSocket


def _dashboard(consumer: type[AsyncWebsocketConsumer]) -> Any:
    return AuthMiddlewareStack(consumer.as_asgi())


websocket_urlpatterns = [
    path("ws/consumer/", ConsumerProtocolSocket.as_asgi()),
    path("ws/dashboard/groups/", _dashboard(OverviewFeedSocket)),
    path("ws/dashboard/groups/<path:group_id>/", _dashboard(GroupFeedSocket)),
]
