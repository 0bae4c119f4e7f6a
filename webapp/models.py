"""What the web host keeps in Django's database: topics and the group event history.

The coordinator's own durable state (groups, generations, assignments, offsets) lives in its
record log (``REBALANCE_LAB_LOG_PATH``), never here; these tables are what the log does not
hold.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models


class Topic(models.Model):
    """A topic of the registry (``webapp.runtime.topics``); ``topic_id`` is its Kafka topic
    id, ``origins`` is ``[[base_offset, since_ms], ...]``, one per partition."""

    name = models.CharField(max_length=249, unique=True)
    topic_id = models.UUIDField(unique=True, default=uuid.uuid4)
    produce_rate_per_s = models.FloatField(default=0.0)
    origins = models.JSONField(default=list)

    class Meta:
        ordering = ("name",)

    def __str__(self) -> str:
        return f"{self.name} ({len(self.origins)} partitions)"


class GroupEvent(models.Model):
    """One engine event (``coordinator_engine.events``) with the runtime's sequence number.

    ``payload`` holds the event's own fields (``to_json()`` without type, group_id and at_ms,
    which have columns); :meth:`to_json` gives back exactly what the live feed published.
    """

    seq = models.BigIntegerField(unique=True)
    #: The seq of the same group's previous event (0 for its first): a reader of one group
    #: tells a gap from other groups' events by it.
    prev_seq = models.BigIntegerField(default=0)
    group_id = models.TextField()
    type = models.CharField(max_length=40)
    at_ms = models.BigIntegerField()
    payload = models.JSONField(default=dict)

    class Meta:
        ordering = ("seq",)
        indexes = (models.Index(fields=("group_id", "seq"), name="groupevent_group_seq"),)

    def __str__(self) -> str:
        return f"#{self.seq} {self.type} {self.group_id}"

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "prev_seq": self.prev_seq,
            "type": self.type,
            "group_id": self.group_id,
            "at_ms": self.at_ms,
            **self.payload,
        }


class AdminAction(models.Model):
    """The audit record of one staff action on the dashboard (docs/dashboard.md): who, when,
    what, with which parameters, and the result in words. Written whether the action
    succeeded or was refused."""

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    username = models.CharField(max_length=150)  # kept if the user is deleted
    action = models.CharField(max_length=40)
    group_id = models.TextField(blank=True, default="")
    parameters = models.JSONField(default=dict)
    ok = models.BooleanField()
    result = models.TextField()

    class Meta:
        ordering = ("-at", "-id")

    def __str__(self) -> str:
        outcome = "ok" if self.ok else "refused"
        return f"{self.username}: {self.action} {self.group_id} ({outcome})"


class ReportRun(models.Model):
    """One run of the Spark rebalance report (docs/analysis.md, "Runs"): the history exported
    to Parquet, then ``spark_tasks rebalance_report`` submitted with ``spark-submit``. The
    Celery task ``analysis.rebalance_report`` fills it in as it goes; the analysis page reads
    it (progress while running, ``summary`` once done)."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        EXPORTING = "exporting"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    #: Who asked: "schedule" (beat), "start" (a minute after beat started), "staff".
    trigger = models.CharField(max_length=16, default="schedule")
    spark_master = models.CharField(max_length=200, blank=True, default="")
    #: Events the export added to the history for this run, and the history's size after it.
    events_exported = models.BigIntegerField(default=0)
    events_total = models.BigIntegerField(default=0)
    #: Spark's progress while running (``spark_tasks.progress``): stages and tasks done, the
    #: phase in words, and the application's UI address.
    progress = models.JSONField(default=dict, blank=True)
    spark_ui_url = models.CharField(max_length=200, blank=True, default="")
    output_dir = models.CharField(max_length=500, blank=True, default="")
    log_path = models.CharField(max_length=500, blank=True, default="")
    #: The report's summary.json once it succeeded.
    summary = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ("-created_at", "-id")

    def __str__(self) -> str:
        return f"report #{self.pk} ({self.status})"

    @property
    def done(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)


class KafkaUser(models.Model):
    """A user of the Kafka listener's SASL authentication (docs/kafka.md, "Authentication"):
    principal ``User:<name>``, with its SCRAM-SHA-256 credential (salt, StoredKey, ServerKey
    and iterations, as Kafka stores SCRAM credentials: never the password).
    ``is_staff``: may delete groups and their offsets over the Kafka wire.
    ``manage.py kafka_user`` and the admin add, change and remove them."""

    name = models.CharField(max_length=255, unique=True)
    is_staff = models.BooleanField(default=False)
    salt = models.BinaryField()
    stored_key = models.BinaryField()
    server_key = models.BinaryField()
    iterations = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("name",)

    def __str__(self) -> str:
        return f"User:{self.name}" + (" (staff)" if self.is_staff else "")
