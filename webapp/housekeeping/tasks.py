"""The housekeeping tasks. Each is a thin adapter: it asks the coordinator runtime to run one
control command (``webapp.runtime.control``) and returns the runtime's numbers, which
django-celery-results keeps as the task's result.

Every task is idempotent (expiring or compacting twice changes nothing more), so Celery may
run one again after a lost worker (``acks_late``). While no runtime answers (it is starting,
restarting, or reloading its engine after a fault) a task retries with exponential backoff,
``HOUSEKEEPING_RETRY_BACKOFF_S`` doubling up to a minute, ``HOUSEKEEPING_RETRIES`` times, then
fails with :class:`HousekeepingFailed`, whose message says what it asked, how often, and the
runtime's last answer in words.
"""

from __future__ import annotations

from typing import Any

from celery import Task
from django.conf import settings

from webapp.runtime.control import RuntimeUnavailable, call_runtime

from .celery_app import app

__all__ = ["HousekeepingFailed", "compact_log", "expire_offsets"]

#: A compaction of a long log takes longer than a cleanup: its own wait for the answer.
_COMPACTION_TIMEOUT_FACTOR = 10


class HousekeepingFailed(Exception):
    """A housekeeping task gave up; the message says why."""


def _backoff_s(retries: int) -> float:
    return float(min(60.0, settings.HOUSEKEEPING_RETRY_BACKOFF_S * 2**retries))


def _on_runtime(task: Task, command: str, timeout_s: float) -> dict[str, Any]:
    try:
        return call_runtime(command, timeout_s=timeout_s)
    except RuntimeUnavailable as exc:
        retries = task.request.retries
        if retries >= settings.HOUSEKEEPING_RETRIES:
            raise HousekeepingFailed(
                f"{command}: gave up after {retries + 1} attempts: {exc}"
            ) from None
        raise task.retry(
            exc=exc, countdown=_backoff_s(retries), max_retries=settings.HOUSEKEEPING_RETRIES
        ) from None


@app.task(bind=True, name="housekeeping.expire_offsets")
def expire_offsets(self: Task) -> dict[str, Any]:
    """Kafka's ``cleanupGroupMetadata``: committed offsets past their retention (KIP-211) are
    removed, and an Empty group left without offsets goes Dead, its tombstones written.
    Returns ``offsets_expired`` and ``groups_tombstoned``."""
    return _on_runtime(self, "expire_offsets", settings.HOUSEKEEPING_CONTROL_TIMEOUT_S)


@app.task(bind=True, name="housekeeping.compact_log")
def compact_log(self: Task) -> dict[str, Any]:
    """Compact the record log as Kafka's log cleaner compacts ``__consumer_offsets``: each
    key's latest record stays, superseded records and spent tombstones go. Returns
    ``records_before``, ``records_dropped``, ``records_after`` and ``took_ms``."""
    timeout_s = settings.HOUSEKEEPING_CONTROL_TIMEOUT_S * _COMPACTION_TIMEOUT_FACTOR
    return _on_runtime(self, "compact_log", timeout_s)
