import sqlite3

from django.apps import AppConfig
from django.conf import settings
from django.core import checks

#: UPSERT with RETURNING, which the embedded store's one statement needs.
MIN_SQLITE = (3, 35)


class RatelimitConfig(AppConfig):
    name = "ratelimit"
    verbose_name = "Rate limits"

    def ready(self):
        checks.register(check_embedded_store)


def check_embedded_store(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    from django.db import connection

    if settings.REDIS_URL or connection.vendor != "sqlite" or sqlite3.sqlite_version_info >= MIN_SQLITE:
        return []
    return [checks.Error(
        f"The embedded rate-limit store needs SQLite {'.'.join(map(str, MIN_SQLITE))} or newer; "
        f"this Python uses SQLite {sqlite3.sqlite_version}.",
        hint="Use a Python built with a newer SQLite, PostgreSQL (DATABASE_URL), or Redis (REDIS_URL).",
        id="ratelimit.E001",
    )]
