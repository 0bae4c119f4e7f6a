"""Websocket routes (the ``websocket`` branch of ``webapp.asgi.application``)."""

from django.urls import path

from .consumers import ConsumerProtocolConsumer

websocket_urlpatterns = [
    path("ws/consumer/", ConsumerProtocolConsumer.as_asgi()),
]
