"""The Django admin: the audit log of staff actions, the event history and the Spark report
runs, read-only; the Kafka listener's users (added, given a new password or the staff flag,
removed)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from .models import AdminAction, GroupEvent, KafkaUser, ReportRun
from .transports.kafka.users import UserError, check_name, credential_fields


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


class KafkaUserForm(forms.ModelForm):  # type: ignore[type-arg]
    """A Kafka user's name and staff flag, and a password to store as its SCRAM credential
    (required for a new user; left empty, a user's password stays as it is)."""

    password = forms.CharField(widget=forms.PasswordInput, required=False, strip=False)
    password_again = forms.CharField(
        widget=forms.PasswordInput, required=False, strip=False, label="Password (again)"
    )

    class Meta:
        model = KafkaUser
        fields = ("name", "is_staff")

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"]
        try:
            check_name(name)
        except UserError as exc:
            raise forms.ValidationError(str(exc)) from None
        return name

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean() or {}
        password = cleaned.get("password") or ""
        if password != (cleaned.get("password_again") or ""):
            self.add_error("password_again", "the passwords differ")
        elif password:
            cleaned["credential"] = credential_fields(password)
        elif self.instance.pk is None:
            self.add_error("password", "a new user needs a password")
        return cleaned


@admin.register(KafkaUser)
class KafkaUserAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """The Kafka listener's users (docs/kafka.md, "Authentication"), as ``manage.py
    kafka_user`` manages them: a password is stored as its SCRAM credential, never shown."""

    form = KafkaUserForm
    list_display = ("name", "is_staff", "iterations", "created_at")
    list_filter = ("is_staff",)
    search_fields = ("name",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return ("name",) if obj is not None else ()

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        for field, value in form.cleaned_data.get("credential", {}).items():
            setattr(obj, field, value)
        super().save_model(request, obj, form, change)
