# ServiceSwitch now belongs to core (core.0001 takes over the same table).

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("spaces", "0001_initial"),
        ("core", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ServiceSwitch")],
            database_operations=[],
        ),
    ]
