# ServiceSwitch moved here from spaces: its table (spaces_serviceswitch) stays as it is.

from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("spaces", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ServiceSwitch",
                    fields=[
                        ("name", models.CharField(max_length=50, primary_key=True, serialize=False)),
                        ("is_on", models.BooleanField(default=False)),
                        ("changed_at", models.DateTimeField(auto_now=True)),
                    ],
                    options={"db_table": "spaces_serviceswitch"},
                ),
            ],
            database_operations=[],
        ),
    ]
