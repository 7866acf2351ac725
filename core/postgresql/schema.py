"""Django's PostgreSQL schema editor without the second index Django adds to every indexed
text column (`<name>_like`, with `varchar_pattern_ops`).

Django makes those indexes so that `LIKE 'prefix%'` queries (`startswith`) can use an index
in a database whose collation is not C. The service runs none: its ids, keys and foreign
keys are matched by equality and ranges, which the ordinary index serves, and the back
office's searches (`icontains`) use no index either way. Each was maintained by every
insert all the same: 42 of them, four on polls, one on options, two on events
(`core/migrations/0002_no_pattern_indexes.py` drops those of a database made before).
"""

from django.db.backends.postgresql import schema


class DatabaseSchemaEditor(schema.DatabaseSchemaEditor):
    def _create_like_index_sql(self, model, field):
        return None
