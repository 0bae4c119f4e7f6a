"""The Celery app of the Django project: ``celery -A webapp.housekeeping.celery_app worker``
(and ``beat``), configured from Django's settings (the ``CELERY_`` names in
``webapp.settings``), its tasks in ``webapp.housekeeping.tasks``.

Beat also sends one rebalance report ``REPORT_AFTER_START_S`` (60) after it starts, so that a
new installation shows a report within minutes rather than at the first hourly run."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import beat_init, setup_logging

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

app = Celery("rebalance_lab")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Not autodiscover_tasks(): the tasks live in one known module, imported when the worker
# finalizes the app (after Django is set up).
app.conf.imports = ("webapp.housekeeping.tasks",)


@setup_logging.connect
def _django_logging(**kwargs: Any) -> None:
    """Celery leaves logging to Django's ``LOGGING`` (which has a ``celery`` logger), so each
    line is printed once, in the same format as the server's."""
    import logging.config

    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)


@beat_init.connect
def _report_soon_after_start(sender: Any = None, **kwargs: Any) -> None:
    from django.conf import settings

    delay_s = settings.REPORT_AFTER_START_S
    if delay_s > 0:
        app.send_task("analysis.rebalance_report", kwargs={"trigger": "start"}, countdown=delay_s)
