"""Test settings: the normal settings, made deterministic. DATABASE_URL and REDIS_URL still
come from the environment so that CI runs the suite against PostgreSQL and Redis too."""

from config.settings import *  # noqa: F401,F403

MODERATION_WORDS = ["badword", "rude phrase"]
LOGGING["root"]["level"] = "WARNING"  # noqa: F405
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # admin logins in tests
