"""Rebalance Lab's web host: the Django project that runs the coordinator engine.

At the root, the Django project itself (settings, urls, asgi, routing, models, admin); below it,
one package per concern:

* ``runtime``: the engine's host, its only caller (``CoordinatorRuntime``), the topic
  registry, the event history;
* ``transports``: how clients in other processes reach the runtime (the websocket consumer
  protocol);
* ``dashboard``: the pages, the JSON API, the live feeds, staff actions and who may do what;
* ``simulation``: simulated consumers, the demo, the driver that runs the engine's consumer
  client over a transport, and ``history``: the synthetic history, in virtual time (Django-free);
* ``housekeeping``: the Celery app, its tasks (offset expiry, log compaction, the Spark report)
  and the Housekeeping page's data;
* ``analysis``: the history as Parquet (export), the Spark report runs
  and what the analysis page shows;
* ``management``: ``serve``, ``consume``, ``staffuser``, ``export_history``,
  ``generate_history``.

``python manage.py serve`` starts Daphne and the runtime on one event loop.
"""
