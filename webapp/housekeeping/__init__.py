"""Housekeeping: the Celery app, its tasks and their default schedules.

Kafka's broker expires committed offsets and removes dead groups on its own timer
(``GroupMetadataManager.cleanupGroupMetadata`` every ``offsets.retention.check.interval.ms``),
and its log cleaner compacts ``__consumer_offsets``. Here Celery beat says when (schedules are
rows of django-celery-beat, edited in the admin; the defaults come from a migration), a worker
runs the task, and the task asks the coordinator runtime to do the work over the channel layer
(``webapp.runtime.control``): the runtime stays the engine's only caller and the log's only
writer. docs/operations.md, "Housekeeping", is the user's guide.

* :mod:`~webapp.housekeeping.celery_app`: the Celery app (``celery -A
  webapp.housekeeping.celery_app worker``).
* :mod:`~webapp.housekeeping.tasks`: the tasks, each idempotent, retrying with backoff while
  no runtime answers, then failing with the reason in words.
* :mod:`~webapp.housekeeping.status`: what the dashboard's Housekeeping page shows: each task's
  schedule, next and last run and its numbers.
"""
