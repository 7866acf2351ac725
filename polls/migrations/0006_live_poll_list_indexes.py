from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('polls', '0005_participant_answers'),
        ('spaces', '0003_user_verbose_name'),
    ]

    # The new indexes first: the list is never without one while this runs.
    operations = [
        migrations.AddIndex(
            model_name='poll',
            index=models.Index(condition=models.Q(('deleted_at__isnull', True)), fields=['space', '-created_at', '-id'], name='poll_space_live'),
        ),
        migrations.AddIndex(
            model_name='poll',
            index=models.Index(condition=models.Q(('deleted_at__isnull', True)), fields=['space', 'status', '-created_at', '-id'], name='poll_space_status_live'),
        ),
        migrations.RemoveIndex(
            model_name='poll',
            name='poll_space_list',
        ),
        migrations.RemoveIndex(
            model_name='poll',
            name='poll_space_status_list',
        ),
    ]
