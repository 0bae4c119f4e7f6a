"""Fixtures for the web host: a runtime over a temporary SqliteLog with a manual clock, the
in-memory channel layer, and a websocket client speaking the consumer protocol."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from webapp.runtime.clock import ManualClock
from webapp.runtime.coordinator_runtime import CoordinatorRuntime

from .helpers import START_MS, TEST_CONFIG, Client, connect, serving


@pytest.fixture(autouse=True)
def memory_channel_layer(settings: Any) -> None:
    # pytest-django loads webapp.settings before any conftest runs, so CHANNEL_LAYER=memory is
    # applied here; Channels drops its cached layers when CHANNEL_LAYERS changes.
    settings.CHANNEL_LAYER = "memory"
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


@pytest.fixture(autouse=True)
def open_api(settings: Any) -> None:
    # The API's writes without a staff session; tests/webapp/test_access.py tests them closed.
    settings.REBALANCE_LAB_OPEN_API = True


@pytest.fixture
def log_path(tmp_path: Path, settings: Any) -> Path:
    path = tmp_path / "coordinator.db"
    settings.REBALANCE_LAB_LOG_PATH = path
    return path


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START_MS)


@pytest.fixture
def make_runtime(log_path: Path, clock: ManualClock) -> Callable[..., CoordinatorRuntime]:
    def make(**kwargs: Any) -> CoordinatorRuntime:
        options: dict[str, Any] = {
            "log_path": log_path,
            "config": TEST_CONFIG,
            "clock": clock,
            "advertised_host": "127.0.0.1",
            "advertised_port": 8000,
        }
        options.update(kwargs)
        return CoordinatorRuntime(**options)

    return make


@pytest_asyncio.fixture
async def runtime(
    transactional_db: None, make_runtime: Callable[..., CoordinatorRuntime]
) -> AsyncIterator[CoordinatorRuntime]:
    async with serving(make_runtime()) as rt:
        yield rt


@pytest_asyncio.fixture
async def ws(runtime: CoordinatorRuntime) -> AsyncIterator[Client]:
    client, communicator = await connect()
    yield client
    await communicator.disconnect()
