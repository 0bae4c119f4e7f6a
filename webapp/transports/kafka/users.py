"""The Kafka listener's users, kept in Django's database (``webapp.models.KafkaUser``): what
``manage.py kafka_user`` changes, and the ``CredentialSource`` the listener's mechanisms
read (``stored_user``). Only SCRAM credentials are kept, never a password."""

from __future__ import annotations

import re

from webapp.runtime.database import in_database_thread

from .mechanisms import MIN_ITERATIONS, ScramCredential, StoredUser, scram_credential

__all__ = [
    "UserError",
    "add_user",
    "check_name",
    "credential_fields",
    "list_users",
    "remove_user",
    "stored_user",
]

#: What a user's name may hold: Kafka's SCRAM names are any string, but one that needs
#: escaping in a SCRAM message (a comma, an equals sign) or in a principal is asking for
#: trouble with some client; so letters, digits and ``._@-``.
_NAME = re.compile(r"[A-Za-z0-9._@-]{1,255}")


class UserError(ValueError):
    """A change to the users that cannot be made; the message says why."""


def _load(name: str) -> StoredUser | None:
    from webapp.models import KafkaUser

    row = KafkaUser.objects.filter(name=name).first()
    if row is None:
        return None
    return StoredUser(
        name=row.name,
        is_staff=row.is_staff,
        credential=ScramCredential(
            salt=bytes(row.salt),
            stored_key=bytes(row.stored_key),
            server_key=bytes(row.server_key),
            iterations=row.iterations,
        ),
    )


async def stored_user(name: str) -> StoredUser | None:
    """The user ``name`` as stored now (a change applies to the next authentication); None,
    without asking the database, for a name no user can have (``check_name``: a client's
    name may hold anything, a NUL character too, which PostgreSQL refuses in a query)."""
    if not _NAME.fullmatch(name):
        return None
    return await in_database_thread(_load, name)


def check_name(name: str) -> None:
    """UserError unless ``name`` may be a user's name."""
    if not _NAME.fullmatch(name):
        raise UserError(
            f"a Kafka user's name is 1 to 255 letters, digits, '.', '_', '@' or '-', got {name!r}"
        )


def credential_fields(password: str, *, iterations: int = MIN_ITERATIONS) -> dict[str, object]:
    """The ``KafkaUser`` fields that hold ``password``'s SCRAM credential (a new salt)."""
    if not password:
        raise UserError("the password must not be empty")
    try:
        credential = scram_credential(password, iterations=iterations)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    return {
        "salt": credential.salt,
        "stored_key": credential.stored_key,
        "server_key": credential.server_key,
        "iterations": credential.iterations,
    }


def add_user(
    name: str, password: str, *, is_staff: bool = False, iterations: int = MIN_ITERATIONS
) -> bool:
    """Store ``name``'s credential for ``password`` (a new random salt), creating the user or
    changing its password and staff flag; True if it was created."""
    from webapp.models import KafkaUser

    check_name(name)
    fields = credential_fields(password, iterations=iterations)
    _, created = KafkaUser.objects.update_or_create(
        name=name, defaults={"is_staff": is_staff, **fields}
    )
    return bool(created)


def remove_user(name: str) -> bool:
    """Remove ``name``; False if there was no such user."""
    from webapp.models import KafkaUser

    deleted, _ = KafkaUser.objects.filter(name=name).delete()
    return bool(deleted)


def list_users() -> list[tuple[str, bool]]:
    """(name, is_staff) of every user, by name."""
    from webapp.models import KafkaUser

    return [(row.name, row.is_staff) for row in KafkaUser.objects.order_by("name")]
