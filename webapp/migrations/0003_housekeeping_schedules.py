"""The default housekeeping schedules, as django-celery-beat rows that staff then edit in the
admin (a migration runs once: later edits stay). Offset expiry every 10 minutes, Kafka's
``offsets.retention.check.interval.ms``; log compaction hourly."""

from django.db import migrations

DEFAULTS = (
    (
        "Expire offsets and tombstone empty groups",
        "housekeeping.expire_offsets",
        (10, "minutes"),
        "Kafka's cleanupGroupMetadata: offsets past offsets.retention.ms (7 days) are removed "
        "and Empty groups left without offsets are deleted (KIP-211).",
    ),
    (
        "Compact the record log",
        "housekeeping.compact_log",
        (1, "hours"),
        "As Kafka's log cleaner compacts __consumer_offsets: superseded records and spent "
        "tombstones are dropped; a replay gives the same state.",
    ),
)


def create(apps, schema_editor):
    interval_schedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    periodic_task = apps.get_model("django_celery_beat", "PeriodicTask")
    for name, task, (every, period), description in DEFAULTS:
        schedule, _ = interval_schedule.objects.get_or_create(every=every, period=period)
        periodic_task.objects.get_or_create(
            name=name, defaults={"task": task, "interval": schedule, "description": description}
        )


def remove(apps, schema_editor):
    periodic_task = apps.get_model("django_celery_beat", "PeriodicTask")
    periodic_task.objects.filter(name__in=[name for name, *_ in DEFAULTS]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("webapp", "0002_admin_actions_prev_seq"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create, remove)]
