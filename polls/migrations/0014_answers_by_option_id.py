from importlib import import_module

from django.db import migrations

# Answers name options by id again (polls/answers.py: `+` for ifNeedBe, joined by commas), so
# that changing options rewrites no participant: 0005's own fill.
by_option_id = import_module("polls.migrations.0005_participant_answers").fill_answers
by_position = import_module("polls.migrations.0010_answers_by_position").by_position


class Migration(migrations.Migration):

    dependencies = [
        ("polls", "0013_notifications"),
    ]

    operations = [
        migrations.RunPython(by_option_id, by_position),
    ]
