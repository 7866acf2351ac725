"""`Participant.answers` as a character per answer, naming the option by its place in the
poll's display order (polls.queries.ANSWER_OFFSETS), instead of option ids joined by commas:
what `manage.py polls recount` computes (polls/services/tallies.py), written out here as it
is today."""

from django.db import migrations

_ORDER = "date, start_time, duration, id"


def by_position(apps, schema_editor):
    postgresql = schema_editor.connection.vendor == "postgresql"
    character, aggregate = ("chr", "string_agg") if postgresql else ("char", "group_concat")
    code = "CAST(48 + 2 * positions.n + CASE v.type WHEN 'yes' THEN 0 WHEN 'ifNeedBe' THEN 1 END AS integer)"
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f"WITH positions AS (SELECT id, row_number() OVER (PARTITION BY poll_id ORDER BY {_ORDER}) - 1 AS n "
            "FROM polls_option), "
            f"coded AS (SELECT v.participant_id AS id, {aggregate}({character}({code}), '') AS answers "
            "FROM polls_vote v JOIN positions ON positions.id = v.option_id "
            "WHERE v.type IN ('yes', 'ifNeedBe') GROUP BY v.participant_id) "
            "UPDATE polls_participant SET answers = COALESCE(fresh.answers, '') "
            "FROM (SELECT p.id, coded.answers FROM polls_participant p LEFT JOIN coded ON coded.id = p.id) AS fresh "
            "WHERE fresh.id = polls_participant.id"
        )


def by_option_id(apps, schema_editor):
    """Back to 0005's format: option ids, `+` for ifNeedBe, joined by commas."""
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
        ("polls", "0009_scheduled_option_index_partial"),
    ]

    operations = [
        migrations.RunPython(by_position, by_option_id),
    ]
