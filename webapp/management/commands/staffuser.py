"""``python manage.py staffuser [--username admin]``: make sure a staff user can sign in to the
dashboard, so that a new user of ``make run`` can act on the demo groups.

With no staff user yet, it creates ``--username`` (a superuser, for the Django admin too) with a
random password, keeps the password in ``STATE_DIR/staff-password`` (readable by its owner
only) and prints both. With one already, it says who, and where a password it made before is
kept. It never changes an existing user's password.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

PASSWORD_FILE = Path(settings.STATE_DIR) / "staff-password"


class Command(BaseCommand):
    help = "Create a staff user for the dashboard if there is none (password in STATE_DIR)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="admin", help="the user to create (admin)")

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        staff = list(users.objects.filter(is_staff=True, is_active=True).order_by("pk"))
        if staff:
            names = ", ".join(user.get_username() for user in staff)
            where = f" (password in {PASSWORD_FILE})" if PASSWORD_FILE.exists() else ""
            self.stdout.write(f"Staff sign-in at /accounts/login/: {names}{where}")
            return
        password = secrets.token_urlsafe(12)
        users.objects.create_superuser(username=options["username"], email="", password=password)
        PASSWORD_FILE.parent.mkdir(parents=True, exist_ok=True)
        PASSWORD_FILE.touch(mode=0o600)
        PASSWORD_FILE.write_text(f"{options['username']} {password}\n")
        self.stdout.write(
            f"Staff sign-in at /accounts/login/: {options['username']} / {password} "
            f"(kept in {PASSWORD_FILE})"
        )
