from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('spaces', '0003_user_verbose_name'),
        ('webhooks', '0004_dispatcher_heartbeat'),
    ]

    # The new index first: the fan-out is never without one while this runs.
    operations = [
        migrations.AddIndex(
            model_name='event',
            index=models.Index(condition=models.Q(('dispatched_at__isnull', True)), fields=['created_at'], name='event_pending'),
        ),
        migrations.RemoveIndex(
            model_name='event',
            name='event_undispatched',
        ),
    ]
