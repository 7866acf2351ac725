from django.db import migrations, models


def fill_counts(apps, schema_editor):
    """The participant count of the polls that exist: what `manage.py polls recount` sets."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "UPDATE polls_poll SET participant_count = "
            "(SELECT COUNT(*) FROM polls_participant n WHERE n.poll_id = polls_poll.id)"
        )


class Migration(migrations.Migration):

    dependencies = [
        ('polls', '0006_live_poll_list_indexes'),
    ]

    operations = [
        migrations.AddField(
            model_name='poll',
            name='participant_count',
            field=models.PositiveIntegerField(default=0, editable=False, verbose_name='participants', help_text='How many participants the poll has: kept by the services with every response added or removed (polls/services/tallies.py), so that reading a poll never counts them.'),
        ),
        migrations.RunPython(fill_counts, migrations.RunPython.noop),
    ]
