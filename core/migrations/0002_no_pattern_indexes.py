# The `_like` indexes (varchar_pattern_ops) Django made beside every indexed text column on
# PostgreSQL, dropped from a database migrated before core/postgresql/schema.py stopped
# making them. Nothing on SQLite, nothing to undo: a database migrated from scratch never
# had them. Each DROP INDEX takes its table's lock for a moment (nothing is rewritten); run
# again after a failure, it drops what is left.

from django.db import migrations

_PATTERN_INDEXES = """
    SELECT quote_ident(i.schemaname) || '.' || quote_ident(i.indexname)
    FROM pg_indexes AS i
    WHERE i.schemaname = current_schema()
      AND i.indexname LIKE '%%\\_like'
      AND (i.indexdef LIKE '%%varchar\\_pattern\\_ops%%' OR i.indexdef LIKE '%%text\\_pattern\\_ops%%')
"""


def drop_pattern_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(_PATTERN_INDEXES)
        names = [name for (name,) in cursor.fetchall()]
    for name in names:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0001_initial"),
        ("polls", "0008_indexes_not_repeated"),
        ("spaces", "0004_indexes_not_repeated"),
        ("webhooks", "0006_indexes_not_repeated"),
        ("pages", "0002_sign_in_link"),
        ("ratelimit", "0002_key_counter"),
        ("idempotency", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("sessions", "0001_initial"),
        ("axes", "0010_accessattemptexpiration"),
    ]

    operations = [migrations.RunPython(drop_pattern_indexes, migrations.RunPython.noop, elidable=True)]
