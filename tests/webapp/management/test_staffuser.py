"""``manage.py staffuser``: a new user of ``make run`` gets a staff sign-in, once."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.core.management import call_command

from webapp.management.commands import staffuser


@pytest.mark.django_db
def test_creates_one_staff_user_with_a_kept_password_then_leaves_it_alone(
    tmp_path: Path, monkeypatch: Any
) -> None:
    password_file = tmp_path / "var" / "staff-password"
    monkeypatch.setattr(staffuser, "PASSWORD_FILE", password_file)
    out = io.StringIO()
    call_command("staffuser", stdout=out)
    username, password = password_file.read_text().split()
    assert username == "admin"
    assert password_file.stat().st_mode & 0o777 == 0o600
    assert f"admin / {password}" in out.getvalue()
    user = authenticate(username="admin", password=password)
    assert user is not None and user.is_staff and user.is_superuser
    again = io.StringIO()
    call_command("staffuser", stdout=again)
    assert again.getvalue().strip() == (
        f"Staff sign-in at /accounts/login/: admin (password in {password_file})"
    )
    assert User.objects.count() == 1
