"""`Participant.answers` as a character per answer, naming the option by its place in the
poll's display order (polls.queries.ANSWER_OFFSETS), instead of option ids joined by commas:
what `manage.py polls recount` computes (polls/services/tallies.py), written out here as it
is today."""

from importlib import import_module

from django.db import migrations

_ORDER = "date, start_time, duration, id"


def by_position(apps, schema_editor):
    """Each option's code (48 + 2 x its place in its poll's display order) in a table of its
    own with an index, then each participant's votes read through their own index: a plan
    that stays linear whatever the planner knows of the tables."""
    postgresql = schema_editor.connection.vendor == "postgresql"
    character, aggregate = ("chr", "string_agg") if postgresql else ("char", "group_concat")
    offset = "CASE v.type WHEN 'yes' THEN 0 WHEN 'ifNeedBe' THEN 1 END"
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "CREATE TEMPORARY TABLE answer_codes AS SELECT id, "
            f"48 + 2 * (row_number() OVER (PARTITION BY poll_id ORDER BY {_ORDER}) - 1) AS code FROM polls_option"
        )
        cursor.execute("CREATE UNIQUE INDEX answer_codes_id ON answer_codes (id)")
        cursor.execute("ANALYZE answer_codes")
        cursor.execute(
            f"UPDATE polls_participant SET answers = COALESCE((SELECT {aggregate}({character}(CAST(c.code + {offset} AS integer)), '') "
            "FROM polls_vote v JOIN answer_codes c ON c.id = v.option_id "
            "WHERE v.participant_id = polls_participant.id AND v.type IN ('yes', 'ifNeedBe')), '')"
        )
        cursor.execute("DROP TABLE answer_codes")


# Back to 0005's format (option ids, `+` for ifNeedBe, joined by commas): 0005's own fill.
by_option_id = import_module("polls.migrations.0005_participant_answers").fill_answers


class Migration(migrations.Migration):

    dependencies = [
        ("polls", "0009_scheduled_option_index_partial"),
    ]

    operations = [
        migrations.RunPython(by_position, by_option_id),
    ]
