"""Every topic gets a Kafka topic id (``Topic.topic_id``, a random UUID): the topics stored
before it are given one each here, then the column becomes unique and required."""

import uuid

from django.db import migrations, models


def give_topic_ids(apps, schema_editor):
    topic = apps.get_model("webapp", "Topic")
    for row in topic.objects.filter(topic_id__isnull=True):
        row.topic_id = uuid.uuid4()
        row.save(update_fields=["topic_id"])


class Migration(migrations.Migration):
    dependencies = [("webapp", "0004_report_runs")]

    operations = [
        migrations.AddField(model_name="topic", name="topic_id", field=models.UUIDField(null=True)),
        migrations.RunPython(give_topic_ids, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="topic",
            name="topic_id",
            field=models.UUIDField(default=uuid.uuid4, unique=True),
        ),
    ]
