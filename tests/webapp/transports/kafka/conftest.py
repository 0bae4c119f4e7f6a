"""A runtime on the wall clock (real Kafka clients keep real time) and a Kafka listener on a
free port of 127.0.0.1, both on the test's event loop."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async

from webapp.runtime.clock import WallClock
from webapp.runtime.coordinator_runtime import CoordinatorRuntime
from webapp.transports.kafka import apis
from webapp.transports.kafka.authenticator import SaslConfig
from webapp.transports.kafka.listener import KafkaListener
from webapp.transports.kafka.mechanisms import PLAIN, SCRAM_SHA_256
from webapp.transports.kafka.users import add_user, stored_user

from ...helpers import serving


@pytest_asyncio.fixture
async def kafka(
    transactional_db: None, make_runtime: Callable[..., CoordinatorRuntime], tmp_path: Path
) -> AsyncIterator[KafkaListener]:
    async with serving(make_runtime(clock=WallClock())) as runtime:
        listener = KafkaListener(
            runtime, host="127.0.0.1", port=0, records_path=tmp_path / "records.db"
        )
        await listener.start()
        try:
            yield listener
        finally:
            await listener.stop()


#: The users of ``sasl_kafka``: name → (password, staff).
SASL_USERS = {"alice": ("alice-secret", False), "root": ("root-secret", True)}


@pytest_asyncio.fixture
async def sasl_kafka(
    transactional_db: None, make_runtime: Callable[..., CoordinatorRuntime], tmp_path: Path
) -> AsyncIterator[KafkaListener]:
    """A listener that requires SASL (SCRAM-SHA-256 and PLAIN), with ``SASL_USERS``."""
    for name, (password, staff) in SASL_USERS.items():
        await sync_to_async(add_user)(name, password, is_staff=staff)
    async with serving(make_runtime(clock=WallClock())) as runtime:
        listener = KafkaListener(
            runtime,
            host="127.0.0.1",
            port=0,
            records_path=tmp_path / "records.db",
            sasl=SaslConfig(mechanisms=(SCRAM_SHA_256, PLAIN), credentials=stored_user),
        )
        await listener.start()
        try:
            yield listener
        finally:
            await listener.stop()


@pytest.fixture
def highest_versions(monkeypatch: pytest.MonkeyPatch) -> dict[int, int]:
    """api_key → the highest version of it the listener was asked (filled as requests come)."""
    highest: dict[int, int] = {}
    handle = apis.handle

    async def recording(context: apis.Context, request: Any) -> Any:
        highest[request.api_key] = max(highest.get(request.api_key, -1), request.api_version)
        return await handle(context, request)

    monkeypatch.setattr(apis, "handle", recording)
    return highest


def bootstrap(listener: KafkaListener) -> str:
    return f"127.0.0.1:{listener.port}"


__all__: list[Any] = ["SASL_USERS", "bootstrap", "highest_versions", "kafka", "sasl_kafka"]
