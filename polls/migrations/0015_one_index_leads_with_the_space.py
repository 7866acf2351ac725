import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """One index leads with the space: the list's, no longer partial, which also serves the
    foreign key's lookups (polls/models.py)."""

    dependencies = [
        ('polls', '0014_answers_by_option_id'),
        ('spaces', '0004_indexes_not_repeated'),
    ]

    # The new index first: the list is never without one while this runs.
    operations = [
        migrations.AddIndex(
            model_name='poll',
            index=models.Index(fields=['space', '-created_at', '-id'], name='poll_space_created'),
        ),
        migrations.RemoveIndex(
            model_name='poll',
            name='poll_space_live',
        ),
        migrations.AlterField(
            model_name='poll',
            name='space',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='polls', to='spaces.space'),
        ),
    ]
