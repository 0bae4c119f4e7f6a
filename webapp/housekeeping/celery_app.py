"""The Celery app of the Django project: ``celery -A webapp.housekeeping.celery_app worker``
(and ``beat``), configured from Django's settings (the ``CELERY_`` names in
``webapp.settings``), its tasks in ``webapp.housekeeping.tasks``."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

app = Celery("rebalance_lab")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Not autodiscover_tasks(): the tasks live in one known module, imported when the worker
# finalizes the app (after Django is set up).
app.conf.imports = ("webapp.housekeeping.tasks",)
