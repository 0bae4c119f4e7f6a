"""Where a serving process's time goes (``REBALANCE_LAB_PROFILE_ENGINE=1``), for benchmarks.

:class:`EngineProfile` adds up the wall time spent inside ``coord.handle`` (the record append
included, except inside a group commit, whose records are written when its batch ends) and
``coord.advance``, so a benchmark can tell the engine's share of a run from the host's; and the
garbage collector's pauses, which stop the event loop as a long call does. ``/healthz`` reports
it. The runtime updates the counters inline in its hot paths (two ``perf_counter`` reads per
call); a runtime without a profile reads none.
"""

from __future__ import annotations

import contextlib
import gc
import time
from typing import Any

__all__ = ["EngineProfile"]


class EngineProfile:
    """Wall time spent inside the engine's calls, and how many; and the collector's pauses."""

    __slots__ = (
        "_gc_started",
        "advance_calls",
        "advance_s",
        "gc_collections",
        "gc_max_pause_s",
        "gc_s",
        "handle_calls",
        "handle_s",
    )

    def __init__(self) -> None:
        self.handle_calls = 0
        self.handle_s = 0.0
        self.advance_calls = 0
        self.advance_s = 0.0
        self.gc_collections = 0
        self.gc_s = 0.0
        self.gc_max_pause_s = 0.0
        self._gc_started = 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
            return
        pause = time.perf_counter() - self._gc_started
        self.gc_collections += 1
        self.gc_s += pause
        self.gc_max_pause_s = max(self.gc_max_pause_s, pause)

    def close(self) -> None:
        """Stop timing the collector."""
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._on_gc)

    def to_json(self) -> dict[str, Any]:
        return {
            "handle_calls": self.handle_calls,
            "handle_s": round(self.handle_s, 6),
            "advance_calls": self.advance_calls,
            "advance_s": round(self.advance_s, 6),
            "gc_collections": self.gc_collections,
            "gc_s": round(self.gc_s, 6),
            "gc_max_pause_ms": round(1000 * self.gc_max_pause_s, 3),
        }
