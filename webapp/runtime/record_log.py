"""Owning the record log: one process per log, and its checkpoints off the loop.

* **One owner.** A serving runtime holds an exclusive ``flock`` on ``<log>.lock``
  (:class:`LogLock`), which names its pid; a second process on the same log stops, naming the
  owner. The kernel drops the lock when the process dies, however it dies.
* **Checkpoints off the loop.** The log's appends never checkpoint SQLite's write-ahead log (one
  that did took the loop 15-25 ms); :class:`Checkpointer` copies it into the database file every
  ``interval_s`` from a worker thread (``SqliteLog.checkpoint``), and once more when stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path

from coordinator_engine import LogAppendError, SqliteLog

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]  # the lock is then a no-op

logger = logging.getLogger(__name__)

__all__ = ["Checkpointer", "LogLock"]


class LogLock:
    """An exclusive ``flock`` on ``<log>.lock``: one process owns a log."""

    def __init__(self, log_path: Path) -> None:
        self.path = Path(f"{log_path}.lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        if fcntl is None:  # pragma: no cover
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode("ascii", "replace").strip() or "another process"
            os.close(fd)
            raise RuntimeError(
                f"the coordinator log {str(self.path)[:-5]} is in use by pid {holder} "
                f"(lock {self.path}): one process owns a log"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode("ascii"))
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None


class Checkpointer:
    """Checkpoints ``log`` every ``interval_s`` in a worker thread until :meth:`stop`."""

    def __init__(self, log: SqliteLog, interval_s: float) -> None:
        self.log = log
        self.interval_s = interval_s
        self._end = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="checkpoint")

    async def stop(self) -> None:
        """Checkpoint once more and end. Not cancelled: a checkpoint under way in its thread
        finishes before the caller closes the log."""
        self._end.set()
        if self._task is not None:
            await self._task

    async def _run(self) -> None:
        while not self._end.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._end.wait(), self.interval_s)
            try:
                await asyncio.to_thread(self.log.checkpoint)
            except LogAppendError as exc:
                # The records stay in the write-ahead log; the next checkpoint tries again.
                logger.warning("record log checkpoint failed: %s", exc)
            except Exception:
                logger.exception("record log checkpoint failed")
