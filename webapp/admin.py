"""The Django admin: the audit log of staff actions, the event history and the Spark report
runs, read-only; the Kafka listener's users (staff flag and removal; passwords are set with
``manage.py kafka_user add``)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from .models import AdminAction, GroupEvent, KafkaUser, ReportRun


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(AdminAction)
class AdminActionAdmin(ReadOnlyAdmin):
    list_display = ("at", "username", "action", "group_id", "ok", "result")
    list_filter = ("action", "ok", "username")
    search_fields = ("group_id", "result", "username")
    date_hierarchy = "at"


@admin.register(GroupEvent)
class GroupEventAdmin(ReadOnlyAdmin):
    list_display = ("seq", "group_id", "type", "at_ms")
    list_filter = ("type",)
    search_fields = ("group_id",)


@admin.register(ReportRun)
class ReportRunAdmin(ReadOnlyAdmin):
    list_display = ("id", "created_at", "trigger", "status", "events_total", "finished_at")
    list_filter = ("status", "trigger")


@admin.register(KafkaUser)
class KafkaUserAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Kafka users: staff may change the staff flag or remove one; a user and its password
    are made with ``manage.py kafka_user add`` (the admin never sees a password)."""

    list_display = ("name", "is_staff", "iterations", "created_at")
    list_filter = ("is_staff",)
    search_fields = ("name",)
    fields = ("name", "is_staff", "iterations", "created_at")
    readonly_fields = ("name", "iterations", "created_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
