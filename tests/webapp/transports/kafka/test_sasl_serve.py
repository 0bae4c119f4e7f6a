"""SASL in a real ``manage.py serve``: a Kafka listener beyond loopback without SASL is refused
at start-up (unless KAFKA_ALLOW_ANONYMOUS says otherwise); with KAFKA_SASL=required, a user
added with ``manage.py kafka_user`` signs in with librdkafka and a wrong password does not, and
users sign in again after PostgreSQL ended the server's sessions. And ``kafka_user`` and the
admin's page of Kafka users: what they store, list and remove."""

from __future__ import annotations

import asyncio
import io
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError
from confluent_kafka.admin import AdminClient
from django.core.management import CommandError, call_command
from django.test import Client

from tests.live_server import LiveServer, _postgres_connection, on_postgres, wait_for
from webapp.transports.kafka.mechanisms import PlainServer, SaslFailed
from webapp.transports.kafka.users import stored_user


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    server = LiveServer(tmp_path, COORDINATOR_GROUP_INITIAL_REBALANCE_DELAY_MS="0")
    yield server
    server.kill()


def test_serve_refuses_a_kafka_listener_without_sasl_beyond_loopback(server: LiveServer) -> None:
    with pytest.raises(AssertionError):
        server.start("--host", "0.0.0.0")
    assert server.process is not None and server.process.wait(timeout=20) == 1
    output = server.output.read_text()
    assert "refusing to serve the Kafka listener on 0.0.0.0 without authentication" in output
    assert "KAFKA_SASL=required" in output and "KAFKA_ALLOW_ANONYMOUS=on" in output

    server.env["KAFKA_ALLOW_ANONYMOUS"] = "on"  # the documented override
    server.start("--host", "0.0.0.0")
    assert server.get("/healthz")["status"] == "ok"


def test_serve_with_sasl_required_lets_in_a_user_added_by_kafka_user(
    server: LiveServer, tmp_path: Path
) -> None:
    server.env["KAFKA_SASL"] = "required"
    server.manage("migrate", "-v", "0")
    password = tmp_path / "password"
    password.write_text("correct horse\n")
    server.manage("kafka_user", "add", "billing", "--password-file", str(password))
    server.start("--host", "0.0.0.0")
    server.post("/api/topics", {"name": "orders", "partitions": 2})
    assert "SASL SCRAM-SHA-256, PLAIN" in server.output.read_text()

    def consumer(password: str, **config: object) -> Consumer:
        return Consumer(
            {
                "bootstrap.servers": f"127.0.0.1:{server.kafka_port}",
                "group.id": "billing",
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-256",
                "sasl.username": "billing",
                "sasl.password": password,
                "session.timeout.ms": 6000,
                **config,
            }
        )

    refused = threading.Event()
    intruder = consumer(
        "wrong",
        error_cb=lambda e: refused.set() if e.code() == KafkaError._AUTHENTICATION else None,
    )
    member = consumer("correct horse")
    try:
        intruder.subscribe(["orders"])
        wait_for(lambda: intruder.poll(0.1) or refused.is_set(), 20, "the wrong password refused")
        member.subscribe(["orders"])

        def assigned() -> list[int] | None:
            member.poll(0.2)
            return sorted(tp.partition for tp in member.assignment()) or None

        assert wait_for(assigned, 20, "an assignment") == [0, 1]
        (joined,) = server.get("/api/groups/billing")["members"]
        assert joined["connection"] == "kafka"
    finally:
        intruder.close()
        member.close()


@pytest.mark.database  # the server's sessions on PostgreSQL
def test_users_sign_in_again_after_postgresql_ended_the_servers_sessions(
    server: LiveServer, tmp_path: Path
) -> None:
    database = server.env["DATABASE"]
    if not on_postgres(database):
        pytest.skip("PostgreSQL's sessions: make test's PostgreSQL pass runs this")
    server.env["KAFKA_SASL"] = "required"
    server.manage("migrate", "-v", "0")
    password = tmp_path / "password"
    password.write_text("correct horse\n")
    server.manage("kafka_user", "add", "billing", "--password-file", str(password))
    server.start()
    server.post("/api/topics", {"name": "orders", "partitions": 2})

    def topics_seen_by_a_new_client() -> set[str]:
        """A new client signs in (its user read from the database) and lists the topics;
        librdkafka connects again after a refusal, within the timeout."""
        admin = AdminClient(
            {
                "bootstrap.servers": f"127.0.0.1:{server.kafka_port}",
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": "billing",
                "sasl.password": "correct horse",
            }
        )
        return set(admin.list_topics(timeout=20).topics)

    assert "orders" in topics_seen_by_a_new_client()
    # A PostgreSQL restart, or an administrator, ends every session of the server's: those of
    # its role in its database (not an autovacuum worker's there, which only a superuser may end).
    with _postgres_connection(database) as db:
        ended = db.execute(
            "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity "
            "WHERE datname = current_database() AND usename = current_user"
            " AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
        ).fetchall()
    assert ended and all(row["ended"] for row in ended)
    # The login that finds its session gone is refused; the next makes it again.
    assert "orders" in topics_seen_by_a_new_client()
    assert server.get("/healthz")["status"] == "ok"


@pytest.mark.django_db
def test_kafka_user_stores_a_scram_credential_lists_and_removes(tmp_path: Path) -> None:
    from webapp.models import KafkaUser

    password = tmp_path / "password"
    password.write_text("s3cret\n")
    out = io.StringIO()
    call_command(
        "kafka_user", "add", "ops", "--staff", "--password-file", str(password), stdout=out
    )
    call_command("kafka_user", "add", "app", "--password-file", str(password), stdout=out)
    assert out.getvalue().splitlines() == ["Added User:ops (staff)", "Added User:app (not staff)"]
    row = KafkaUser.objects.get(name="ops")
    assert row.iterations >= 4096 and len(bytes(row.salt)) == 32
    stored = b"".join(bytes(v) for v in (row.salt, row.stored_key, row.server_key))
    assert b"s3cret" not in stored

    listed = io.StringIO()
    call_command("kafka_user", "list", stdout=listed)
    assert listed.getvalue().splitlines() == ["User:app", "User:ops (staff)"]

    # A new password replaces the credential (a new salt) and the staff flag.
    password.write_text("other\n")
    call_command("kafka_user", "add", "ops", "--password-file", str(password), stdout=out)
    changed = KafkaUser.objects.get(name="ops")
    assert not changed.is_staff and bytes(changed.salt) != bytes(row.salt)

    call_command("kafka_user", "remove", "app", stdout=out)
    assert list(KafkaUser.objects.values_list("name", flat=True)) == ["ops"]
    with pytest.raises(CommandError, match="no Kafka user 'app'"):
        call_command("kafka_user", "remove", "app")
    with pytest.raises(CommandError, match="letters, digits"):
        call_command("kafka_user", "add", "a,b", "--password-file", str(password))
    password.write_text("")
    with pytest.raises(CommandError, match="must not be empty"):
        call_command("kafka_user", "add", "c", "--password-file", str(password))


@pytest.mark.django_db(transaction=True)  # stored_user reads from another thread
def test_staff_add_a_kafka_user_and_change_its_password_in_the_admin(admin_client: Client) -> None:
    from webapp.models import KafkaUser

    add = "/admin/webapp/kafkauser/add/"
    refused = admin_client.post(
        add, {"name": "app", "password": "one", "password_again": "two"}, follow=True
    )
    assert "the passwords differ" in refused.content.decode()
    assert admin_client.post(add, {"name": "app"}).status_code == 200  # no password: refused
    assert not KafkaUser.objects.exists()

    response = admin_client.post(
        add, {"name": "app", "is_staff": "on", "password": "pw-1", "password_again": "pw-1"}
    )
    assert response.status_code == 302, response.content.decode()
    user = asyncio.run(stored_user("app"))
    assert user is not None and user.is_staff
    assert asyncio.run(PlainServer(stored_user).evaluate(b"\0app\0pw-1")) == b""

    # Changing the staff flag alone keeps the password; a new password replaces it.
    change = f"/admin/webapp/kafkauser/{KafkaUser.objects.get().pk}/change/"
    assert admin_client.post(change, {"password": "", "password_again": ""}).status_code == 302
    assert asyncio.run(PlainServer(stored_user).evaluate(b"\0app\0pw-1")) == b""
    assert not KafkaUser.objects.get().is_staff
    admin_client.post(change, {"is_staff": "on", "password": "pw-2", "password_again": "pw-2"})
    with pytest.raises(SaslFailed, match="Invalid username or password"):
        asyncio.run(PlainServer(stored_user).evaluate(b"\0app\0pw-1"))
    assert asyncio.run(PlainServer(stored_user).evaluate(b"\0app\0pw-2")) == b""
