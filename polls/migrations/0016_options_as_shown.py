from django.db import migrations, models

from polls.models import shown_options


def fill(apps, schema_editor):
    """Every poll's `shown_options` from its option rows."""
    Poll, Option = apps.get_model("polls", "Poll"), apps.get_model("polls", "Option")
    polls = Poll.objects.only("id", "kind").order_by("pk")
    last = ""
    while chunk := list(polls.filter(pk__gt=last)[:500]):
        options: dict[str, list] = {poll.pk: [] for poll in chunk}
        for option in Option.objects.filter(poll_id__in=options):
            options[option.poll_id].append(option)
        for poll in chunk:
            poll.shown_options = shown_options(poll.kind, options[poll.pk])
        Poll.objects.bulk_update(chunk, ["shown_options"])
        last = chunk[-1].pk


class Migration(migrations.Migration):

    dependencies = [
        ("polls", "0015_one_index_leads_with_the_space"),
    ]

    operations = [
        migrations.AddField(
            model_name="poll",
            name="shown_options",
            field=models.JSONField(default=list, editable=False, help_text="The options as the API shows them, in display order."),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
