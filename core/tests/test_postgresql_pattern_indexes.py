"""No `_like` pattern index on PostgreSQL (core/postgresql/schema.py): a database migrated
from scratch has none, the migration drops those of a database made before, and the
lookups they were made for still search an index (tests/test_query_plans.py checks the
API's statements).

PostgreSQL only: deselected on SQLite (conftest.py)."""

import importlib

import pytest
from django.db import connection, models
from django.test.utils import isolate_apps

from polls.models import Poll

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db]

migration = importlib.import_module("core.migrations.0002_no_pattern_indexes")


def pattern_indexes() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
                       "AND indexdef LIKE '%%pattern_ops%%' ORDER BY 1")
        return [name for (name,) in cursor.fetchall()]


def test_a_database_migrated_from_scratch_has_none():
    assert pattern_indexes() == []


def test_the_migration_drops_those_of_an_older_database_and_only_those():
    table = Poll._meta.db_table
    with connection.cursor() as cursor:  # as Django made them before
        cursor.execute(f'CREATE INDEX "{table}_id_0123abcd_like" ON "{table}" ("id" varchar_pattern_ops)')
        cursor.execute(f'CREATE INDEX "{table}_title_0123abcd_like" ON "{table}" ("title" text_pattern_ops)')
        cursor.execute(f'CREATE INDEX "{table}_title_not_a_pattern_like" ON "{table}" ("title")')
    assert pattern_indexes() == [f"{table}_id_0123abcd_like", f"{table}_title_0123abcd_like"]
    with connection.schema_editor() as editor:
        migration.drop_pattern_indexes(None, editor)
    assert pattern_indexes() == []
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_indexes WHERE indexname = %s", [f"{table}_title_not_a_pattern_like"])
        assert cursor.fetchone() == (1,)


@isolate_apps("core")  # the probe's model stays out of the project's registry
def test_a_new_indexed_text_column_gets_its_index_and_no_pattern_index():
    class Probe(models.Model):
        code = models.CharField(max_length=20, db_index=True)
        key = models.CharField(max_length=20, primary_key=True)

        class Meta:
            app_label = "core"
            db_table = "test_pattern_probe"

    with connection.schema_editor() as editor:
        editor.create_model(Probe)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'test_pattern_probe' ORDER BY 1")
            definitions = [definition for (definition,) in cursor.fetchall()]
        assert len(definitions) == 2 and all("pattern_ops" not in d for d in definitions), definitions
        assert pattern_indexes() == []
    finally:
        with connection.schema_editor() as editor:
            editor.delete_model(Probe)
