"""Moving a lab to another Django database, as docs/operations.md ("PostgreSQL") says: dumpdata
from the old one, migrate + flush + loaddata into the new one. The old lab is on SQLite; the new
database is the run's own kind (``tests.live_server.server_database``): PostgreSQL on make
test's second pass, which is the move the docs describe."""

from __future__ import annotations

import datetime
import json
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.live_server import LiveServer

#: docs/operations.md's dumpdata: content types and permissions are made by migrate on the new
#: database (natural keys refer to them), sessions are not worth keeping.
DUMP = (
    "dumpdata",
    "--natural-foreign",
    "--natural-primary",
    "--exclude",
    "contenttypes",
    "--exclude",
    "auth.permission",
    "--exclude",
    "sessions",
    "--indent",
    "1",
)

#: One row of every kind of the lab's own tables, besides what serving writes (the topic, the
#: schedules' migration): the history, an audit record, a report run, a task result, a user,
#: and a schedule staff changed.
LAB_ROWS = """
import datetime
from django.contrib.auth.models import User
from django_celery_beat.models import IntervalSchedule, PeriodicTask
from django_celery_results.models import TaskResult
from webapp.models import AdminAction, GroupEvent, ReportRun

staff = User.objects.create_user("staff", password="staff-password-1", is_staff=True)
GroupEvent.objects.bulk_create(
    GroupEvent(seq=seq, prev_seq=seq - 1, group_id="orders", type="member_joined", at_ms=seq,
               payload={"member_id": f"m-{seq}", "generation": seq, "ünïcode": "é"})
    for seq in range(1, 6)
)
AdminAction.objects.create(user=staff, username="staff", action="reset_offsets",
                           group_id="orders", parameters={"to": "earliest"}, ok=True,
                           result="reset 4 partitions")
ReportRun.objects.create(status="succeeded", trigger="staff", events_total=5,
                         progress={"phase": "done"}, summary={"groups": 1},
                         finished_at=datetime.datetime(2026, 3, 2, 0, 0, 0, 500,
                                                       tzinfo=datetime.UTC))
TaskResult.objects.create(task_id="t-1", task_name="housekeeping.expire_offsets",
                          status="SUCCESS", result='{"offsets_expired": 0}')
task = PeriodicTask.objects.get(task="housekeeping.compact_log")
task.interval, _ = IntervalSchedule.objects.get_or_create(every=30, period="minutes")
task.save()
"""


#: A date and time as dumpdata writes it (DjangoJSONEncoder: to the millisecond, UTC).
DUMPED_INSTANT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z")

#: A row more in each table with an id of its own sequence.
MORE_ROWS = """
from django.contrib.auth.models import User
from django_celery_results.models import TaskResult
from webapp.models import AdminAction, GroupEvent, ReportRun

User.objects.create_user("viewer", password="viewer-password-1")
GroupEvent.objects.create(seq=6, prev_seq=5, group_id="orders", type="member_left", at_ms=6)
AdminAction.objects.create(username="staff", action="delete_group", ok=False, result="refused")
ReportRun.objects.create(trigger="schedule")
TaskResult.objects.create(task_id="t-2", task_name="housekeeping.compact_log")
"""


#: django-celery-beat's one "schedules changed at" row: loading the schedules is a change,
#: so it moves on (beat reads it to know it must reload them).
CHANGED_AT = "django_celery_beat.periodictasks"


def dumped(server: LiveServer, path: Path) -> list[dict[str, Any]]:
    """The rows ``DUMP`` writes, but the changed-at row (there must be one), their dates and
    times as instants."""
    server.manage(*DUMP, "--output", str(path))
    rows: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    assert [row["pk"] for row in rows if row["model"] == CHANGED_AT] == [1]
    return [
        {**row, "fields": {name: instant(value) for name, value in row["fields"].items()}}
        for row in rows
        if row["model"] != CHANGED_AT
    ]


def instant(value: object) -> object:
    """A dumped date and time as the instant it names, anything else as it is. dumpdata cuts a
    time to the millisecond, so one less than a millisecond past the second (the report run's
    ``finished_at`` above; one in a thousand of the times stamped as rows are written) is
    dumped as ``.000Z``, loaded as a whole second, and dumped again as ``Z``: the same instant,
    another string."""
    if isinstance(value, str) and DUMPED_INSTANT.fullmatch(value):
        return datetime.datetime.fromisoformat(value)
    return value


@pytest.mark.database
def test_a_lab_moves_to_a_new_database_with_dumpdata_and_loaddata(tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old = LiveServer(tmp_path / "old", DATABASE=f"sqlite:///{tmp_path / 'old' / 'db.sqlite3'}")
    try:
        old.start()
        old.post("/api/topics", {"name": "orders", "partitions": 4})
        assert old.stop(signal.SIGTERM) == 0
    finally:
        old.kill()
    old.manage("shell", "-c", LAB_ROWS)
    before = dumped(old, tmp_path / "lab.json")
    models = {row["model"] for row in before}
    assert {"webapp.topic", "webapp.groupevent", "webapp.adminaction", "webapp.reportrun"} <= models
    assert {"auth.user", "django_celery_beat.periodictask", "django_celery_results.taskresult"} <= (
        models
    )

    # The same record log: only Django's database moves.
    new = LiveServer(tmp_path / "new", REBALANCE_LAB_LOG_PATH=old.env["REBALANCE_LAB_LOG_PATH"])
    assert new.env["DATABASE"] != old.env["DATABASE"]
    new.manage("migrate", "--noinput", "-v", "0")
    new.manage("flush", "--noinput", "-v", "0")
    new.manage("loaddata", str(tmp_path / "lab.json"), "-v", "0")
    assert dumped(new, tmp_path / "moved.json") == before

    try:
        new.start()
        assert [t["name"] for t in new.get("/api/topics")["topics"]] == ["orders"]
        events = new.get("/api/groups/orders/events")["events"]
        assert [e["seq"] for e in events] == [1, 2, 3, 4, 5]
        assert events[0]["ünïcode"] == "é"
        # New rows after the loaded ones (PostgreSQL's sequences were moved past them).
        new.post("/api/topics", {"name": "payments", "partitions": 2})
        assert [row["name"] for row in new.query("SELECT name FROM webapp_topic ORDER BY id")] == [
            "orders",
            "payments",
        ]
        new.manage("shell", "-c", MORE_ROWS)
        assert new.stop(signal.SIGTERM) == 0
    finally:
        new.kill()
    assert "Traceback" not in new.output.read_text()
