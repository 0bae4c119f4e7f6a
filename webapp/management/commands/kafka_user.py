"""``python manage.py kafka_user add|remove|list [NAME] [--staff] [--password-file F]``: the
users of the Kafka listener's SASL authentication (docs/kafka.md, "Authentication").

``add`` stores a SCRAM-SHA-256 credential for the password (PLAIN is checked against the same
credential), creating the user or replacing its password and staff flag; the password is
read from ``--password-file`` (its first line), else from ``KAFKA_USER_PASSWORD``, else asked
for twice on the terminal. ``--staff`` lets the user delete groups and their offsets over the
Kafka wire (DeleteGroups, OffsetDelete). A change applies to connections that authenticate
after it, as Kafka's credential changes do.
"""

from __future__ import annotations

import getpass
import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.transports.kafka.users import UserError, add_user, list_users, remove_user


class Command(BaseCommand):
    help = "Add, remove or list the users of the Kafka listener's SASL authentication."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=("add", "remove", "list"))
        parser.add_argument("name", nargs="?", help="the user (principal User:NAME)")
        parser.add_argument(
            "--staff",
            action="store_true",
            help="add: may delete groups and their offsets (DeleteGroups, OffsetDelete)",
        )
        parser.add_argument(
            "--password-file",
            type=Path,
            help="add: read the password from this file's first line "
            "(else $KAFKA_USER_PASSWORD, else the terminal)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        action: str = options["action"]
        name: str | None = options["name"]
        if action == "list":
            for user, is_staff in list_users():
                self.stdout.write(f"User:{user}" + (" (staff)" if is_staff else ""))
            return
        if not name:
            raise CommandError(f"kafka_user {action} needs the user's NAME")
        if action == "remove":
            if not remove_user(name):
                raise CommandError(f"there is no Kafka user {name!r}")
            self.stdout.write(f"Removed User:{name}")
            return
        password = self._password(options["password_file"])
        try:
            created = add_user(name, password, is_staff=options["staff"])
        except UserError as exc:
            raise CommandError(str(exc)) from None
        role = "staff" if options["staff"] else "not staff"
        self.stdout.write(f"{'Added' if created else 'Changed'} User:{name} ({role})")

    @staticmethod
    def _password(path: Path | None) -> str:
        if path is not None:
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except OSError as exc:
                raise CommandError(f"cannot read --password-file {path}: {exc}") from None
            return lines[0] if lines else ""
        if os.environ.get("KAFKA_USER_PASSWORD"):
            return os.environ["KAFKA_USER_PASSWORD"]
        try:
            first = getpass.getpass("Password: ")
            again = getpass.getpass("Password (again): ")
        except EOFError:
            raise CommandError(
                "no password: give --password-file or KAFKA_USER_PASSWORD, or run it on a terminal"
            ) from None
        if first != again:
            raise CommandError("the passwords differ")
        return first
