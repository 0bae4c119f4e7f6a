"""Rebalance Lab's web host: the Django project that runs the coordinator engine.

At the root, the Django project itself (settings, urls, asgi, routing, models, admin); below it,
one package per concern:

* ``runtime``: the engine's host, its only caller (``CoordinatorRuntime``), the topic
  registry, the event history;
* ``transports``: how clients in other processes reach the runtime (the websocket consumer
  protocol);
* ``dashboard``: the pages, the JSON API, the live feeds, staff actions and who may do what;
* ``simulation``: simulated consumers, the demo, and the driver that runs the engine's consumer
  client over a transport;
* ``management``: ``serve``, ``consume``, ``staffuser``.

``python manage.py serve`` starts Daphne and the runtime on one event loop.
"""
