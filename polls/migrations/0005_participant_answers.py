from django.db import migrations, models


def fill_answers(apps, schema_editor):
    """The answers of the participants that exist: what `manage.py polls recount` computes
    (polls/services/tallies.py, written out here as it is today)."""
    connection = schema_editor.connection
    code = "v.option_id || CASE WHEN v.type = 'ifNeedBe' THEN '+' ELSE '' END"
    aggregate = f"string_agg({code}, ',')" if connection.vendor == "postgresql" else f"group_concat({code}, ',')"
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE polls_participant SET answers = COALESCE((SELECT {aggregate} FROM polls_vote v "
            "WHERE v.participant_id = polls_participant.id AND v.type IN ('yes', 'ifNeedBe')), '')"
        )


class Migration(migrations.Migration):

    dependencies = [
        ('polls', '0004_tallies'),
    ]

    operations = [
        migrations.AddField(
            model_name='participant',
            name='answers',
            field=models.TextField(blank=True, default='', editable=False),
        ),
        migrations.RunPython(fill_answers, migrations.RunPython.noop),
    ]
