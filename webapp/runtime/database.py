"""The runtime's calls to Django's database: run off the event loop, each on a connection that
works, and the connections closed when the runtime stops.

The runtime stores topics and the event history, and the Kafka listener reads SASL users, from
the event loop through ``sync_to_async``: in asgiref's thread-sensitive executor, one thread
that outlives any runtime. Django looks after a connection at the edges of a request
(``close_old_connections``), and Celery at the edges of a task; that thread has neither, so:

* **A broken connection is replaced.** When PostgreSQL ends a session (a restart, a failover,
  an administrator's ``pg_terminate_backend``), the call under way fails, and Django flags its
  connection (``errors_occurred``) but keeps it: every later query on it would fail too, a SASL
  login or a topic change until the process restarts. :func:`in_database_thread` checks a
  flagged connection before the next call (``is_usable``: one ``SELECT 1``) and closes it if it
  no longer answers, and the call connects again. Without an error nothing is checked. So one
  call fails with the session, as one request would, and the next succeeds.
* **The connections are closed at the end** (:func:`close_connections`, from
  ``CoordinatorRuntime.stop``), or they would stay open, idle, until the process ends, and
  keep PostgreSQL from dropping the database.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import connections

__all__ = ["close_connections", "in_a_context_of_its_own", "in_database_thread"]

P = ParamSpec("P")
T = TypeVar("T")


def _replace_broken_connections() -> None:
    """Close each of this thread's connections that an error flagged and that no longer
    answers (the next query connects again); clear the flag of one that does."""
    for connection in connections.all(initialized_only=True):
        if connection.connection is None or not connection.errors_occurred:
            continue
        if connection.is_usable():
            connection.errors_occurred = False
        else:
            connection.close()


def _on_a_working_connection(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    _replace_broken_connections()
    return function(*args, **kwargs)


async def in_database_thread(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``function(*args, **kwargs)`` (sync, using Django's database) in the database thread,
    on a connection an earlier failure did not leave broken (the module docstring)."""
    result: T = await sync_to_async(_on_a_working_connection)(function, *args, **kwargs)
    return result


async def in_a_context_of_its_own(coroutine: Coroutine[Any, Any, T]) -> T:
    """Await ``coroutine`` in a new, empty context: for the runtime's last database calls as it
    stops. The caller's context may be a copy of one inside a thread-sensitive ``sync_to_async``
    call (a shutdown signal that arrived during a Django view), where asgiref refuses another
    ("Single thread executor already being used, would deadlock")."""
    loop = asyncio.get_running_loop()
    return await loop.create_task(coroutine, context=contextvars.Context())


async def close_connections() -> None:
    """Close the database thread's connections (in a context of its own)."""
    await in_a_context_of_its_own(sync_to_async(connections.close_all)())
