import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('polls', '0003_comment'),
    ]

    operations = [
        migrations.CreateModel(
            name='Tally',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('type', models.CharField(max_length=32)),
                ('count', models.IntegerField()),
                ('option', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='polls.option')),
                ('poll', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='polls.poll')),
            ],
            options={
                'constraints': [models.UniqueConstraint(models.F('option'), models.F('type'), name='tally_unique')],
            },
        ),
        # The tallies of the polls that exist: what `manage.py polls recount` computes.
        migrations.RunSQL(
            "INSERT INTO polls_tally (poll_id, option_id, type, count) "
            "SELECT o.poll_id, v.option_id, v.type, COUNT(*) FROM polls_vote v "
            "JOIN polls_option o ON o.id = v.option_id GROUP BY o.poll_id, v.option_id, v.type",
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
