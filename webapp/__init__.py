"""Rebalance Lab's web host: the Django project that runs the coordinator engine.

``webapp.runtime`` hosts one :class:`~coordinator_engine.GroupCoordinator` per process and is
its only caller; ``webapp.consumers`` speaks the websocket consumer protocol
(docs/protocol.md), ``webapp.views`` the JSON API. ``python manage.py serve`` starts Daphne and
the runtime on one event loop.
"""
